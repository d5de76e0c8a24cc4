//! What one compression did, for a person: the `ctxgate compress` command's output.
//!
//! An operator tuning keep patterns wants to see exactly what the model will see and what it cost, without a
//! server: the kind detected, tokens before and after, lines kept, the hash the original would be stored under,
//! and whether every error line is still visible.

use serde::Serialize;

use std::collections::HashSet;

use super::{Options, compress, envelope, estimate_tokens, hash_of, is_floor_line, kind_of};

#[derive(Debug, Clone, Serialize)]
pub struct OfflineReport {
    /// The kind detected, even when nothing was compressed.
    pub kind: &'static str,
    pub compressed: bool,
    pub hash: String,
    pub bytes_before: usize,
    pub bytes_after: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub lines_before: usize,
    pub lines_kept: usize,
    /// Lines of the error floor ([`is_floor_line`]): the promise is about these, so they are what is counted.
    /// Warnings beyond a few dozen may go behind the marker by design and are not counted as missing.
    pub error_lines: usize,
    /// Error lines of the input not among the result's lines, as exact lines (always 0; shown so a regression
    /// would be visible).
    pub error_lines_missing: usize,
    pub query: Vec<String>,
    /// The text the model would see.
    pub result: String,
}

pub fn offline(text: &str, opts: &Options) -> OfflineReport {
    let kind = kind_of(text, &envelope::split(text), opts);
    let found = compress(text, opts);
    let result = found
        .as_ref()
        .map(|c| c.text.clone())
        .unwrap_or_else(|| text.to_string());
    let errors: Vec<&str> = text.lines().filter(|l| is_floor_line(l)).collect();
    let shown: HashSet<&str> = result.lines().collect();
    let missing = errors.iter().filter(|l| !shown.contains(**l)).count();
    OfflineReport {
        kind: found.as_ref().map(|c| c.kind).unwrap_or(kind).as_str(),
        compressed: found.is_some(),
        hash: hash_of(text),
        bytes_before: text.len(),
        bytes_after: result.len(),
        tokens_before: estimate_tokens(text),
        tokens_after: estimate_tokens(&result),
        lines_before: text.lines().count(),
        lines_kept: found
            .as_ref()
            .map(|c| c.lines_kept)
            .unwrap_or_else(|| text.lines().count()),
        error_lines: errors.len(),
        error_lines_missing: missing,
        query: opts.query.clone(),
        result,
    }
}

impl OfflineReport {
    /// The result, then a stats block.
    pub fn to_text(&self) -> String {
        let saved = if self.tokens_before == 0 {
            0.0
        } else {
            100.0 * (1.0 - self.tokens_after as f64 / self.tokens_before as f64)
        };
        let mut out = self.result.clone();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "---\nkind: {}\ncompressed: {}\nhash: {}\ntokens: {} -> {} ({saved:.1}% saved)\nbytes: {} -> {}\nlines: {} -> {}\nerror lines: {} ({} missing)\nquery: {}\n",
            self.kind,
            if self.compressed { "yes" } else { "no (left verbatim)" },
            self.hash,
            self.tokens_before,
            self.tokens_after,
            self.bytes_before,
            self.bytes_after,
            self.lines_before,
            self.lines_kept,
            self.error_lines,
            self.error_lines_missing,
            self.query.join(" "),
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;

    #[test]
    fn report_of_a_log() {
        let mut log = String::new();
        for i in 0..3000 {
            log.push_str(&format!("   Compiling crate{i} v0.1.0\n"));
        }
        log.push_str("error[E0308]: mismatched types\n");
        let r = offline(&log, &Options::default());
        assert!(r.compressed);
        assert_eq!(r.error_lines, 1);
        assert_eq!(r.error_lines_missing, 0);
        assert!(r.tokens_after < r.tokens_before);
        assert!(r.to_text().contains("kind: log"));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["hash"], hash_of(&log));
    }

    #[test]
    fn warnings_left_to_the_marker_are_not_counted_as_missing_error_lines() {
        // Hundreds of distinct warnings: beyond a few dozen they go behind the marker by design; the floor's
        // lines (the failure) all stay, and only those are the promise the report checks.
        let mut log = String::new();
        for i in 0..400 {
            log.push_str(&format!("warning: unused variable `x{i}` in src/m{i}.rs\n"));
        }
        log.push_str("error: could not compile `app` due to 1 previous error\n");
        let r = offline(&log, &Options::default());
        assert!(r.compressed);
        assert!(!r.result.contains("`x300`"), "{}", r.result);
        assert_eq!(r.error_lines, 1);
        assert_eq!(r.error_lines_missing, 0);
    }
}

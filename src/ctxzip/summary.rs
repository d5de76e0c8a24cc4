//! One-line summaries of what a gap of dropped lines held.
//!
//! In the request path each marker that replaces a run of lines is followed by a short census of that run —
//! by leading word (`Compiling 150, Running 143`), by file extension (`.py 1800, .pyc 1700`) or by directory
//! (`litellm/llms/ 2400`), whichever describes it best — so the model can often answer "what was there"
//! without expanding. Counting is one pass with borrowed keys; the order is fully sorted, never hash order.

use rustc_hash::FxHashMap as FastMap;

/// Gaps shorter than this get no summary: the marker's count says enough.
pub(crate) const MIN_GAP_FOR_SUMMARY: usize = 8;
/// Keys shown per summary.
const TOP: usize = 4;
/// Longest key shown.
const MAX_KEY: usize = 32;
/// Kinds of warnings a census names.
const WARNING_KINDS: usize = 3;

/// A candidate description: lines covered by its top keys, its keys by count, and the prefix shown per key.
type Ranked<'a> = (usize, Vec<(&'a str, usize)>, &'static str);

#[derive(Default)]
pub(crate) struct Census<'a> {
    total: usize,
    lead: FastMap<&'a str, usize>,
    ext: FastMap<&'a str, usize>,
    dir: FastMap<&'a str, usize>,
    /// Dropped warnings by kind (`unused parameter [-Wunused-parameter]`): what a build's marker holds is best
    /// said by them.
    warnings: FastMap<String, usize>,
}

impl<'a> Census<'a> {
    /// Counts one dropped warning of the kind `key` (besides [`Census::add`] of its line).
    pub(crate) fn add_warning(&mut self, key: String, count: usize) {
        *self.warnings.entry(key).or_insert(0) += count;
    }

    /// ` (warnings: 18 × this statement may fall through, 9 × unused parameter, +3 other)` when the gap hides two
    /// warnings or more.
    fn render_warnings(&self) -> Option<String> {
        let hidden: usize = self.warnings.values().sum();
        if hidden < 2 {
            return None;
        }
        let entries = ranked(self.warnings.iter().map(|(k, v)| (k.as_str(), *v)));
        Some(listed(
            " (warnings: ",
            &entries,
            WARNING_KINDS,
            hidden,
            |k, v| format!("{v} × {k}"),
        ))
    }

    /// Counts one dropped line that stood for `count` identical lines.
    pub(crate) fn add(&mut self, line: &'a str, count: usize) {
        self.total += count;
        if let Some(w) = lead_word(line) {
            *self.lead.entry(w).or_insert(0) += count;
        }
        let Some(last) = line.split_ascii_whitespace().next_back() else {
            return;
        };
        if let Some(e) = extension(last) {
            *self.ext.entry(e).or_insert(0) += count;
        }
        if let Some(d) = directory(last) {
            *self.dir.entry(d).or_insert(0) += count;
        }
    }

    /// ` (k1 n1, k2 n2, …, +m other)`, or empty when the gap is small or no key covers half of it; the warnings it
    /// hides by kind instead, when it hides two or more.
    pub(crate) fn render(&self) -> String {
        if let Some(warnings) = self.render_warnings() {
            return warnings;
        }
        if self.total < MIN_GAP_FOR_SUMMARY {
            return String::new();
        }
        let candidates = [(&self.ext, "."), (&self.dir, ""), (&self.lead, "")];
        let mut best: Option<Ranked<'_>> = None;
        for (map, prefix) in candidates {
            let covered: usize = map.values().sum();
            if covered * 2 < self.total {
                continue;
            }
            let mut entries = ranked(map.iter().map(|(k, v)| (*k, *v)));
            entries.retain(|e| e.1 >= 2);
            let top: usize = entries.iter().take(TOP).map(|e| e.1).sum();
            if best.as_ref().is_none_or(|b| top > b.0) {
                best = Some((top, entries, prefix));
            }
        }
        // A flat census (every key once or twice) says nothing; the marker's count is enough then.
        let Some((_, entries, prefix)) = best.filter(|b| b.0 * 5 >= self.total * 2) else {
            return String::new();
        };
        listed(" (", &entries, TOP, self.total, |k, v| {
            format!("{prefix}{k} {v}")
        })
    }
}

/// Keys by count, most first, ties in key order: a census never shows hash order.
fn ranked<'k>(counts: impl Iterator<Item = (&'k str, usize)>) -> Vec<(&'k str, usize)> {
    let mut entries: Vec<(&str, usize)> = counts.collect();
    entries.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    entries
}

/// `{open}e1, e2, …, +m other)`: the first `top` of `entries` written by `item`, and what of `total` they leave.
fn listed(
    open: &str,
    entries: &[(&str, usize)],
    top: usize,
    total: usize,
    item: impl Fn(&str, usize) -> String,
) -> String {
    let mut out = String::from(open);
    for (i, (k, v)) in entries.iter().take(top).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&item(k, *v));
    }
    let shown: usize = entries.iter().take(top).map(|e| e.1).sum();
    let other = total.saturating_sub(shown);
    if other > 0 {
        out.push_str(&format!(", +{other} other"));
    }
    out.push(')');
    out
}

/// First whitespace token that has a letter and does not start with a digit (skips timestamps, counters,
/// tree-drawing characters), trimmed of brackets and trailing punctuation.
fn lead_word(line: &str) -> Option<&str> {
    for tok in line.split_ascii_whitespace().take(4) {
        let t = tok
            .trim_start_matches(['[', '(', '<'])
            .trim_end_matches([':', ',', ';', ']', ')', '>']);
        let first = t.bytes().next()?;
        if first.is_ascii_digit() || !t.bytes().any(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        return Some(truncate_key(t));
    }
    None
}

/// `py` for `foo/bar.py`: 1–6 alphanumeric characters with a letter, after the last dot of the file name.
fn extension(token: &str) -> Option<&str> {
    let name = token.rsplit('/').next()?;
    let dot = name.rfind('.')?;
    if dot == 0 && name.len() > 7 {
        return None;
    }
    let ext = &name[dot + 1..];
    let ok = (1..=6).contains(&ext.len())
        && ext.bytes().all(|c| c.is_ascii_alphanumeric())
        && ext.bytes().any(|c| c.is_ascii_alphabetic());
    ok.then_some(ext)
}

/// The first two directories of a path-like token (`litellm/llms/` for `litellm/llms/openai/x.py`),
/// ignoring leading `./`, `../` and `/`.
fn directory(token: &str) -> Option<&str> {
    let mut start = 0;
    let b = token.as_bytes();
    loop {
        let rest = &token[start..];
        if rest.starts_with("./") {
            start += 2;
        } else if rest.starts_with("../") {
            start += 3;
        } else if rest.starts_with('/') {
            start += 1;
        } else {
            break;
        }
    }
    let mut slashes = 0;
    for (i, &c) in b.iter().enumerate().skip(start) {
        if c == b'/' {
            slashes += 1;
            if slashes == 2 {
                return Some(truncate_key(&token[start..=i]));
            }
        }
    }
    let last = token[start..].rfind('/')?;
    Some(truncate_key(&token[start..=start + last]))
}

fn truncate_key(k: &str) -> &str {
    &k[..super::truncate::floor_boundary(k, MAX_KEY)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_best_description() {
        let mut c = Census::default();
        for _ in 0..10 {
            c.add("   Compiling foo v1.0", 1);
        }
        c.add("     Running `rustc`", 3);
        assert_eq!(c.render(), " (Compiling 10, Running 3)");
        let mut c = Census::default();
        for i in 0..20 {
            let p = if i % 2 == 0 {
                "litellm/llms/a.py"
            } else {
                "litellm/llms/b.pyc"
            };
            c.add(p, 1);
        }
        assert_eq!(c.render(), " (.py 10, .pyc 10)");
        assert_eq!(directory("./a/b/c.rs"), Some("a/b/"));
        assert_eq!(directory("a/c.rs"), Some("a/"));
        assert_eq!(extension("v1.2.3"), None);
        let mut small = Census::default();
        small.add("x", 1);
        assert_eq!(small.render(), "");
    }
}

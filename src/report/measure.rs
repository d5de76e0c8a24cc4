//! What the corpus report counts: real `o200k_base` tokens and the error lines a reader must still see.
//!
//! The report judges compression the way a user's bill and a user's debugging session judge it, not by ctxgate's
//! own cheap estimate: tokens are counted with the tokenizer the models use, and an "error line" is the strict
//! definition the project promises to keep — any line under [`ERROR_LINE_MAX`] characters containing error, fail,
//! exception, fatal, panic or traceback as a case-insensitive substring (`failed`, `ErrorHandler` and `test_fail_silently` count). Such
//! a line is kept when it appears, whole and byte for byte, as a line of what the upstream received.

use std::collections::HashMap;
use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

pub use crate::ctxzip::{FLOOR_LINE_MAX as ERROR_LINE_MAX, is_floor_line as is_error_line};

/// The error lines of `text` (`\r` trimmed), in order.
pub fn error_lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| is_error_line(l))
        .collect()
}

/// How many of `lines` appear as whole lines of `received`.
pub fn kept_lines(lines: &[&str], received: &str) -> usize {
    if lines.is_empty() {
        return 0;
    }
    let visible: std::collections::HashSet<&str> = received
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    lines.iter().filter(|l| visible.contains(**l)).count()
}

/// Lines the naive rule keeps on each side of an error line.
const NAIVE_CONTEXT: usize = 2;
/// Lines the naive rule keeps at each end of the text.
const NAIVE_ENDS: usize = 30;

/// The baseline issue 8 measures against, a line filter: every error line with the 2 lines on either side, the first
/// and last 30 lines, and one `[... N lines omitted ...]` line for each run of the others. Nothing it drops can be
/// had back, which is what a compressor with an expand tool behind it is expected to beat.
pub fn naive_rule(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let n = lines.len();
    let mut keep = vec![false; n];
    for (i, line) in lines.iter().enumerate() {
        let bare = line.strip_suffix('\n').unwrap_or(line);
        let bare = bare.strip_suffix('\r').unwrap_or(bare);
        if i < NAIVE_ENDS || i + NAIVE_ENDS >= n {
            keep[i] = true;
        }
        if is_error_line(bare) {
            let around = i.saturating_sub(NAIVE_CONTEXT)..(i + NAIVE_CONTEXT + 1).min(n);
            keep[around].iter_mut().for_each(|k| *k = true);
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < n {
        if keep[i] {
            out.push_str(lines[i]);
            i += 1;
            continue;
        }
        let run = keep[i..].iter().take_while(|k| !**k).count();
        out.push_str(&format!("[... {run} lines omitted ...]\n"));
        i += run;
    }
    out
}

/// `o200k_base` token counts, memoized by text: a replayed session sends the same items on every turn.
pub struct Tokens {
    bpe: Option<&'static CoreBPE>,
    memo: HashMap<u128, usize>,
}

impl Tokens {
    pub fn new() -> Self {
        static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
        Tokens {
            bpe: BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref(),
            memo: HashMap::new(),
        }
    }

    /// Whether counts are real tokenizer counts (else bytes / 4).
    pub fn is_real(&self) -> bool {
        self.bpe.is_some()
    }

    pub fn count(&mut self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let key = xxhash_rust::xxh3::xxh3_128(text.as_bytes());
        if let Some(n) = self.memo.get(&key) {
            return *n;
        }
        let n = match self.bpe {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => text.len().div_ceil(4),
        };
        self.memo.insert(key, n);
        n
    }
}

impl Default for Tokens {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_naive_rule_keeps_the_ends_and_each_error_line_with_two_neighbours() {
        let mut text = String::new();
        for i in 0..100 {
            if i == 50 {
                text.push_str("E   AssertionError: boom\n");
            } else {
                text.push_str(&format!("line {i}\n"));
            }
        }
        let out = naive_rule(&text);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[29], "line 29");
        assert_eq!(lines[30], "[... 18 lines omitted ...]");
        assert_eq!(
            &lines[31..36],
            [
                "line 48",
                "line 49",
                "E   AssertionError: boom",
                "line 51",
                "line 52"
            ]
        );
        assert_eq!(lines[36], "[... 17 lines omitted ...]");
        assert_eq!(lines.last(), Some(&"line 99"));
        // A short text is kept whole, its last line's missing newline included.
        assert_eq!(naive_rule("a\nb"), "a\nb");
    }

    #[test]
    fn error_lines_are_substring_matches_under_300_chars() {
        let text = format!(
            "ok\ntest_fail_silently PASSED\nErrorHandler installed\nall good\n{}error\nFATAL: boom\r\n",
            "x".repeat(300)
        );
        assert_eq!(
            error_lines(&text),
            vec![
                "test_fail_silently PASSED",
                "ErrorHandler installed",
                "FATAL: boom"
            ]
        );
    }

    #[test]
    fn kept_means_a_whole_line() {
        let lines = ["FAILED a", "error: b"];
        assert_eq!(kept_lines(&lines, "x\nFAILED a\nsee error: b later\n"), 1);
        assert_eq!(kept_lines(&lines, "FAILED a\r\nerror: b"), 2);
    }

    #[test]
    fn tokens_are_counted_and_memoized() {
        let mut t = Tokens::new();
        assert!(t.is_real());
        let a = t.count("hello world, hello tokens");
        assert!(a > 2 && a < 10);
        assert_eq!(t.count("hello world, hello tokens"), a);
        assert_eq!(t.count(""), 0);
    }
}

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

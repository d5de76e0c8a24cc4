//! Token estimates of items: what the fold compares with the budget, weighs against the
//! min-fold threshold and uses to tell a summary that would not shrink the request.
//!
//! It lives with the request body rather than in the fold because it is a fact of the turn: the fold stage decides
//! "within budget" from it before anything is parsed ([`within_budget`], the one formula every caller uses), and
//! the fold's quick path and full plan use the same [`array_len`].
//!
//! Both estimators look at the compact JSON text of the items as an array, the way the
//! request carries them: [`Estimator::Bytes`] divides its length by four (rounded up), cheap
//! and close enough for a budget; [`Estimator::Tiktoken`] counts `o200k_base` tokens of the
//! same text, for an operator who wants the budget to track the real count more closely.

use std::io;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tiktoken_rs::CoreBPE;

/// How items are turned into an estimated token count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Estimator {
    /// JSON bytes / 4, rounded up.
    #[default]
    Bytes,
    /// `o200k_base` tokens of the JSON text. Falls back to [`Estimator::Bytes`] if the
    /// tokenizer cannot be built (it is embedded in the crate, so only a broken build would).
    Tiktoken,
}

impl Estimator {
    /// The estimate of `items` sent as one JSON array.
    pub fn estimate(self, items: &[Value]) -> usize {
        self.estimate_parts(&[items])
    }

    /// The estimate of the concatenation of `parts` sent as one JSON array, without
    /// building it: how the fold weighs "output ++ pinned ++ tail" before choosing it.
    pub fn estimate_parts(self, parts: &[&[Value]]) -> usize {
        match (self, tokenizer()) {
            (Estimator::Tiktoken, Some(bpe)) => bpe.encode_ordinary(&array_text(parts)).len(),
            _ => parts_len(parts).div_ceil(4),
        }
    }
}

/// The o200k_base tokenizer, built once per process; `None` if it could not be built.
fn tokenizer() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// Length in bytes of `[a,b,…]` of the concatenated parts.
fn parts_len(parts: &[&[Value]]) -> usize {
    array_len(parts.iter().flat_map(|p| p.iter()).map(json_len))
}

/// Length in bytes of `[a,b,…]` for items of the given JSON lengths: brackets, commas, and each item. The one
/// formula of a transcript's size.
pub fn array_len(lens: impl Iterator<Item = usize>) -> usize {
    let (count, total) = lens.fold((0usize, 0usize), |(c, t), l| (c + 1, t + l));
    2 + total + count.saturating_sub(1)
}

/// The within-budget decision from a transcript's size in bytes: its estimated tokens when that proves it within
/// `budget`, `None` when it may be over. Under [`Estimator::Bytes`] the estimate is exact; under
/// [`Estimator::Tiktoken`] the bytes bound the token count (a token is at least a byte), so a `Some` is certain
/// and a `None` means "count the tokens".
pub fn within_budget(bytes: usize, estimator: Estimator, budget: usize) -> Option<usize> {
    let tokens = match estimator {
        Estimator::Bytes => bytes.div_ceil(4),
        Estimator::Tiktoken => bytes,
    };
    (tokens <= budget).then_some(tokens)
}

/// The compact JSON text of the concatenated parts as one array.
fn array_text(parts: &[&[Value]]) -> String {
    let mut text = String::from("[");
    for (i, item) in parts.iter().flat_map(|p| p.iter()).enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&item.to_string());
    }
    text.push(']');
    text
}

/// Length of an item's compact JSON, counted without allocating it.
pub fn json_len(item: &Value) -> usize {
    let mut counter = ByteCounter(0);
    // Writing a `Value` cannot fail: its keys are strings and the counter never errors.
    if serde_json::to_writer(&mut counter, item).is_err() {
        return counter.0;
    }
    counter.0
}

struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bytes_is_json_array_length_over_four_rounded_up() {
        let items = vec![json!({"role": "user", "content": "hello"}), json!({"a": 1})];
        let text = serde_json::to_string(&items).unwrap_or_default();
        assert_eq!(Estimator::Bytes.estimate(&items), text.len().div_ceil(4));
        assert_eq!(Estimator::Bytes.estimate(&[]), 1); // "[]"
    }

    #[test]
    fn parts_estimate_like_their_concatenation() {
        let a = vec![json!({"x": "one"})];
        let b = vec![json!({"y": "two"}), json!("three")];
        let joined: Vec<Value> = a.iter().chain(b.iter()).cloned().collect();
        for est in [Estimator::Bytes, Estimator::Tiktoken] {
            assert_eq!(est.estimate_parts(&[&a, &[], &b]), est.estimate(&joined));
        }
    }

    #[test]
    fn tiktoken_counts_o200k_tokens_of_the_json_text() {
        let items = vec![
            json!({"role": "user", "content": "The quick brown fox jumps over the lazy dog."}),
        ];
        let text = serde_json::to_string(&items).unwrap_or_default();
        let expected = tiktoken_rs::o200k_base()
            .map(|b| b.encode_ordinary(&text).len())
            .unwrap_or(0);
        assert!(expected > 0);
        assert_eq!(Estimator::Tiktoken.estimate(&items), expected);
        // Tokens are fewer than bytes for English text.
        assert!(expected < text.len());
    }
}

//! What the fold leaves for the store: a successful fold ([`FoldRecord`]) and the last failed
//! one ([`FailedFold`]), both keyed by the proxy under tenant and conversation anchor.
//!
//! They outlive the process and the version that wrote them, so each carries `"v": 1` and
//! tolerates unknown fields: a newer ctxgate may add members, and an older one reading them
//! ignores what it does not know. A record of another version is ignored by the transform
//! (the transcript is then folded, or not backed off, as though the record were absent),
//! never misread.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The record version this build writes and reads.
pub const RECORD_VERSION: u32 = 1;

/// A fold that was applied: while a transcript begins with the prefix it folded (the first
/// `split` items, identified by `prefix_hash`), the request carries `output`, then `pinned`,
/// then the transcript from `split` on — the same bytes every turn, so the upstream's prompt
/// cache keeps hitting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FoldRecord {
    /// Record version, [`RECORD_VERSION`].
    pub v: u32,
    /// Number of transcript items the fold replaced.
    pub split: usize,
    /// [`chain`](super::prefix::chain)`[split]` of the folded transcript.
    pub prefix_hash: String,
    /// The items that stand in for the folded prefix: the compaction endpoint's output, or
    /// the one summary message.
    pub output: Vec<Value>,
    /// Items of the folded prefix kept verbatim after `output`.
    #[serde(default)]
    pub pinned: Vec<Value>,
    /// Estimate of the client's transcript when the fold was made.
    pub tokens_before: usize,
    /// When the fold was made, as passed in by the caller (the fold reads no clock).
    pub created_at_unix: u64,
}

impl FoldRecord {
    /// The items that replace the folded prefix on the request: `output` then `pinned`.
    pub fn head(&self) -> Vec<Value> {
        self.output.iter().chain(&self.pinned).cloned().collect()
    }
}

/// A fold that failed in a way the same prefix would most likely fail again; while a
/// transcript begins with that prefix, folding waits for it to grow (see `backoff`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedFold {
    /// Record version, [`RECORD_VERSION`].
    pub v: u32,
    /// Number of transcript items the failed fold would have replaced.
    pub split: usize,
    /// [`chain`](super::prefix::chain)`[split]` of that transcript.
    pub prefix_hash: String,
    /// Estimate of the client's transcript when the fold failed.
    pub tokens_before: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_round_trip_and_tolerate_unknown_fields() {
        let record = FoldRecord {
            v: RECORD_VERSION,
            split: 7,
            prefix_hash: "ab".into(),
            output: vec![json!({"type": "compaction", "encrypted_content": "x"})],
            pinned: vec![],
            tokens_before: 1234,
            created_at_unix: 42,
        };
        let mut text = serde_json::to_value(&record).unwrap_or_default();
        assert_eq!(text["v"], 1);
        text["added_later"] = json!({"any": "thing"});
        let back: Option<FoldRecord> = serde_json::from_value(text).ok();
        assert_eq!(back, Some(record));

        let failed: Option<FailedFold> = serde_json::from_value(
            json!({"v": 1, "split": 3, "prefix_hash": "cd", "tokens_before": 9, "x": 1}),
        )
        .ok();
        assert_eq!(failed.map(|f| f.split), Some(3));
    }

    #[test]
    fn pinned_defaults_to_empty_for_older_writers() {
        let back: Option<FoldRecord> = serde_json::from_value(json!({
            "v": 1, "split": 1, "prefix_hash": "h", "output": [], "tokens_before": 1, "created_at_unix": 0
        }))
        .ok();
        assert_eq!(back.map(|r| r.pinned.len()), Some(0));
    }
}

//! Back-off after a failed fold: the same prefix would most likely fail the same way, and
//! asking on every turn would cost up to two summary calls and a failed fold each time.
//!
//! While a transcript begins with the prefix of the last [`FailedFold`], no fold is tried
//! until the part to fold has grown by at least `keep_last` items (at least one) or the
//! transcript's estimate by at least a quarter of the budget. A transcript that does not
//! begin with that prefix (another conversation sharing the anchor, or one rewound before
//! it) folds as usual. Pure arithmetic over the record and the transcript's hash chain.

use super::record::{FailedFold, RECORD_VERSION};

/// Whether `failed` still holds back a fold of `items[..split]` of a transcript whose hash
/// chain is `chain` and whose estimate is `tokens_now`.
pub fn holds(
    failed: &FailedFold,
    chain: &[String],
    split: usize,
    tokens_now: usize,
    keep_last: usize,
    budget: usize,
) -> bool {
    if !applies(failed, chain) {
        return false;
    }
    let items_grown = split >= failed.split.saturating_add(item_step(keep_last));
    let tokens_grown = tokens_now >= failed.tokens_before.saturating_add(token_step(budget));
    !(items_grown || tokens_grown)
}

/// Whether the transcript with hash chain `chain` begins with the failed fold's prefix.
pub fn applies(failed: &FailedFold, chain: &[String]) -> bool {
    failed.v == RECORD_VERSION
        && !failed.prefix_hash.is_empty()
        && chain.get(failed.split) == Some(&failed.prefix_hash)
}

/// Growth in folded items that lifts the back-off: `keep_last`, at least one.
pub fn item_step(keep_last: usize) -> usize {
    keep_last.max(1)
}

/// Growth in estimated tokens that lifts the back-off: a quarter of the budget, at least one.
pub fn token_step(budget: usize) -> usize {
    (budget / 4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::prefix::chain;
    use serde_json::{Value, json};

    fn transcript(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"role": "user", "content": format!("m{i}")}))
            .collect()
    }

    fn failed_at(items: &[Value], split: usize, tokens: usize) -> FailedFold {
        let prefix_hash = chain(items).get(split).cloned().unwrap_or_default();
        FailedFold {
            v: RECORD_VERSION,
            split,
            prefix_hash,
            tokens_before: tokens,
        }
    }

    #[test]
    fn holds_until_the_folded_part_grows_by_keep_last_items() {
        let items = transcript(20);
        let c = chain(&items);
        let failed = failed_at(&items, 10, 50_000);
        assert!(holds(&failed, &c, 10, 50_000, 4, 100_000));
        assert!(holds(&failed, &c, 13, 50_000, 4, 100_000));
        assert!(!holds(&failed, &c, 14, 50_000, 4, 100_000));
        // keep_last 0 still needs one more item.
        assert!(holds(&failed, &c, 10, 50_000, 0, 100_000));
        assert!(!holds(&failed, &c, 11, 50_000, 0, 100_000));
    }

    #[test]
    fn holds_until_the_estimate_grows_by_a_quarter_of_the_budget() {
        let items = transcript(20);
        let c = chain(&items);
        let failed = failed_at(&items, 10, 50_000);
        assert!(holds(&failed, &c, 11, 74_999, 4, 100_000));
        assert!(!holds(&failed, &c, 11, 75_000, 4, 100_000));
        assert_eq!(token_step(100_000), 25_000);
        assert_eq!(token_step(3), 1);
    }

    #[test]
    fn another_prefix_or_version_does_not_hold() {
        let items = transcript(20);
        let failed = failed_at(&items, 10, 50_000);
        let mut other = transcript(20);
        other[3] = json!({"role": "user", "content": "rewound"});
        assert!(!holds(&failed, &chain(&other), 10, 50_000, 4, 100_000));
        // A transcript shorter than the failed prefix does not begin with it.
        assert!(!holds(&failed, &chain(&items[..8]), 4, 50_000, 4, 100_000));
        let newer = FailedFold {
            v: 2,
            ..failed.clone()
        };
        assert!(!holds(&newer, &chain(&items), 10, 50_000, 4, 100_000));
        let empty = FailedFold {
            prefix_hash: String::new(),
            ..failed
        };
        assert!(!holds(&empty, &chain(&items), 10, 50_000, 4, 100_000));
    }
}

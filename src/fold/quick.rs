//! The fold's decision from item facts alone, for the turns that need no fold call.
//!
//! Most turns of a long conversation are either within budget or begin with a prefix already folded. Deciding
//! those needs only each item's canonical digest and compact JSON length — facts the proxy keeps per distinct item
//! across turns — and not the items' parsed values. [`quick_plan`] takes the same branches as
//! [`plan`](super::plan) in that order and hands back exactly the result `plan` would; for anything else (a fold
//! to make, a back-off to weigh) it answers `None` and the caller runs `plan` on the parsed items.

use serde_json::Value;

use super::estimate::{array_len, json_len};
use super::prefix::{chain_of_digests, item_digest};
use super::report::{FoldReport, FoldResult, Outcome, Rewrite};
use super::transform::Base;
use super::{Estimator, FoldConfig, FoldMode, FoldRecord};

/// What the fold needs to know of one item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemFacts {
    /// SHA-256 of the item's canonical JSON (see [`super::prefix`]).
    pub digest: [u8; 32],
    /// Length of the item's compact JSON, as the bytes estimator counts it.
    pub json_len: usize,
}

impl ItemFacts {
    pub fn of(item: &Value) -> ItemFacts {
        ItemFacts {
            digest: item_digest(item),
            json_len: json_len(item),
        }
    }
}

/// The result [`plan`](super::plan) would give, when it needs no fold call and no parsed item; `None` otherwise.
/// Only for the bytes estimator (a token count needs the text).
pub fn quick_plan(
    facts: &[ItemFacts],
    records: &[FoldRecord],
    config: &FoldConfig,
) -> Option<FoldResult> {
    if config.estimator != Estimator::Bytes {
        return None;
    }
    let tokens_before = array_len(facts.iter().map(|f| f.json_len)).div_ceil(4);
    if config.mode == FoldMode::Off || tokens_before <= config.budget {
        let report = FoldReport::quiet(Outcome::None, 0, tokens_before, tokens_before);
        return Some(FoldResult {
            rewrite: Rewrite::Unchanged,
            report,
            record: None,
            failed: None,
        });
    }
    let chain = chain_of_digests(facts.iter().map(|f| &f.digest));
    let base = Base::find(records, &chain);
    base.prefix_hash.as_ref()?;
    let tail = facts.get(base.split..).unwrap_or_default();
    let head_lens = base.head.iter().map(json_len);
    let tokens_unfolded = array_len(head_lens.chain(tail.iter().map(|f| f.json_len))).div_ceil(4);
    (tokens_unfolded <= config.budget).then(|| base.keep(tokens_before, tokens_unfolded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::{Plan, chain, plan};
    use serde_json::json;

    fn items(n: usize) -> Vec<Value> {
        let mut v = vec![json!({"type":"message","role":"user","content":"task"})];
        for i in 0..n {
            v.push(json!({"type":"function_call","call_id":format!("c{i}"),"name":"sh","arguments":"{}"}));
            v.push(json!({"type":"function_call_output","call_id":format!("c{i}"),"output":"x".repeat(400)}));
        }
        v
    }

    fn facts(items: &[Value]) -> Vec<ItemFacts> {
        items.iter().map(ItemFacts::of).collect()
    }

    fn plan_result(
        items: &[Value],
        records: &[FoldRecord],
        config: &FoldConfig,
    ) -> Option<FoldResult> {
        let input = crate::fold::FoldInput {
            items,
            model: "m",
            records,
            failed: None,
            config,
            compact_supported: true,
            now_unix: 0,
        };
        match plan(input) {
            Plan::Done(r) => Some(r),
            Plan::Fold(_) => None,
        }
    }

    #[test]
    fn digests_chain_like_values() {
        let items = items(5);
        let from_facts = chain_of_digests(facts(&items).iter().map(|f| &f.digest));
        assert_eq!(from_facts, chain(&items));
    }

    #[test]
    fn agrees_with_plan_within_budget_and_on_reuse() {
        let items = items(20);
        let config = FoldConfig {
            budget: 1_000_000,
            ..FoldConfig::default()
        };
        assert_eq!(
            quick_plan(&facts(&items), &[], &config),
            plan_result(&items, &[], &config)
        );

        let config = FoldConfig {
            budget: 2_000,
            ..FoldConfig::default()
        };
        let split = 30;
        let record = FoldRecord {
            v: crate::fold::RECORD_VERSION,
            split,
            prefix_hash: chain(&items)[split].clone(),
            output: vec![
                json!({"type":"message","role":"user","content":"Summary of the conversation so far:\n\nS"}),
            ],
            pinned: vec![],
            tokens_before: 9_999,
            created_at_unix: 1,
        };
        let quick = quick_plan(&facts(&items), std::slice::from_ref(&record), &config);
        assert!(matches!(
            quick.as_ref().map(|r| r.report.outcome),
            Some(Outcome::Reused)
        ));
        assert_eq!(
            quick,
            plan_result(&items, std::slice::from_ref(&record), &config)
        );
        // Over budget with no record: a fold is due, which only `plan` decides.
        assert_eq!(quick_plan(&facts(&items), &[], &config), None);
        // A record for another prefix does not match.
        let mut other = record.clone();
        other.prefix_hash = "0".repeat(64);
        assert_eq!(quick_plan(&facts(&items), &[other], &config), None);
    }
}

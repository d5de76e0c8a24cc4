//! Per-item facts kept across turns, so a long transcript is not re-parsed and re-hashed on every turn.
//!
//! Part of the turn's shared facts: the fold stage reads them for its routine decisions and the first item's digest
//! names the conversation (`Turn::anchor_key`).
//!
//! The fold's routine decisions (within budget, or reuse a stored fold) need only each item's canonical digest and
//! JSON length ([`ItemFacts`]), so those are remembered by a hash of the item's bytes and only new items are
//! parsed. The memo holds facts, never content.

use super::memo::Memo;
use crate::fold::ItemFacts;
use crate::responses::Item;

/// Items remembered per generation; two generations at most.
const CAPACITY: usize = 100_000;

pub struct FactsCache {
    memo: Memo<ItemFacts>,
}

impl Default for FactsCache {
    fn default() -> Self {
        FactsCache {
            memo: Memo::new(CAPACITY),
        }
    }
}

impl FactsCache {
    /// Facts of every item, in order; `None` if an item does not parse.
    pub fn facts(&self, items: &[Item]) -> Option<Vec<ItemFacts>> {
        let keys: Vec<u128> = items.iter().map(Item::content_key).collect();
        let mut known = self.memo.get_many(&keys);
        let mut fresh = Vec::new();
        for (i, slot) in known.iter_mut().enumerate() {
            if slot.is_none() {
                let facts = ItemFacts::of(items[i].value()?);
                *slot = Some(facts);
                fresh.push((keys[i], facts));
            }
        }
        self.memo.insert_many(fresh);
        known.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use crate::responses::RequestBody;

    #[test]
    fn facts_match_the_values_and_are_remembered() {
        let body = RequestBody::parse(bytes::Bytes::from_static(
            br#"{"input":[{"b":1, "a":"x"},{"type":"message","role":"user","content":"hi"}]}"#,
        ))
        .unwrap();
        let items = body.items().unwrap();
        let cache = FactsCache::default();
        let first = cache.facts(items).unwrap();
        assert_eq!(first[0], ItemFacts::of(items[0].value().unwrap()));
        assert_eq!(cache.memo.len(), 2);
        assert_eq!(cache.facts(items).unwrap(), first);
    }
}

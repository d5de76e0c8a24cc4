//! Per-item facts kept across turns, so a long transcript is not re-parsed and re-hashed on every turn.
//!
//! A coding agent resends its whole transcript each turn; all but the newest items are byte-identical to the last
//! turn's. The fold's routine decisions (within budget, or reuse a stored fold) need only each item's canonical
//! digest and JSON length ([`ItemFacts`]), so those are remembered here by a fast 128-bit hash of the item's bytes
//! and only new items are parsed. The cache holds facts, never content, and is bounded: two generations, the older
//! dropped whole when the newer fills.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::fold::ItemFacts;
use crate::responses::Item;

/// Items remembered per generation; two generations at most.
const GENERATION_CAPACITY: usize = 100_000;

#[derive(Default)]
struct Generations {
    current: HashMap<u128, ItemFacts>,
    previous: HashMap<u128, ItemFacts>,
}

#[derive(Default)]
pub struct FactsCache {
    inner: Mutex<Generations>,
}

impl FactsCache {
    /// Facts of every item, in order; `None` if an item does not parse.
    pub fn facts(&self, items: &[Item]) -> Option<Vec<ItemFacts>> {
        let keys: Vec<u128> = items.iter().map(key_of).collect();
        let mut known: Vec<Option<ItemFacts>> = {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            keys.iter().map(|k| g.get(*k)).collect()
        };
        let mut fresh = Vec::new();
        for (i, slot) in known.iter_mut().enumerate() {
            if slot.is_none() {
                let facts = ItemFacts::of(items[i].value()?);
                *slot = Some(facts);
                fresh.push((keys[i], facts));
            }
        }
        if !fresh.is_empty() {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            for (k, f) in fresh {
                g.insert(k, f);
            }
        }
        known.into_iter().collect()
    }
}

impl Generations {
    fn get(&mut self, key: u128) -> Option<ItemFacts> {
        if let Some(f) = self.current.get(&key) {
            return Some(*f);
        }
        let f = self.previous.remove(&key)?;
        self.insert(key, f);
        Some(f)
    }

    fn insert(&mut self, key: u128, facts: ItemFacts) {
        if self.current.len() >= GENERATION_CAPACITY {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, facts);
    }
}

fn key_of(item: &Item) -> u128 {
    match item.raw_bytes() {
        Some(raw) => xxhash_rust::xxh3::xxh3_128(raw),
        None => {
            let text = item.value().map(|v| v.to_string()).unwrap_or_default();
            xxhash_rust::xxh3::xxh3_128(text.as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
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
        assert_eq!(cache.inner.lock().unwrap().current.len(), 2);
        assert_eq!(cache.facts(items).unwrap(), first);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let mut g = Generations::default();
        let f = ItemFacts {
            digest: [0; 32],
            json_len: 1,
        };
        for k in 0..(GENERATION_CAPACITY as u128 * 3) {
            g.insert(k, f);
        }
        assert!(g.current.len() + g.previous.len() <= 2 * GENERATION_CAPACITY);
    }
}

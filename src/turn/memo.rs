//! A small bounded memo keyed by 128-bit content hashes, for per-item work that repeats every turn.
//!
//! Agents resend their whole transcript each turn, so most items a stage looks at it has seen before. Two
//! generations bound the memory: entries go into the current one; when it fills, it becomes the previous one and
//! the old previous is dropped whole; a hit in the previous generation moves the entry forward. That is LRU-like
//! eviction with no per-entry bookkeeping.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

/// Keys are already xxh3 hashes: hashing them again (SipHash, the default) would only cost time.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(word);
        }
    }

    fn write_u128(&mut self, n: u128) {
        self.0 = (n as u64) ^ ((n >> 64) as u64);
    }
}

type KeyMap<V> = HashMap<u128, V, BuildHasherDefault<KeyHasher>>;

struct Generations<V> {
    current: KeyMap<V>,
    previous: KeyMap<V>,
}

pub struct Memo<V> {
    capacity: usize,
    inner: Mutex<Generations<V>>,
}

impl<V: Clone> Memo<V> {
    /// At most `2 × capacity` entries are kept.
    pub fn new(capacity: usize) -> Memo<V> {
        Memo {
            capacity: capacity.max(1),
            inner: Mutex::new(Generations {
                current: KeyMap::default(),
                previous: KeyMap::default(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, key: u128) -> Option<V> {
        let mut g = self.lock();
        self.get_locked(&mut g, key)
    }

    /// Looks up many keys under one lock.
    pub fn get_many(&self, keys: &[u128]) -> Vec<Option<V>> {
        let mut g = self.lock();
        keys.iter().map(|k| self.get_locked(&mut g, *k)).collect()
    }

    pub fn insert(&self, key: u128, value: V) {
        let mut g = self.lock();
        self.insert_locked(&mut g, key, value);
    }

    pub fn insert_many(&self, entries: impl IntoIterator<Item = (u128, V)>) {
        let mut g = self.lock();
        for (k, v) in entries {
            self.insert_locked(&mut g, k, v);
        }
    }

    pub fn len(&self) -> usize {
        let g = self.lock();
        g.current.len() + g.previous.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get_locked(&self, g: &mut Generations<V>, key: u128) -> Option<V> {
        if let Some(v) = g.current.get(&key) {
            return Some(v.clone());
        }
        let v = g.previous.remove(&key)?;
        self.insert_locked(g, key, v.clone());
        Some(v)
    }

    fn insert_locked(&self, g: &mut Generations<V>, key: u128, value: V) {
        if g.current.len() >= self.capacity && !g.current.contains_key(&key) {
            g.previous = std::mem::take(&mut g.current);
        }
        g.current.insert(key, value);
    }
}

/// The 128-bit key of some bytes (xxh3: fast enough to hash a whole transcript every turn).
pub fn key_of(parts: &[&[u8]]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.digest128()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_promotes_recent_hits() {
        let memo = Memo::new(3);
        for k in 0..3u128 {
            memo.insert(k, k);
        }
        memo.insert(3, 3); // rolls the generation: 0..3 previous, 3 current
        assert_eq!(memo.get(0), Some(0)); // promoted
        for k in 10..13u128 {
            memo.insert(k, k);
        }
        assert!(memo.len() <= 6);
        assert_eq!(memo.get(99), None);
    }

    #[test]
    fn keys_separate_their_parts() {
        assert_ne!(key_of(&[b"ab", b"c"]), key_of(&[b"a", b"bc"]));
    }
}

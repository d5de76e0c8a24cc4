//! A small, fast, deterministic hasher for the compressors' counting maps.
//!
//! In the request path the compressors count and deduplicate borrowed line slices (census of dropped lines,
//! repeated error lines, duplicate rows) — one map operation per line of a possibly multi-megabyte output.
//! The std SipHash is DoS-resistant but several times slower on short keys; these maps live for one call and
//! their iteration order is never observed (results are sorted), so a multiply-rotate hash (the FxHash
//! scheme used inside rustc) is the right trade. No dependency: it is a dozen lines.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_work() {
        let mut m: FastMap<&str, usize> = FastMap::default();
        for w in ["a", "bb", "a", "a longer key than eight bytes", "a"] {
            *m.entry(w).or_insert(0) += 1;
        }
        assert_eq!(m.get("a"), Some(&3));
        assert_eq!(m.len(), 3);
        let s: FastSet<&str> = ["x", "x", "y"].into_iter().collect();
        assert_eq!(s.len(), 2);
    }
}

//! The input items of an earlier body, remembered so that a later body starting with the same bytes is not split
//! again, and the digests of a body's item prefixes that tell a settled head from a changed one.
//!
//! Agents resend the whole transcript on every turn: the next body's `input` begins with every item of the last
//! one, byte for byte. Splitting those bytes again costs about 2.6 instructions a byte (stage 1's masks and the
//! grammar walk); hashing them costs about 0.8, and a hash over them is needed anyway (the compress stage's
//! settled head is recognised by one). So [`super::split`], on reaching the first item of `input`, checks the
//! tenant's remembered item lists ([`KnownItems`]): where one's bytes follow, byte for byte by a 128-bit xxh3 over
//! all of them, its item spans are taken as they are and the walk resumes after them. The same bytes in the same
//! place in the grammar (the first value of the `input` array) split the same way, so the spans are those a full
//! split finds; a list whose bytes differ in any byte is not used.
//!
//! The digest of item prefix `k` is the xxh3-128 of the body's bytes from the first item's first byte to the end
//! of item `k - 1` (separators included): one streaming pass gives every prefix's digest. A known list keeps its
//! items' prefix digests; a body verified against it takes them over (its bytes are the same) with the hash
//! state of the verification, so only the items after the known ones are hashed again, and the verification
//! itself is one pass with no digest on the way.

use std::ops::Range;
use xxhash_rust::xxh3::Xxh3;

/// Bytes of a known list compared before it is hashed: its first and last few (different conversations of one
/// tenant nearly always differ there, and a mismatch costs nothing to find).
const EDGE: usize = 32;

/// The input items of a body, by where they stood relative to the first item's first byte.
#[derive(Debug)]
pub struct KnownItems {
    /// Each item's span, from the first item's first byte (so the first starts at 0).
    spans: Vec<Range<u32>>,
    /// The length of the bytes from the first item's first byte to the last item's last byte.
    len: usize,
    /// The digest of all of them ([`PrefixDigests`]).
    hash: u128,
    /// The digest of each item prefix: `digests[k]` covers items `..=k` (so the last is `hash`).
    digests: Vec<u128>,
    /// The first and last [`EDGE`] bytes (fewer when shorter).
    first: Vec<u8>,
    last: Vec<u8>,
}

impl KnownItems {
    /// The item list of a body whose items stand at `spans` in `body`, with `digests` their prefix digests
    /// ([`PrefixDigests`]); `None` when there is none, or a digest is missing, or it does not end in `}` (the walk
    /// resumes after the last item with nothing carried over from it: an object's close leaves no string, escape
    /// or literal open), or it is too long to index with `u32`.
    pub fn new(body: &[u8], spans: &[Range<usize>], digests: &[u128]) -> Option<KnownItems> {
        if digests.len() != spans.len() {
            return None;
        }
        let hash = *digests.last()?;
        let start = spans.first()?.start;
        let end = spans.last()?.end;
        let bytes = body.get(start..end)?;
        if bytes.last() != Some(&b'}') || u32::try_from(bytes.len()).is_err() {
            return None;
        }
        let relative = |r: &Range<usize>| -> Option<Range<u32>> {
            Some(u32::try_from(r.start - start).ok()?..u32::try_from(r.end - start).ok()?)
        };
        Some(KnownItems {
            spans: spans.iter().map(relative).collect::<Option<Vec<_>>>()?,
            len: bytes.len(),
            hash,
            digests: digests.to_vec(),
            first: bytes[..bytes.len().min(EDGE)].to_vec(),
            last: bytes[bytes.len().saturating_sub(EDGE)..].to_vec(),
        })
    }

    /// The length of the items' bytes, first item's first byte to last item's last.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many items the list holds.
    pub fn items(&self) -> usize {
        self.spans.len()
    }

    /// The digest of all the list's bytes: what names it.
    pub fn hash(&self) -> u128 {
        self.hash
    }

    /// Whether `rest` (the body from a first item's first byte) is long enough for this list and has its first
    /// and last bytes where the list has them: the cheap test before [`Self::verify`] hashes them all.
    pub fn may_match(&self, rest: &[u8]) -> bool {
        rest.get(..self.len)
            .is_some_and(|bytes| bytes.starts_with(&self.first) && bytes.ends_with(&self.last))
    }

    /// Whether `rest` (the body from a first item's first byte) begins with exactly this list's bytes; if so,
    /// the items' spans (offset by `at`, where `rest` begins in the body) and the digests computed on the way.
    pub fn verify(&self, rest: &[u8], at: usize) -> Option<(Vec<Range<usize>>, Verified)> {
        if !self.may_match(rest) {
            return None;
        }
        let bytes = rest.get(..self.len)?;
        let mut state = Box::new(Xxh3::new());
        state.update(bytes);
        if state.digest128() != self.hash {
            return None;
        }
        let digests = PrefixDigests {
            state: Some(state),
            hashed: self.len,
            digests: self.digests.clone(),
        };
        let spans = self
            .spans
            .iter()
            .map(|r| at + r.start as usize..at + r.end as usize)
            .collect();
        Some((
            spans,
            Verified {
                known: self.hash,
                digests,
            },
        ))
    }
}

/// What [`KnownItems::verify`] established: the list it matched, and the digests of the item prefixes it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The hash of the known list matched (so the book can replace it by the body's own, longer list).
    pub known: u128,
    pub digests: PrefixDigests,
}

/// The digests of a body's item prefixes, computed in one streaming pass from the first item's first byte.
#[derive(Clone, Default)]
pub struct PrefixDigests {
    /// Boxed, and made when first needed: the state is some 600 bytes, and a body (so every turn's future, moved
    /// whole into its box) would carry them inline, hashed or not.
    state: Option<Box<Xxh3>>,
    /// How many bytes (from the first item's first byte) the state has taken in.
    hashed: usize,
    /// Digest `k` covers items `..=k`.
    pub digests: Vec<u128>,
}

/// Two are equal when they took in as many bytes and recorded the same digests (the state follows from those).
impl PartialEq for PrefixDigests {
    fn eq(&self, other: &Self) -> bool {
        self.hashed == other.hashed && self.digests == other.digests
    }
}

impl Eq for PrefixDigests {}

impl std::fmt::Debug for PrefixDigests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixDigests")
            .field("hashed", &self.hashed)
            .field("digests", &self.digests.len())
            .finish()
    }
}

impl PrefixDigests {
    /// Hashes `bytes` (the body from the first item's first byte) on to each end in `ends` (relative to the same
    /// byte, increasing, none before what was already hashed), recording the digest at each.
    pub fn extend(&mut self, bytes: &[u8], ends: impl IntoIterator<Item = usize>) {
        for end in ends {
            // Ends out of order or past the bytes cannot come from a split; stopping keeps digest `k` that of
            // items `..=k` (later prefixes then have none).
            let Some(more) = bytes.get(self.hashed..end) else {
                break;
            };
            let state = self.state.get_or_insert_with(|| Box::new(Xxh3::new()));
            state.update(more);
            self.hashed = end;
            self.digests.push(state.digest128());
        }
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;

    fn digests_of(bytes: &[u8], ends: &[usize]) -> Vec<u128> {
        let mut d = PrefixDigests::default();
        d.extend(bytes, ends.iter().copied());
        d.digests
    }

    #[test]
    fn a_prefix_digest_is_the_one_shot_hash_of_that_prefix() {
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let ends = [1, 17, 240, 241, 1024, 1025, 4999, 5000];
        let got = digests_of(&bytes, &ends);
        let want: Vec<u128> = ends
            .iter()
            .map(|e| xxhash_rust::xxh3::xxh3_128(&bytes[..*e]))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_known_list_is_verified_only_on_its_own_bytes() {
        let body = br#"{"input":[{"a":1}, {"b":"x"},{"c":[2]}],"z":0}"#;
        let spans = vec![10..17, 19..28, 29..38];
        assert_eq!(&body[29..38], br#"{"c":[2]}"#);
        let all = digests_of(&body[10..], &[7, 18, 28]);
        let known = KnownItems::new(body, &spans, &all).unwrap();
        assert_eq!((known.items(), known.len()), (3, 28));
        // The same items later in another body.
        let later = br#"{"model":"m","input":[{"a":1}, {"b":"x"},{"c":[2]},{"d":3}]}"#;
        let (got, verified) = known.verify(&later[22..], 22).unwrap();
        assert_eq!(got, vec![22..29, 31..40, 41..50]);
        assert_eq!(verified.digests.digests, all);
        assert_eq!(verified.known, known.hash());
        // The state goes on where the verification stopped: the next prefix's digest is the one-shot hash.
        let mut digests = verified.digests;
        digests.extend(&later[22..], [36]);
        assert_eq!(
            digests.digests[3],
            xxhash_rust::xxh3::xxh3_128(&later[22..58])
        );
        // One byte different, in the middle (the edges still match): not verified.
        let changed = br#"{"model":"m","input":[{"a":1}, {"b":"y"},{"c":[2]},{"d":3}]}"#;
        assert!(known.verify(&changed[22..], 22).is_none());
        // Shorter than the list: not verified.
        assert!(known.verify(&later[22..40], 22).is_none());
    }

    #[test]
    fn a_list_that_does_not_end_with_an_object_is_not_kept() {
        let body = br#"[{"a":1},2]"#;
        let both = [1..8, 9..10];
        let first = &both[..1];
        assert!(KnownItems::new(body, &both, &[0, 0]).is_none());
        assert!(KnownItems::new(body, &[], &[]).is_none());
        assert!(KnownItems::new(body, first, &[0]).is_some());
        assert!(
            KnownItems::new(body, first, &[]).is_none(),
            "a digest missing"
        );
    }
}

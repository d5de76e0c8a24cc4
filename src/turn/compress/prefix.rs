//! What the compress stage decided for the head of a conversation, so a turn examines only its new items.
//!
//! Agents resend the whole transcript on every turn, and the stage's decision for an item, once made, never
//! changes (prefix stability). So after a turn the stage remembers, per tenant and conversation anchor, how far it
//! got with every candidate settled — "decided through item k" — with the compressed forms of those items and the
//! few facts of them that later items still read (where the outputs and user messages stand, the first user
//! message, the outputs a repeat may point back to, and those items' shapes). The next turn checks that its first
//! k items are the same bytes (the digest of the client's bytes from the first item through item k - 1,
//! [`RequestBody::head_digest`]: computed while the split verified the known items of the last body, so the head
//! is hashed once per turn and split not at all) and that the positions that allowed them still allow them; then
//! it replays
//! the forms and looks only at items k and later. Anything else falls back to the whole transcript, which is also
//! what a cold memo or a restart does: the replayed bytes are by construction the ones the full pass would send.
//!
//! A few prefixes are kept per anchor, since conversations that begin alike (the same system prompt, no
//! `prompt_cache_key`) share one.

use std::sync::Arc;

use super::scan::Scan;
use super::{CompressStage, Compression};
use crate::responses::RequestBody;
use crate::responses::shape::Shape;
use crate::turn::memo::{Memo, key_of};

/// Conversations remembered per generation; two generations at most.
const CAPACITY: usize = 4096;
/// Prefixes remembered per anchor.
const PER_ANCHOR: usize = 4;

/// A settled head of a conversation: items `..items` decided, and what later items need to know of them.
#[derive(Debug, Default)]
pub(super) struct Decided {
    /// How many leading items are settled.
    pub items: usize,
    /// Fingerprint of those items' bytes ([`RequestBody::head_digest`]).
    pub fingerprint: u128,
    /// The shapes (with longest text) of the items among them that a later turn reads: the first user message and
    /// the last outputs. Read from here, they need no key of their own (a hash of the item's bytes) to be found.
    pub shapes: Vec<(usize, Arc<(Shape, usize)>)>,
    /// The compressed forms among them, in order.
    pub rewrites: Vec<(usize, Arc<Compression>)>,
    /// Candidates among them skipped every turn for their tool (counted on every turn, as the full pass does).
    pub excluded: u64,
    /// Whether the conversation carries a marker by then (the expand tool is paid for).
    pub has_marker: bool,
    /// While it carries none: the estimated saving of the texts among them that wait for the first marker.
    pub waiting_saving: u64,
    /// Index of the first user message, if among them.
    pub first_user: Option<usize>,
    /// User messages among them, and the positions of the last few (as many as recent turns are protected).
    pub users: usize,
    pub recent_users: Vec<usize>,
    /// Positions of the last few function outputs (as many as recent outputs are protected).
    pub recent_function_outputs: Vec<usize>,
    /// Outputs among them, and the positions of the last [`crate::ctxzip::repeats::WINDOW`] (what a new output's
    /// repeats may point back to).
    pub outputs: usize,
    pub recent_outputs: Vec<usize>,
    /// The last function output and the last live-zone item the positions allowed: a later turn whose positions no
    /// longer allow them takes the full pass.
    pub last_allowed_output: Option<usize>,
    pub last_allowed_live: Option<usize>,
}

impl Decided {
    /// Seals a head of the transcript in `body`, settled through `self.items`; `None` when its items are not all
    /// the client's bytes where the client put them (nothing then recognises it on a later turn).
    pub fn seal(mut self, body: &RequestBody) -> Option<Decided> {
        self.fingerprint = body.head_digest(self.items)?;
        Some(self)
    }

    fn matches(&self, body: &RequestBody) -> bool {
        self.items > 0 && body.head_digest(self.items) == Some(self.fingerprint)
    }

    /// The remembered shape of item `i`, if it is one a later turn reads.
    pub fn shape(&self, i: usize) -> Option<Arc<(Shape, usize)>> {
        self.shapes
            .binary_search_by_key(&i, |(at, _)| *at)
            .ok()
            .and_then(|at| self.shapes.get(at))
            .map(|(_, s)| s.clone())
    }
}

/// The settled heads of recent conversations, by tenant and anchor.
pub(super) struct Heads {
    memo: Memo<Arc<Vec<Arc<Decided>>>>,
}

impl Default for Heads {
    fn default() -> Self {
        Heads {
            memo: Memo::new(CAPACITY),
        }
    }
}

/// The memo key of a conversation.
pub(super) fn conversation_key(tenant: &str, anchor_key: &str) -> u128 {
    key_of(&[b"heads", tenant.as_bytes(), anchor_key.as_bytes()])
}

impl Heads {
    /// The longest remembered head that the transcript in `body` starts with.
    pub fn find(&self, conversation: u128, body: &RequestBody) -> Option<Arc<Decided>> {
        let mut heads: Vec<Arc<Decided>> = self.memo.get(conversation)?.as_ref().clone();
        heads.sort_by_key(|d| std::cmp::Reverse(d.items));
        heads.into_iter().find(|d| d.matches(body))
    }

    /// Remembers `head` for the conversation, in place of `replaced` (the head this turn started from) or of the
    /// oldest one.
    pub fn remember(&self, conversation: u128, replaced: Option<&Arc<Decided>>, head: Decided) {
        if head.items == 0 {
            return;
        }
        let mut heads: Vec<Arc<Decided>> = self
            .memo
            .get(conversation)
            .map(|h| h.as_ref().clone())
            .unwrap_or_default();
        if let Some(old) = replaced {
            heads.retain(|h| !Arc::ptr_eq(h, old));
        }
        heads.retain(|h| h.fingerprint != head.fingerprint || h.items != head.items);
        heads.insert(0, Arc::new(head));
        heads.truncate(PER_ANCHOR);
        self.memo.insert(conversation, Arc::new(heads));
    }
}

/// What a turn learned of the candidates it examined, for the head the next turn starts from.
#[derive(Default)]
pub(super) struct Settled {
    /// The first candidate left open (protected by its position for now, or met a store fault).
    pub first_open: Option<usize>,
    /// Candidates skipped for their tool.
    pub excluded: Vec<usize>,
    /// Candidates that already carry a marker.
    pub markers: Vec<usize>,
    /// Candidates the positions let through, and whether each is a function output.
    pub allowed: Vec<(usize, bool)>,
    /// Candidates whose saving waits for the conversation's first marker, with that saving.
    pub waiting: Vec<(usize, u64)>,
}

impl Settled {
    pub fn open(&mut self, index: usize) {
        self.first_open = Some(self.first_open.map_or(index, |f| f.min(index)));
    }
}

impl CompressStage {
    /// Remembers the conversation's head settled through the first open candidate (all items when none is), grown
    /// from `head` by what this turn examined (`settled`, and `rewrites`, the forms it found past `head`).
    pub(super) fn remember_head(
        &self,
        conversation: u128,
        scan: &Scan,
        head: Option<&Arc<Decided>>,
        (settled, rewrites): (&Settled, &[(usize, Arc<Compression>)]),
        body: &RequestBody,
    ) {
        let through = settled.first_open.unwrap_or(scan.len());
        if head.is_some_and(|h| h.items >= through) {
            return;
        }
        let last_allowed = |function: bool| {
            let allowed = settled
                .allowed
                .iter()
                .filter(|(i, f)| *f == function && *i < through);
            allowed.map(|(i, _)| *i).max()
        };
        let decided = Decided {
            rewrites: rewrites
                .iter()
                .filter(|(i, _)| *i < through)
                .cloned()
                .collect(),
            excluded: settled.excluded.iter().filter(|i| **i < through).count() as u64,
            has_marker: settled.markers.iter().any(|i| *i < through)
                || rewrites.iter().any(|(i, _)| *i < through),
            waiting_saving: settled
                .waiting
                .iter()
                .filter(|(i, _)| *i < through)
                .map(|(_, saved)| saved)
                .sum(),
            last_allowed_output: last_allowed(true),
            last_allowed_live: last_allowed(false),
            ..Decided::default()
        };
        let previous = head.map(Arc::as_ref);
        if let Some(sealed) = scan.seal(&self.settings, previous, through, decided, body) {
            self.heads.remember(conversation, head, sealed);
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
    use crate::responses::RequestBody;

    /// A body whose input items are the numbers `ids`.
    fn body(ids: &[u32]) -> RequestBody {
        let input: Vec<String> = ids.iter().map(|i| format!("{{\"n\":{i}}}")).collect();
        let text = format!("{{\"input\":[{}]}}", input.join(","));
        RequestBody::parse(bytes::Bytes::from(text)).unwrap()
    }

    fn head(items: usize, ids: &[u32]) -> Decided {
        let b = body(ids);
        Decided {
            items,
            ..Decided::default()
        }
        .seal(&b)
        .unwrap()
    }

    fn find(heads: &Heads, conv: u128, ids: &[u32]) -> Option<usize> {
        heads.find(conv, &body(ids)).map(|d| d.items)
    }

    #[test]
    fn a_head_is_found_only_where_the_transcript_starts_with_its_items() {
        let heads = Heads::default();
        let conv = conversation_key("t", "a");
        heads.remember(conv, None, head(2, &[1, 2, 3]));
        assert_eq!(find(&heads, conv, &[1, 2, 9, 9]), Some(2));
        assert_eq!(find(&heads, conv, &[1, 3, 3]), None, "an item changed");
        assert_eq!(find(&heads, conv, &[1]), None, "the transcript is shorter");
        assert_eq!(find(&heads, conversation_key("u", "a"), &[1, 2]), None);
        // Items a stage rewrote are not the client's bytes: no head is sealed or found on them.
        let mut b = body(&[1, 2]);
        b.replace_item(1, serde_json::json!({"n": 2}));
        assert!(heads.find(conv, &b).is_none());
        // Nor on the client's items moved from where the client put them.
        let mut b = body(&[7, 1, 2]);
        let mut items = b.take_items().unwrap();
        items.remove(0);
        b.replace_items(items);
        assert!(heads.find(conv, &b).is_none());
    }

    #[test]
    fn a_head_is_the_same_bytes_separators_included() {
        let heads = Heads::default();
        let conv = conversation_key("t", "a");
        heads.remember(conv, None, head(2, &[1, 2, 3]));
        let spaced = RequestBody::parse(bytes::Bytes::from(
            r#"{"input":[{"n":1}, {"n":2},{"n":3}]}"#,
        ))
        .unwrap();
        assert!(heads.find(conv, &spaced).is_none());
        let same = RequestBody::parse(bytes::Bytes::from(
            r#"{"model":"x","input":[{"n":1},{"n":2}]}"#,
        ))
        .unwrap();
        assert_eq!(heads.find(conv, &same).map(|d| d.items), Some(2));
    }

    #[test]
    fn conversations_that_begin_alike_keep_their_own_heads() {
        let heads = Heads::default();
        let conv = conversation_key("t", "a");
        heads.remember(conv, None, head(2, &[1, 2]));
        heads.remember(conv, None, head(2, &[1, 5]));
        assert_eq!(find(&heads, conv, &[1, 2, 7]), Some(2));
        assert_eq!(find(&heads, conv, &[1, 5, 7]), Some(2));
        // A longer head of the first replaces the one it grew from.
        let first = heads.find(conv, &body(&[1, 2, 7])).unwrap();
        heads.remember(conv, Some(&first), head(3, &[1, 2, 7]));
        assert_eq!(find(&heads, conv, &[1, 2, 7, 8]), Some(3));
        assert_eq!(heads.memo.get(conv).unwrap().len(), 2);
        for k in 10..20 {
            heads.remember(conv, None, head(2, &[1, k]));
        }
        assert_eq!(heads.memo.get(conv).unwrap().len(), PER_ANCHOR);
    }
}

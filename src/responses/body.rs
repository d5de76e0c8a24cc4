//! Parse and re-serialize a `/v1/responses` request body without disturbing what no stage rewrote.
//!
//! Every member keeps its span in the client's bytes. When the input items are untouched (the common turn that
//! only gets the expand tool and directive added), the body sent upstream is the client's bytes with just the
//! replaced members spliced in and new members added before the closing brace: no key is re-encoded, and the
//! client's formatting survives. When a stage rewrote the input, the members are written out in their order,
//! untouched slices copied verbatim (`write`). Each input item keeps the client's bytes too until a stage
//! replaces it (`item`).

mod item;
mod write;

use super::known::{KnownItems, PrefixDigests};
use super::split::{SplitInput, split_known};
use bytes::Bytes;
pub use item::Item;
use serde_json::Value;
use std::ops::Range;
use std::sync::{Arc, Mutex};
pub use write::encode;
use write::write_value;

/// One member of the top-level object: a slice of the original body until a stage replaces it.
#[derive(Debug)]
enum Member {
    Raw(Bytes),
    Replaced(Value),
}

/// A top-level member with where its value stood in the client's bytes (`None` for a member a stage added).
#[derive(Debug)]
struct Slot {
    key: String,
    member: Member,
    span: Option<Range<usize>>,
}

/// The `input` member: a plain string (the server holds the history) or a list of items.
#[derive(Debug)]
pub enum Input {
    Text(String),
    Items(Vec<Item>),
}

/// A parsed request body. Built by [`RequestBody::parse`]; written by [`RequestBody::to_bytes`].
#[derive(Debug)]
pub struct RequestBody {
    original: Bytes,
    members: Vec<Slot>,
    input: Option<Input>,
    /// Where `input` stood among the members, so it is written back in place.
    input_position: Option<usize>,
    changed: bool,
    /// Whether a stage replaced an input item or the item list (the client's `input` bytes no longer apply).
    input_changed: bool,
    /// Where the client's input items stood in `original`.
    item_spans: Vec<Range<usize>>,
    /// The digests of the client's item prefixes ([`super::known`]): taken over from the known item list the
    /// first items were, and extended as far as a stage asks (a turn's settled head ends before its live zone,
    /// whose items need not be hashed for it).
    digests: Mutex<PrefixDigests>,
    /// The hash of the known item list the first items were, if any.
    known: Option<u128>,
}

#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("request body is not a JSON object: {0}")]
    NotAnObject(String),
    #[error("request body `input` is neither a string nor an array")]
    BadInput,
    /// Valid JSON, but readers disagree on which copy counts (serde_json and Python keep the last, a streaming
    /// reader the first): whatever the proxy edited could be the copy the upstream ignores, so it edits nothing.
    #[error("request body names the top-level member `{0}` more than once")]
    RepeatedMember(String),
}

/// The first key that names two members, if any. A body has a handful of members, so pairs are compared.
fn repeated_key(members: &[(String, Range<usize>)]) -> Option<&str> {
    members.iter().enumerate().find_map(|(i, (key, _))| {
        members
            .get(..i)?
            .iter()
            .any(|(earlier, _)| earlier == key)
            .then_some(key.as_str())
    })
}

impl RequestBody {
    /// Splits the client's bytes into members and items ([`super::split`]): the members and items are slices of
    /// `original`; only the keys and a string `input` are decoded.
    pub fn parse(original: Bytes) -> Result<RequestBody, BodyError> {
        RequestBody::parse_known(original, &[])
    }

    /// As [`Self::parse`], taking the first input items from one of `known` where they are its bytes (the split
    /// then does not walk them: [`super::known`]).
    pub fn parse_known(
        original: Bytes,
        known: &[Arc<KnownItems>],
    ) -> Result<RequestBody, BodyError> {
        let split = split_known(&original, known)?;
        if let Some(key) = repeated_key(&split.members) {
            return Err(BodyError::RepeatedMember(key.to_owned()));
        }
        let input_position = split.input.as_ref().map(|(at, _)| *at);
        let mut item_spans = Vec::new();
        let input = split.input.map(|(_, input)| match input {
            SplitInput::Text(text) => Input::Text(text),
            SplitInput::Items(spans) => {
                let items = spans
                    .iter()
                    .enumerate()
                    .map(|(i, span)| Item::raw(original.slice(span.clone()), i))
                    .collect();
                item_spans = spans;
                Input::Items(items)
            }
        });
        let (digests, known) = match split.verified {
            Some(verified) => (verified.digests, Some(verified.known)),
            None => (PrefixDigests::default(), None),
        };
        let members = split
            .members
            .into_iter()
            .enumerate()
            .map(|(i, (key, span))| {
                if Some(i) == input_position {
                    // The input is kept split into items.
                    Slot {
                        key,
                        member: Member::Raw(Bytes::new()),
                        span: None,
                    }
                } else {
                    Slot {
                        key,
                        member: Member::Raw(original.slice(span.clone())),
                        span: Some(span),
                    }
                }
            })
            .collect();
        Ok(RequestBody {
            original,
            members,
            input,
            input_position,
            changed: false,
            input_changed: false,
            item_spans,
            digests: Mutex::new(digests),
            known,
        })
    }

    /// The digests of the client's item prefixes, hashed on through item `k - 1` (`None` past the last item).
    fn digests_through(&self, k: usize) -> Option<std::sync::MutexGuard<'_, PrefixDigests>> {
        let mut digests = self.digests.lock().unwrap_or_else(|p| p.into_inner());
        let done = digests.digests.len();
        if done < k {
            let start = self.item_spans.first()?.start;
            let ends = self.item_spans.get(done..k)?.iter().map(|s| s.end - start);
            digests.extend(self.original.get(start..)?, ends);
        }
        (digests.digests.len() >= k).then_some(digests)
    }

    /// The digest of the client's bytes from the first input item through item `k - 1` (the separators between
    /// them included): how a later turn recognises a head of the transcript as the same bytes. `None` unless
    /// `k > 0` and the first `k` items are the client's, where the client put them.
    pub fn head_digest(&self, k: usize) -> Option<u128> {
        let head = self.items()?.get(..k)?;
        if k == 0
            || head
                .iter()
                .enumerate()
                .any(|(i, item)| item.origin != Some(i))
        {
            return None;
        }
        self.digests_through(k)?.digests.get(k - 1).copied()
    }

    /// How many bytes the client's input items span, first item's first byte to last item's last.
    pub fn items_span_len(&self) -> usize {
        match (self.item_spans.first(), self.item_spans.last()) {
            (Some(first), Some(last)) => last.end - first.start,
            _ => 0,
        }
    }

    /// The client's input items as a known list for the tenant's next body ([`super::known`]).
    pub fn known_items(&self) -> Option<KnownItems> {
        let digests = self.digests_through(self.item_spans.len())?;
        KnownItems::new(&self.original, &self.item_spans, &digests.digests)
    }

    /// The hash of the known item list this body's first items were taken from, if any.
    pub fn known_used(&self) -> Option<u128> {
        self.known
    }

    /// Whether any stage changed the body.
    pub fn is_changed(&self) -> bool {
        self.changed
    }

    pub fn original(&self) -> &Bytes {
        &self.original
    }

    /// A top-level member as a value (the first one when a key is duplicated).
    pub fn get(&self, key: &str) -> Option<Value> {
        self.members
            .iter()
            .find(|slot| slot.key == key)
            .and_then(|slot| match &slot.member {
                Member::Raw(raw) => serde_json::from_slice(raw).ok(),
                Member::Replaced(v) => Some(v.clone()),
            })
    }

    /// A top-level member's value as it will be written: the client's bytes, or the encoding of what a stage put
    /// there; `None` when absent.
    pub fn member_bytes(&self, key: &str) -> Option<std::borrow::Cow<'_, [u8]>> {
        self.members
            .iter()
            .find(|slot| slot.key == key)
            .map(|slot| match &slot.member {
                Member::Raw(raw) => std::borrow::Cow::Borrowed(&raw[..]),
                Member::Replaced(v) => std::borrow::Cow::Owned(encode(v).to_vec()),
            })
    }

    /// Replaces (or appends) a top-level member other than `input` with a value already encoded as JSON.
    pub fn set_encoded(&mut self, key: &str, encoded: Bytes) {
        self.put(key, Member::Raw(encoded));
    }

    /// How many bytes a top-level member's value is written as (0 when absent), without parsing it.
    pub fn member_len(&self, key: &str) -> usize {
        self.member_bytes(key).map_or(0, |b| b.len())
    }

    /// A top-level string member, without parsing anything else.
    pub fn get_str(&self, key: &str) -> Option<String> {
        match self.get(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Replaces (or appends) a top-level member other than `input`.
    pub fn set(&mut self, key: &str, value: Value) {
        self.put(key, Member::Replaced(value));
    }

    fn put(&mut self, key: &str, member: Member) {
        self.changed = true;
        match self.members.iter_mut().find(|slot| slot.key == key) {
            Some(slot) => slot.member = member,
            None => self.members.push(Slot {
                key: key.to_string(),
                member,
                span: None,
            }),
        }
    }

    /// Appends `element` to the array member `key`, keeping the bytes of the elements already there (the client's
    /// tools stay exactly as sent). A missing member becomes a one-element array; a member that is not an array is
    /// left alone and `false` returned.
    pub fn append_to_array(&mut self, key: &str, element: &Value) -> bool {
        let mut encoded = Vec::new();
        write_value(&mut encoded, element);
        self.append_encoded_to_array(key, &encoded)
    }

    /// As [`Self::append_to_array`], with the element already encoded as JSON (a constant the caller encoded
    /// once, such as the expand tool).
    pub fn append_encoded_to_array(&mut self, key: &str, encoded: &[u8]) -> bool {
        let Some(Slot { member, .. }) = self.members.iter_mut().find(|slot| slot.key == key) else {
            let mut array = Vec::with_capacity(encoded.len() + 2);
            array.push(b'[');
            array.extend_from_slice(encoded);
            array.push(b']');
            self.members.push(Slot {
                key: key.to_string(),
                member: Member::Raw(Bytes::from(array)),
                span: None,
            });
            self.changed = true;
            return true;
        };
        let current = match member {
            Member::Raw(raw) => raw.to_vec(),
            Member::Replaced(v) => {
                let mut out = Vec::new();
                write_value(&mut out, v);
                out
            }
        };
        if current.first() != Some(&b'[') || current.last() != Some(&b']') {
            return false;
        }
        let inner = &current[1..current.len() - 1];
        let mut out = Vec::with_capacity(current.len() + encoded.len() + 1);
        out.extend_from_slice(&current[..current.len() - 1]);
        if inner.iter().any(|b| !b.is_ascii_whitespace()) {
            out.push(b',');
        }
        out.extend_from_slice(encoded);
        out.push(b']');
        *member = Member::Raw(Bytes::from(out));
        self.changed = true;
        true
    }

    /// Whether any input item (or a string input) carries `needle` in the bytes it will be sent as.
    pub fn input_contains(&self, needle: &[u8]) -> bool {
        self.input_any(|hay| contains(hay, needle))
    }

    /// Whether `has` holds for the input's text or the JSON bytes of one of its items.
    pub fn input_any(&self, has: impl Fn(&[u8]) -> bool) -> bool {
        match &self.input {
            Some(Input::Text(t)) => has(t.as_bytes()),
            Some(Input::Items(items)) => items.iter().any(|i| has(i.sent_bytes())),
            None => false,
        }
    }

    pub fn input(&self) -> Option<&Input> {
        self.input.as_ref()
    }

    /// The input items, when `input` is a list.
    pub fn items(&self) -> Option<&[Item]> {
        match &self.input {
            Some(Input::Items(items)) => Some(items),
            _ => None,
        }
    }

    /// Replaces one input item.
    pub fn replace_item(&mut self, index: usize, value: Value) -> bool {
        self.put_item(index, Item::rewritten(value))
    }

    /// Replaces one input item with JSON a stage wrote before (see [`Item::rewritten_encoded`]).
    pub fn replace_item_encoded(&mut self, index: usize, encoded: Bytes) -> bool {
        self.put_item(index, Item::rewritten_encoded(encoded))
    }

    /// Puts `item` at `index` of the item list; `false` (nothing changed) when there is no such item.
    fn put_item(&mut self, index: usize, item: Item) -> bool {
        match &mut self.input {
            Some(Input::Items(items)) if index < items.len() => {
                items[index] = item;
                self.changed = true;
                self.input_changed = true;
                true
            }
            _ => false,
        }
    }

    /// Replaces the whole item list (a fold does this); raw items carried over keep their bytes.
    pub fn replace_items(&mut self, items: Vec<Item>) {
        self.input = Some(Input::Items(items));
        self.changed = true;
        self.input_changed = true;
    }

    /// Takes the items out for a stage that rebuilds the list; put them back with [`Self::replace_items`].
    pub fn take_items(&mut self) -> Option<Vec<Item>> {
        match self.input.take() {
            Some(Input::Items(items)) => {
                self.input_changed = true;
                Some(items)
            }
            other => {
                self.input = other;
                None
            }
        }
    }
}

/// Substring search (SIMD-accelerated: this runs over the whole transcript on every turn).
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;

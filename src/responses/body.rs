//! Parse and re-serialize a `/v1/responses` request body without disturbing what no stage rewrote.
//!
//! Every member keeps its span in the client's bytes. When the input items are untouched (the common turn that
//! only gets the expand tool and directive added), the body sent upstream is the client's bytes with just the
//! replaced members spliced in and new members added before the closing brace: no key is re-encoded, and the
//! client's formatting survives. When a stage rewrote the input, the members are written out in their order,
//! untouched slices copied verbatim.

use super::known::{KnownItems, PrefixDigests};
use super::split::{SplitInput, split_known};
use bytes::Bytes;
use serde_json::Value;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

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

/// One `input` item: the client's bytes (parsed on first use, at most once per request), or the value a stage
/// put in its place.
#[derive(Debug)]
pub struct Item {
    raw: Option<Bytes>,
    parsed: OnceLock<Option<Value>>,
    /// A rewritten item's JSON, written once: the stages measure an item (the fold's estimate, the compress
    /// stage's shares) and the body is written from it, and a 1 MB transcript's compressed items were serialized
    /// again for each. Shared bytes, so a form remembered across turns is not written again on each.
    encoded: OnceLock<Bytes>,
    key: OnceLock<u128>,
    /// For the client's items, the item's index in the body's `input` (so a list a stage rebuilt still tells
    /// which items stand where the client put them: [`RequestBody::head_digest`]).
    origin: Option<usize>,
}

impl Item {
    fn raw(raw: Bytes, origin: usize) -> Item {
        Item {
            raw: Some(raw),
            parsed: OnceLock::new(),
            encoded: OnceLock::new(),
            key: OnceLock::new(),
            origin: Some(origin),
        }
    }

    pub fn rewritten(value: Value) -> Item {
        Item {
            raw: None,
            parsed: OnceLock::from(Some(value)),
            encoded: OnceLock::new(),
            key: OnceLock::new(),
            origin: None,
        }
    }

    /// An item a stage rewrote earlier and kept as JSON: sent as these bytes, parsed only if a stage asks for
    /// its value.
    pub fn rewritten_encoded(encoded: Bytes) -> Item {
        Item {
            raw: None,
            parsed: OnceLock::new(),
            encoded: OnceLock::from(encoded),
            key: OnceLock::new(),
            origin: None,
        }
    }

    /// Whether the item will be sent as the client's bytes.
    pub fn is_raw(&self) -> bool {
        self.raw.is_some()
    }

    /// The item as a JSON value; `None` only for bytes that do not parse (the client's always do, since the body
    /// parsed, and so do the stages' own).
    pub fn value(&self) -> Option<&Value> {
        self.parsed
            .get_or_init(|| {
                let bytes = self
                    .raw
                    .as_deref()
                    .or_else(|| self.encoded.get().map(|b| &b[..]));
                bytes.and_then(|b| serde_json::from_slice(b).ok())
            })
            .as_ref()
    }

    /// A 128-bit hash of the bytes the item will be sent as, computed once per request: how the stages recognise
    /// an item they have seen on an earlier turn without parsing it.
    pub fn content_key(&self) -> u128 {
        *self
            .key
            .get_or_init(|| xxhash_rust::xxh3::xxh3_128(self.sent_bytes()))
    }

    /// The bytes the item will be sent as: the client's for a raw item, else its JSON, written once.
    fn sent_bytes(&self) -> &[u8] {
        match &self.raw {
            Some(raw) => raw,
            None => self.encoded.get_or_init(|| {
                self.value()
                    .map_or_else(|| Bytes::from_static(b"null"), encode)
            }),
        }
    }

    /// The client's bytes for a raw item.
    pub fn raw_bytes(&self) -> Option<&[u8]> {
        self.raw.as_deref()
    }

    /// Length in bytes of the item's JSON as it will be sent (exact for raw items).
    pub fn json_len(&self) -> usize {
        self.sent_bytes().len()
    }

    /// Writes the item as it will be sent: a raw item's bytes are copied without being parsed.
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.sent_bytes());
    }
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

    /// A top-level string member, without parsing anything else.
    pub fn get_str(&self, key: &str) -> Option<String> {
        match self.get(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Replaces (or appends) a top-level member other than `input`.
    pub fn set(&mut self, key: &str, value: Value) {
        self.changed = true;
        match self.members.iter_mut().find(|slot| slot.key == key) {
            Some(slot) => slot.member = Member::Replaced(value),
            None => self.members.push(Slot {
                key: key.to_string(),
                member: Member::Replaced(value),
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

    /// The bytes to send upstream: the original when nothing changed; the original with the changed members
    /// spliced in when the input is untouched; else the members in their order with untouched slices copied
    /// verbatim.
    pub fn to_bytes(&self) -> Bytes {
        if !self.changed {
            return self.original.clone();
        }
        if !self.input_changed {
            if let Some(spliced) = self.splice() {
                return Bytes::from(spliced);
            }
        }
        let mut out = Vec::with_capacity(self.original.len());
        out.push(b'{');
        for (i, slot) in self.members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_value(&mut out, &Value::String(slot.key.clone()));
            out.push(b':');
            if Some(i) == self.input_position {
                self.write_input(&mut out, &slot.member);
            } else {
                write_member(&mut out, &slot.member);
            }
        }
        out.push(b'}');
        Bytes::from(out)
    }

    /// The client's bytes with every member a stage replaced written over its old value and every member a stage
    /// added inserted before the closing brace; all other bytes (keys, whitespace, the input) as the client sent
    /// them. `None` when the body's shape does not allow it (the caller then writes the members out).
    fn splice(&self) -> Option<Vec<u8>> {
        let original = &self.original[..];
        let close = original.iter().rposition(|b| *b == b'}')?;
        let mut out = Vec::with_capacity(original.len() + 4096);
        let mut cursor = 0;
        let mut members_before = false;
        let mut added = Vec::new();
        for (i, slot) in self.members.iter().enumerate() {
            if Some(i) == self.input_position {
                // The input is untouched: its bytes are copied with the rest.
                members_before = true;
                continue;
            }
            let Some(span) = &slot.span else {
                added.push(slot);
                continue;
            };
            members_before = true;
            if span.start < cursor || span.end > close {
                return None;
            }
            if is_slice_of(&slot.member, original, span) {
                continue;
            }
            out.extend_from_slice(&original[cursor..span.start]);
            write_member(&mut out, &slot.member);
            cursor = span.end;
        }
        out.extend_from_slice(&original[cursor..close]);
        for slot in added {
            if members_before {
                out.push(b',');
            }
            members_before = true;
            write_value(&mut out, &Value::String(slot.key.clone()));
            out.push(b':');
            write_member(&mut out, &slot.member);
        }
        out.extend_from_slice(&original[close..]);
        Some(out)
    }

    /// Writes `input` from its items (its raw member slot is empty: the items are the member).
    fn write_input(&self, out: &mut Vec<u8>, fallback: &Member) {
        match &self.input {
            Some(Input::Items(items)) => {
                out.push(b'[');
                for (j, item) in items.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Some(Input::Text(text)) => write_value(out, &Value::String(text.clone())),
            None => write_member(out, fallback),
        }
    }
}

/// Substring search (SIMD-accelerated: this runs over the whole transcript on every turn).
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// Whether `member` is still exactly the client's bytes at `span` (not replaced, not rewritten in place).
fn is_slice_of(member: &Member, original: &[u8], span: &Range<usize>) -> bool {
    match (member, original.get(span.clone())) {
        (Member::Raw(raw), Some(at)) => raw.as_ptr() == at.as_ptr() && raw.len() == at.len(),
        _ => false,
    }
}

fn write_member(out: &mut Vec<u8>, member: &Member) {
    match member {
        Member::Raw(raw) => out.extend_from_slice(raw),
        Member::Replaced(v) => write_value(out, v),
    }
}

fn write_value(out: &mut Vec<u8>, v: &Value) {
    // Serializing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

/// A value's JSON as shared bytes: how a rewritten item is sent.
pub fn encode(v: &Value) -> Bytes {
    let mut out = Vec::new();
    write_value(&mut out, v);
    Bytes::from(out)
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;

//! One item of a request's `input`. A transcript is mostly items no stage touches, so an item stays the client's
//! bytes — parsed only when a stage asks for its value, hashed once for the stages to recognise it across turns —
//! until a stage puts a value (or JSON it wrote before) in its place; either way it knows the bytes it will be sent
//! as.

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use super::encode;

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
    /// which items stand where the client put them: [`RequestBody::head_digest`](super::RequestBody::head_digest)).
    pub(super) origin: Option<usize>,
}

impl Item {
    pub(super) fn raw(raw: Bytes, origin: usize) -> Item {
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
    pub(super) fn sent_bytes(&self) -> &[u8] {
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
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.sent_bytes());
    }
}

//! The bytes a body is sent upstream as. Prompt caching keys on exact prefix bytes, so the body is written from the
//! client's own bytes wherever it can be: unchanged, the original itself; with only members other than `input`
//! replaced or added (the common turn, which gets the expand tool and directive), the original with those spliced
//! in; with the input rewritten, the members in their order, every untouched member and item copied as it came.

use std::ops::Range;

use bytes::Bytes;
use serde_json::Value;

use super::{Input, Member, RequestBody};

impl RequestBody {
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

pub(super) fn write_value(out: &mut Vec<u8>, v: &Value) {
    // Serializing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

/// A value's JSON as shared bytes: how a rewritten item is sent.
pub fn encode(v: &Value) -> Bytes {
    let mut out = Vec::new();
    write_value(&mut out, v);
    Bytes::from(out)
}

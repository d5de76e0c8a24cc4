//! The identity of an item and of a conversation, whatever the client's whitespace or key order.
//!
//! Each item is reduced to canonical JSON — object keys sorted recursively by their bytes, no whitespace, strings
//! escaped and numbers printed exactly as `serde_json` prints them — and hashed ([`item_digest`]). A conversation is
//! named by its [`anchor`]: the request's `prompt_cache_key`, else the first item's digest. The compress stage keeps
//! a conversation's compressed forms under it and the fold stage its fold records, so both must compute it the same
//! way: here, once per turn (see `Turn::anchor_key`).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical JSON text of `item`: keys sorted recursively, no whitespace.
pub fn canonical(item: &Value) -> String {
    let mut out = String::new();
    write_canonical(item, &mut out);
    out
}

/// SHA-256 of the canonical JSON of `item`.
pub fn item_digest(item: &Value) -> [u8; 32] {
    Sha256::digest(canonical(item).as_bytes()).into()
}

/// The conversation anchor fold records are stored under: the request's `prompt_cache_key`
/// when it has one (clients set it to their thread id), else a hash of the canonical first
/// item. The two forms carry different prefixes (`key:` / `item:`), so a client's key can
/// never collide with an item hash; an empty input anchors as `empty`. Several records may
/// share an anchor (e.g. conversations opening with the same system prompt): they are told
/// apart by prefix hash, so a shared anchor only costs a longer list.
pub fn anchor(prompt_cache_key: Option<&str>, first_item: Option<&Value>) -> String {
    anchor_of_digest(prompt_cache_key, first_item.map(item_digest).as_ref())
}

/// [`anchor`] from the first item's digest, for a caller that already has it.
pub fn anchor_of_digest(prompt_cache_key: Option<&str>, first_digest: Option<&[u8; 32]>) -> String {
    match (prompt_cache_key.filter(|k| !k.is_empty()), first_digest) {
        (Some(key), _) => format!("key:{key}"),
        (None, Some(digest)) => format!("item:{}", hex(digest)),
        (None, None) => "empty".to_owned(),
    }
}

/// The anchor as a store key: hashed, so any `prompt_cache_key` is a safe, fixed-length key.
pub fn anchor_key(anchor: &str) -> String {
    hex(&Sha256::digest(anchor.as_bytes())[..12])
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, out),
        Value::Array(values) => {
            out.push('[');
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
    }
}

/// A JSON string escaped the way `serde_json` escapes it: `"` and `\`, the short forms of
/// the common control characters, `\u00XX` for the others, everything else verbatim.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                out.push_str("\\u00");
                out.push_str(&hex(&[c as u8]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

//! Prefix identity: how a later transcript is recognised as beginning with a prefix that was
//! folded (or failed to fold), whatever the client's whitespace or key order.
//!
//! Each item is reduced to canonical JSON — object keys sorted recursively by their bytes,
//! no whitespace, strings escaped and numbers printed exactly as `serde_json` prints them —
//! and hashed. The hashes are chained: `h_0 = sha256("")`, `h_i = sha256(h_{i-1} ‖
//! sha256(canonical(item_i)))` over the raw 32-byte digests, rendered as lowercase hex. The
//! identity of the first `n` items is `chain[n]`, so one pass over a transcript gives the
//! identity of every prefix, and matching a stored record is one comparison.
//!
//! This module also names a conversation ([`anchor`]) and a pending fold
//! ([`single_flight_key`]), both built from the same canonical hashing.

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

/// The hash chain of `items`: `n + 1` lowercase-hex hashes, `chain[k]` identifying
/// `items[..k]` (`chain[0]` is the empty prefix).
pub fn chain(items: &[Value]) -> Vec<String> {
    let mut hashes = Vec::with_capacity(items.len() + 1);
    let mut link: [u8; 32] = Sha256::digest(b"").into();
    hashes.push(hex(&link));
    for item in items {
        link = next_link(&link, item);
        hashes.push(hex(&link));
    }
    hashes
}

/// The identity of `items[..n]`, `None` when the transcript is shorter than `n`.
pub fn prefix_hash(items: &[Value], n: usize) -> Option<String> {
    let prefix = items.get(..n)?;
    let mut link: [u8; 32] = Sha256::digest(b"").into();
    for item in prefix {
        link = next_link(&link, item);
    }
    Some(hex(&link))
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

/// A key naming one pending fold of one conversation of one tenant, for the proxy to share
/// one summary call among concurrent requests that need the same fold. Each part is
/// length-prefixed so no choice of anchor can make two different triples collide.
pub fn single_flight_key(tenant: &str, anchor: &str, prefix_hash: &str) -> String {
    format!(
        "{}:{tenant}|{}:{anchor}|{prefix_hash}",
        tenant.len(),
        anchor.len()
    )
}

fn next_link(previous: &[u8; 32], item: &Value) -> [u8; 32] {
    link(previous, &item_digest(item))
}

/// One step of the chain from an item's digest.
pub fn link(previous: &[u8; 32], digest: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(previous);
    hasher.update(digest);
    hasher.finalize().into()
}

/// The hash chain from item digests (see [`chain`]); the same result without the items' values.
pub fn chain_of_digests<'a>(digests: impl ExactSizeIterator<Item = &'a [u8; 32]>) -> Vec<String> {
    let mut hashes = Vec::with_capacity(digests.len() + 1);
    let mut current: [u8; 32] = Sha256::digest(b"").into();
    hashes.push(hex(&current));
    for digest in digests {
        current = link(&current, digest);
        hashes.push(hex(&current));
    }
    hashes
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or(Value::Null)
    }

    #[test]
    fn canonical_sorts_keys_recursively_and_matches_serde_escaping() {
        let item = parse(r#"{ "b": [ {"z":1, "a":2.5} ], "a": "x\"y\n\u0001é" }"#);
        assert_eq!(
            canonical(&item),
            r#"{"a":"x\"y\n\u0001é","b":[{"a":2.5,"z":1}]}"#
        );
        let s = "ctl \u{7}\u{1f}\u{8}\u{c}\t\r\\ ✓";
        assert_eq!(
            canonical(&json!(s)),
            serde_json::to_string(s).unwrap_or_default()
        );
    }

    #[test]
    fn whitespace_and_key_order_do_not_change_a_prefix_identity() {
        let a = vec![
            parse(r#"{"type":"message","role":"user","content":"hi"}"#),
            parse(r#"{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}"#),
        ];
        let b = vec![
            parse("{ \"content\" : \"hi\",\n \"role\":\"user\", \"type\":\"message\" }"),
            parse(r#"{"arguments":"{}", "name":"f", "call_id":"c1", "type":"function_call"}"#),
        ];
        assert_eq!(chain(&a), chain(&b));
        assert_eq!(prefix_hash(&a, 2), prefix_hash(&b, 2));
    }

    #[test]
    fn different_content_or_order_changes_the_identity() {
        let a = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"role": "user", "content": "there"}),
        ];
        let changed = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"role": "user", "content": "There"}),
        ];
        let swapped = vec![a[1].clone(), a[0].clone()];
        let ca = chain(&a);
        assert_eq!(ca[1], chain(&changed)[1]);
        assert_ne!(ca[2], chain(&changed)[2]);
        assert_ne!(ca[2], chain(&swapped)[2]);
    }

    #[test]
    fn chain_has_one_hash_per_prefix_and_agrees_with_prefix_hash() {
        let items: Vec<Value> = (0..5)
            .map(|i| json!({"role": "user", "content": i}))
            .collect();
        let c = chain(&items);
        assert_eq!(c.len(), 6);
        assert_eq!(
            c[0],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        for (n, hash) in c.iter().enumerate() {
            assert_eq!(prefix_hash(&items, n).as_ref(), Some(hash));
        }
        assert_eq!(prefix_hash(&items, 6), None);
        assert!(c.iter().all(|h| {
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }));
    }

    #[test]
    fn anchor_forms_cannot_collide() {
        let item = json!({"role": "developer", "content": "sys"});
        assert_eq!(anchor(Some("thread-1"), Some(&item)), "key:thread-1");
        let by_item = anchor(None, Some(&item));
        assert!(by_item.starts_with("item:"));
        assert_eq!(anchor(Some(""), Some(&item)), by_item);
        assert_ne!(anchor(Some(&by_item), None), by_item);
        assert_eq!(anchor(None, None), "empty");
    }

    #[test]
    fn single_flight_keys_are_injective() {
        assert_ne!(
            single_flight_key("t", "a|1:b", "h"),
            single_flight_key("t|1:a", "b", "h")
        );
        assert_eq!(
            single_flight_key("t", "a", "h"),
            single_flight_key("t", "a", "h")
        );
    }
}

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
//! A pending fold is named by [`single_flight_key`]; the canonical form of an item and the conversation
//! [`anchor`] are facts of the turn, kept in [`crate::responses::identity`].

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use crate::responses::identity::{anchor, anchor_of_digest, canonical, hex, item_digest};

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

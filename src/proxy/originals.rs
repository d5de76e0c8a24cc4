//! How originals and their compressed forms are kept in the store.
//!
//! An original is the exact text a marker stands for; it is stored under its hash (per tenant) with a small header
//! saying where it came from. The compressed form is stored per conversation anchor, so the same original in the
//! same conversation always becomes the same bytes — after a restart or a configuration change too. Both records
//! carry a format version and tolerate unknown fields, so an upgrade or a rollback never strands them.

use serde::{Deserialize, Serialize};

pub const RECORD_VERSION: u32 = 1;

/// What is known of an original besides its text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginalMeta {
    pub v: u32,
    /// The tool whose output this was (empty for a message).
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub kind: String,
    /// The relevance terms the compression used.
    #[serde(default)]
    pub query: Vec<String>,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub tokens_before: u64,
    #[serde(default)]
    pub tokens_after: u64,
}

/// Encodes an original record: the header as one JSON line, then the original's bytes untouched.
pub fn encode_original(meta: &OriginalMeta, original: &str) -> Vec<u8> {
    let mut out = serde_json::to_vec(meta).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out.extend_from_slice(original.as_bytes());
    out
}

/// Splits an original record into its header and text; `None` if it is not one.
pub fn decode_original(bytes: &[u8]) -> Option<(OriginalMeta, String)> {
    let newline = bytes.iter().position(|b| *b == b'\n')?;
    let meta: OriginalMeta = serde_json::from_slice(&bytes[..newline]).ok()?;
    let text = String::from_utf8(bytes[newline + 1..].to_vec()).ok()?;
    Some((meta, text))
}

/// A stored compressed form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompressedForm {
    pub v: u32,
    pub text: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub tokens_before: u64,
    #[serde(default)]
    pub tokens_after: u64,
    /// The conversation decided, at first sight, to send this original verbatim (its saving could not pay for
    /// its marker then): remembered so that every later turn, and a restart, sends the same bytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verbatim: bool,
}

/// Store key of a compressed form: per conversation anchor, per original.
pub fn compressed_key(anchor_key: &str, hash: &str) -> String {
    format!("{anchor_key}/{hash}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn original_round_trips_byte_for_byte() {
        let meta = OriginalMeta {
            v: RECORD_VERSION,
            tool: "shell".into(),
            ..OriginalMeta::default()
        };
        let text = "line one\n{\"json\": true}\n\u{1f600}\n";
        let (m, t) = decode_original(&encode_original(&meta, text)).unwrap();
        assert_eq!(m, meta);
        assert_eq!(t, text);
        // A later version's extra fields are tolerated.
        let future = b"{\"v\":2,\"tool\":\"x\",\"new_field\":[1]}\nbody";
        assert_eq!(decode_original(future).unwrap().1, "body");
        assert!(decode_original(b"no header").is_none());
    }
}

//! The original behind a marker: the exact text the model may ask back through `context_expand`, stored per
//! tenant under its hash before any request carrying the marker leaves, with a one-line header saying where it
//! came from. It is read back on every expansion and its expiry moved forward while a conversation still carries
//! the marker; the header is JSON, so a later release can add to it without stranding the originals already
//! stored.

use serde::{Deserialize, Serialize};

use super::Records;
use crate::store::{Namespace, Record, Store, StoreError};

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

/// An original as read back, with the expiry its record has now (whether a refresh is due).
#[derive(Debug, Clone)]
pub struct LoadedOriginal {
    pub meta: OriginalMeta,
    pub text: String,
    pub expires_at: Option<u64>,
}

/// Longest slack added to a refreshed expiry.
const REFRESH_SLACK_MAX_SECS: u64 = 60;

/// The slack added when an original's expiry is moved forward: a refresh sets `now + ttl + slack`, and another is
/// due only once the expiry is less than `ttl` away, so a conversation's every turn (or every expansion) does not
/// rewrite the record — for a large original that write copies the whole text.
pub fn refresh_slack(ttl_secs: u64) -> u64 {
    (ttl_secs / 10).clamp(1, REFRESH_SLACK_MAX_SECS)
}

impl Records {
    /// Stores several originals (tenant, hash, text with its meta) in one transaction, durably, on the tracked
    /// task set: no request may carry their markers before this returns.
    pub async fn put_originals_durably(
        &self,
        rows: Vec<(String, String, &OriginalMeta, &str)>,
        expires_at: Option<u64>,
    ) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let records: Vec<(String, String, Record)> = rows
            .into_iter()
            .map(|(tenant, hash, meta, text)| {
                let value = encode_original(meta, text);
                (
                    tenant,
                    hash,
                    Record {
                        value,
                        created_at: now,
                        expires_at,
                    },
                )
            })
            .collect();
        let store = self.store.clone();
        self.tasks
            .spawn(async move { store.put_many(Namespace::Originals, records).await })
            .await
            .map_err(|e| StoreError::Io(format!("store task: {e}")))?
    }

    /// Stores an original under its hash, durably: no request may carry its marker before this returns.
    pub async fn put_original(
        &self,
        tenant: &str,
        hash: &str,
        meta: &OriginalMeta,
        text: &str,
        expires_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let bytes = encode_original(meta, text);
        self.put_bytes_durably(Namespace::Originals, tenant, hash, bytes, expires_at)
            .await
    }

    /// Whether the original is there, live at this clock's now, without reading it.
    pub async fn has_original(&self, tenant: &str, hash: &str) -> Result<bool, StoreError> {
        self.store
            .contains(Namespace::Originals, tenant, hash, self.now())
            .await
    }

    /// Reads an original back (for expansion), live at this clock's now.
    pub async fn load_original(
        &self,
        tenant: &str,
        hash: &str,
    ) -> Result<Option<LoadedOriginal>, StoreError> {
        Ok(self
            .store
            .get(Namespace::Originals, tenant, hash, self.now())
            .await?
            .and_then(|r| {
                let (meta, text) = decode_original(&r.value)?;
                Some(LoadedOriginal {
                    meta,
                    text,
                    expires_at: r.expires_at,
                })
            }))
    }
}

/// Reads an original back from any store (expansion, the CLI, tests).
pub async fn load_original(
    store: &dyn Store,
    tenant: &str,
    hash: &str,
) -> Result<Option<(OriginalMeta, String)>, StoreError> {
    Ok(store
        .get(Namespace::Originals, tenant, hash, crate::store::unix_now())
        .await?
        .and_then(|r| decode_original(&r.value)))
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use crate::store::records::RECORD_VERSION;

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

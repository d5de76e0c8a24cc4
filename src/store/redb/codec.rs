//! How the redb store lays records out: one table per namespace, keyed by `tenant \x1f key`, each value a small
//! header (format version, created, expiry) before the payload, so a later format can be read beside this one.

use std::collections::BTreeMap;

use redb::TableDefinition;

use super::super::{Namespace, Record, StoreError};

pub(super) const FORMAT_V1: u8 = 1;
pub(super) const HEADER_LEN: usize = 17;
pub(super) const KEY_SEPARATOR: char = '\u{1f}';

pub(super) fn table(ns: Namespace) -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(ns.as_str())
}

pub(super) fn full_key(tenant: &str, key: &str) -> String {
    let mut k = String::with_capacity(tenant.len() + 1 + key.len());
    k.push_str(tenant);
    k.push(KEY_SEPARATOR);
    k.push_str(key);
    k
}

pub(super) fn encode(record: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + record.value.len());
    out.push(FORMAT_V1);
    out.extend_from_slice(&record.created_at.to_le_bytes());
    out.extend_from_slice(&record.expires_at.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&record.value);
    out
}

pub(super) fn decode(bytes: &[u8]) -> Result<Record, StoreError> {
    let (created_at, expires_at) = header(bytes)?;
    Ok(Record {
        created_at,
        expires_at,
        value: bytes[HEADER_LEN..].to_vec(),
    })
}

/// A stored value's creation time and expiry, read from its header alone.
pub(super) fn header(bytes: &[u8]) -> Result<(u64, Option<u64>), StoreError> {
    if bytes.len() < HEADER_LEN || bytes[0] != FORMAT_V1 {
        return Err(StoreError::Corrupt(format!(
            "unknown record header ({} bytes)",
            bytes.len()
        )));
    }
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let expires = word(9);
    Ok((word(1), (expires != 0).then_some(expires)))
}

pub(super) fn io<E: std::fmt::Display>(e: E) -> StoreError {
    StoreError::Io(e.to_string())
}

/// A counter set as stored: a JSON object of field → total (a record that is not one reads as empty).
pub(super) fn counter_fields(record: &Record) -> BTreeMap<String, i64> {
    serde_json::from_slice(&record.value).unwrap_or_default()
}

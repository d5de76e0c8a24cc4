//! How a record is laid out in Redis: the value behind a 9-byte header (format version, created), the record's
//! expiry being the key's own (`EXPIRETIME`), so Redis expires it and a read needs no second key.

use redis::{RedisResult, Value};

use super::super::{Record, StoreError};

const FORMAT_V1: u8 = 1;
const HEADER_LEN: usize = 9;

/// A `GET` + `EXPIRETIME` pair as read: the stored bytes and the expiry, `None` when the key is gone.
pub(super) type Stored = Option<(Vec<u8>, i64)>;
/// Index score of a record: its expiry, or +inf when it has none.
pub(super) fn score(expires_at: Option<u64>) -> f64 {
    expires_at.map_or(f64::INFINITY, |t| t as f64)
}

pub(super) fn encode(record: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + record.value.len());
    out.push(FORMAT_V1);
    out.extend_from_slice(&record.created_at.to_le_bytes());
    out.extend_from_slice(&record.value);
    out
}

/// A stored value and the key's `EXPIRETIME` (-1 none, -2 missing) as a record.
pub(super) fn decode(bytes: &[u8], expire_time: i64) -> Result<Record, StoreError> {
    if bytes.len() < HEADER_LEN || bytes[0] != FORMAT_V1 {
        return Err(StoreError::Corrupt(format!(
            "unknown record header ({} bytes)",
            bytes.len()
        )));
    }
    let mut created = [0u8; 8];
    created.copy_from_slice(&bytes[1..HEADER_LEN]);
    Ok(Record {
        created_at: u64::from_le_bytes(created),
        expires_at: u64::try_from(expire_time).ok().filter(|t| *t > 0),
        value: bytes[HEADER_LEN..].to_vec(),
    })
}

/// Reads `GET` + `EXPIRETIME` replies pairwise: `None` for a key that is gone.
pub(super) fn records_from(replies: Vec<Value>) -> RedisResult<Vec<Stored>> {
    let mut out = Vec::with_capacity(replies.len() / 2);
    let mut it = replies.into_iter();
    while let (Some(value), Some(expiry)) = (it.next(), it.next()) {
        let value: Option<Vec<u8>> = redis::from_owned_redis_value(value)?;
        let expiry: i64 = redis::from_owned_redis_value(expiry)?;
        out.push(value.map(|v| (v, expiry)));
    }
    Ok(out)
}

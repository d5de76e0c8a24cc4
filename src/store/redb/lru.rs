//! The redb store's index by expiry and size, so the sweeper and the size bound never read every record.
//!
//! Every write, touch and delete also updates, in the same transaction, one row of `lru_index` — keyed by the
//! record's expiry (big-endian, records without one last), its namespace and its key, holding its size — and the
//! running byte total of its namespace in `meta`. The once-a-minute sweep then reads only the expired rows from the
//! front of the index, and [`evict_to`] reads the totals and deletes from the oldest end until the bound holds:
//! work in proportion to what is removed, not to the store. A file written before the index existed gets it built
//! once, when it is opened.

use redb::{ReadableTable, TableDefinition, WriteTransaction};

use super::codec::{decode, io, table};
use crate::store::{Namespace, StoreError};

const INDEX: TableDefinition<'static, &'static [u8], u64> = TableDefinition::new("lru_index");
const META: TableDefinition<'static, &'static str, u64> = TableDefinition::new("meta");
/// Set in `meta` once the index covers every record.
const BUILT: &str = "lru_index_v1";

fn code(ns: Namespace) -> u8 {
    Namespace::ALL
        .iter()
        .position(|n| *n == ns)
        .map_or(u8::MAX, |p| p as u8)
}

fn namespace(code: u8) -> Option<Namespace> {
    Namespace::ALL.get(usize::from(code)).copied()
}

fn total_key(ns: Namespace) -> String {
    format!("bytes:{}", ns.as_str())
}

/// What the index keeps of one stored value: its expiry (`u64::MAX`: none, or undecodable — never swept) and size.
fn shape(full_key: &str, stored: &[u8]) -> (u64, u64) {
    let expiry = decode(stored)
        .ok()
        .and_then(|r| r.expires_at)
        .unwrap_or(u64::MAX);
    (expiry, (full_key.len() + stored.len()) as u64)
}

fn index_key(expiry: u64, ns: Namespace, full_key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + full_key.len());
    k.extend_from_slice(&expiry.to_be_bytes());
    k.push(code(ns));
    k.extend_from_slice(full_key.as_bytes());
    k
}

/// Splits an index key back into expiry, namespace and record key.
fn parse(key: &[u8]) -> Option<(u64, Namespace, String)> {
    let expiry = u64::from_be_bytes(key.get(..8)?.try_into().ok()?);
    let ns = namespace(*key.get(8)?)?;
    let full_key = String::from_utf8(key.get(9..)?.to_vec()).ok()?;
    Some((expiry, ns, full_key))
}

/// Records in the index that `full_key` of `ns` went from `old` to `new` (stored bytes; `None`: absent).
pub(super) fn note(
    tx: &WriteTransaction,
    ns: Namespace,
    full_key: &str,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Result<(), StoreError> {
    let mut index = tx.open_table(INDEX).map_err(io)?;
    let mut meta = tx.open_table(META).map_err(io)?;
    let total_key = total_key(ns);
    let mut total = meta
        .get(total_key.as_str())
        .map_err(io)?
        .map_or(0, |v| v.value());
    if let Some(old) = old {
        let (expiry, size) = shape(full_key, old);
        index
            .remove(index_key(expiry, ns, full_key).as_slice())
            .map_err(io)?;
        total = total.saturating_sub(size);
    }
    if let Some(new) = new {
        let (expiry, size) = shape(full_key, new);
        index
            .insert(index_key(expiry, ns, full_key).as_slice(), size)
            .map_err(io)?;
        total = total.saturating_add(size);
    }
    meta.insert(total_key.as_str(), total).map_err(io)?;
    Ok(())
}

/// Builds the index when the file has none (written by a release before it): one full read, once.
pub(super) fn ensure_built(tx: &WriteTransaction) -> Result<(), StoreError> {
    let built = tx
        .open_table(META)
        .map_err(io)?
        .get(BUILT)
        .map_err(io)?
        .is_some();
    if built {
        return Ok(());
    }
    for ns in Namespace::ALL {
        let rows: Vec<(String, Vec<u8>)> = {
            let t = tx.open_table(table(ns)).map_err(io)?;
            let mut rows = Vec::new();
            for entry in t.iter().map_err(io)? {
                let (k, v) = entry.map_err(io)?;
                rows.push((k.value().to_string(), v.value().to_vec()));
            }
            rows
        };
        for (k, v) in rows {
            note(tx, ns, &k, None, Some(&v))?;
        }
    }
    tx.open_table(META)
        .map_err(io)?
        .insert(BUILT, 1)
        .map_err(io)?;
    Ok(())
}

/// Removes one record (and its index row) by namespace and full key; true when it was there.
fn remove(tx: &WriteTransaction, ns: Namespace, full_key: &str) -> Result<bool, StoreError> {
    let old = {
        let mut t = tx.open_table(table(ns)).map_err(io)?;
        let removed = t.remove(full_key).map_err(io)?;
        removed.map(|g| g.value().to_vec())
    };
    note(tx, ns, full_key, old.as_deref(), None)?;
    Ok(old.is_some())
}

/// Index rows from the oldest expiry on, while `keep_going` says so: (namespace, full key, size).
fn oldest(
    tx: &WriteTransaction,
    mut keep_going: impl FnMut(u64, Namespace, u64) -> bool,
) -> Result<Vec<(Namespace, String)>, StoreError> {
    let index = tx.open_table(INDEX).map_err(io)?;
    let mut out = Vec::new();
    for entry in index.iter().map_err(io)? {
        let (k, size) = entry.map_err(io)?;
        let Some((expiry, ns, full_key)) = parse(k.value()) else {
            continue;
        };
        if !keep_going(expiry, ns, size.value()) {
            break;
        }
        out.push((ns, full_key));
    }
    Ok(out)
}

/// Deletes every record expired at `now`, reading only the expired end of the index.
pub(super) fn sweep(tx: &WriteTransaction, now: u64) -> Result<u64, StoreError> {
    let expired = oldest(tx, |expiry, _, _| expiry <= now)?;
    let mut removed = 0;
    for (ns, full_key) in expired {
        if remove(tx, ns, &full_key)? {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Deletes the least recently refreshed records of `namespaces` until they hold at most `max_bytes`.
pub(super) fn evict_to(
    tx: &WriteTransaction,
    namespaces: &[Namespace],
    max_bytes: u64,
) -> Result<u64, StoreError> {
    let meta = tx.open_table(META).map_err(io)?;
    let mut total = 0u64;
    for ns in namespaces {
        total += meta
            .get(total_key(*ns).as_str())
            .map_err(io)?
            .map_or(0, |v| v.value());
    }
    drop(meta);
    if total <= max_bytes {
        return Ok(0);
    }
    let victims = oldest(tx, |_, ns, size| {
        if total <= max_bytes {
            return false;
        }
        if namespaces.contains(&ns) {
            total = total.saturating_sub(size);
        }
        true
    })?;
    let mut evicted = 0;
    for (ns, full_key) in victims {
        if namespaces.contains(&ns) && remove(tx, ns, &full_key)? {
            evicted += 1;
        }
    }
    Ok(evicted)
}

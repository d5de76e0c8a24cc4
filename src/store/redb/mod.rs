//! The embedded default store: one redb file, ACID, readable only by its owner.
//!
//! Each [`Namespace`] is a table keyed by `tenant \x1f key`; the value carries a small header (format version,
//! created, expiry) before the payload so a later format can be read beside this one. redb is synchronous, so every
//! call runs on the blocking pool; a commit is durable (fsync) before `put` returns, which is what lets the proxy
//! send a marker only after its original is safe.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use redb::{Database, ReadableTable, ReadableTableMetadata};

use super::{Namespace, Record, Store, StoreError};

mod codec;
mod lru;

use codec::{KEY_SEPARATOR, counter_fields, decode, encode, full_key, header, io, table};

/// Longest a close waits for operations in flight.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A redb-backed [`Store`].
pub struct RedbStore {
    path: PathBuf,
    db: RwLock<Option<Arc<Database>>>,
    /// Locks of [`Store::try_lock`]: one process owns the file, so they live in its memory (key → owner, lapse).
    locks: Mutex<HashMap<String, (String, tokio::time::Instant)>>,
}

impl RedbStore {
    /// Opens (or creates) the store file: the parent directory is created, the file is made mode 0600 and every
    /// table exists afterwards. Any failure is a [`StoreError::Open`] naming the path.
    pub fn open(path: &Path) -> Result<RedbStore, StoreError> {
        let fail = |message: String| StoreError::Open {
            path: path.display().to_string(),
            message,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| fail(format!("cannot create directory {}: {e}", parent.display())))?;
        }
        restrict_permissions(path).map_err(|e| fail(format!("cannot create the file: {e}")))?;
        let db = Database::create(path).map_err(|e| fail(e.to_string()))?;
        let tx = db.begin_write().map_err(|e| fail(e.to_string()))?;
        for ns in Namespace::ALL {
            tx.open_table(table(ns)).map_err(|e| fail(e.to_string()))?;
        }
        lru::ensure_built(&tx).map_err(|e| fail(e.to_string()))?;
        tx.commit().map_err(|e| fail(e.to_string()))?;
        Ok(RedbStore {
            path: path.to_path_buf(),
            db: RwLock::new(Some(Arc::new(db))),
            locks: Mutex::new(HashMap::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn handle(&self) -> Result<Arc<Database>, StoreError> {
        let guard = self.db.read().map_err(|_| StoreError::Closed)?;
        guard.clone().ok_or(StoreError::Closed)
    }

    /// Runs a synchronous redb operation on the blocking pool.
    async fn run<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    {
        let db = self.handle()?;
        tokio::task::spawn_blocking(move || op(&db))
            .await
            .map_err(|e| StoreError::Io(format!("store task failed: {e}")))?
    }

    /// Number of records in a namespace, expired ones included (for tests and stats).
    pub async fn len(&self, ns: Namespace) -> Result<u64, StoreError> {
        self.run(move |db| {
            let tx = db.begin_read().map_err(io)?;
            let t = tx.open_table(table(ns)).map_err(io)?;
            t.len().map_err(io)
        })
        .await
    }
}

#[cfg(unix)]
fn restrict_permissions(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn restrict_permissions(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

#[async_trait]
impl Store for RedbStore {
    async fn get(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        now: u64,
    ) -> Result<Option<Record>, StoreError> {
        let k = full_key(tenant, key);
        self.run(move |db| {
            let tx = db.begin_read().map_err(io)?;
            let t = tx.open_table(table(ns)).map_err(io)?;
            match t.get(k.as_str()).map_err(io)? {
                None => Ok(None),
                Some(v) => {
                    let r = decode(v.value())?;
                    Ok((!r.is_expired(now)).then_some(r))
                }
            }
        })
        .await
    }

    async fn contains(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let k = full_key(tenant, key);
        self.run(move |db| {
            let tx = db.begin_read().map_err(io)?;
            let t = tx.open_table(table(ns)).map_err(io)?;
            match t.get(k.as_str()).map_err(io)? {
                None => Ok(false),
                Some(v) => {
                    let (_, expires_at) = header(v.value())?;
                    Ok(!super::expired(expires_at, now))
                }
            }
        })
        .await
    }

    async fn put(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        record: Record,
    ) -> Result<(), StoreError> {
        let k = full_key(tenant, key);
        self.run(move |db| {
            let tx = db.begin_write().map_err(io)?;
            write(&tx, ns, &k, &encode(&record))?;
            tx.commit().map_err(io)
        })
        .await
    }

    async fn put_many(
        &self,
        ns: Namespace,
        records: Vec<(String, String, Record)>,
    ) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        self.run(move |db| {
            let tx = db.begin_write().map_err(io)?;
            for (tenant, key, record) in &records {
                write(&tx, ns, &full_key(tenant, key), &encode(record))?;
            }
            tx.commit().map_err(io)
        })
        .await
    }

    async fn touch(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        expires_at: Option<u64>,
        now: u64,
    ) -> Result<bool, StoreError> {
        let k = full_key(tenant, key);
        self.run(move |db| {
            let tx = db.begin_write().map_err(io)?;
            let current = {
                let t = tx.open_table(table(ns)).map_err(io)?;
                match t.get(k.as_str()).map_err(io)? {
                    None => None,
                    Some(v) => Some(decode(v.value())?),
                }
            };
            let touched = match current {
                Some(mut r) if !r.is_expired(now) => {
                    r.expires_at = expires_at;
                    write(&tx, ns, &k, &encode(&r))?;
                    true
                }
                _ => false,
            };
            tx.commit().map_err(io)?;
            Ok(touched)
        })
        .await
    }

    async fn delete(&self, ns: Namespace, tenant: &str, key: &str) -> Result<bool, StoreError> {
        let k = full_key(tenant, key);
        self.run(move |db| {
            let tx = db.begin_write().map_err(io)?;
            let old = {
                let mut t = tx.open_table(table(ns)).map_err(io)?;
                let removed = t.remove(k.as_str()).map_err(io)?;
                removed.map(|g| g.value().to_vec())
            };
            lru::note(&tx, ns, &k, old.as_deref(), None)?;
            let removed = old.is_some();
            tx.commit().map_err(io)?;
            Ok(removed)
        })
        .await
    }

    async fn scan_prefix(
        &self,
        ns: Namespace,
        tenant: &str,
        prefix: &str,
        limit: usize,
        now: u64,
    ) -> Result<Vec<(String, Record)>, StoreError> {
        let start = full_key(tenant, prefix);
        let tenant_len = tenant.len() + KEY_SEPARATOR.len_utf8();
        self.run(move |db| {
            let tx = db.begin_read().map_err(io)?;
            let t = tx.open_table(table(ns)).map_err(io)?;
            let mut out = Vec::new();
            for entry in t.range(start.as_str()..).map_err(io)? {
                let (k, v) = entry.map_err(io)?;
                let key = k.value();
                if !key.starts_with(start.as_str()) || out.len() >= limit {
                    break;
                }
                let r = decode(v.value())?;
                if !r.is_expired(now) {
                    out.push((key[tenant_len..].to_string(), r));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn sweep_expired(&self, now: u64) -> Result<u64, StoreError> {
        // Only the expired end of the index is read. A record that cannot be decoded has no expiry there: the
        // sweep never destroys what it does not understand.
        self.run(move |db| {
            let tx = db.begin_write().map_err(io)?;
            let removed = lru::sweep(&tx, now)?;
            tx.commit().map_err(io)?;
            Ok(removed)
        })
        .await
    }

    async fn evict_to(&self, namespaces: &[Namespace], max_bytes: u64) -> Result<u64, StoreError> {
        let namespaces = namespaces.to_vec();
        self.run(move |db| {
            let tx = db.begin_write().map_err(io)?;
            let evicted = lru::evict_to(&tx, &namespaces, max_bytes)?;
            tx.commit().map_err(io)?;
            Ok(evicted)
        })
        .await
    }

    async fn incr_many(
        &self,
        tenant: &str,
        key: &str,
        deltas: &[(&str, i64)],
    ) -> Result<Vec<i64>, StoreError> {
        let k = full_key(tenant, key);
        let deltas: Vec<(String, i64)> = deltas.iter().map(|(f, d)| (f.to_string(), *d)).collect();
        // Read, add and write inside one write transaction: redb runs one writer at a time, so no increment is lost.
        self.run(move |db| {
            let tx = db.begin_write().map_err(io)?;
            let mut fields = {
                let t = tx.open_table(table(Namespace::Counters)).map_err(io)?;
                match t.get(k.as_str()).map_err(io)? {
                    None => BTreeMap::new(),
                    Some(v) => counter_fields(&decode(v.value())?),
                }
            };
            let mut totals = Vec::with_capacity(deltas.len());
            for (field, delta) in deltas {
                let slot = fields.entry(field).or_insert(0i64);
                *slot = slot.saturating_add(delta);
                totals.push(*slot);
            }
            let record = Record {
                value: serde_json::to_vec(&fields).map_err(io)?,
                created_at: 0,
                expires_at: None,
            };
            write(&tx, Namespace::Counters, &k, &encode(&record))?;
            tx.commit().map_err(io)?;
            Ok(totals)
        })
        .await
    }

    async fn counters(&self, tenant: &str, key: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let record = self.get(Namespace::Counters, tenant, key, 0).await?;
        Ok(record
            .map(|r| counter_fields(&r).into_iter().collect())
            .unwrap_or_default())
    }

    async fn counter_tenants(&self, key: &str) -> Result<Vec<String>, StoreError> {
        let suffix = full_key("", key);
        self.run(move |db| {
            let tx = db.begin_read().map_err(io)?;
            let t = tx.open_table(table(Namespace::Counters)).map_err(io)?;
            let mut tenants = Vec::new();
            for entry in t.iter().map_err(io)? {
                let (k, _) = entry.map_err(io)?;
                if let Some(tenant) = k.value().strip_suffix(suffix.as_str())
                    && !tenant.contains(KEY_SEPARATOR)
                {
                    tenants.push(tenant.to_string());
                }
            }
            tenants.sort();
            Ok(tenants)
        })
        .await
    }

    async fn try_lock(
        &self,
        tenant: &str,
        key: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = tokio::time::Instant::now();
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.retain(|_, (_, lapse)| *lapse > now);
        let k = full_key(tenant, key);
        if locks.contains_key(&k) {
            return Ok(false);
        }
        locks.insert(k, (owner.to_string(), now + ttl));
        Ok(true)
    }

    async fn unlock(&self, tenant: &str, key: &str, owner: &str) -> Result<(), StoreError> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        let k = full_key(tenant, key);
        if locks.get(&k).is_some_and(|(held_by, _)| held_by == owner) {
            locks.remove(&k);
        }
        Ok(())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.run(|db| db.begin_read().map(|_| ()).map_err(io)).await
    }

    async fn close(&self) -> Result<(), StoreError> {
        let taken = {
            let mut guard = self.db.write().map_err(|_| StoreError::Closed)?;
            guard.take()
        };
        let Some(db) = taken else {
            return Ok(());
        };
        // Operations already on the blocking pool hold their own handle; the file is released (and can be opened
        // again, e.g. by a restarted process) only when the last one finishes, so wait for them.
        let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
        while Arc::strong_count(&db) > 1 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        drop(db);
        Ok(())
    }
}

/// Writes one stored value and keeps the expiry/size index in step, in the caller's transaction.
fn write(
    tx: &redb::WriteTransaction,
    ns: Namespace,
    full_key: &str,
    stored: &[u8],
) -> Result<(), StoreError> {
    let old = {
        let mut t = tx.open_table(table(ns)).map_err(io)?;
        let old = t.insert(full_key, stored).map_err(io)?;
        old.map(|g| g.value().to_vec())
    };
    lru::note(tx, ns, full_key, old.as_deref(), Some(stored))
}

#[cfg(test)]
mod tests;

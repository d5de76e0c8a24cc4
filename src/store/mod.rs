//! Durable records behind one small trait.
//!
//! Everything ctxgate must remember across requests and restarts — originals behind compression markers, their
//! compressed forms, fold records, failed folds, response-id aliases, counters — is a [`Record`] in a
//! [`Namespace`], keyed by tenant and a key. The proxy never sees a database: it sees this trait, so the embedded
//! redb file (the default) and a shared backend for several replicas are interchangeable. The store knows records,
//! not HTTP or fold logic. What each record holds, and the typed way to read and write it, is [`records`].
//!
//! Two backends: [`redb`] (one file, one process: the default) and [`redis`] (one Redis or Redis Cluster shared by
//! every replica). [`open`] picks one from the config. Besides records, the trait has the two things several
//! replicas need to agree on: counters that add up ([`Store::incr_many`]) and a short lock ([`Store::try_lock`]).

pub mod counts;
pub mod records;
pub mod redb;
pub mod redis;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

/// The kinds of record. Each lives in its own table so a sweep or a size bound can treat them differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// Originals behind `<<ctxzip:HASH …>>` markers, keyed by hash.
    Originals,
    /// Compressed forms, keyed by original hash and the parameters that shaped them.
    Compressed,
    /// Fold records, keyed by conversation anchor and prefix hash.
    Folds,
    /// Failed folds the transform backs off from, keyed by anchor.
    FailedFolds,
    /// Response ids the client saw, mapped to the ids the upstream really issued.
    Aliases,
    /// Running totals and keep-pattern statistics.
    Counters,
}

impl Namespace {
    pub const ALL: [Namespace; 6] = [
        Namespace::Originals,
        Namespace::Compressed,
        Namespace::Folds,
        Namespace::FailedFolds,
        Namespace::Aliases,
        Namespace::Counters,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::Originals => "originals",
            Namespace::Compressed => "compressed",
            Namespace::Folds => "folds",
            Namespace::FailedFolds => "failed_folds",
            Namespace::Aliases => "aliases",
            Namespace::Counters => "counters",
        }
    }
}

/// One stored value with its lifetime. Times are Unix seconds, passed in by the caller so the store has no clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub value: Vec<u8>,
    pub created_at: u64,
    /// `None` = kept until deleted or evicted.
    pub expires_at: Option<u64>,
}

impl Record {
    pub fn is_expired(&self, now: u64) -> bool {
        expired(self.expires_at, now)
    }
}

/// Whether a record expiring at `expires_at` (`None`: never) is gone at `now`.
pub fn expired(expires_at: Option<u64>, now: u64) -> bool {
    expires_at.is_some_and(|t| t <= now)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open store at {path}: {message}")]
    Open { path: String, message: String },
    #[error("store I/O failed: {0}")]
    Io(String),
    #[error("store record is corrupt: {0}")]
    Corrupt(String),
    #[error("store is closed")]
    Closed,
    /// The shared store is down or too slow; calls fail fast until it answers again (the request goes on without
    /// it: fail open).
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// The shared store is down (its health tracker logged that once, when it went down).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }
}

/// Logs a store fault met on the request path: at warn, or at debug when it is the shared store being down — that
/// was logged once, when it went down, and a line per request would bury it.
#[macro_export]
macro_rules! store_fault {
    ($e:expr, $($arg:tt)+) => {
        if $e.is_unavailable() {
            tracing::debug!($($arg)+)
        } else {
            tracing::warn!($($arg)+)
        }
    };
}

/// The record store. Keys are scoped by tenant: no method can reach another tenant's records.
#[async_trait]
pub trait Store: Send + Sync {
    /// The record, unless missing or expired at `now`.
    async fn get(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        now: u64,
    ) -> Result<Option<Record>, StoreError>;
    /// Whether a live record is there at `now`, without reading its value: an original may be megabytes, and
    /// the compress stage only needs to know that the one a remembered form points to is still there.
    async fn contains(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        Ok(self.get(ns, tenant, key, now).await?.is_some())
    }
    /// Writes durably: when this returns Ok the record survives a crash.
    async fn put(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        record: Record,
    ) -> Result<(), StoreError>;
    /// Writes several records durably, in one transaction where the backend has them (the default writes them one
    /// by one). Used for records that are batched off the request path (response-id aliases).
    async fn put_many(
        &self,
        ns: Namespace,
        records: Vec<(String, String, Record)>,
    ) -> Result<(), StoreError> {
        for (tenant, key, record) in records {
            self.put(ns, &tenant, &key, record).await?;
        }
        Ok(())
    }
    /// Moves a live record's expiry; false when there is no live record.
    async fn touch(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        expires_at: Option<u64>,
        now: u64,
    ) -> Result<bool, StoreError>;
    async fn delete(&self, ns: Namespace, tenant: &str, key: &str) -> Result<bool, StoreError>;
    /// Live records of a tenant whose key starts with `prefix`, in key order, at most `limit`.
    async fn scan_prefix(
        &self,
        ns: Namespace,
        tenant: &str,
        prefix: &str,
        limit: usize,
        now: u64,
    ) -> Result<Vec<(String, Record)>, StoreError>;
    /// Deletes every record expired at `now`; returns how many.
    async fn sweep_expired(&self, now: u64) -> Result<u64, StoreError>;
    /// Keeps the records of `namespaces` under `max_bytes` in all (keys and values): the least recently refreshed
    /// (earliest expiry; records without one last) are deleted first. Returns how many were evicted.
    async fn evict_to(&self, namespaces: &[Namespace], max_bytes: u64) -> Result<u64, StoreError>;
    /// Adds each `(field, delta)` to the counter set `key` of `tenant` (Counters namespace), each field
    /// atomically: replicas adding at the same time never lose an increment (no read-modify-write in the caller).
    /// Returns each field's new total, in the order of `deltas` (a total of 1 after adding 1: this caller was
    /// first, on whichever replica).
    async fn incr_many(
        &self,
        tenant: &str,
        key: &str,
        deltas: &[(&str, i64)],
    ) -> Result<Vec<i64>, StoreError>;
    /// The fields of a counter set, in field order (empty when it was never incremented).
    async fn counters(&self, tenant: &str, key: &str) -> Result<Vec<(String, i64)>, StoreError>;
    /// Every tenant that has a counter set `key`, sorted (the operator's view across tenants).
    async fn counter_tenants(&self, key: &str) -> Result<Vec<String>, StoreError>;
    /// Takes the lock `key` of `tenant` for `owner` unless someone holds it; it lapses after `ttl` so a holder that
    /// dies blocks the others no longer than that. True when taken.
    async fn try_lock(
        &self,
        tenant: &str,
        key: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError>;
    /// Releases the lock if `owner` still holds it (a lapsed lock taken over by another owner is left alone).
    async fn unlock(&self, tenant: &str, key: &str, owner: &str) -> Result<(), StoreError>;
    /// Cheap liveness check for `/readyz`.
    async fn ping(&self) -> Result<(), StoreError>;
    /// Flushes and releases the backend; later calls fail with [`StoreError::Closed`].
    async fn close(&self) -> Result<(), StoreError>;
}

/// The current Unix time in seconds, for callers of the store (the store itself takes time as an argument).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Opens the store the config names: the Redis at `[store] url` when set, else the redb file at `[store] path`.
/// `env` supplies the Redis password when `[store] password_env` names one; `health` is where a shared store reports
/// going down and coming back.
pub fn open(
    config: &crate::config::Config,
    env: &dyn crate::config::env::EnvSource,
    health: Arc<redis::health::StoreHealth>,
) -> Result<Arc<dyn Store>, StoreError> {
    match &config.store.redis {
        None => Ok(Arc::new(redb::RedbStore::open(&config.store_path)?)),
        Some(settings) => Ok(Arc::new(redis::RedisStore::open(settings, env, health)?)),
    }
}

//! Every record ctxgate keeps in the store, its key, and the typed way to read and write it.
//!
//! The stages never build a [`Record`] by hand: they read a record as its type with [`Records::get_json`] and
//! write one with [`Records::put_json_durably`] (awaited: a marker's original must be safe before the request
//! carrying the marker leaves) or [`Records::put_json_later`] (in the background, on the tracked task set, so it
//! lands even when the client hangs up). The offline commands and the report read the same types through the same
//! keys. Every record type carries a format version and tolerates unknown fields, so an upgrade or a rollback never
//! strands data.
//!
//! | namespace      | key                        | record                         |
//! |----------------|----------------------------|--------------------------------|
//! | `Originals`    | hash                       | [`OriginalMeta`] line + text   |
//! | `Compressed`   | [`compressed_key`]         | [`CompressedForm`]             |
//! | `Folds`        | [`fold_key`]               | [`FoldRecord`]                 |
//! | `FailedFolds`  | anchor key                 | [`FailedFold`]                 |
//! | `Aliases`      | the response id the client saw | [`Alias`]                  |
//! | `Counters`     | [`SUGGESTIONS_KEY`]        | [`SuggestionBook`] (per tenant) |
//! | `Counters`     | [`SAVINGS_KEY`]            | counter set: [`SavingsTotals`] fields (per tenant) |
//! | `Counters`     | [`TOTALS_KEY`]             | [`SavingsTotals`] of releases before per-tenant counters (no tenant; read only) |
//!
//! An original is the exact text a marker stands for; it is stored under its hash (per tenant) with a small header
//! saying where it came from (`original`). The compressed form is stored per conversation anchor, so the same
//! original in the same conversation always becomes the same bytes — after a restart or a configuration change too.

mod original;

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::task::TaskTracker;

use super::{Namespace, Record, Store, StoreError};
use crate::clock::Clock;
pub use crate::expand::suggest::SuggestionBook;
pub use crate::fold::{FailedFold, FoldRecord};
pub use crate::telemetry::SavingsTotals;
pub use original::{
    LoadedOriginal, OriginalMeta, decode_original, encode_original, load_original, refresh_slack,
};

/// Counter set (per tenant) of the savings totals, one field per [`SavingsTotals`] field: every replica adds to it
/// ([`Store::incr_many`]), so it is the tenant's total across replicas and restarts.
pub const SAVINGS_KEY: &str = "savings";
/// Store key (Counters namespace) of a tenant's keep-pattern statistics.
pub const SUGGESTIONS_KEY: &str = "suggestions";
/// Where releases before [`SAVINGS_KEY`] kept the instance's savings totals (Counters namespace, no tenant): still
/// read by the offline stats, never written.
pub const TOTALS_TENANT: &str = "";
pub const TOTALS_KEY: &str = "savings_totals";
/// Response-id aliases live as long as the upstream keeps responses (30 days).
pub const ALIAS_TTL_SECS: u64 = 30 * 24 * 3600;

use serde::Deserialize;

pub const RECORD_VERSION: u32 = 1;

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
    /// Sent verbatim so far only because the conversation carries no marker yet and its new outputs did not pay
    /// for the first one: compressed together with the others when they do (the tool changes the request's head
    /// then, so the provider reads everything again anyway). Written with `verbatim` set too, so a build that does
    /// not know this flag keeps sending the text as it was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
}

/// Store key of a compressed form: per conversation anchor, per original.
pub fn compressed_key(anchor_key: &str, hash: &str) -> String {
    format!("{anchor_key}/{hash}")
}

/// Store key of a fold record: per conversation anchor, per folded prefix.
pub fn fold_key(anchor_key: &str, prefix_hash: &str) -> String {
    format!("{anchor_key}/{prefix_hash}")
}

/// The key prefix under which a conversation's fold records are listed.
pub fn fold_prefix(anchor_key: &str) -> String {
    format!("{anchor_key}/")
}

/// What ctxgate remembers of a response id it handed a client.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Alias {
    pub v: u32,
    /// The id of the last round the upstream really made.
    pub real_id: String,
    /// Whether that turn's input carried markers (the server-side history then does too).
    #[serde(default)]
    pub markers: bool,
}

/// The store as the stages see it: typed records, the clock that dates them, and the task set that carries
/// writes to completion.
#[derive(Clone)]
pub struct Records {
    store: Arc<dyn Store>,
    tasks: TaskTracker,
    clock: Clock,
    /// Counter increments waiting for their flush ([`Self::count_later`]).
    pending: Arc<super::counts::PendingCounts>,
}

impl Records {
    pub fn new(store: Arc<dyn Store>, tasks: TaskTracker, clock: Clock) -> Records {
        Records {
            store,
            tasks,
            clock,
            pending: Arc::default(),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn now(&self) -> u64 {
        self.clock.unix_now()
    }

    /// The live record at `key`, decoded as `T`; `None` when missing, expired or unreadable as `T` (a record of a
    /// format this build does not know is treated as absent, never misread).
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        get_json(self.store.as_ref(), ns, tenant, key, self.now()).await
    }

    /// The live records of a tenant whose key starts with `prefix` (at most `limit`), each decoded as `T`; the
    /// unreadable ones are skipped.
    pub async fn scan_json<T: DeserializeOwned>(
        &self,
        ns: Namespace,
        tenant: &str,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<T>, StoreError> {
        let rows = self
            .store
            .scan_prefix(ns, tenant, prefix, limit, self.now())
            .await?;
        Ok(rows.iter().filter_map(|(_, r)| decode(r)).collect())
    }

    /// Writes `value` and waits until it is durable; the write itself runs on the tracked task set, so it
    /// completes even if the request that asked for it is cancelled meanwhile.
    pub async fn put_json_durably<T: Serialize>(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        value: &T,
        expires_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let bytes =
            serde_json::to_vec(value).map_err(|e| StoreError::Io(format!("encoding: {e}")))?;
        self.put_bytes_durably(ns, tenant, key, bytes, expires_at)
            .await
    }

    /// Writes `value` in the background (tracked: shutdown waits for it); a failure is logged with `what`.
    pub fn put_json_later<T: Serialize>(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        value: &T,
        expires_at: Option<u64>,
        what: &'static str,
    ) {
        let Ok(bytes) = serde_json::to_vec(value) else {
            tracing::warn!(what, "could not encode a record");
            return;
        };
        let record = Record {
            value: bytes,
            created_at: self.now(),
            expires_at,
        };
        let (store, tenant, key) = (self.store.clone(), tenant.to_string(), key.to_string());
        self.tasks.spawn(async move {
            if let Err(e) = store.put(ns, &tenant, &key, record).await {
                crate::store_fault!(e, error = %e, namespace = ns.as_str(), "could not store {what}");
            }
        });
    }

    /// Writes several records of one namespace in one transaction (where the backend has them), all with the same
    /// expiry; values that do not encode are skipped and logged.
    pub async fn put_many_json<T: Serialize>(
        &self,
        ns: Namespace,
        rows: Vec<(String, String, T)>,
        expires_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let now = self.now();
        let records = rows
            .into_iter()
            .filter_map(|(tenant, key, value)| match serde_json::to_vec(&value) {
                Ok(value) => Some((tenant, key, Record { value, created_at: now, expires_at })),
                Err(e) => {
                    tracing::warn!(error = %e, namespace = ns.as_str(), "could not encode a record");
                    None
                }
            })
            .collect();
        self.store.put_many(ns, records).await
    }

    /// Moves the expiry of live records forward in the background; a failure is logged with `what`.
    pub fn touch_later(
        &self,
        ns_keys: Vec<(Namespace, String)>,
        tenant: &str,
        expires_at: Option<u64>,
        what: &'static str,
    ) {
        if ns_keys.is_empty() {
            return;
        }
        let now = self.now();
        let (store, tenant) = (self.store.clone(), tenant.to_string());
        self.tasks.spawn(async move {
            for (ns, key) in ns_keys {
                if let Err(e) = store.touch(ns, &tenant, &key, expires_at, now).await {
                    crate::store_fault!(e, error = %e, "could not refresh {what}");
                }
            }
        });
    }

    /// Adds `deltas` to the tenant's counter set `key` in the background: summed in memory and flushed within
    /// [`super::counts::FLUSH_AFTER`] by one tracked task (shutdown waits for it); the store adds each field
    /// atomically, so replicas counting at once never lose an increment.
    pub fn count_later(&self, tenant: &str, key: &'static str, deltas: Vec<(&'static str, i64)>) {
        if deltas.iter().all(|(_, d)| *d == 0) || !self.pending.add(tenant, key, &deltas) {
            return;
        }
        let (store, pending) = (self.store.clone(), self.pending.clone());
        self.tasks.spawn(async move {
            tokio::time::sleep(super::counts::FLUSH_AFTER).await;
            for (tenant, key, deltas) in pending.take() {
                if let Err(e) = store.incr_many(&tenant, key, &deltas).await {
                    crate::store_fault!(e, error = %e, "could not add to the {key} counters");
                }
            }
        });
    }

    /// Runs `work` on the tracked task set: it completes even when the request that started it is dropped.
    pub fn spawn<F>(&self, work: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(work)
    }

    async fn put_bytes_durably(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        value: Vec<u8>,
        expires_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let (store, tenant, key) = (self.store.clone(), tenant.to_string(), key.to_string());
        let record = Record {
            value,
            created_at: self.now(),
            expires_at,
        };
        self.tasks
            .spawn(async move { store.put(ns, &tenant, &key, record).await })
            .await
            .map_err(|e| StoreError::Io(format!("store task: {e}")))?
    }
}

/// The live record at `key` in any store, decoded as `T` (the offline commands read through this too).
pub async fn get_json<T: DeserializeOwned>(
    store: &dyn Store,
    ns: Namespace,
    tenant: &str,
    key: &str,
    now: u64,
) -> Result<Option<T>, StoreError> {
    Ok(store
        .get(ns, tenant, key, now)
        .await?
        .and_then(|r| decode(&r)))
}

/// Every tenant's savings counters, sorted by tenant: the operator's view across tenants (`GET /admin/stats` and
/// `ctxgate stats`), on any backend.
pub async fn tenant_savings(store: &dyn Store) -> Result<Vec<(String, SavingsTotals)>, StoreError> {
    let mut out = Vec::new();
    for tenant in store.counter_tenants(SAVINGS_KEY).await? {
        let fields = store.counters(&tenant, SAVINGS_KEY).await?;
        out.push((tenant, SavingsTotals::from_counters(&fields)));
    }
    Ok(out)
}

/// A stored record read as `T`; `None` when it is not one (another format, or corrupt).
pub fn decode<T: DeserializeOwned>(record: &Record) -> Option<T> {
    serde_json::from_slice(&record.value).ok()
}

//! Response-id aliases: what a response id the client saw stands for, batched off the request path.
//!
//! Two things make a later request's `previous_response_id` need ctxgate's help: the id the client saw may stand
//! for a later round the proxy made (a turn with expansion returns the first round's id), and the server-held
//! history behind it may carry markers even when the new input carries none, so the turn must be offered
//! `context_expand`. Every turn that offered the tool is therefore remembered — but only when the upstream keeps
//! the response (`store` not false: an unstored response cannot be named later; Codex sends `store: false`), and
//! never with a store write of its own on the request path: aliases wait in memory and are written together, in
//! one transaction, a short moment after the first of a batch arrived. A lookup sees pending aliases too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::task::TaskTracker;

use crate::store::{Namespace, Record, Store, StoreError, unix_now};

/// Response-id aliases live as long as the upstream keeps responses (30 days).
pub const ALIAS_TTL_SECS: u64 = 30 * 24 * 3600;
/// How long the first alias of a batch waits for others before the batch is written.
const BATCH_WINDOW: Duration = Duration::from_millis(50);

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

type Pending = HashMap<(String, String), Alias>;

pub struct AliasBook {
    store: Arc<dyn Store>,
    tasks: TaskTracker,
    pending: Arc<Mutex<Pending>>,
}

impl AliasBook {
    pub fn new(store: Arc<dyn Store>, tasks: TaskTracker) -> AliasBook {
        AliasBook {
            store,
            tasks,
            pending: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Remembers that `client_id` (the id the client saw) stands for `real_id`, with markers in its history.
    /// Written with the rest of its batch; an empty id is ignored.
    pub fn remember(&self, tenant: &str, client_id: &str, real_id: &str) {
        if client_id.is_empty() || real_id.is_empty() {
            return;
        }
        let alias = Alias {
            v: 1,
            real_id: real_id.to_string(),
            markers: true,
        };
        let first_of_batch = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let was_empty = pending.is_empty();
            pending.insert((tenant.to_string(), client_id.to_string()), alias);
            was_empty
        };
        if first_of_batch {
            let (store, pending) = (self.store.clone(), self.pending.clone());
            self.tasks.spawn(async move {
                tokio::time::sleep(BATCH_WINDOW).await;
                flush(store.as_ref(), &pending).await;
            });
        }
    }

    /// The alias of `client_id`, pending or stored.
    pub async fn lookup(&self, tenant: &str, client_id: &str) -> Result<Option<Alias>, StoreError> {
        let key = (tenant.to_string(), client_id.to_string());
        let pending = {
            let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.get(&key).cloned()
        };
        if pending.is_some() {
            return Ok(pending);
        }
        let stored = self
            .store
            .get(Namespace::Aliases, tenant, client_id, unix_now())
            .await?;
        Ok(stored.and_then(|r| serde_json::from_slice::<Alias>(&r.value).ok()))
    }
}

/// Writes the pending aliases in one transaction. On a store fault they are dropped (and logged): an alias is a
/// convenience, the turn that made it is long answered.
async fn flush(store: &dyn Store, pending: &Mutex<Pending>) {
    let batch = std::mem::take(&mut *pending.lock().unwrap_or_else(PoisonError::into_inner));
    let now = unix_now();
    let records: Vec<(String, String, Record)> = batch
        .into_iter()
        .filter_map(|((tenant, key), alias)| {
            let value = serde_json::to_vec(&alias).ok()?;
            let record = Record {
                value,
                created_at: now,
                expires_at: Some(now + ALIAS_TTL_SECS),
            };
            Some((tenant, key, record))
        })
        .collect();
    let count = records.len();
    if let Err(e) = store.put_many(Namespace::Aliases, records).await {
        tracing::warn!(error = %e, count, "could not store response-id aliases");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn aliases_are_seen_at_once_and_written_in_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(crate::store::redb::RedbStore::open(&dir.path().join("s.redb")).unwrap());
        let tasks = TaskTracker::new();
        let book = AliasBook::new(store.clone(), tasks.clone());
        book.remember("t", "resp_a", "resp_a");
        book.remember("t", "resp_b", "resp_c");
        book.remember("t", "", "resp_x");
        assert_eq!(
            book.lookup("t", "resp_b").await.unwrap().unwrap().real_id,
            "resp_c"
        );
        assert!(
            book.lookup("u", "resp_b").await.unwrap().is_none(),
            "per tenant"
        );
        let now = unix_now();
        assert!(
            store
                .get(Namespace::Aliases, "t", "resp_a", now)
                .await
                .unwrap()
                .is_none()
        );
        tasks.close();
        tasks.wait().await;
        for (id, real) in [("resp_a", "resp_a"), ("resp_b", "resp_c")] {
            let record = store
                .get(Namespace::Aliases, "t", id, now)
                .await
                .unwrap()
                .unwrap();
            let alias: Alias = serde_json::from_slice(&record.value).unwrap();
            assert_eq!((alias.real_id.as_str(), alias.markers), (real, true));
        }
        assert!(book.pending.lock().unwrap().is_empty());
    }
}

//! Response-id aliases: what a response id the client saw stands for, batched off the request path.
//!
//! Two things make a later request's `previous_response_id` need ctxgate's help: the id the client saw may stand
//! for a later round the proxy made (a turn with expansion returns the first round's id), and the server-held
//! history behind it may carry markers even when the new input carries none, so the turn must be offered
//! `context_expand`. Every turn that offered the tool is therefore remembered — but only when the upstream keeps
//! the response (`store` not false: an unstored response cannot be named later; Codex sends `store: false`), and
//! never with a store write of its own on the request path: aliases wait in memory and are written together, in
//! one transaction, a short moment after the first of a batch arrived. A lookup sees pending aliases too, until
//! their batch is written: an alias is never out of sight between memory and the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use crate::store::records::Alias;
use crate::store::records::{ALIAS_TTL_SECS, Records};
use crate::store::{Namespace, StoreError};
/// How long the first alias of a batch waits for others before the batch is written.
const BATCH_WINDOW: Duration = Duration::from_millis(50);

type Batch = HashMap<(String, String), Alias>;

/// Aliases not yet in the store: the batch still collecting, and the one being written.
#[derive(Default)]
struct Pending {
    collecting: Batch,
    writing: Batch,
}

impl Pending {
    fn get(&self, key: &(String, String)) -> Option<&Alias> {
        self.collecting.get(key).or_else(|| self.writing.get(key))
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.collecting.is_empty() && self.writing.is_empty()
    }
}

pub struct AliasBook {
    records: Records,
    pending: Arc<Mutex<Pending>>,
}

impl AliasBook {
    pub fn new(records: Records) -> AliasBook {
        AliasBook {
            records,
            pending: Arc::new(Mutex::new(Pending::default())),
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
            let was_empty = pending.collecting.is_empty();
            pending
                .collecting
                .insert((tenant.to_string(), client_id.to_string()), alias);
            was_empty
        };
        if first_of_batch {
            let (records, pending) = (self.records.clone(), self.pending.clone());
            self.records.spawn(async move {
                tokio::time::sleep(BATCH_WINDOW).await;
                flush(&records, &pending).await;
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
        self.records
            .get_json::<Alias>(Namespace::Aliases, tenant, client_id)
            .await
    }
}

/// Writes the collected aliases in one transaction; they stay visible to lookups (as `writing`) until the write is
/// over, so a lookup racing the write never misses them. On a store fault they are dropped (and logged): an alias is a convenience, the turn that
/// made it is long answered.
async fn flush(records: &Records, pending: &Mutex<Pending>) {
    let batch: Batch = {
        let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
        let batch = std::mem::take(&mut pending.collecting);
        pending.writing.extend(batch.clone());
        batch
    };
    let count = batch.len();
    let rows = batch
        .iter()
        .map(|((tenant, key), alias)| (tenant.clone(), key.clone(), alias))
        .collect();
    let expires = Some(records.now() + ALIAS_TTL_SECS);
    if let Err(e) = records
        .put_many_json(Namespace::Aliases, rows, expires)
        .await
    {
        crate::store_fault!(e, error = %e, count, "could not store response-id aliases");
    }
    let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
    for (key, alias) in batch {
        if pending.writing.get(&key) == Some(&alias) {
            pending.writing.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn aliases_are_seen_at_once_and_written_in_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn crate::store::Store> =
            Arc::new(crate::store::redb::RedbStore::open(&dir.path().join("s.redb")).unwrap());
        let tasks = tokio_util::task::TaskTracker::new();
        let records = Records::new(store.clone(), tasks.clone(), crate::clock::Clock::system());
        let book = AliasBook::new(records);
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
        let now = crate::store::unix_now();
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

//! Single flight: concurrent requests that need the same fold share one summary call, in one process and across
//! replicas.
//!
//! In a process, the first request for a fold takes its in-memory lock and makes it; the others wait on the same
//! lock and, once in, plan again on fresh records — finding the fold made. A flight's entry is dropped when its last
//! waiter lands, so the map holds only folds in progress. Across replicas sharing a store, the request holding the
//! in-memory lock also [`claim`]s the store's lock (`SET NX PX` on Redis): the replica that gets it makes the fold;
//! the others look for its record every [`REPLICA_POLL`] and reuse it, and take over once the lock lapses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Default)]
pub struct Flights {
    flights: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Flights {
    /// The lock of the fold named `key` (see [`crate::fold::single_flight_key`]).
    pub fn join(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(key.to_string()).or_default().clone()
    }

    /// This request is done with the fold named `key`.
    pub fn land(&self, key: &str, flight: Arc<tokio::sync::Mutex<()>>) {
        let mut map = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
        // The map and this request hold the only references: nobody else waits on this fold.
        if Arc::strong_count(&flight) <= 2 {
            map.remove(key);
        }
    }
}

/// How long a replica waiting for another replica's fold sleeps between looks at the store for its record.
pub const REPLICA_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Who makes a fold, as the store's lock decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This replica holds the lock: it makes the fold and releases the lock.
    Mine,
    /// Another replica holds it: wait for its record.
    Theirs,
    /// The store could not say (down): make the fold without the lock rather than wait (fail open).
    NoStore,
}

/// Asks the store for the cross-replica lock of the fold named `key` (a [`crate::fold::single_flight_key`]).
/// The lock lapses after `ttl`, so a replica that dies mid-fold holds up the others no longer than that.
pub async fn claim(
    store: &dyn crate::store::Store,
    tenant: &str,
    key: &str,
    owner: &str,
    ttl: std::time::Duration,
) -> Claim {
    match store.try_lock(tenant, &lock_key(key), owner, ttl).await {
        Ok(true) => Claim::Mine,
        Ok(false) => Claim::Theirs,
        Err(e) => {
            crate::store_fault!(e, error = %e, "fold lock unavailable; folding without it");
            Claim::NoStore
        }
    }
}

/// Releases a lock taken by [`claim`] (a lapsed one another replica took since is left alone).
pub async fn release(store: &dyn crate::store::Store, tenant: &str, key: &str, owner: &str) {
    if let Err(e) = store.unlock(tenant, &lock_key(key), owner).await {
        crate::store_fault!(e, error = %e, "could not release a fold lock; it lapses by itself");
    }
}

fn lock_key(key: &str) -> String {
    format!("fold/{key}")
}

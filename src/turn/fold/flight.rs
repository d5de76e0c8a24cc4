//! Single flight: concurrent requests that need the same fold share one summary call.
//!
//! The first request for a fold takes its lock and makes it; the others wait on the same lock and, once in, plan
//! again on fresh records — finding the fold made. A flight's entry is dropped when its last waiter lands, so the
//! map holds only folds in progress.

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

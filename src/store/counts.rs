//! Counter increments on their way to the store, added up in memory for a moment.
//!
//! Every request that carries a marker adds to its tenant's savings counters. Written one by one that would be a
//! store write (an fsync on redb, a round trip on Redis) per request; instead [`PendingCounts`] sums the deltas of
//! the next [`FLUSH_AFTER`] and one flush adds them with [`super::Store::incr_many`] — still added (never set), so
//! replicas flushing at once add up. At most that moment of counts is lost if the process is killed; a graceful
//! shutdown waits for the flush.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long increments wait in memory before one flush writes them.
pub const FLUSH_AFTER: Duration = Duration::from_secs(1);

/// Deltas per (tenant, counter set) and field, and whether a flush is already on its way.
#[derive(Default)]
pub struct PendingCounts {
    inner: Mutex<Pending>,
}

type Batch = BTreeMap<(String, &'static str), BTreeMap<&'static str, i64>>;

/// One counter set's sum to add: tenant, counter set, and (field, delta) pairs.
pub type Flush = (String, &'static str, Vec<(&'static str, i64)>);

#[derive(Default)]
struct Pending {
    deltas: Batch,
    flush_scheduled: bool,
}

impl PendingCounts {
    /// Adds deltas; true when the caller must schedule the flush (none is on its way).
    pub fn add(&self, tenant: &str, key: &'static str, deltas: &[(&'static str, i64)]) -> bool {
        let mut p = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let fields = p.deltas.entry((tenant.to_string(), key)).or_default();
        for (field, delta) in deltas {
            let slot = fields.entry(field).or_insert(0);
            *slot = slot.saturating_add(*delta);
        }
        !std::mem::replace(&mut p.flush_scheduled, true)
    }

    /// Everything added so far, as (tenant, counter set, deltas); the next [`Self::add`] schedules a new flush.
    pub fn take(&self) -> Vec<Flush> {
        let mut p = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        p.flush_scheduled = false;
        std::mem::take(&mut p.deltas)
            .into_iter()
            .map(|((tenant, key), fields)| {
                let deltas = fields.into_iter().filter(|(_, d)| *d != 0).collect();
                (tenant, key, deltas)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_add_up_until_taken_and_one_flush_is_scheduled() {
        let p = PendingCounts::default();
        assert!(p.add(
            "t1",
            "savings",
            &[("compressions", 1), ("saved_tokens", 10)]
        ));
        assert!(
            !p.add("t1", "savings", &[("compressions", 1)]),
            "a flush is on its way"
        );
        assert!(!p.add("t2", "savings", &[("expansions", 1)]));
        let batch = p.take();
        assert_eq!(
            batch,
            [
                (
                    "t1".to_string(),
                    "savings",
                    vec![("compressions", 2), ("saved_tokens", 10)]
                ),
                ("t2".to_string(), "savings", vec![("expansions", 1)]),
            ]
        );
        assert!(p.take().is_empty());
        assert!(
            p.add("t1", "savings", &[("compressions", 1)]),
            "the next add schedules again"
        );
    }
}

//! The time every stage, record and sweep reads, as a handle in the shared state.
//!
//! Stored records carry Unix seconds (created, expires), fold back-off compares them, the sweeper deletes by them.
//! Reading the time through one [`Clock`] handle rather than the system clock at each site lets a test move time
//! forward by hand — a TTL or a back-off is then checked at once, without sleeping on the wall clock. In
//! production the clock is the system's; the offset stays zero.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A cheap, shared handle on the time. Clones see the same offset.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Seconds added to the system time (only ever moved by [`Clock::advance`], i.e. by tests).
    offset_secs: Arc<AtomicU64>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// The current Unix time in seconds.
    pub fn unix_now(&self) -> u64 {
        crate::store::unix_now().saturating_add(self.offset_secs.load(Ordering::Relaxed))
    }

    /// The current Unix time in nanoseconds (an instance id; not moved by [`Clock::advance`]).
    pub fn unix_nanos(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    }

    /// Moves this clock (and every clone of it) forward: what a test does instead of sleeping for a TTL.
    pub fn advance(&self, by: Duration) {
        self.offset_secs.fetch_add(by.as_secs(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_every_clone() {
        let clock = Clock::system();
        let other = clock.clone();
        let before = other.unix_now();
        clock.advance(Duration::from_secs(3600));
        assert!(other.unix_now() >= before + 3600);
    }
}

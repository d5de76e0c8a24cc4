//! Whether the shared store is answering, as every request sees it: fail fast while it is down, probe to come back.
//!
//! A replica must keep serving when Redis is down or slow: the stages then fail open (outputs go uncompressed,
//! transcripts unfolded) rather than every request waiting out a timeout. So the first call that fails or times out
//! marks the store down — one warning in the log, `ctxgate_store_up` to 0 — and from then on calls fail at once with
//! [`StoreError::Unavailable`], except one probe every [`PROBE_INTERVAL`] that really tries. The first probe that
//! succeeds marks it up again (one info line). Nobody has to restart anything: traffic, or `/readyz` being polled,
//! brings the store back.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::super::StoreError;
use crate::telemetry::{Metrics, StateLabels};

/// How often, while the store is down, one call is let through to see whether it is back.
pub const PROBE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// The up/down state of a shared store, with its metrics.
pub struct StoreHealth {
    up: AtomicBool,
    /// While down: the earliest time (ms since `epoch`) the next probe may go out.
    next_probe_ms: AtomicU64,
    epoch: tokio::time::Instant,
    gauge: Gauge,
    changes: Family<StateLabels, Counter>,
    /// Where the store is, for the log lines (never a password).
    target: String,
}

impl StoreHealth {
    /// Starts up (a store that is down at start is found out by the first call) and reports into `metrics`.
    pub fn new(metrics: &Metrics, target: String) -> StoreHealth {
        metrics.store_up.set(1);
        StoreHealth {
            up: AtomicBool::new(true),
            next_probe_ms: AtomicU64::new(0),
            epoch: tokio::time::Instant::now(),
            gauge: metrics.store_up.clone(),
            changes: metrics.store_state_changes.clone(),
            target,
        }
    }

    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// May a call go to the store now? While it is down, only one probe per [`PROBE_INTERVAL`] may.
    pub fn admit(&self) -> Result<(), StoreError> {
        if self.is_up() {
            return Ok(());
        }
        let now = self.now_ms();
        let due = self.next_probe_ms.load(Ordering::Acquire);
        let next = now.saturating_add(PROBE_INTERVAL.as_millis() as u64);
        if now >= due
            && self
                .next_probe_ms
                .compare_exchange(due, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return Ok(());
        }
        Err(StoreError::Unavailable(format!(
            "{} is down; retrying every {} ms",
            self.target,
            PROBE_INTERVAL.as_millis()
        )))
    }

    /// A call succeeded: the store is up (logged once when it comes back).
    pub fn succeeded(&self) {
        if !self.up.swap(true, Ordering::AcqRel) {
            self.gauge.set(1);
            self.changes.get_or_create(&StateLabels { to: "up" }).inc();
            tracing::info!(store = %self.target, "store is answering again; compression and folding resume");
        }
    }

    /// A call failed or timed out: the store is down (logged once, when it goes down).
    pub fn failed(&self, why: &str) {
        let next = self
            .now_ms()
            .saturating_add(PROBE_INTERVAL.as_millis() as u64);
        self.next_probe_ms.store(next, Ordering::Release);
        if self.up.swap(false, Ordering::AcqRel) {
            self.gauge.set(0);
            self.changes
                .get_or_create(&StateLabels { to: "down" })
                .inc();
            tracing::warn!(store = %self.target, error = %why,
                "store unavailable; requests pass uncompressed and unfolded until it answers again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn down_fails_fast_then_one_probe_brings_it_back() {
        let metrics = Metrics::new();
        let health = StoreHealth::new(&metrics, "redis://h:1".into());
        assert!(health.admit().is_ok());
        health.failed("refused");
        health.failed("refused again");
        assert!(!health.is_up());
        assert!(matches!(health.admit(), Err(StoreError::Unavailable(_))));
        tokio::time::advance(PROBE_INTERVAL).await;
        assert!(health.admit().is_ok(), "one probe goes out");
        assert!(health.admit().is_err(), "only one");
        health.succeeded();
        assert!(health.is_up());
        assert!(health.admit().is_ok());
        let text = metrics.render();
        assert!(text.contains("ctxgate_store_up 1"), "{text}");
        assert!(
            text.contains("ctxgate_store_state_changes_total{to=\"down\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("ctxgate_store_state_changes_total{to=\"up\"} 1"),
            "{text}"
        );
    }
}

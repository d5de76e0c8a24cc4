//! What ctxgate tells its operator: structured logs, Prometheus metrics and the overhead it adds.
//!
//! Every request is counted by route and status; the time spent waiting for the upstream and the time spent in
//! ctxgate itself (parse, stages, serialize, header handling — everything but the upstream wait) are separate
//! histograms, so an operator can see at a glance whether the proxy or the model is slow. Internal faults of the
//! stages are counted under low-cardinality labels (stage and fault kind): they fail open, and this counter is how
//! they are noticed. The audit events that pair with the metrics are in [`audit`].

pub mod audit;

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::config::LogFormat;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: &'static str,
    pub method: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FaultLabels {
    pub stage: &'static str,
    /// What failed: `store`, `upstream`, `parse`.
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// The state the shared store went to: `down` or `up`.
    pub to: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamErrorLabels {
    pub kind: &'static str,
}

/// The process-lifetime savings picture, carried in every audit event so any one event shows the totals. Token
/// figures are estimates (bytes / 4), not provider-billed counts.
#[derive(Debug, Default)]
pub struct Savings {
    pub compressions: std::sync::atomic::AtomicU64,
    /// Per compression, counted once when it is made.
    pub saved_tokens: std::sync::atomic::AtomicU64,
    /// Realised: every time a marker rides in a request, its saving counts again (this matches the bill).
    pub wire_saved_tokens: std::sync::atomic::AtomicU64,
    pub expansions: std::sync::atomic::AtomicU64,
    pub expansion_misses: std::sync::atomic::AtomicU64,
}

/// A copy of [`Savings`] at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SavingsTotals {
    pub compressions: u64,
    pub saved_tokens: u64,
    pub wire_saved_tokens: u64,
    pub expansions: u64,
    pub expansion_misses: u64,
}

impl SavingsTotals {
    /// Adds `other` to these totals (the offline stats sum tenants).
    pub fn add(&mut self, other: &SavingsTotals) {
        self.compressions += other.compressions;
        self.saved_tokens += other.saved_tokens;
        self.wire_saved_tokens += other.wire_saved_tokens;
        self.expansions += other.expansions;
        self.expansion_misses += other.expansion_misses;
    }

    /// The totals from a counter set as the store keeps them (field name → total); unknown fields are ignored.
    pub fn from_counters(fields: &[(String, i64)]) -> SavingsTotals {
        let mut t = SavingsTotals::default();
        for (field, value) in fields {
            let value = u64::try_from(*value).unwrap_or(0);
            match field.as_str() {
                "compressions" => t.compressions = value,
                "saved_tokens" => t.saved_tokens = value,
                "wire_saved_tokens" => t.wire_saved_tokens = value,
                "expansions" => t.expansions = value,
                "expansion_misses" => t.expansion_misses = value,
                _ => {}
            }
        }
        t
    }
}

impl Savings {
    pub fn totals(&self) -> SavingsTotals {
        use std::sync::atomic::Ordering::Relaxed;
        SavingsTotals {
            compressions: self.compressions.load(Relaxed),
            saved_tokens: self.saved_tokens.load(Relaxed),
            wire_saved_tokens: self.wire_saved_tokens.load(Relaxed),
            expansions: self.expansions.load(Relaxed),
            expansion_misses: self.expansion_misses.load(Relaxed),
        }
    }
}

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// The process's metrics. Cheap to share: every member is internally reference-counted.
pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub upstream_latency: HistogramFamily,
    pub overhead: HistogramFamily,
    pub stage_faults: Family<FaultLabels, Counter>,
    pub upstream_errors: Family<UpstreamErrorLabels, Counter>,
    pub folds: Family<OutcomeLabels, Counter>,
    pub fold_tokens_removed: Counter,
    pub fold_calls: Counter,
    pub compressions: Family<KindLabels, Counter>,
    pub compress_saved_tokens: Counter,
    pub wire_saved_tokens: Counter,
    pub compress_skipped: Family<ReasonLabels, Counter>,
    pub expansions: Counter,
    pub expansion_misses: Counter,
    pub expand_rounds: Counter,
    pub savings: Savings,
    /// 1 while the store answers, 0 while a shared store is down (requests then pass uncompressed).
    pub store_up: prometheus_client::metrics::gauge::Gauge,
    pub store_state_changes: Family<StateLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: &'static str,
}

fn upstream_histogram() -> Histogram {
    // 1 ms .. ~9 min
    Histogram::new(exponential_buckets(0.001, 2.0, 20))
}

fn overhead_histogram() -> Histogram {
    // 5 µs .. ~80 ms: the proxy's own work is measured in microseconds.
    Histogram::new(exponential_buckets(0.000_005, 2.0, 15))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("ctxgate");
        let requests = Family::<RequestLabels, Counter>::default();
        let upstream_latency: HistogramFamily = Family::new_with_constructor(upstream_histogram);
        let overhead: HistogramFamily = Family::new_with_constructor(overhead_histogram);
        let stage_faults = Family::<FaultLabels, Counter>::default();
        let upstream_errors = Family::<UpstreamErrorLabels, Counter>::default();
        let folds = Family::<OutcomeLabels, Counter>::default();
        let fold_tokens_removed = Counter::default();
        let fold_calls = Counter::default();
        let compressions = Family::<KindLabels, Counter>::default();
        let compress_saved_tokens = Counter::default();
        let wire_saved_tokens = Counter::default();
        let compress_skipped = Family::<ReasonLabels, Counter>::default();
        let expansions = Counter::default();
        let expansion_misses = Counter::default();
        let expand_rounds = Counter::default();
        registry.register(
            "expansions",
            "context_expand calls answered with an original",
            expansions.clone(),
        );
        registry.register(
            "expansion_misses",
            "context_expand calls whose hash named no live original (expired, unknown, ambiguous, bad arguments)",
            expansion_misses.clone(),
        );
        registry.register(
            "expand_rounds",
            "Extra upstream rounds ctxgate ran to continue a turn after answering context_expand",
            expand_rounds.clone(),
        );
        registry.register(
            "compressions",
            "Originals compressed behind a marker (counted once, when first compressed), by content kind",
            compressions.clone(),
        );
        registry.register(
            "compress_saved_tokens",
            "Estimated tokens saved by compressions, counted once per compression",
            compress_saved_tokens.clone(),
        );
        registry.register(
            "wire_saved_tokens",
            "Estimated tokens not sent upstream: every marker in every request counts its saving again",
            wire_saved_tokens.clone(),
        );
        registry.register(
            "compress_skipped",
            "Large items left verbatim, by reason (error output, excluded tool, store write failed, ...)",
            compress_skipped.clone(),
        );
        registry.register(
            "folds",
            "Fold decisions on over-budget transcripts, by outcome (applied, reused, failed, backed_off)",
            folds.clone(),
        );
        registry.register(
            "fold_tokens_removed",
            "Estimated tokens a fold (new or reused) took off the requests sent upstream",
            fold_tokens_removed.clone(),
        );
        registry.register(
            "fold_calls",
            "Upstream calls made to fold (compact or summary), retries included",
            fold_calls.clone(),
        );
        registry.register(
            "requests",
            "Requests handled, by route, method and status",
            requests.clone(),
        );
        registry.register(
            "upstream_latency_seconds",
            "Time from sending the request upstream to its response headers",
            upstream_latency.clone(),
        );
        registry.register(
            "overhead_seconds",
            "Time spent inside ctxgate for a request, excluding the wait for the upstream",
            overhead.clone(),
        );
        registry.register(
            "stage_faults",
            "Internal faults of a pipeline stage; the request went on without that stage's change",
            stage_faults.clone(),
        );
        registry.register(
            "upstream_errors",
            "Upstream requests that produced no response (connect, timeout, other)",
            upstream_errors.clone(),
        );
        let store_up = prometheus_client::metrics::gauge::Gauge::default();
        store_up.set(1);
        let store_state_changes = Family::<StateLabels, Counter>::default();
        registry.register(
            "store_up",
            "1 while the store answers; 0 while a shared store is down and requests pass uncompressed and unfolded",
            store_up.clone(),
        );
        registry.register(
            "store_state_changes",
            "Times the shared store went down or came back, by the state it went to",
            store_state_changes.clone(),
        );
        Metrics {
            registry,
            requests,
            upstream_latency,
            overhead,
            stage_faults,
            upstream_errors,
            folds,
            fold_tokens_removed,
            fold_calls,
            compressions,
            compress_saved_tokens,
            wire_saved_tokens,
            compress_skipped,
            expansions,
            expansion_misses,
            expand_rounds,
            savings: Savings::default(),
            store_up,
            store_state_changes,
        }
    }

    pub fn observe_request(&self, route: &'static str, method: &str, status: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method: method.to_string(),
                status,
            })
            .inc();
    }

    pub fn observe_upstream(&self, route: &'static str, waited: Duration) {
        self.upstream_latency
            .get_or_create(&RouteLabels { route })
            .observe(waited.as_secs_f64());
    }

    pub fn observe_overhead(&self, route: &'static str, spent: Duration) {
        self.overhead
            .get_or_create(&RouteLabels { route })
            .observe(spent.as_secs_f64());
    }

    pub fn stage_fault(&self, stage: &'static str, kind: &'static str) {
        self.stage_faults
            .get_or_create(&FaultLabels { stage, kind })
            .inc();
    }

    pub fn upstream_error(&self, kind: &'static str) {
        self.upstream_errors
            .get_or_create(&UpstreamErrorLabels { kind })
            .inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Installs the global tracing subscriber (the one piece of process-wide state, set once in `main`).
pub fn init_logging(format: LogFormat, level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CTXGATE_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A log write that fails (stderr closed: the shell that started ctxgate went away) is dropped. Reporting it, the
    // layer's default, means printing to that same stderr, which panics the request's task and cuts its answer off.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // A second init (tests starting several servers in one process) is harmless, hence the ignored result.
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

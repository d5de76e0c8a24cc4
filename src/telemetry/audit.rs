//! The audit events (`target: "ctxgate::audit"`), each beside the metrics it pairs with.
//!
//! An audit event is what an operator greps to follow one decision: a compression, a fold, an expansion, a
//! keep-pattern suggestion. Each function here counts the decision in the metrics and writes its event in one go,
//! so the two can never disagree, and every event carries the process's savings totals at that moment.

use std::sync::atomic::Ordering::Relaxed;

use super::{KindLabels, Metrics, OutcomeLabels};

/// A new compression, as the compress stage made it.
pub struct Compressed<'a> {
    pub request_id: &'a str,
    pub tenant: &'a str,
    /// `tool_output` or `live_zone`.
    pub seam: &'static str,
    pub tool: &'a str,
    pub kind: &'static str,
    pub before: u64,
    pub after: u64,
}

/// Counts a new compression and writes `context_compressed`.
pub fn compressed(metrics: &Metrics, event: Compressed<'_>) {
    let saved = event.before.saturating_sub(event.after);
    let savings = &metrics.savings;
    savings.compressions.fetch_add(1, Relaxed);
    savings.saved_tokens.fetch_add(saved, Relaxed);
    metrics
        .compressions
        .get_or_create(&KindLabels { kind: event.kind })
        .inc();
    metrics.compress_saved_tokens.inc_by(saved);
    let totals = savings.totals();
    tracing::info!(
        target: "ctxgate::audit",
        event = "context_compressed",
        request_id = event.request_id,
        tenant = event.tenant,
        seam = event.seam,
        tool = event.tool,
        kind = event.kind,
        tokens_before = event.before,
        tokens_after = event.after,
        saved_tokens = saved,
        total_saved_tokens = totals.saved_tokens,
        total_wire_saved_tokens = totals.wire_saved_tokens,
        total_compressions = totals.compressions,
        total_expansions = totals.expansions,
        "context_compressed"
    );
}

/// One expansion answered (a hit or a miss).
pub struct Expanded<'a> {
    pub request_id: &'a str,
    pub tenant: &'a str,
    pub hash: Option<&'a str>,
    pub hit: bool,
    pub bytes: usize,
}

/// Counts an expansion and writes `context_expanded`.
pub fn expanded(metrics: &Metrics, event: Expanded<'_>) {
    let savings = &metrics.savings;
    if event.hit {
        savings.expansions.fetch_add(1, Relaxed);
        metrics.expansions.inc();
    } else {
        savings.expansion_misses.fetch_add(1, Relaxed);
        metrics.expansion_misses.inc();
    }
    let totals = savings.totals();
    tracing::info!(
        target: "ctxgate::audit",
        event = "context_expanded",
        request_id = event.request_id,
        tenant = event.tenant,
        hash = event.hash.unwrap_or(""),
        hit = event.hit,
        bytes = event.bytes,
        total_expansions = totals.expansions,
        total_expansion_misses = totals.expansion_misses,
        total_saved_tokens = totals.saved_tokens,
        total_wire_saved_tokens = totals.wire_saved_tokens,
        total_compressions = totals.compressions,
        "context_expanded"
    );
}

/// Writes `context_pattern_suggested`: a keep pattern crossed the suggestion threshold for a tenant.
pub fn pattern_suggested(tenant: &str, pattern: &str) {
    tracing::info!(target: "ctxgate::audit", event = "context_pattern_suggested", tenant = %tenant, pattern = %pattern, "context_pattern_suggested");
}

/// One fold decision, as the fold stage reports it.
pub struct Folded<'a> {
    pub request_id: &'a str,
    pub tenant: &'a str,
    pub anchor: &'a str,
    pub outcome: &'static str,
    pub mode: &'static str,
    pub report: &'a crate::fold::FoldReport,
}

/// Counts a fold decision and, when something happened, writes `context_folded`.
pub fn folded(metrics: &Metrics, event: Folded<'_>) {
    use crate::fold::Outcome;
    let report = event.report;
    if report.outcome != Outcome::None {
        metrics
            .folds
            .get_or_create(&OutcomeLabels {
                outcome: event.outcome,
            })
            .inc();
    }
    if matches!(report.outcome, Outcome::Applied | Outcome::Reused) {
        metrics
            .fold_tokens_removed
            .inc_by(report.tokens_before.saturating_sub(report.tokens_after) as u64);
    }
    metrics.fold_calls.inc_by(u64::from(report.attempts));
    if report.outcome != Outcome::None || report.attempts > 0 {
        tracing::info!(
            target: "ctxgate::audit",
            event = "context_folded",
            request_id = %event.request_id,
            tenant = %event.tenant,
            anchor = event.anchor,
            outcome = event.outcome,
            split = report.split,
            tokens_before = report.tokens_before,
            tokens_after = report.tokens_after,
            attempts = report.attempts,
            input_tokens = report.usage.input_tokens,
            output_tokens = report.usage.output_tokens,
            response_id = report.response_id.as_deref().unwrap_or(""),
            output_types = %report.output_types.join(","),
            mode = event.mode,
            error = report.error.as_deref().unwrap_or(""),
            "context_folded"
        );
    }
}

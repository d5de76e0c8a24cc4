//! The fold stage: where the pure fold ([`crate::fold`]) meets the store, the upstream and the client's turn.
//!
//! For a transcript over budget it loads the conversation's fold records (per tenant and anchor), asks
//! [`fold::plan`] what to do, and — when a new fold is due — makes it through [`UpstreamSummarizer`], with
//! concurrent requests for the same fold sharing one call (single flight). New records are written durably before
//! the turn goes on, so a restart reuses the fold and keeps backing off a failed one. Every decision is reported:
//! an audit event `context_folded`, metrics, and the `x-ctxgate-fold` response header.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use axum::http::HeaderMap;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio_util::task::TaskTracker;

use super::error::ProxyError;
use super::item_facts::FactsCache;
use super::turn::{Stage, StageError, Turn};
use super::upstream::{SendError, Upstream};
use crate::config::fold::FoldSettings;
use crate::fold::{
    self, CallError, FailedFold, FoldConfig, FoldMode, FoldRecord, FoldReport, Outcome, Plan,
    Rewrite, Summarizer,
};
use crate::responses::Item;
use crate::store::{Namespace, Record, Store, unix_now};
use crate::telemetry::{Metrics, OutcomeLabels};

/// Request header turning the fold off for one request.
pub const FOLD_HEADER: &str = "x-ctxgate-fold";
/// Request header overriding the budget for one request.
pub const BUDGET_HEADER: &str = "x-ctxgate-budget";
/// Most fold records read per anchor (the longest matching one is used).
const MAX_RECORDS_PER_ANCHOR: usize = 64;

pub struct FoldStage {
    settings: FoldSettings,
    store: Arc<dyn Store>,
    upstream: Upstream,
    metrics: Arc<Metrics>,
    tasks: TaskTracker,
    /// False once this upstream answered `/responses/compact` with 404/405/501 (mode `auto` then folds locally).
    compact_supported: AtomicBool,
    flights: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    facts: FactsCache,
}

impl FoldStage {
    pub fn new(
        settings: FoldSettings,
        store: Arc<dyn Store>,
        upstream: Upstream,
        metrics: Arc<Metrics>,
        tasks: TaskTracker,
    ) -> FoldStage {
        FoldStage {
            settings,
            store,
            upstream,
            metrics,
            tasks,
            compact_supported: AtomicBool::new(true),
            flights: std::sync::Mutex::new(HashMap::new()),
            facts: FactsCache::default(),
        }
    }

    /// The per-request config: the configured one with the `x-ctxgate-budget` override.
    fn config_for(&self, headers: &HeaderMap) -> FoldConfig {
        let mut config = self.settings.fold.clone();
        if let Some(budget) = headers
            .get(BUDGET_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|b| *b > 0)
        {
            config.budget = budget;
        }
        config
    }

    async fn load(
        &self,
        tenant: &str,
        anchor_key: &str,
    ) -> Result<(Vec<FoldRecord>, Option<FailedFold>), StageError> {
        let now = unix_now();
        let rows = self
            .store
            .scan_prefix(
                Namespace::Folds,
                tenant,
                &format!("{anchor_key}/"),
                MAX_RECORDS_PER_ANCHOR,
                now,
            )
            .await?;
        let records = rows
            .iter()
            .filter_map(|(_, r)| serde_json::from_slice::<FoldRecord>(&r.value).ok())
            .collect();
        let failed = self
            .store
            .get(Namespace::FailedFolds, tenant, anchor_key, now)
            .await?
            .and_then(|r| serde_json::from_slice::<FailedFold>(&r.value).ok());
        Ok((records, failed))
    }

    /// Writes the new records on the tracked task set, so they land even if the client hangs up meanwhile.
    async fn persist(
        &self,
        tenant: &str,
        anchor_key: &str,
        record: Option<&FoldRecord>,
        failed: Option<&FailedFold>,
    ) {
        let now = unix_now();
        let expires = Some(now + self.settings.record_ttl.as_secs());
        let mut writes = Vec::new();
        if let Some(r) = record {
            if let Ok(value) = serde_json::to_vec(r) {
                writes.push((
                    Namespace::Folds,
                    format!("{anchor_key}/{}", r.prefix_hash),
                    value,
                ));
            }
        }
        if let Some(f) = failed {
            if let Ok(value) = serde_json::to_vec(f) {
                writes.push((Namespace::FailedFolds, anchor_key.to_string(), value));
            }
        }
        if writes.is_empty() {
            return;
        }
        let store = self.store.clone();
        let tenant = tenant.to_string();
        let task = self.tasks.spawn(async move {
            for (ns, key, value) in writes {
                let record = Record {
                    value,
                    created_at: now,
                    expires_at: expires,
                };
                if let Err(e) = store.put(ns, &tenant, &key, record).await {
                    tracing::warn!(error = %e, namespace = ns.as_str(), "could not store a fold record");
                }
            }
        });
        let _ = task.await;
    }

    /// Keeps a reused fold alive: its expiry moves forward once less than half its lifetime remains.
    fn refresh(
        &self,
        tenant: &str,
        anchor_key: &str,
        items: &[Value],
        split: usize,
        records: &[FoldRecord],
    ) {
        let ttl = self.settings.record_ttl.as_secs();
        let now = unix_now();
        let due = records
            .iter()
            .any(|r| r.split == split && now.saturating_sub(r.created_at_unix) >= ttl / 2);
        if !due {
            return;
        }
        let Some(hash) = fold::prefix_hash(items, split) else {
            return;
        };
        let Some(record) = records.iter().find(|r| r.prefix_hash == hash) else {
            return;
        };
        let mut renewed = record.clone();
        renewed.created_at_unix = now;
        let (store, tenant, key) = (
            self.store.clone(),
            tenant.to_string(),
            format!("{anchor_key}/{hash}"),
        );
        self.tasks.spawn(async move {
            if let Ok(value) = serde_json::to_vec(&renewed) {
                let record = Record {
                    value,
                    created_at: now,
                    expires_at: Some(now + ttl),
                };
                if let Err(e) = store.put(Namespace::Folds, &tenant, &key, record).await {
                    tracing::warn!(error = %e, "could not refresh a fold record");
                }
            }
        });
    }

    fn flight(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = match self.flights.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry(key.to_string()).or_default().clone()
    }

    fn land(&self, key: &str, flight: Arc<tokio::sync::Mutex<()>>) {
        let mut map = match self.flights.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        // The map and this request hold the only references: nobody else waits on this fold.
        if Arc::strong_count(&flight) <= 2 {
            map.remove(key);
        }
    }

    fn report(&self, turn: &Turn, anchor_key: &str, report: &FoldReport) {
        let outcome = outcome_label(report.outcome);
        if report.outcome != Outcome::None {
            self.metrics
                .folds
                .get_or_create(&OutcomeLabels { outcome })
                .inc();
        }
        if matches!(report.outcome, Outcome::Applied | Outcome::Reused) {
            self.metrics
                .fold_tokens_removed
                .inc_by(report.tokens_before.saturating_sub(report.tokens_after) as u64);
        }
        self.metrics.fold_calls.inc_by(u64::from(report.attempts));
        if report.outcome != Outcome::None || report.attempts > 0 {
            tracing::info!(
                target: "ctxgate::audit",
                event = "context_folded",
                request_id = %turn.request_id,
                tenant = %turn.caller.tenant,
                anchor = anchor_key,
                outcome,
                split = report.split,
                tokens_before = report.tokens_before,
                tokens_after = report.tokens_after,
                attempts = report.attempts,
                input_tokens = report.usage.input_tokens,
                output_tokens = report.usage.output_tokens,
                response_id = report.response_id.as_deref().unwrap_or(""),
                output_types = %report.output_types.join(","),
                mode = report.mode_used.map(mode_label).unwrap_or(""),
                error = report.error.as_deref().unwrap_or(""),
                "context_folded"
            );
        }
    }
}

fn outcome_label(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Applied => "applied",
        Outcome::Reused => "reused",
        Outcome::Failed => "failed",
        Outcome::BackedOff => "backed_off",
        Outcome::None => "none",
    }
}

fn mode_label(mode: FoldMode) -> &'static str {
    match mode {
        FoldMode::Auto => "auto",
        FoldMode::Compact => "compact",
        FoldMode::Local => "local",
        FoldMode::Off => "off",
    }
}

/// The anchor as a store key: hashed, so any `prompt_cache_key` is a safe, fixed-length key.
pub fn anchor_key(anchor: &str) -> String {
    fold::prefix::hex(&Sha256::digest(anchor.as_bytes())[..12])
}

#[async_trait]
impl Stage for FoldStage {
    fn name(&self) -> &'static str {
        "fold"
    }

    async fn apply(&self, turn: &mut Turn) -> Result<(), StageError> {
        let off_by_header = turn
            .client_headers
            .get(FOLD_HEADER)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"off"));
        // The server holds the history of a `previous_response_id` turn or a string input: nothing to fold here.
        let server_side = turn
            .body
            .get("previous_response_id")
            .is_some_and(|v| !v.is_null());
        if self.settings.fold.mode == FoldMode::Off
            || off_by_header
            || server_side
            || turn.body.items().is_none()
        {
            turn.add_response_header(FOLD_HEADER, "none".into());
            return Ok(());
        }
        let config = self.config_for(&turn.client_headers);
        // Most turns are far within budget: the bytes as sent bound the estimate (compact JSON is no longer, save
        // for exotic number spellings, and a token is at least a byte), so those need no hashing or parsing at all.
        if let Some(tokens) = turn
            .body
            .items()
            .and_then(|items| surely_within(items, &config))
        {
            let report = fold::FoldReport::quiet(Outcome::None, 0, tokens, tokens);
            self.report(turn, "", &report);
            turn.add_response_header(FOLD_HEADER, "none".into());
            return Ok(());
        }
        let tenant = turn.caller.tenant.as_str().to_string();
        let prompt_cache_key = turn.body.get_str("prompt_cache_key");
        // Routine turns (within budget, or on a stored fold) are decided from cached item facts, unparsed.
        let facts = turn.body.items().and_then(|items| self.facts.facts(items));
        if let Some(facts) = facts.as_ref().filter(|f| !f.is_empty()) {
            let anchor = fold::prefix::anchor_of_digest(
                prompt_cache_key.as_deref(),
                facts.first().map(|f| &f.digest),
            );
            let anchor_key = anchor_key(&anchor);
            let quick = if facts_within_budget(facts, &config) {
                fold::quick_plan(facts, &[], &config)
            } else {
                let (records, _) = self.load(&tenant, &anchor_key).await?;
                fold::quick_plan(facts, &records, &config)
            };
            if let Some(result) = quick {
                self.finish(turn, &anchor_key, result);
                return Ok(());
            }
        }
        let items: Vec<Value> = match turn.body.items() {
            Some(items) => items
                .iter()
                .map(|i| i.value().cloned())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| StageError::Fault("an input item did not parse".into()))?,
            None => return Ok(()),
        };
        let model = config
            .model
            .clone()
            .or_else(|| turn.body.get_str("model"))
            .unwrap_or_default();
        let anchor = fold::anchor(prompt_cache_key.as_deref(), items.first());
        let anchor_key = anchor_key(&anchor);
        let summarizer = UpstreamSummarizer {
            upstream: &self.upstream,
            identity: turn.caller.identity_headers(&turn.client_headers),
        };
        let (records, failed) = self.load(&tenant, &anchor_key).await?;
        let input = fold::FoldInput {
            items: &items,
            model: &model,
            records: &records,
            failed: failed.as_ref(),
            config: &config,
            compact_supported: self.compact_supported.load(Ordering::Relaxed),
            now_unix: unix_now(),
        };
        let outcome = match fold::plan(input) {
            Plan::Done(result) => Ok(result),
            Plan::Fold(pending) => {
                let key = fold::single_flight_key(&tenant, &anchor_key, pending.prefix_hash());
                drop(pending);
                let flight = self.flight(&key);
                let guard = flight.lock().await;
                // Another request may have made this fold while we waited: plan again on fresh records.
                let (records, failed) = self.load(&tenant, &anchor_key).await?;
                let input = fold::FoldInput {
                    records: &records,
                    failed: failed.as_ref(),
                    compact_supported: self.compact_supported.load(Ordering::Relaxed),
                    ..input
                };
                let result = match fold::plan(input) {
                    Plan::Done(result) => Ok(result),
                    Plan::Fold(pending) => pending.run(&summarizer).await,
                };
                if let Ok(r) = &result {
                    self.persist(&tenant, &anchor_key, r.record.as_ref(), r.failed.as_ref())
                        .await;
                }
                drop(guard);
                self.land(&key, flight);
                result
            }
        };
        let result = match outcome {
            Ok(result) => result,
            Err(abort) => {
                if abort.report.compact_unsupported {
                    self.compact_supported.store(false, Ordering::Relaxed);
                }
                self.report(turn, &anchor_key, &abort.report);
                turn.add_response_header(FOLD_HEADER, "failed".into());
                return Err(StageError::Reject(ProxyError::FoldFailed(
                    abort.error.to_string(),
                )));
            }
        };
        if result.report.compact_unsupported {
            self.compact_supported.store(false, Ordering::Relaxed);
        }
        if result.report.outcome == Outcome::Reused {
            self.refresh(&tenant, &anchor_key, &items, result.report.split, &records);
        }
        self.finish(turn, &anchor_key, result);
        Ok(())
    }
}

impl FoldStage {
    /// Reports the decision and applies the rewrite: the head replaces the folded items, the tail keeps its bytes.
    fn finish(&self, turn: &mut Turn, anchor_key: &str, result: fold::FoldResult) {
        self.report(turn, anchor_key, &result.report);
        turn.add_response_header(FOLD_HEADER, outcome_label(result.report.outcome).into());
        if let Rewrite::Replace { head, split } = result.rewrite {
            if let Some(mut kept) = turn.body.take_items() {
                let tail = kept.split_off(split.min(kept.len()));
                let mut rebuilt: Vec<Item> = head.into_iter().map(Item::rewritten).collect();
                rebuilt.extend(tail);
                turn.body.replace_items(rebuilt);
            }
        }
    }
}

/// The estimate of a transcript, from the length of its bytes as sent, when that alone proves it within budget.
fn surely_within(items: &[Item], config: &FoldConfig) -> Option<usize> {
    let bytes = 2 + items.iter().map(|i| i.json_len() + 1).sum::<usize>();
    let tokens = match config.estimator {
        fold::Estimator::Bytes => bytes.div_ceil(4),
        fold::Estimator::Tiktoken => bytes,
    };
    (config.mode == FoldMode::Off || tokens <= config.budget).then_some(tokens)
}

/// Whether the transcript is within budget by the bytes estimate (no store read is needed then).
fn facts_within_budget(facts: &[fold::ItemFacts], config: &FoldConfig) -> bool {
    let bytes: usize = 2 + facts.iter().map(|f| f.json_len + 1).sum::<usize>();
    bytes.div_ceil(4) <= config.budget
}

/// The fold's calls, made over the proxy's upstream client with the caller's identity.
pub struct UpstreamSummarizer<'a> {
    pub upstream: &'a Upstream,
    pub identity: HeaderMap,
}

impl UpstreamSummarizer<'_> {
    async fn call(&self, path: &str, body: &Value) -> Result<Value, CallError> {
        let bytes = serde_json::to_vec(body).map_err(|e| CallError::Transport(e.to_string()))?;
        let (status, answer) = self
            .upstream
            .call_json(path, &self.identity, bytes.into())
            .await
            .map_err(|e| match e {
                SendError::Timeout(_) => CallError::Timeout,
                other => CallError::Transport(other.to_string()),
            })?;
        match status {
            200..=299 => serde_json::from_slice(&answer)
                .map_err(|e| CallError::Transport(format!("answer is not JSON: {e}"))),
            404 | 405 | 501 => Err(CallError::Unsupported { status }),
            _ => Err(CallError::Status {
                status,
                body: String::from_utf8_lossy(&answer[..answer.len().min(2048)]).into_owned(),
            }),
        }
    }
}

#[async_trait]
impl Summarizer for UpstreamSummarizer<'_> {
    async fn compact(&self, model: &str, input: &[Value]) -> Result<Value, CallError> {
        let body = serde_json::json!({"model": model, "input": input});
        self.call("/v1/responses/compact", &body).await
    }

    async fn respond(&self, request: Value) -> Result<Value, CallError> {
        self.call("/v1/responses", &request).await
    }
}

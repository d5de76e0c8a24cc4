//! The fold stage: where the pure fold ([`crate::fold`]) meets the store, the upstream and the client's turn.
//!
//! For a transcript over budget it loads the conversation's fold records ([`records`], per tenant and anchor),
//! asks [`fold::plan`] what to do, and — when a new fold is due — makes it through [`summarizer`], with concurrent
//! requests for the same fold sharing one call ([`flight`]). New records are written durably before the turn goes
//! on, so a restart reuses the fold and keeps backing off a failed one. Every decision is reported: an audit event
//! `context_folded`, metrics, and the `x-ctxgate-fold` response header.

pub mod flight;
pub mod records;
pub mod summarizer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use axum::http::HeaderMap;
use serde_json::Value;

use super::Turn;
use super::facts::FactsCache;
use super::stage::{Stage, StageError};
use crate::config::fold::FoldSettings;
use crate::fold::{self, FoldConfig, FoldMode, FoldReport, Outcome, Plan, Rewrite};
use crate::proxy::error::ProxyError;
use crate::proxy::upstream::Upstream;
use crate::responses::Item;
use crate::responses::estimate::{array_len, within_budget};
use crate::store::records::Records;
use crate::telemetry::Metrics;
use crate::telemetry::audit;
use summarizer::UpstreamSummarizer;

/// Request header turning the fold off for one request.
pub const FOLD_HEADER: &str = "x-ctxgate-fold";
/// Request header overriding the budget for one request.
pub const BUDGET_HEADER: &str = "x-ctxgate-budget";

pub struct FoldStage {
    settings: FoldSettings,
    records: Records,
    upstream: Upstream,
    metrics: Arc<Metrics>,
    /// False once this upstream answered `/responses/compact` with 404/405/501 (mode `auto` then folds locally).
    compact_supported: AtomicBool,
    flights: flight::Flights,
    facts: FactsCache,
    /// Lifetime of the cross-replica fold lock (`[store] lock_ttl_ms`).
    lock_ttl: Duration,
    /// Who this replica is, as the owner of the fold locks it takes.
    owner: String,
}

impl FoldStage {
    pub fn new(
        settings: FoldSettings,
        records: Records,
        upstream: Upstream,
        metrics: Arc<Metrics>,
        lock_ttl: Duration,
    ) -> FoldStage {
        let owner = format!("{}-{}", std::process::id(), records.clock().unix_nanos());
        FoldStage {
            settings,
            records,
            upstream,
            metrics,
            compact_supported: AtomicBool::new(true),
            flights: flight::Flights::default(),
            facts: FactsCache::default(),
            lock_ttl,
            owner,
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

    /// Makes the fold `key` once across replicas, then writes its records: plans again on fresh records, and while
    /// another replica holds the fold's lock, waits for its record (at most twice the lock's lifetime: past that the
    /// holder is gone or stuck, and this replica folds itself).
    async fn fold_once(
        &self,
        tenant: &str,
        anchor_key: &str,
        key: &str,
        input: fold::FoldInput<'_>,
        summarizer: &UpstreamSummarizer<'_>,
    ) -> Result<Result<fold::FoldResult, fold::FoldAbort>, StageError> {
        let store = self.records.store().as_ref();
        let patience = tokio::time::Instant::now() + 2 * self.lock_ttl;
        let mut held = false;
        let result = loop {
            // Another request or replica may have made this fold meanwhile: plan again on fresh records.
            let loaded = records::load(&self.records, tenant, anchor_key).await;
            let (folds, failed) = match loaded {
                Ok(loaded) => loaded,
                Err(e) => {
                    if held {
                        flight::release(store, tenant, key, &self.owner).await;
                    }
                    return Err(e.into());
                }
            };
            let input = fold::FoldInput {
                records: &folds,
                failed: failed.as_ref(),
                compact_supported: self.compact_supported.load(Ordering::Relaxed),
                ..input
            };
            let pending = match fold::plan(input) {
                Plan::Done(result) => break Ok(result),
                Plan::Fold(pending) => pending,
            };
            if !held {
                match flight::claim(store, tenant, key, &self.owner, self.lock_ttl).await {
                    // Plan once more with the lock held: a holder before us may have written the fold and let go
                    // between our plan and our claim.
                    flight::Claim::Mine => {
                        held = true;
                        drop(pending);
                        continue;
                    }
                    flight::Claim::Theirs if tokio::time::Instant::now() < patience => {
                        drop(pending);
                        tokio::time::sleep(flight::REPLICA_POLL).await;
                        continue;
                    }
                    flight::Claim::Theirs | flight::Claim::NoStore => {}
                }
            }
            break pending.run(summarizer).await;
        };
        if let Ok(r) = &result {
            let (record, failed) = (r.record.as_ref(), r.failed.as_ref());
            records::persist(
                &self.records,
                self.ttl_secs(),
                tenant,
                anchor_key,
                record,
                failed,
            )
            .await;
        }
        if held {
            flight::release(store, tenant, key, &self.owner).await;
        }
        Ok(result)
    }

    fn ttl_secs(&self) -> u64 {
        self.settings.record_ttl.as_secs()
    }

    fn report(&self, turn: &Turn, anchor_key: &str, report: &FoldReport) {
        audit::folded(
            &self.metrics,
            audit::Folded {
                request_id: &turn.request_id,
                tenant: turn.tenant(),
                anchor: anchor_key,
                outcome: outcome_label(report.outcome),
                mode: report.mode_used.map(mode_label).unwrap_or(""),
                report,
            },
        );
    }

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

    fn note_compact_support(&self, report: &FoldReport) {
        if report.compact_unsupported {
            self.compact_supported.store(false, Ordering::Relaxed);
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
        let sent_bytes = turn
            .body
            .items()
            .map(|items| array_len(items.iter().map(Item::json_len)));
        if let Some(tokens) =
            sent_bytes.and_then(|b| within_budget(b, config.estimator, config.budget))
        {
            let report = fold::FoldReport::quiet(Outcome::None, 0, tokens, tokens);
            self.report(turn, "", &report);
            turn.add_response_header(FOLD_HEADER, "none".into());
            return Ok(());
        }
        let tenant = turn.tenant().to_string();
        // Routine turns (within budget, or on a stored fold) are decided from cached item facts, unparsed. The
        // records read for that are kept for the full plan, so a turn reads them once.
        let mut loaded = None;
        let facts = turn.body.items().and_then(|items| self.facts.facts(items));
        if let Some(facts) = facts.as_ref().filter(|f| !f.is_empty()) {
            let anchor_key = turn.anchor_key(facts.first().map(|f| &f.digest));
            let bytes = array_len(facts.iter().map(|f| f.json_len));
            let quick = if within_budget(bytes, fold::Estimator::Bytes, config.budget).is_some() {
                fold::quick_plan(facts, &[], &config)
            } else {
                let (folds, failed) = records::load(&self.records, &tenant, &anchor_key).await?;
                let quick = fold::quick_plan(facts, &folds, &config);
                loaded = Some((folds, failed));
                quick
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
                .ok_or_else(|| StageError::parse("an input item did not parse"))?,
            None => return Ok(()),
        };
        let model = config
            .model
            .clone()
            .or_else(|| turn.body.get_str("model"))
            .unwrap_or_default();
        let anchor_key = turn.anchor_key(None);
        let summarizer = UpstreamSummarizer {
            upstream: &self.upstream,
            identity: turn.caller.identity_headers(&turn.client_headers),
        };
        let (folds, failed) = match loaded {
            Some(loaded) => loaded,
            None => records::load(&self.records, &tenant, &anchor_key).await?,
        };
        let input = fold::FoldInput {
            items: &items,
            model: &model,
            records: &folds,
            failed: failed.as_ref(),
            config: &config,
            compact_supported: self.compact_supported.load(Ordering::Relaxed),
            now_unix: self.records.now(),
        };
        let outcome = match fold::plan(input) {
            Plan::Done(result) => Ok(result),
            Plan::Fold(pending) => {
                let key = fold::single_flight_key(&tenant, &anchor_key, pending.prefix_hash());
                drop(pending);
                let flight = self.flights.join(&key);
                let guard = flight.lock().await;
                let result = self
                    .fold_once(&tenant, &anchor_key, &key, input, &summarizer)
                    .await;
                drop(guard);
                self.flights.land(&key, flight);
                result?
            }
        };
        let result = match outcome {
            Ok(result) => result,
            Err(abort) => {
                self.note_compact_support(&abort.report);
                self.report(turn, &anchor_key, &abort.report);
                turn.add_response_header(FOLD_HEADER, "failed".into());
                return Err(StageError::Reject(ProxyError::FoldFailed(
                    abort.error.to_string(),
                )));
            }
        };
        self.note_compact_support(&result.report);
        if result.report.outcome == Outcome::Reused {
            let split = result.report.split;
            records::refresh(
                &self.records,
                self.ttl_secs(),
                &tenant,
                &anchor_key,
                &items,
                split,
                &folds,
            );
        }
        self.finish(turn, &anchor_key, result);
        Ok(())
    }
}

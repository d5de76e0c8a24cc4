//! The fold's orchestration for one request: decide (pure, [`plan`]) whether the transcript
//! goes as it is, under a stored fold, or needs a new fold; then make that fold through the
//! [`Summarizer`] ([`PendingFold::run`]). [`transform`] does both.
//!
//! The decision, in order:
//! 1. mode `off`, or the transcript's estimate within the budget → unchanged;
//! 2. the longest stored [`FoldRecord`] whose prefix the transcript begins with is the
//!    *base*: the request is its output, its pinned items, then the transcript from its
//!    split on; within the budget → that (reused, no call);
//! 3. the new split ([`split_point`]) must fold something past the base, and what would be
//!    sent to be folded — the base's output and pinned items, then the newly folded items —
//!    must weigh at least min-fold; otherwise the base (or the unchanged transcript) goes
//!    over budget, nothing asked;
//! 4. a [`FailedFold`] on this prefix that still holds ([`backoff`]) → the
//!    base goes, backed off;
//! 5. otherwise fold: compact (with fallback to local in mode `auto`) or local.
//!
//! Splitting plan from run lets the proxy take a single-flight lock on the pending fold's
//! prefix hash before any call, then plan again with the records another request stored.

use serde_json::Value;

use super::estimate::Estimator;
use super::prefix::chain;
use super::record::{FailedFold, FoldRecord, RECORD_VERSION};
use super::report::{Calls, FoldAbort, FoldReport, FoldResult, Outcome, Rewrite};
use super::split::split_point;
use super::{
    CallError, FoldConfig, FoldError, FoldMode, OnError, SUMMARY_ATTEMPTS, Summarizer, backoff,
    pins, summary,
};

/// Everything one fold decision reads. All borrowed: the proxy owns the request, the
/// records it loaded for this tenant and anchor, and the configuration.
#[derive(Clone, Copy, Debug)]
pub struct FoldInput<'a> {
    /// The request's `input` items (after compression).
    pub items: &'a [Value],
    /// The request's `model`, used for the fold's calls unless the config names one.
    pub model: &'a str,
    /// Stored fold records of this conversation anchor, in any order.
    pub records: &'a [FoldRecord],
    /// The anchor's last failed fold, if any.
    pub failed: Option<&'a FailedFold>,
    pub config: &'a FoldConfig,
    /// False once this upstream answered the compaction endpoint 404/405/501.
    pub compact_supported: bool,
    /// Stamped on a new record as `created_at_unix`.
    pub now_unix: u64,
}

/// The decision: done without a call, or a fold to make.
#[derive(Debug)]
pub enum Plan<'a> {
    Done(FoldResult),
    Fold(PendingFold<'a>),
}

/// A fold that needs an upstream call.
#[derive(Debug)]
pub struct PendingFold<'a> {
    input: FoldInput<'a>,
    base: Base,
    route: Route,
    split: usize,
    prefix_hash: String,
    to_fold: Vec<Value>,
    to_fold_tokens: usize,
    tokens_before: usize,
    tokens_unfolded: usize,
}

/// The stored fold in place, or none (split 0, empty head).
#[derive(Debug, Default)]
pub(crate) struct Base {
    pub(crate) split: usize,
    pub(crate) head: Vec<Value>,
    pub(crate) prefix_hash: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// The compaction endpoint; `fallback` to local when it is unsupported (mode `auto`).
    Compact {
        fallback: bool,
    },
    Local,
}

/// Plans and, when needed, makes the fold for one request.
pub async fn transform(
    input: FoldInput<'_>,
    summarizer: &dyn Summarizer,
) -> Result<FoldResult, FoldAbort> {
    match plan(input) {
        Plan::Done(result) => Ok(result),
        Plan::Fold(pending) => pending.run(summarizer).await,
    }
}

/// Decides what this request needs, without any call (see the module doc for the order).
pub fn plan(input: FoldInput<'_>) -> Plan<'_> {
    let FoldInput { items, config, .. } = input;
    let estimator = config.estimator;
    let tokens_before = estimator.estimate(items);
    if config.mode == FoldMode::Off || tokens_before <= config.budget {
        let report = FoldReport::quiet(Outcome::None, 0, tokens_before, tokens_before);
        return Plan::Done(done(Rewrite::Unchanged, report));
    }
    let chain = chain(items);
    let base = Base::find(input.records, &chain);
    let tail = items.get(base.split..).unwrap_or_default();
    let tokens_unfolded = match base.prefix_hash {
        Some(_) => estimator.estimate_parts(&[&base.head, tail]),
        None => tokens_before,
    };
    let keep_base = |base: &Base| Plan::Done(base.keep(tokens_before, tokens_unfolded));
    if base.prefix_hash.is_some() && tokens_unfolded <= config.budget {
        return keep_base(&base);
    }
    let split = split_point(items, config.keep_last);
    if split <= base.split {
        return keep_base(&base);
    }
    let newly_folded = items.get(base.split..split).unwrap_or_default();
    let to_fold: Vec<Value> = base.head.iter().chain(newly_folded).cloned().collect();
    let to_fold_tokens = estimator.estimate(&to_fold);
    let route = match (config.mode, input.compact_supported) {
        (FoldMode::Auto, true) => Route::Compact { fallback: true },
        (FoldMode::Compact, _) => Route::Compact { fallback: false },
        _ => Route::Local,
    };
    if to_fold_tokens < config.min_fold_for(route.mode()) {
        return keep_base(&base);
    }
    let prefix_hash = chain.get(split).cloned().unwrap_or_default();
    let held = input.failed.is_some_and(|failed| {
        config.back_off
            && backoff::holds(
                failed,
                &chain,
                split,
                tokens_before,
                config.keep_last,
                config.budget,
            )
    });
    if held {
        let mut report =
            FoldReport::quiet(Outcome::BackedOff, split, tokens_before, tokens_unfolded);
        report.prefix_hash = Some(prefix_hash);
        return Plan::Done(done(base.rewrite(), report));
    }
    Plan::Fold(PendingFold {
        input,
        base,
        route,
        split,
        prefix_hash,
        to_fold,
        to_fold_tokens,
        tokens_before,
        tokens_unfolded,
    })
}

impl PendingFold<'_> {
    /// Where the new fold cuts the transcript.
    pub fn split(&self) -> usize {
        self.split
    }

    /// Identity of the prefix the new fold covers: with tenant and anchor, the
    /// single-flight key of this fold.
    pub fn prefix_hash(&self) -> &str {
        &self.prefix_hash
    }

    /// The items that would be sent to be folded (a previous fold's output included).
    pub fn to_fold(&self) -> &[Value] {
        &self.to_fold
    }

    /// Makes the fold. Model failures and, under [`OnError::SendUnfolded`], every other
    /// failure return the request as it was; under [`OnError::Fail`] an upstream error
    /// returns [`FoldAbort`].
    pub async fn run(self, summarizer: &dyn Summarizer) -> Result<FoldResult, FoldAbort> {
        let mut calls = Calls::default();
        let folded = match self.route {
            Route::Local => self.local(summarizer, &mut calls).await,
            Route::Compact { fallback } => match self.compact(summarizer, &mut calls).await {
                Err(FoldError::Call(CallError::Unsupported { .. })) if fallback => {
                    // Min-fold was weighed for compact (0); weigh it again for local.
                    if self.to_fold_tokens < self.input.config.min_fold_for(FoldMode::Local) {
                        let mut result = self.base.keep(self.tokens_before, self.tokens_unfolded);
                        calls.fill(&mut result.report);
                        return Ok(result);
                    }
                    self.local(summarizer, &mut calls).await
                }
                other => other,
            },
        };
        match folded {
            Ok(output) => Ok(self.applied(output, calls)),
            Err(error) => self.failed(error, calls),
        }
    }

    fn model(&self) -> &str {
        self.input
            .config
            .model
            .as_deref()
            .unwrap_or(self.input.model)
    }

    fn estimator(&self) -> Estimator {
        self.input.config.estimator
    }

    /// One compaction call; its `output` items are spliced in whole.
    async fn compact(
        &self,
        summarizer: &dyn Summarizer,
        calls: &mut Calls,
    ) -> Result<Vec<Value>, FoldError> {
        if !self.input.compact_supported {
            return Err(FoldError::CompactUnsupported);
        }
        calls.attempts += 1;
        calls.mode_used = Some(FoldMode::Compact);
        let response = summarizer
            .compact(self.model(), &self.to_fold)
            .await
            .map_err(|error| {
                calls.compact_unsupported |= matches!(error, CallError::Unsupported { .. });
                error
            })?;
        calls.absorb(&response);
        match summary::output(&response) {
            [] => Err(FoldError::CompactNoOutput),
            output => Ok(output.to_vec()),
        }
    }

    /// A local summary, asked again once after a model failure.
    async fn local(
        &self,
        summarizer: &dyn Summarizer,
        calls: &mut Calls,
    ) -> Result<Vec<Value>, FoldError> {
        calls.mode_used = Some(FoldMode::Local);
        let request = summary::build_request(self.model(), &self.to_fold, self.input.config);
        let mut last = FoldError::SummaryNoText;
        for _ in 0..SUMMARY_ATTEMPTS {
            calls.attempts += 1;
            let response = summarizer.respond(request.clone()).await?;
            calls.absorb(&response);
            match summary::check_response(&response, self.estimator(), self.to_fold_tokens) {
                Ok(text) => return Ok(vec![summary::summary_item(&text)]),
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    fn applied(self, output: Vec<Value>, calls: Calls) -> FoldResult {
        let items = self.input.items;
        let pinned = pins::pinned(
            items.get(..self.split).unwrap_or_default(),
            &self.input.config.pins,
        );
        let head: Vec<Value> = output.iter().chain(&pinned).cloned().collect();
        let tail = items.get(self.split..).unwrap_or_default();
        let tokens_after = self.estimator().estimate_parts(&[&head, tail]);
        let mut report = FoldReport::quiet(
            Outcome::Applied,
            self.split,
            self.tokens_before,
            tokens_after,
        );
        report.prefix_hash = Some(self.prefix_hash.clone());
        calls.fill(&mut report);
        let record = FoldRecord {
            v: RECORD_VERSION,
            split: self.split,
            prefix_hash: self.prefix_hash,
            output,
            pinned,
            tokens_before: self.tokens_before,
            created_at_unix: self.input.now_unix,
        };
        FoldResult {
            rewrite: Rewrite::Replace {
                head,
                split: self.split,
            },
            report,
            record: Some(record),
            failed: None,
        }
    }

    fn failed(self, error: FoldError, calls: Calls) -> Result<FoldResult, FoldAbort> {
        let config = self.input.config;
        let mut report = FoldReport::quiet(
            Outcome::Failed,
            self.split,
            self.tokens_before,
            self.tokens_unfolded,
        );
        report.prefix_hash = Some(self.prefix_hash.clone());
        report.error = Some(error.to_string());
        report.error_kind = Some(error.label());
        calls.fill(&mut report);
        if !error.is_model_failure() && config.on_error == OnError::Fail {
            return Err(FoldAbort {
                error,
                report: Box::new(report),
            });
        }
        let failed = (config.back_off && error.backs_off()).then_some(FailedFold {
            v: RECORD_VERSION,
            split: self.split,
            prefix_hash: self.prefix_hash,
            tokens_before: self.tokens_before,
        });
        Ok(FoldResult {
            rewrite: self.base.rewrite(),
            report,
            record: None,
            failed,
        })
    }
}

impl Base {
    /// The longest usable record the transcript begins with; ties go to the earliest made,
    /// then to the first listed, so the choice (and the request's bytes) is stable.
    pub(crate) fn find(records: &[FoldRecord], chain: &[String]) -> Self {
        let best = records
            .iter()
            .filter(|r| r.v == RECORD_VERSION && r.split > 0 && !r.output.is_empty())
            .filter(|r| chain.get(r.split) == Some(&r.prefix_hash))
            .min_by(|a, b| {
                b.split
                    .cmp(&a.split)
                    .then(a.created_at_unix.cmp(&b.created_at_unix))
            });
        match best {
            Some(record) => Base {
                split: record.split,
                head: record.head(),
                prefix_hash: Some(record.prefix_hash.clone()),
            },
            None => Base::default(),
        }
    }

    fn rewrite(&self) -> Rewrite {
        match self.prefix_hash {
            Some(_) => Rewrite::Replace {
                head: self.head.clone(),
                split: self.split,
            },
            None => Rewrite::Unchanged,
        }
    }

    /// The request under the base alone: reused when there is a record, else unchanged.
    pub(crate) fn keep(&self, tokens_before: usize, tokens_after: usize) -> FoldResult {
        let outcome = if self.prefix_hash.is_some() {
            Outcome::Reused
        } else {
            Outcome::None
        };
        let mut report = FoldReport::quiet(outcome, self.split, tokens_before, tokens_after);
        report.prefix_hash.clone_from(&self.prefix_hash);
        done(self.rewrite(), report)
    }
}

impl Route {
    fn mode(self) -> FoldMode {
        match self {
            Route::Compact { .. } => FoldMode::Compact,
            Route::Local => FoldMode::Local,
        }
    }
}

fn done(rewrite: Rewrite, report: FoldReport) -> FoldResult {
    FoldResult {
        rewrite,
        report,
        record: None,
        failed: None,
    }
}

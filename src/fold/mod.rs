//! The fold: compaction of over-budget transcripts, the second stage of the request path
//! (compress → **fold** → inject expand → upstream).
//!
//! When a request's `input` is estimated over the token budget, its older part is folded
//! into a short form — by the upstream's `/responses/compact` endpoint or by an ordinary
//! summary call — and the recent part is kept verbatim. A fold is remembered as a
//! [`FoldRecord`] and reused while later transcripts begin with the prefix it folded, so the
//! request's prefix bytes stay stable across turns; a fold that fails is remembered as a
//! [`FailedFold`] and backed off from. Everything here is pure except [`transform()`], which
//! reaches the upstream only through the [`Summarizer`] trait the proxy implements, and
//! reads records and returns new ones without touching a store or a clock.
//!
//! Sub-modules by phase: [`item`] (read-only views of an item), [`split`] (where to cut),
//! [`estimate`] (token estimates), [`prefix`] (canonical hashing and prefix identity),
//! [`pins`] (items kept through a fold), [`backoff`] (after a failed fold), [`summary`]
//! (the local summary request and its checks), [`mod@transform`] (the orchestration),
//! [`record`] and [`report`] (what comes out).

pub mod backoff;
/// The token estimate is a fact of the turn, kept with the request body ([`crate::responses::estimate`]).
pub use crate::responses::estimate;
pub mod item;
pub mod pins;
pub mod prefix;
pub mod quick;
pub mod record;
pub mod report;
pub mod split;
pub mod summary;
pub mod transform;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use estimate::Estimator;
pub use pins::PinRule;
pub use prefix::{anchor, chain, prefix_hash, single_flight_key};
pub use quick::{ItemFacts, quick_plan};
pub use record::{FailedFold, FoldRecord, RECORD_VERSION};
pub use report::{FoldAbort, FoldReport, FoldResult, Outcome, Rewrite, Usage};
pub use split::split_point;
pub use summary::{DEFAULT_SUMMARY_PROMPT, SUMMARY_PREFIX, summary_item};
pub use transform::{FoldInput, PendingFold, Plan, plan, transform};

/// Estimated tokens above which a transcript is folded.
pub const DEFAULT_BUDGET: usize = 100_000;
/// Recent items always kept verbatim.
pub const DEFAULT_KEEP_LAST: usize = 4;
/// Cap on a local summary's `max_output_tokens`: half the budget, and no more than this.
pub const DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS: u32 = 8192;
/// Summary calls per local fold: the first, and one more after a model failure.
pub const SUMMARY_ATTEMPTS: u32 = 2;

/// How a fold is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoldMode {
    /// The compaction endpoint, falling back to a local summary on an upstream that answers
    /// it 404/405/501 (the proxy remembers that per upstream).
    #[default]
    Auto,
    /// The upstream's `/responses/compact` endpoint only.
    Compact,
    /// An ordinary `/responses` call asking for a summary.
    Local,
    /// Never fold: the input goes as the client sent it.
    Off,
}

/// What a fold that fails with an upstream or transport error does to the client's turn.
/// (A model failure — a summary with no text, incomplete or too large — always sends the
/// request unfolded: a model that will not summarise a prefix must not fail every turn.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Send the request unfolded (fail open); the fold is reported as failed.
    #[default]
    SendUnfolded,
    /// Return [`FoldAbort`], which the proxy renders as an error to the client.
    Fail,
}

/// The fold's settings, resolved from the proxy's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldConfig {
    pub mode: FoldMode,
    /// Estimated tokens above which the transcript is folded.
    pub budget: usize,
    /// Recent items kept verbatim (more when a tool exchange or reasoning straddles the cut).
    pub keep_last: usize,
    /// Estimated tokens below which the part to fold is left alone; `None` for the default
    /// of the mode used (see [`FoldConfig::min_fold_for`]).
    pub min_fold: Option<usize>,
    /// Model for the fold's calls; `None` for the request's own model.
    pub model: Option<String>,
    /// Instruction sent after the items to fold in a local summary request.
    pub summary_prompt: String,
    /// `max_output_tokens` of a local summary request; `None` for min(budget/2, 8192).
    pub max_output_tokens: Option<u32>,
    /// `reasoning.effort` of a local summary request, when set.
    pub reasoning_effort: Option<String>,
    /// Items of the folded prefix kept verbatim after the fold's output.
    pub pins: Vec<PinRule>,
    /// Whether a failed fold is backed off from (see [`backoff`]).
    pub back_off: bool,
    pub on_error: OnError,
    pub estimator: Estimator,
}

impl Default for FoldConfig {
    fn default() -> Self {
        FoldConfig {
            mode: FoldMode::Auto,
            budget: DEFAULT_BUDGET,
            keep_last: DEFAULT_KEEP_LAST,
            min_fold: None,
            model: None,
            summary_prompt: DEFAULT_SUMMARY_PROMPT.to_owned(),
            max_output_tokens: None,
            reasoning_effort: None,
            pins: Vec::new(),
            back_off: true,
            on_error: OnError::SendUnfolded,
            estimator: Estimator::Bytes,
        }
    }
}

impl FoldConfig {
    /// The min-fold threshold for a fold made by `used` ([`FoldMode::Compact`] or
    /// [`FoldMode::Local`]). Unless configured: 0 for compact, whose item size is the
    /// server's; for local, the larger of an eighth of the budget and twice the estimate of
    /// an empty summary item — a prefix that small saves little even summarised in a word,
    /// and is likely to be refused as no smaller than its summary.
    pub fn min_fold_for(&self, used: FoldMode) -> usize {
        if let Some(configured) = self.min_fold {
            return configured;
        }
        match used {
            FoldMode::Local => {
                let empty = self.estimator.estimate(&[summary_item("")]);
                (self.budget / 8).max(2 * empty)
            }
            FoldMode::Auto | FoldMode::Compact | FoldMode::Off => 0,
        }
    }

    /// `max_output_tokens` of a local summary request.
    pub fn summary_max_output_tokens(&self) -> u32 {
        self.max_output_tokens.unwrap_or_else(|| {
            let half = u32::try_from(self.budget / 2).unwrap_or(u32::MAX);
            half.min(DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS)
        })
    }
}

/// A failed call to the upstream, as the proxy's [`Summarizer`] reports it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The endpoint does not exist on this upstream (404, 405 or 501).
    #[error("endpoint unsupported by the upstream (HTTP {status})")]
    Unsupported { status: u16 },
    /// Any other non-success answer; `body` is for logs and is not part of the message.
    #[error("upstream answered HTTP {status}")]
    Status { status: u16, body: String },
    #[error("transport error: {0}")]
    Transport(String),
    #[error("upstream call timed out")]
    Timeout,
}

impl CallError {
    /// Whether the same call may well succeed on a later turn: a timeout, a transport error,
    /// 408, 409, 429 or a 5xx. Those are not backed off from.
    pub fn is_transient(&self) -> bool {
        match self {
            CallError::Transport(_) | CallError::Timeout => true,
            CallError::Status { status, .. } => matches!(status, 408 | 409 | 429) || *status >= 500,
            CallError::Unsupported { .. } => false,
        }
    }
}

/// Why a fold failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error("summary response has no text")]
    SummaryNoText,
    #[error("summary response is incomplete: {reason}")]
    SummaryIncomplete { reason: String },
    #[error("summary is larger than what it folds ({summary} >= {folded} estimated tokens)")]
    SummaryTooLarge { summary: usize, folded: usize },
    /// The compaction endpoint answered without an `output` array of items.
    #[error("compaction response has no output items")]
    CompactNoOutput,
    /// Mode `compact` on an upstream known not to have the endpoint: no call is made.
    #[error("compaction endpoint is unsupported by this upstream")]
    CompactUnsupported,
    #[error(transparent)]
    Call(#[from] CallError),
}

impl FoldError {
    /// A model failure (no text, incomplete, too large): asked twice, then the request is
    /// sent unfolded whatever [`OnError`] says.
    pub fn is_model_failure(&self) -> bool {
        matches!(
            self,
            FoldError::SummaryNoText
                | FoldError::SummaryIncomplete { .. }
                | FoldError::SummaryTooLarge { .. }
        )
    }

    /// Whether the same prefix would most likely fail the same way, so a [`FailedFold`] is
    /// recorded: model failures, a malformed or missing compaction endpoint, and 4xx
    /// answers other than 408/409/429. Transient errors are not: the next turn asks again.
    pub fn backs_off(&self) -> bool {
        match self {
            FoldError::Call(call) => !call.is_transient(),
            _ => true,
        }
    }

    /// A low-cardinality label for metrics and logs.
    pub fn label(&self) -> &'static str {
        match self {
            FoldError::SummaryNoText => "summary_no_text",
            FoldError::SummaryIncomplete { .. } => "summary_incomplete",
            FoldError::SummaryTooLarge { .. } => "summary_too_large",
            FoldError::CompactNoOutput => "compact_no_output",
            FoldError::CompactUnsupported | FoldError::Call(CallError::Unsupported { .. }) => {
                "unsupported"
            }
            FoldError::Call(CallError::Status { .. }) => "upstream_status",
            FoldError::Call(CallError::Transport(_)) => "transport",
            FoldError::Call(CallError::Timeout) => "timeout",
        }
    }
}

/// The upstream calls a fold makes; the proxy implements it over its upstream client, tests
/// with a fake. Implementations map 404/405/501 to [`CallError::Unsupported`].
#[async_trait::async_trait]
pub trait Summarizer: Send + Sync {
    /// `POST {upstream}/responses/compact` with `{"model", "input"}`; the response JSON.
    async fn compact(&self, model: &str, input: &[Value]) -> Result<Value, CallError>;
    /// `POST {upstream}/responses` with `request` (non-streaming); the response JSON.
    async fn respond(&self, request: Value) -> Result<Value, CallError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_named_constants() {
        let cfg = FoldConfig::default();
        assert_eq!((cfg.budget, cfg.keep_last), (100_000, 4));
        assert_eq!(cfg.mode, FoldMode::Auto);
        assert!(cfg.back_off);
        assert_eq!(cfg.on_error, OnError::SendUnfolded);
        assert_eq!(cfg.summary_max_output_tokens(), 8192);
        let small = FoldConfig {
            budget: 10_000,
            ..FoldConfig::default()
        };
        assert_eq!(small.summary_max_output_tokens(), 5_000);
    }

    #[test]
    fn min_fold_default_per_mode() {
        let cfg = FoldConfig::default();
        assert_eq!(cfg.min_fold_for(FoldMode::Compact), 0);
        assert_eq!(cfg.min_fold_for(FoldMode::Local), 12_500);
        // A small budget: twice the empty summary item's estimate wins.
        let small = FoldConfig {
            budget: 80,
            ..FoldConfig::default()
        };
        let empty = Estimator::Bytes.estimate(&[summary_item("")]);
        assert!(2 * empty > 10);
        assert_eq!(small.min_fold_for(FoldMode::Local), 2 * empty);
        let set = FoldConfig {
            min_fold: Some(7),
            ..FoldConfig::default()
        };
        assert_eq!(
            (
                set.min_fold_for(FoldMode::Local),
                set.min_fold_for(FoldMode::Compact)
            ),
            (7, 7)
        );
    }

    #[test]
    fn error_classes() {
        assert!(FoldError::SummaryNoText.is_model_failure());
        assert!(FoldError::SummaryNoText.backs_off());
        assert!(!FoldError::Call(CallError::Timeout).backs_off());
        assert!(
            !FoldError::Call(CallError::Status {
                status: 503,
                body: String::new()
            })
            .backs_off()
        );
        assert!(
            !FoldError::Call(CallError::Status {
                status: 429,
                body: String::new()
            })
            .backs_off()
        );
        assert!(
            FoldError::Call(CallError::Status {
                status: 400,
                body: String::new()
            })
            .backs_off()
        );
        assert!(!FoldError::Call(CallError::Timeout).is_model_failure());
        assert_eq!(
            FoldError::Call(CallError::Unsupported { status: 404 }).label(),
            "unsupported"
        );
    }
}

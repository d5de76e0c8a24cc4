//! What a fold attempt hands back to the proxy: the request's new `input` (or word that it
//! is unchanged), the records to persist, and a [`FoldReport`] with everything the proxy
//! logs, counts and audits, with the tally of the fold's calls that fills it. Nothing here
//! decides anything; it is the transform's result shape.

use serde::Serialize;
use serde_json::Value;

use super::record::{FailedFold, FoldRecord};
use super::{FoldError, FoldMode, summary};

/// What happened to this request's transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A new fold was made and applied.
    Applied,
    /// A stored fold was applied; no call was made.
    Reused,
    /// A fold was tried and failed; the request goes unfolded (or as a stored fold left it).
    Failed,
    /// A fold was due but held back by an earlier failure on the same prefix.
    BackedOff,
    /// No fold: within budget, too little to fold, or mode `off`.
    None,
}

/// Token usage the fold's calls reported, summed over every call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// Adds the `usage` member of a response, when it has one.
    pub fn add_response(&mut self, response: &Value) {
        let Some(usage) = response.get("usage") else {
            return;
        };
        let field = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
        self.input_tokens += field("input_tokens");
        self.output_tokens += field("output_tokens");
        self.total_tokens += field("total_tokens");
    }
}

/// One fold attempt, for logs, metrics and audit events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FoldReport {
    pub outcome: Outcome,
    /// The split the outcome is about: the new fold's (applied, failed, backed off), the
    /// stored fold's (reused), 0 for none.
    pub split: usize,
    /// Estimate of the client's transcript.
    pub tokens_before: usize,
    /// Estimate of the `input` that goes upstream.
    pub tokens_after: usize,
    /// Upstream calls made (a compact call answered "unsupported" counts).
    pub attempts: u32,
    pub usage: Usage,
    /// `id` of the last call's response.
    pub response_id: Option<String>,
    /// Item types of the last call's `output`, in order: tells a summary that ended in a
    /// tool call from one cut short.
    pub output_types: Vec<String>,
    pub error: Option<String>,
    /// [`FoldError::label`] of `error`.
    pub error_kind: Option<&'static str>,
    /// Identity of the first `split` items; `None` with outcome none.
    pub prefix_hash: Option<String>,
    /// `compact` or `local` when a call was made.
    pub mode_used: Option<FoldMode>,
    /// Set when a compact call answered "unsupported": the proxy remembers it for this
    /// upstream and passes `compact_supported = false` from then on.
    pub compact_unsupported: bool,
}

impl FoldReport {
    /// A report of `outcome` with no call made.
    pub fn quiet(
        outcome: Outcome,
        split: usize,
        tokens_before: usize,
        tokens_after: usize,
    ) -> Self {
        FoldReport {
            outcome,
            split,
            tokens_before,
            tokens_after,
            attempts: 0,
            usage: Usage::default(),
            response_id: None,
            output_types: Vec::new(),
            error: None,
            error_kind: None,
            prefix_hash: None,
            mode_used: None,
            compact_unsupported: false,
        }
    }
}

/// The request's new `input`.
#[derive(Clone, Debug, PartialEq)]
pub enum Rewrite {
    /// Send the input exactly as the client sent it.
    Unchanged,
    /// Replace the client's first `split` items by `head` (a fold's output, then its pinned
    /// items); the items from `split` on go as the client sent them, so the proxy can keep
    /// their original bytes.
    Replace { head: Vec<Value>, split: usize },
}

impl Rewrite {
    /// The rewritten items for `items`, the transcript the transform was given.
    pub fn apply(&self, items: &[Value]) -> Vec<Value> {
        match self {
            Rewrite::Unchanged => items.to_vec(),
            Rewrite::Replace { head, split } => head
                .iter()
                .chain(items.get(*split..).unwrap_or_default())
                .cloned()
                .collect(),
        }
    }
}

/// The transform's answer when the turn goes on.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldResult {
    pub rewrite: Rewrite,
    pub report: FoldReport,
    /// A new fold to store under the conversation's anchor.
    pub record: Option<FoldRecord>,
    /// A failed fold to store as the anchor's last one (replacing the previous).
    pub failed: Option<FailedFold>,
}

/// The transform's answer when the fold failed with an upstream error under
/// [`OnError::Fail`](super::OnError::Fail): the proxy renders `error` to the client and
/// still logs and counts `report`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("fold failed: {error}")]
pub struct FoldAbort {
    #[source]
    pub error: FoldError,
    pub report: Box<FoldReport>,
}

/// What the fold's calls did, accumulated over every call.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    pub(crate) attempts: u32,
    pub(crate) usage: Usage,
    pub(crate) response_id: Option<String>,
    pub(crate) output_types: Vec<String>,
    pub(crate) mode_used: Option<FoldMode>,
    pub(crate) compact_unsupported: bool,
}

impl Calls {
    pub(crate) fn absorb(&mut self, response: &Value) {
        self.usage.add_response(response);
        self.response_id = summary::response_id(response);
        self.output_types = summary::output_types(response);
    }

    pub(crate) fn fill(self, report: &mut FoldReport) {
        report.attempts = self.attempts;
        report.usage = self.usage;
        report.response_id = self.response_id;
        report.output_types = self.output_types;
        report.mode_used = self.mode_used;
        report.compact_unsupported = self.compact_unsupported;
    }
}

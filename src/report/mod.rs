//! `ctxgate report`: a corpus of real tool outputs and transcripts run through the proxy's own decision path.
//!
//! Tuning compression on the bare compressor misleads: what a user gets is decided by the turn's stages — which
//! items are candidates, the verbatim rules, the saving thresholds, the conversation's remembered decisions, the
//! fold, the expand tool a first marker brings. So the report builds the app exactly as `ctxgate serve` does (the
//! same config sources, a real redb store in a temporary folder, an in-process `ctxgate-mock` as the upstream for
//! the fold's calls), runs every request through the same stages a served request runs through, and measures what
//! would have reached the upstream: real `o200k_base` tokens, error lines still visible verbatim, outputs changed,
//! and the time the stages took. Three sections: each tool output as its own conversation, each transcript as one
//! request (+ a final user "continue", with where its tokens are by part), and each transcript replayed turn by
//! turn with a provider prefix cache.

mod corpus;
pub mod measure;
pub mod parts;
mod render;
mod replay;
mod run;

use std::path::PathBuf;

use serde::Serialize;

pub use render::to_text;
pub use run::run;

/// What to read and how to build the app.
pub struct ReportOptions {
    /// A folder of tool outputs (with an optional `manifest.tsv`).
    pub outputs: Option<PathBuf>,
    /// A folder of `*.json` transcripts.
    pub transcripts: Option<PathBuf>,
    /// Whether to replay the transcripts turn by turn too.
    pub replay: bool,
    /// A folder to write each transcript's first-seen upstream request into.
    pub dump: Option<PathBuf>,
    /// The config the app is built from (the store path and upstream are replaced by the report's own).
    pub config: crate::config::Config,
    /// The user message each tool output is sent after: the conversation's task, whose words are the query
    /// terms the compressors keep relevant lines for.
    pub task: String,
}

/// The task each tool output is sent after when none is given: it says nothing about the output, so the
/// figures are the compressors' own.
pub const DEFAULT_TASK: &str = "Work on the task in this repository.";

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
    #[error("cannot set up the report's app: {0}")]
    Setup(String),
    #[error("the stages refused a request of {name}: {message}")]
    Turn { name: String, message: String },
}

/// Totals of one group of tool outputs (a kind, or all).
#[derive(Debug, Clone, Default, Serialize)]
pub struct OutputTotals {
    pub files: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// What the naive rule ([`measure::naive_rule`]) leaves of the same outputs: the line filter to beat.
    pub tokens_naive: usize,
    pub error_lines: usize,
    pub error_lines_kept: usize,
    pub changed: usize,
    pub micros: u64,
}

impl OutputTotals {
    pub fn saved_percent(&self) -> f64 {
        percent_less(self.tokens_before, self.tokens_after)
    }

    fn add(&mut self, o: &OutputTotals) {
        self.files += o.files;
        self.tokens_before += o.tokens_before;
        self.tokens_after += o.tokens_after;
        self.tokens_naive += o.tokens_naive;
        self.error_lines += o.error_lines;
        self.error_lines_kept += o.error_lines_kept;
        self.changed += o.changed;
        self.micros += o.micros;
    }
}

/// One tool output's result.
#[derive(Debug, Clone, Serialize)]
pub struct OutputRow {
    pub name: String,
    pub kind: String,
    #[serde(flatten)]
    pub totals: OutputTotals,
    /// Error lines of the original not visible verbatim in what the upstream received.
    pub lost: Vec<String>,
}

/// One transcript sent whole (+ "continue").
#[derive(Debug, Clone, Default, Serialize)]
pub struct TranscriptRow {
    pub name: String,
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// Tokens of the tool outputs in the request, before and after (folded outputs count as gone).
    pub output_tokens_before: usize,
    pub output_tokens_after: usize,
    pub error_lines: usize,
    pub error_lines_kept: usize,
    pub fold: String,
    pub micros: u64,
}

impl TranscriptRow {
    pub(crate) fn add(&mut self, o: &TranscriptRow) {
        self.tokens_before += o.tokens_before;
        self.tokens_after += o.tokens_after;
        self.output_tokens_before += o.output_tokens_before;
        self.output_tokens_after += o.output_tokens_after;
        self.error_lines += o.error_lines;
        self.error_lines_kept += o.error_lines_kept;
        self.micros += o.micros;
    }
}

/// One transcript replayed turn by turn.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplayRow {
    pub name: String,
    pub turns: usize,
    pub direct: ReplayCost,
    pub proxy: ReplayCost,
    pub micros: u64,
}

/// Input tokens of a replay and what a provider prefix cache served of them.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ReplayCost {
    pub tokens: usize,
    pub cached: usize,
    /// Of the uncached tokens, those of the head and the items the previous turn already sent: read again at full
    /// price because something before them changed (a cache break), not because they are new.
    pub reread: usize,
}

impl ReplayCost {
    /// Uncached tokens plus cached tokens at a tenth of the price.
    pub fn cost(&self) -> f64 {
        (self.tokens - self.cached.min(self.tokens)) as f64 + 0.1 * self.cached as f64
    }

    pub fn hit_percent(&self) -> f64 {
        if self.tokens == 0 {
            0.0
        } else {
            100.0 * self.cached as f64 / self.tokens as f64
        }
    }

    fn add(&mut self, o: &ReplayCost) {
        self.tokens += o.tokens;
        self.cached += o.cached;
        self.reread += o.reread;
    }

    /// The share (in %) of the cost that is [`ReplayCost::reread`].
    pub fn reread_percent(&self) -> f64 {
        let cost = self.cost();
        if cost == 0.0 {
            0.0
        } else {
            100.0 * self.reread as f64 / cost
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Whether token counts are real `o200k_base` counts.
    pub tokenizer: &'static str,
    pub outputs: Vec<OutputRow>,
    pub by_kind: Vec<(String, OutputTotals)>,
    pub outputs_total: OutputTotals,
    pub transcripts: Vec<TranscriptRow>,
    /// Where the transcripts' tokens are, before and after, by part.
    pub breakdown: parts::Breakdown,
    pub replays: Vec<ReplayRow>,
}

impl Report {
    fn finish(&mut self) {
        let mut kinds: std::collections::BTreeMap<String, OutputTotals> = Default::default();
        let mut total = OutputTotals::default();
        for row in &self.outputs {
            kinds.entry(row.kind.clone()).or_default().add(&row.totals);
            total.add(&row.totals);
        }
        let mut by_kind: Vec<_> = kinds.into_iter().collect();
        by_kind.sort_by_key(|(_, t)| std::cmp::Reverse(t.tokens_before));
        self.by_kind = by_kind;
        self.outputs_total = total;
    }

    pub fn replay_totals(&self) -> (ReplayCost, ReplayCost) {
        let (mut direct, mut proxy) = (ReplayCost::default(), ReplayCost::default());
        for r in &self.replays {
            direct.add(&r.direct);
            proxy.add(&r.proxy);
        }
        (direct, proxy)
    }
}

/// `100 × (1 − after/before)`, 0 for an empty before.
pub fn percent_less(before: usize, after: usize) -> f64 {
    if before == 0 {
        0.0
    } else {
        100.0 * (1.0 - after as f64 / before as f64)
    }
}

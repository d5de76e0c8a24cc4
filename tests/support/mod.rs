//! Test support for the fold's transform tests: a scripted fake [`Summarizer`] that records
//! every call, builders for transcripts that go over a small budget, and a one-call way to
//! run the transform.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of the shared support"
)]

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use ctxgate::fold::{
    CallError, FailedFold, FoldAbort, FoldConfig, FoldInput, FoldMode, FoldRecord, FoldResult,
    Rewrite, Summarizer, transform,
};
use serde_json::{Value, json};

/// One call the fake received.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Compact { model: String, input: Vec<Value> },
    Respond(Value),
}

/// A summarizer answering from scripts, one answer per call, in order. An unscripted call
/// answers a transport error, so a test that expected no call fails loudly.
#[derive(Default)]
pub struct Fake {
    compact: Mutex<VecDeque<Result<Value, CallError>>>,
    respond: Mutex<VecDeque<Result<Value, CallError>>>,
    calls: Mutex<Vec<Call>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Fake {
    pub fn with_compact(self, answer: Result<Value, CallError>) -> Self {
        lock(&self.compact).push_back(answer);
        self
    }
    pub fn with_respond(self, answer: Result<Value, CallError>) -> Self {
        lock(&self.respond).push_back(answer);
        self
    }
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.calls).clone()
    }
    /// The requests of the `respond` calls, in order.
    pub fn respond_requests(&self) -> Vec<Value> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::Respond(request) => Some(request),
                Call::Compact { .. } => None,
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Summarizer for Fake {
    async fn compact(&self, model: &str, input: &[Value]) -> Result<Value, CallError> {
        lock(&self.calls).push(Call::Compact {
            model: model.to_owned(),
            input: input.to_vec(),
        });
        let answer = lock(&self.compact).pop_front();
        answer.unwrap_or_else(|| Err(CallError::Transport("unscripted compact call".into())))
    }
    async fn respond(&self, request: Value) -> Result<Value, CallError> {
        lock(&self.calls).push(Call::Respond(request));
        let answer = lock(&self.respond).pop_front();
        answer.unwrap_or_else(|| Err(CallError::Transport("unscripted respond call".into())))
    }
}

/// A completed summary response carrying `text`.
pub fn summary_answer(text: &str) -> Result<Value, CallError> {
    Ok(json!({
        "id": "resp_sum",
        "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        ],
        "usage": {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940}
    }))
}

/// A compaction response.
pub fn compact_answer() -> Result<Value, CallError> {
    Ok(json!({
        "id": "cmp_1",
        "object": "response.compaction",
        "output": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first ask"}]},
            {"type": "compaction", "id": "cmp_item", "encrypted_content": "ENCRYPTED"}
        ],
        "usage": {"input_tokens": 1500, "output_tokens": 200, "total_tokens": 1700}
    }))
}

/// A message of about 85 estimated tokens (340 bytes).
pub fn msg(role: &str, i: usize) -> Value {
    let text = format!("{role} turn {i}: ");
    json!({"type": "message", "role": role, "content": format!("{text}{}", "lorem ipsum ".repeat(25))})
}

/// `n` alternating user/assistant messages opening with a developer message.
pub fn transcript(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| match i {
            0 => msg("developer", 0),
            i if i % 2 == 1 => msg("user", i),
            i => msg("assistant", i),
        })
        .collect()
}

/// A budget of 1000 estimated tokens: a dozen messages go over it.
pub fn config(mode: FoldMode) -> FoldConfig {
    FoldConfig {
        mode,
        budget: 1000,
        ..FoldConfig::default()
    }
}

/// Compact JSON of each item, for byte comparisons.
pub fn bytes(items: &[Value]) -> Vec<String> {
    items.iter().map(Value::to_string).collect()
}

/// The request model every test sends.
pub const MODEL: &str = "gpt-test";
/// The clock value every test passes.
pub const NOW: u64 = 1_700_000_000;

/// Runs the transform on one request.
pub async fn fold(
    items: &[Value],
    records: &[FoldRecord],
    failed: Option<&FailedFold>,
    config: &FoldConfig,
    compact_supported: bool,
    fake: &Fake,
) -> Result<FoldResult, FoldAbort> {
    let input = FoldInput {
        items,
        model: MODEL,
        records,
        failed,
        config,
        compact_supported,
        now_unix: NOW,
    };
    transform(input, fake).await
}

/// Runs a fold that must not abort; an abort shows up as a failed assertion on its report.
pub async fn fold_ok(
    items: &[Value],
    records: &[FoldRecord],
    failed: Option<&FailedFold>,
    config: &FoldConfig,
    fake: &Fake,
) -> FoldResult {
    match fold(items, records, failed, config, true, fake).await {
        Ok(result) => result,
        Err(abort) => FoldResult {
            rewrite: Rewrite::Unchanged,
            report: *abort.report,
            record: None,
            failed: None,
        },
    }
}

/// A successful local fold of `items`, returning its record.
pub async fn local_record(items: &[Value], config: &FoldConfig) -> Option<FoldRecord> {
    let fake = Fake::default().with_respond(summary_answer("the summary"));
    fold_ok(items, &[], None, config, &fake).await.record
}

pub fn empty_record() -> FoldRecord {
    FoldRecord {
        v: 1,
        split: 0,
        prefix_hash: String::new(),
        output: vec![],
        pinned: vec![],
        tokens_before: 0,
        created_at_unix: 0,
    }
}

pub fn empty_failed() -> FailedFold {
    FailedFold {
        v: 1,
        split: 0,
        prefix_hash: String::new(),
        tokens_before: 0,
    }
}

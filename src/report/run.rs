//! The report's rig: the app built as `ctxgate serve` builds it, and one turn run through its stages.

use std::time::Instant;

use bytes::Bytes;
use serde_json::{Value, json};

use super::corpus::{self, Output, Transcript};
use super::measure::{Tokens, error_lines, kept_lines};
use super::replay;
use super::{OutputRow, OutputTotals, Report, ReportError, ReportOptions, TranscriptRow};
use crate::responses::RequestBody;
use crate::turn::Turn;
use crate::turn::stage::run_stages;

/// The app under measurement, its upstream, and the store folder they live in.
pub(super) struct Rig {
    app: crate::App,
    _mock: crate::mock::MockHandle,
    _dir: tempfile::TempDir,
    turns: u64,
}

impl Rig {
    async fn new(mut config: crate::config::Config) -> Result<Rig, ReportError> {
        let setup = |e: &dyn std::fmt::Display| ReportError::Setup(e.to_string());
        let mock = crate::mock::start(crate::mock::MockConfig::default())
            .await
            .map_err(|e| setup(&e))?;
        let dir = tempfile::tempdir().map_err(|e| setup(&e))?;
        config.store_path = dir.path().join("report.redb");
        config.upstream.url = reqwest::Url::parse(&mock.base_url()).map_err(|e| setup(&e))?;
        config.upstream.api_key_env = None;
        let env = std::collections::HashMap::<String, String>::new();
        let app = crate::App::build(config, &env).map_err(|e| setup(&e))?;
        Ok(Rig {
            app,
            _mock: mock,
            _dir: dir,
            turns: 0,
        })
    }

    /// Runs `body` through the stages a served `/v1/responses` request runs through; returns what the upstream
    /// would receive and the time the stages took.
    pub(super) async fn turn(
        &mut self,
        name: &str,
        body: &Value,
    ) -> Result<(Value, u64), ReportError> {
        let fail = |message: String| ReportError::Turn {
            name: name.to_string(),
            message,
        };
        let state = &self.app.state;
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            axum::http::header::AUTHORIZATION,
            axum::http::HeaderValue::from_static("Bearer sk-ctxgate-report"),
        );
        let caller = state
            .credentials
            .authenticate(&headers)
            .map_err(|e| fail(e.to_string()))?;
        let bytes = Bytes::from(serde_json::to_vec(body).map_err(|e| fail(e.to_string()))?);
        self.turns += 1;
        let started = Instant::now();
        let body = RequestBody::parse(bytes).map_err(|e| fail(e.to_string()))?;
        let mut turn = Turn::new(format!("report-{}", self.turns), caller, body, headers);
        turn.offer_from_head =
            crate::turn::expand::inject::offer_from_head(&state.expander.settings, &turn.body);
        run_stages(&state.stages, &mut turn, &state.metrics)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let sent = turn.body.to_bytes();
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let value = serde_json::from_slice(&sent).map_err(|e| fail(e.to_string()))?;
        Ok((value, micros))
    }

    async fn close(self) {
        let state = &self.app.state;
        state.tasks.close();
        state.tasks.wait().await;
    }
}

/// The text of a `function_call_output` (a string, or the text parts of a content list).
pub(super) fn output_text(item: &Value) -> Option<String> {
    if item.get("type").and_then(Value::as_str) != Some("function_call_output") {
        return None;
    }
    match item.get("output")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// Tool outputs of an input array by `call_id`.
fn outputs_by_call(items: &[Value]) -> std::collections::HashMap<String, String> {
    items
        .iter()
        .filter_map(|i| {
            let id = i.get("call_id").and_then(Value::as_str)?;
            Some((id.to_string(), output_text(i)?))
        })
        .collect()
}

fn input_of(body: &Value) -> &[Value] {
    body.get("input")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Runs the whole report.
pub async fn run(options: ReportOptions) -> Result<Report, ReportError> {
    let mut tokens = Tokens::new();
    let mut report = Report {
        tokenizer: if tokens.is_real() {
            "o200k_base"
        } else {
            "bytes/4"
        },
        ..Default::default()
    };
    if let Some(dir) = &options.outputs {
        let outputs = corpus::outputs(dir)?;
        let mut rig = Rig::new(options.config.clone()).await?;
        for (i, output) in outputs.iter().enumerate() {
            report
                .outputs
                .push(output_row(&mut rig, &mut tokens, i, output, &options.task).await?);
        }
        rig.close().await;
    }
    if let Some(dir) = &options.transcripts {
        let transcripts = corpus::transcripts(dir)?;
        if let Some(dump) = &options.dump {
            std::fs::create_dir_all(dump).map_err(|e| ReportError::Write {
                path: dump.display().to_string(),
                message: e.to_string(),
            })?;
        }
        let mut rig = Rig::new(options.config.clone()).await?;
        let min_output_chars = options.config.compress.min_tool_output_chars;
        for t in &transcripts {
            let (row, sent) =
                transcript_row(&mut rig, &mut tokens, t, options.dump.as_deref()).await?;
            // The request's items less the final "continue" the row added.
            let sent_items = input_of(&sent);
            let sent_items = &sent_items[..sent_items.len().saturating_sub(1)];
            report.breakdown.add(
                &t.items,
                sent_items,
                (row.tokens_before, row.tokens_after),
                min_output_chars,
                &mut |text| tokens.count(text),
            );
            report.transcripts.push(row);
        }
        rig.close().await;
        if options.replay {
            let mut rig = Rig::new(options.config.clone()).await?;
            for t in &transcripts {
                report
                    .replays
                    .push(replay::replay(&mut rig, &mut tokens, t).await?);
            }
            rig.close().await;
        }
    }
    report.finish();
    Ok(report)
}

/// One tool output as its own conversation: a user task, the call that produced it, the output.
async fn output_row(
    rig: &mut Rig,
    tokens: &mut Tokens,
    index: usize,
    output: &Output,
    task: &str,
) -> Result<OutputRow, ReportError> {
    let arguments = json!({ "command": output.command }).to_string();
    let body = json!({
        "model": "mock-ok",
        "store": false,
        "prompt_cache_key": format!("report-output-{index}"),
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": task}]},
            {"type": "function_call", "call_id": "call_report", "name": "shell", "arguments": arguments},
            {"type": "function_call_output", "call_id": "call_report", "output": output.text},
        ]
    });
    let (sent, micros) = rig.turn(&output.name, &body).await?;
    let received = outputs_by_call(input_of(&sent))
        .remove("call_report")
        .unwrap_or_default();
    let errors = error_lines(&output.text);
    let kept = kept_lines(&errors, &received);
    let lost = if kept < errors.len() {
        let visible: std::collections::HashSet<&str> = received.split('\n').collect();
        errors
            .iter()
            .filter(|l| !visible.contains(**l))
            .map(|l| l.to_string())
            .collect()
    } else {
        Vec::new()
    };
    Ok(OutputRow {
        name: output.name.clone(),
        kind: output.kind.clone(),
        totals: OutputTotals {
            files: 1,
            tokens_before: tokens.count(&output.text),
            tokens_after: tokens.count(&received),
            tokens_naive: tokens.count(&super::measure::naive_rule(&output.text)),
            error_lines: errors.len(),
            error_lines_kept: kept,
            changed: usize::from(received != output.text),
            micros,
        },
        lost,
    })
}

/// The whole transcript and a final "continue", as one first-seen request; its row and what the upstream would
/// receive.
async fn transcript_row(
    rig: &mut Rig,
    tokens: &mut Tokens,
    t: &Transcript,
    dump: Option<&std::path::Path>,
) -> Result<(TranscriptRow, Value), ReportError> {
    let mut input = t.items.clone();
    input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "continue"}]}));
    let body = json!({
        "model": "mock-ok",
        "store": false,
        "prompt_cache_key": format!("report-transcript-{}", t.name),
        "input": input,
    });
    let (sent, micros) = rig.turn(&t.name, &body).await?;
    if let Some(dump) = dump {
        let path = dump.join(&t.name);
        let text = serde_json::to_string_pretty(&sent).unwrap_or_default();
        std::fs::write(&path, text).map_err(|e| ReportError::Write {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    }
    let before_outputs = outputs_by_call(&t.items);
    let after_outputs = outputs_by_call(input_of(&sent));
    let mut row = TranscriptRow {
        name: t.name.clone(),
        tokens_before: tokens.count(&body.to_string()),
        tokens_after: tokens.count(&sent.to_string()),
        micros,
        ..Default::default()
    };
    for (id, original) in &before_outputs {
        row.output_tokens_before += tokens.count(original);
        let Some(received) = after_outputs.get(id) else {
            continue;
        };
        row.output_tokens_after += tokens.count(received);
        let errors = error_lines(original);
        row.error_lines += errors.len();
        row.error_lines_kept += kept_lines(&errors, received);
    }
    row.fold = if input_of(&sent).len() < input.len() {
        "folded".into()
    } else {
        "none".into()
    };
    Ok((row, sent))
}

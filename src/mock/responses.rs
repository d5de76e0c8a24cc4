//! `POST /v1/responses`: builds response objects and answers as JSON or SSE.
//!
//! The objects follow the real API's field set and order closely, because the proxy
//! under test parses, rewrites and re-serializes them and the official SDKs must
//! accept what comes out; optional request settings are echoed like the real API does.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::{Map, Value, json};

use super::ids::{self, Seed};
use super::scenario::{Item, Outcome, Plan, Scenario};
use super::server::App;
use super::sse;

/// Per-request facts every rendered object shares.
pub(crate) struct Ctx<'a> {
    pub req: &'a Value,
    pub seed: Seed,
    pub body_len: usize,
}

impl Ctx<'_> {
    pub(crate) fn response_id(&self) -> String {
        self.seed.id("resp_", "response")
    }

    pub(crate) fn item_id(&self, index: usize, item: &Item) -> String {
        let prefix = match item {
            Item::Message { .. } => "msg_",
            Item::Call { .. } => "fc_",
        };
        self.seed.id(prefix, &format!("item-{index}"))
    }

    fn call_id(&self, index: usize) -> String {
        let id = self.seed.id("", &format!("call-{index}"));
        format!("call_{}", &id[..24])
    }

    /// `x-request-id` like the real API sends, so the proxy can log and forward it.
    fn request_id(&self) -> String {
        self.seed.id("req_", "request")[..36].to_owned()
    }
}

pub(crate) async fn handle(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let Ok(req @ Value::Object(_)) = serde_json::from_slice::<Value>(&body) else {
        return ids::error_response(
            StatusCode::BAD_REQUEST,
            "We could not parse the JSON body of your request.",
            "invalid_request_error",
            None,
        );
    };
    let ctx = Ctx {
        req: &req,
        seed: Seed::of(&body),
        body_len: body.len(),
    };
    let scenario = Scenario::of_request(&req);
    let Some(plan) = Plan::for_request(scenario, &req, body.len()) else {
        let code = match scenario {
            Scenario::Error(code) => code,
            _ => 500,
        };
        return error_for(code);
    };
    let streaming = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let mut res = if streaming {
        sse::respond(&plan, &ctx, &app.cfg, &app.state)
    } else if plan.truncate {
        truncated_json(&response_object(&ctx, &plan, Phase::Final))
    } else {
        ids::json_response(StatusCode::OK, &response_object(&ctx, &plan, Phase::Final))
    };
    if let Ok(v) = HeaderValue::from_str(&ctx.request_id()) {
        res.headers_mut()
            .insert(HeaderName::from_static("x-request-id"), v);
    }
    res
}

/// The error answer of `mock-error-NNN`: always JSON, as the real API errors
/// before a stream starts.
pub(crate) fn error_for(code: u16) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (kind, err_code) = ids::error_kind(status.as_u16());
    let message = format!("ctxgate-mock: simulated upstream error {}", status.as_u16());
    ids::error_response(status, &message, kind, err_code)
}

/// First half of the document, sent without `content-length` and ended cleanly,
/// as an upstream dying mid-body looks to a client.
fn truncated_json(value: &Value) -> Response {
    let full = serde_json::to_vec(value).unwrap_or_default();
    let cut = full.len() / 2;
    let half = Bytes::from(full).slice(..cut);
    let body = Body::from_stream(stream::iter([Ok::<_, std::convert::Infallible>(half)]));
    let mut res = (StatusCode::OK, body).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// Which moment of the response lifecycle an object describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `response.created` / `response.in_progress`: no output, no usage yet.
    InProgress,
    /// The finished object (JSON body or terminal SSE event).
    Final,
}

/// The whole response object, echoing request settings like the real API.
pub(crate) fn response_object(ctx: &Ctx<'_>, plan: &Plan, phase: Phase) -> Value {
    let req = ctx.req;
    let echo = |key: &str, default: Value| match req.get(key) {
        Some(v) if !v.is_null() => v.clone(),
        _ => default,
    };
    let created_at = ctx.seed.created_at();
    let (status, output, usage) = match phase {
        Phase::InProgress => ("in_progress", Vec::new(), Value::Null),
        Phase::Final => {
            let status = match plan.outcome {
                Outcome::Completed => "completed",
                Outcome::Incomplete => "incomplete",
                Outcome::Failed => "failed",
            };
            let output = plan
                .items
                .iter()
                .enumerate()
                .map(|(i, it)| final_item(ctx, plan, i, it))
                .collect();
            (status, output, usage(ctx, plan))
        }
    };
    let finished = phase == Phase::Final;
    let error = match plan.outcome {
        Outcome::Failed if finished => {
            json!({"code": "server_error", "message": "ctxgate-mock: simulated response failure"})
        }
        _ => Value::Null,
    };
    let incomplete = match plan.outcome {
        Outcome::Incomplete if finished => json!({"reason": "max_output_tokens"}),
        _ => Value::Null,
    };
    let completed_at = match plan.outcome {
        Outcome::Completed if finished => json!(created_at + 1),
        _ => Value::Null,
    };
    json!({
        "id": ctx.response_id(),
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": false,
        "completed_at": completed_at,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": echo("instructions", Value::Null),
        "max_output_tokens": echo("max_output_tokens", Value::Null),
        "max_tool_calls": echo("max_tool_calls", Value::Null),
        "model": echo("model", json!("mock-ok")),
        "output": output,
        "parallel_tool_calls": echo("parallel_tool_calls", json!(true)),
        "previous_response_id": echo("previous_response_id", Value::Null),
        "prompt_cache_key": echo("prompt_cache_key", Value::Null),
        "reasoning": echo("reasoning", json!({"effort": null, "summary": null})),
        "safety_identifier": echo("safety_identifier", Value::Null),
        "service_tier": echo("service_tier", json!("default")),
        "store": echo("store", json!(true)),
        "temperature": echo("temperature", json!(1.0)),
        "text": echo("text", json!({"format": {"type": "text"}, "verbosity": "medium"})),
        "tool_choice": echo("tool_choice", json!("auto")),
        "tools": tools(req),
        "top_logprobs": echo("top_logprobs", json!(0)),
        "top_p": echo("top_p", json!(1.0)),
        "truncation": echo("truncation", json!("disabled")),
        "usage": usage,
        "user": echo("user", Value::Null),
        "metadata": echo("metadata", json!({})),
    })
}

/// Request tools with the defaults the real API fills in for function tools.
fn tools(req: &Value) -> Value {
    let Some(tools) = req.get("tools").and_then(Value::as_array) else {
        return json!([]);
    };
    let filled = tools.iter().map(|tool| match tool {
        Value::Object(t) if t.get("type").and_then(Value::as_str) == Some("function") => {
            let mut out = Map::new();
            out.insert("type".into(), json!("function"));
            for key in ["name", "description", "parameters", "strict"] {
                out.insert(key.into(), t.get(key).cloned().unwrap_or(Value::Null));
            }
            for (k, v) in t {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
            Value::Object(out)
        }
        other => other.clone(),
    });
    Value::Array(filled.collect())
}

/// The `output_text` content part holding `text`.
pub(crate) fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// An item as announced by `response.output_item.added`: empty and in progress.
pub(crate) fn initial_item(ctx: &Ctx<'_>, index: usize, item: &Item) -> Value {
    let id = ctx.item_id(index, item);
    match item {
        Item::Message { .. } => json!({
            "type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []
        }),
        Item::Call { name, .. } => json!({
            "type": "function_call", "id": id, "call_id": ctx.call_id(index),
            "name": name, "arguments": "", "status": "in_progress"
        }),
    }
}

/// An item in its finished form, as in `response.output_item.done` and `output`.
pub(crate) fn final_item(ctx: &Ctx<'_>, plan: &Plan, index: usize, item: &Item) -> Value {
    let id = ctx.item_id(index, item);
    let status = match plan.outcome {
        Outcome::Incomplete => "incomplete",
        Outcome::Completed | Outcome::Failed => "completed",
    };
    match item {
        Item::Message { text } => json!({
            "type": "message", "id": id, "status": status, "role": "assistant", "content": [text_part(text)]
        }),
        Item::Call { name, arguments } => json!({
            "type": "function_call", "id": id, "call_id": ctx.call_id(index),
            "name": name, "arguments": arguments, "status": status
        }),
    }
}

/// Token counts: input is body bytes / 4, output is produced characters / 4
/// rounded up, mirroring the usual rule of thumb so budgets behave plausibly.
fn usage(ctx: &Ctx<'_>, plan: &Plan) -> Value {
    let input = ctx.body_len / 4;
    let produced: usize = plan
        .items
        .iter()
        .map(|i| match i {
            Item::Message { text } => text.chars().count(),
            Item::Call { name, arguments } => name.len() + arguments.len(),
        })
        .sum();
    let output = produced.div_ceil(4);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}

//! `POST /v1/responses/compact`: the upstream-side conversation compaction endpoint.
//!
//! ctxgate can delegate folding to this endpoint when the upstream offers it, and
//! must fall back when it does not; the mock therefore answers the real shape
//! (user messages kept, one opaque `compaction` item) or, on demand, an error status.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::ids::{self, Seed};
use super::input;
use super::responses::error_for;
use super::scenario::Scenario;
use super::server::App;

/// Status of `mock-nocompact` when no `compact_status` is configured.
const NO_COMPACT_STATUS: u16 = 404;

pub(crate) async fn handle(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let Ok(req @ Value::Object(_)) = serde_json::from_slice::<Value>(&body) else {
        return ids::error_response(
            StatusCode::BAD_REQUEST,
            "We could not parse the JSON body of your request.",
            "invalid_request_error",
            None,
        );
    };
    let scenario = Scenario::of_request(&req);
    let refused = match (app.cfg.compact_status, scenario) {
        (Some(status), _) => Some(status),
        (None, Scenario::NoCompact) => Some(NO_COMPACT_STATUS),
        (None, Scenario::Error(code)) => return error_for(code),
        (None, _) => None,
    };
    if let Some(code) = refused {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::NOT_FOUND);
        let (kind, err_code) = ids::error_kind(status.as_u16());
        return ids::error_response(
            status,
            "ctxgate-mock: compaction is not available",
            kind,
            err_code,
        );
    }
    ids::json_response(StatusCode::OK, &compacted(&req, &body))
}

/// The `response.compaction` object for a request.
fn compacted(req: &Value, body: &[u8]) -> Value {
    let seed = Seed::of(body);
    let mut output: Vec<Value> = match req.get("input") {
        Some(Value::String(text)) => vec![json!({
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        })],
        _ => input::items(req)
            .iter()
            .filter(|i| input::is_user_message(i))
            .map(typed_message)
            .collect(),
    };
    let encrypted = encrypted_content(req);
    let input_tokens = body.len() / 4;
    let output_tokens = encrypted.len() / 4;
    output.push(json!({
        "type": "compaction",
        "id": seed.id("cmpt_", "compaction"),
        "encrypted_content": encrypted,
    }));
    json!({
        "id": seed.id("cmp_", "compacted"),
        "object": "response.compaction",
        "created_at": seed.created_at(),
        "output": output,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    })
}

/// A user message as given, plus the `"type": "message"` that easy input may omit
/// (output items are discriminated by `type`, so clients need it).
fn typed_message(item: &Value) -> Value {
    match item {
        Value::Object(fields) if !fields.contains_key("type") => {
            let mut out = serde_json::Map::new();
            out.insert("type".into(), json!("message"));
            out.extend(fields.clone());
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Opaque like the real blob (Fernet-style `gAAAAA` prefix) but derived only from
/// the input, so the same conversation always compacts to the same bytes.
fn encrypted_content(req: &Value) -> String {
    let input = req.get("input").map(Value::to_string).unwrap_or_default();
    let mut block = Sha256::digest(input.as_bytes());
    let mut raw = Vec::with_capacity(96);
    for _ in 0..3 {
        raw.extend_from_slice(&block);
        block = Sha256::digest(block);
    }
    format!("gAAAAA{}", ids::base64(&raw))
}

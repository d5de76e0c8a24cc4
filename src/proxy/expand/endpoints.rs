//! Side endpoints: the originals behind markers, over HTTP, with the caller's own credential.
//!
//! `GET /v1/ctxzip/{hash}` returns an original as text (`?offset=&limit=&query=` as for the tool); `POST
//! /v1/ctxzip/expand` takes the tool's JSON arguments and returns the tool's answer; `GET /v1/ctxzip/stats` shows
//! the savings totals, expansions and the caller's keep-pattern suggestions. Everything is scoped to the caller's
//! tenant: another tenant's hash is a 404, exactly like a hash that never existed.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::load_book;
use crate::expand::resolve::ExpandArgs;
use crate::proxy::auth::Caller;
use crate::server::AppState;

#[derive(Debug, Deserialize)]
pub struct WindowQuery {
    offset: Option<usize>,
    limit: Option<usize>,
    query: Option<String>,
}

fn caller(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Caller, crate::proxy::error::ProxyError> {
    state.credentials.authenticate(headers)
}

fn not_found(message: String) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": {"message": message, "type": "invalid_request_error", "code": "original_not_found"}})),
    )
        .into_response()
}

pub async fn get_original(
    State(state): State<Arc<AppState>>,
    Path(hash): Path<String>,
    Query(q): Query<WindowQuery>,
    headers: HeaderMap,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let args = ExpandArgs {
        hash,
        query: q.query.filter(|s| !s.is_empty()),
        offset: q.offset,
        limit: q.limit,
    };
    let request_id = state.next_request_id();
    // No window asked for: the whole original (the tool keeps its window; an HTTP client asked for the file).
    let max_chars = if args.offset.is_none() && args.limit.is_none() && args.query.is_none() {
        usize::MAX
    } else {
        state.config.expand.max_chars
    };
    let answer = state
        .expander
        .answer_window(caller.tenant.as_str(), &request_id, &args, max_chars)
        .await;
    if !answer.hit {
        return not_found(answer.text);
    }
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        answer.text,
    )
        .into_response()
}

pub async fn post_expand(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let arguments = String::from_utf8_lossy(&body);
    let request_id = state.next_request_id();
    let answer = state
        .expander
        .answer(caller.tenant.as_str(), &request_id, &arguments)
        .await;
    if !answer.hit {
        return not_found(answer.text);
    }
    Json(json!({"hash": answer.hash, "output": answer.text})).into_response()
}

pub async fn stats(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let mut book = load_book(state.store.as_ref(), caller.tenant.as_str()).await;
    book.set_known_patterns(&state.config.compress.keep_patterns);
    Json(json!({
        "totals": state.metrics.savings.totals(),
        "suggestions": book.suggestions(),
        "tracked_patterns": book.len(),
        "suggest_threshold": state.expander.settings.suggest_threshold,
    }))
    .into_response()
}

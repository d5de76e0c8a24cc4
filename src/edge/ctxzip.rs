//! Side endpoints: the originals behind markers, over HTTP, with the caller's own credential (the edge put the
//! [`Caller`] in the request).
//!
//! `GET /v1/ctxzip/{hash}` returns an original as text (`?offset=&limit=&query=` as for the tool); `POST
//! /v1/ctxzip/expand` takes the tool's JSON arguments and returns the tool's answer; `GET /v1/ctxzip/stats` shows
//! the caller's tenant: its savings totals across every replica (the store's counters), this replica's totals since
//! start, and its keep-pattern suggestions. Everything is scoped to the caller's
//! tenant: another tenant's hash is a 404, exactly like a hash that never existed.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use crate::expand::resolve::ExpandArgs;
use crate::proxy::auth::Caller;
use crate::proxy::error::ProxyError;
use crate::state::AppState;
use crate::store::records::{SAVINGS_KEY, SavingsTotals};
use crate::turn::expand::patterns::load_book;

#[derive(Debug, Deserialize)]
pub struct WindowQuery {
    offset: Option<usize>,
    limit: Option<usize>,
    query: Option<String>,
}

pub async fn get_original(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    Path(hash): Path<String>,
    Query(q): Query<WindowQuery>,
) -> Result<Response, ProxyError> {
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
        return Err(ProxyError::OriginalNotFound(answer.text));
    }
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        answer.text,
    )
        .into_response())
}

pub async fn post_expand(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Result<Response, ProxyError> {
    let arguments = String::from_utf8_lossy(&body);
    let request_id = state.next_request_id();
    let answer = state
        .expander
        .answer(caller.tenant.as_str(), &request_id, &arguments)
        .await;
    if !answer.hit {
        return Err(ProxyError::OriginalNotFound(answer.text));
    }
    Ok(Json(json!({"hash": answer.hash, "output": answer.text})).into_response())
}

pub async fn stats(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let tenant = caller.tenant.as_str();
    let threshold = state.expander.settings.suggest_threshold;
    let mut book = load_book(&state.records, tenant, threshold).await;
    book.set_known_patterns(&state.config.compress.keep_patterns);
    // The tenant's totals are the store's counters, which every replica adds to; a store that is down shows none.
    let (totals, store_available) = match state.store.counters(tenant, SAVINGS_KEY).await {
        Ok(fields) => (SavingsTotals::from_counters(&fields), true),
        Err(e) => {
            crate::store_fault!(e, error = %e, "savings totals unavailable for stats");
            (SavingsTotals::default(), false)
        }
    };
    Json(json!({
        "tenant": tenant,
        "totals": totals,
        "process_totals": state.metrics.savings.totals(),
        "store_available": store_available,
        "suggestions": book.suggestions(),
        "tracked_patterns": book.len(),
        "suggest_threshold": state.expander.settings.suggest_threshold,
    }))
    .into_response()
}

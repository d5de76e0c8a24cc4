//! `POST /v1/responses`: the turn pipeline.
//!
//! parse → tenant → stages → serialize → send → relay. The body is read whole (a stage needs all of it), parsed
//! into a [`RequestBody`] that keeps the client's bytes, handed to the configured stages, and serialized; with no
//! stage changing anything the upstream receives the client's exact bytes. A body ctxgate cannot read as a
//! Responses request (not JSON, compressed, not an object) is forwarded unchanged: the upstream is the judge of
//! what is valid, not the proxy.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use super::error::ProxyError;
use super::expand;
use super::expand::rounds::Rounds;
use super::turn::{Turn, run_stages};
use super::{Clock, Outbound, forward, relay, render_error};
use crate::responses::RequestBody;
use crate::server::AppState;

const ROUTE: &str = "responses";

pub async fn handle(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let mut clock = Clock::start();
    let (parts, body) = request.into_parts();
    let method = Method::POST;
    let caller = match state.credentials.authenticate(&parts.headers) {
        Ok(c) => c,
        Err(e) => return render_error(&state, ROUTE, &method, &clock, e),
    };
    let bytes = match read_body(body, &parts.headers, state.config.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => return render_error(&state, ROUTE, &method, &clock, e),
    };
    let request_id = state.next_request_id();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/v1/responses".to_string());
    let (outgoing, response_headers) = if has_content_encoding(&parts.headers) {
        (bytes, Vec::new())
    } else {
        match RequestBody::parse(bytes.clone()) {
            Err(e) => {
                tracing::debug!(%request_id, error = %e, "body is not a Responses request; forwarded unchanged");
                (bytes, Vec::new())
            }
            Ok(parsed) => {
                let mut turn = Turn {
                    request_id: request_id.clone(),
                    caller: caller.clone(),
                    body: parsed,
                    client_headers: parts.headers.clone(),
                    response_headers: Vec::new(),
                    expand_active: false,
                };
                if !turn.bypass() {
                    let metrics = &state.metrics;
                    if let Err(e) =
                        run_stages(&state.stages, &mut turn, |stage| metrics.stage_fault(stage))
                            .await
                    {
                        return render_error(&state, ROUTE, &method, &clock, e);
                    }
                }
                if turn.expand_active {
                    // The proxy may have to answer context_expand calls: it reads the answer and runs the rounds.
                    let streamed =
                        matches!(turn.body.get("stream"), Some(serde_json::Value::Bool(true)));
                    let rounds = Rounds::new(
                        state.clone(),
                        caller,
                        &parts.headers,
                        path_and_query,
                        request_id,
                        turn.body,
                        turn.response_headers,
                    );
                    return if streamed {
                        expand::stream::run_stream(rounds, clock).await
                    } else {
                        expand::rounds::run_json(rounds, clock).await
                    };
                }
                (turn.body.to_bytes(), turn.response_headers)
            }
        }
    };
    let len = outgoing.len();
    let sent = forward(
        &state,
        ROUTE,
        &mut clock,
        &caller,
        Outbound {
            method: method.clone(),
            path_and_query: &path_and_query,
            client_headers: &parts.headers,
            body: reqwest::Body::from(outgoing),
            body_len: Some(len),
        },
    )
    .await;
    match sent {
        Ok(upstream) => {
            let status = upstream.response.status().as_u16();
            let response = relay(&state, upstream, response_headers);
            state
                .metrics
                .observe_request(ROUTE, method.as_str(), status);
            state.metrics.observe_overhead(ROUTE, clock.overhead());
            tracing::debug!(%request_id, status, "turn relayed");
            response
        }
        Err(e) => render_error(&state, ROUTE, &method, &clock, e.into_proxy_error()),
    }
}

fn has_content_encoding(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
}

/// Reads the whole body, refusing it as soon as it passes `limit` (or up front when `Content-Length` says so).
pub async fn read_body(body: Body, headers: &HeaderMap, limit: u64) -> Result<Bytes, ProxyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ProxyError::BodyTooLarge { limit });
    }
    let capacity = declared.unwrap_or(0).min(limit) as usize;
    let mut buf = BytesMut::with_capacity(capacity);
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ProxyError::BadRequestBody(e.to_string()))?;
        if (buf.len() + chunk.len()) as u64 > limit {
            return Err(ProxyError::BodyTooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

//! Every `/v1/` route ctxgate does not rewrite: forwarded with both bodies streamed.
//!
//! Nothing is buffered: a 200 MB download or upload moves through in chunks, so memory stays flat. The request
//! body is counted as it streams, and one over `max_body_bytes` is refused with 413 — up front when its
//! `Content-Length` says so, otherwise at the byte that crosses the limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::Response;
use futures_util::StreamExt;

use super::error::ProxyError;
use super::{Clock, Outbound, forward, relay, render_error, route_label};
use crate::server::AppState;

pub async fn handle(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let mut clock = Clock::start();
    let (parts, body) = request.into_parts();
    let method = parts.method.clone();
    let route = route_label(&method, parts.uri.path());
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| parts.uri.path().to_string());
    if !parts.uri.path().starts_with("/v1/") {
        let e = ProxyError::NotFound(parts.uri.path().to_string());
        return render_error(&state, route, &method, &clock, e);
    }
    let caller = match state.credentials.authenticate(&parts.headers) {
        Ok(c) => c,
        Err(e) => return render_error(&state, route, &method, &clock, e),
    };
    let limit = state.config.max_body_bytes;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return render_error(
            &state,
            route,
            &method,
            &clock,
            ProxyError::BodyTooLarge { limit },
        );
    }
    let chunked = parts.headers.contains_key(header::TRANSFER_ENCODING);
    let exceeded = Arc::new(AtomicBool::new(false));
    let upstream_body = if declared.is_none() && !chunked {
        reqwest::Body::from(bytes::Bytes::new())
    } else {
        reqwest::Body::wrap_stream(limited(body, limit, exceeded.clone()))
    };
    let sent = forward(
        &state,
        route,
        &mut clock,
        &caller,
        Outbound {
            method: method.clone(),
            path_and_query: &path_and_query,
            client_headers: &parts.headers,
            body: upstream_body,
            body_len: None,
        },
    )
    .await;
    match sent {
        Ok(upstream) => {
            let status = upstream.response.status().as_u16();
            let response = relay(&state, upstream, Vec::new());
            state
                .metrics
                .observe_request(route, method.as_str(), status);
            state.metrics.observe_overhead(route, clock.overhead());
            response
        }
        Err(_) if exceeded.load(Ordering::Relaxed) => render_error(
            &state,
            route,
            &method,
            &clock,
            ProxyError::BodyTooLarge { limit },
        ),
        Err(e) => render_error(&state, route, &method, &clock, e.into_proxy_error()),
    }
}

/// The client's body as a stream that fails once more than `limit` bytes have passed.
fn limited(
    body: Body,
    limit: u64,
    exceeded: Arc<AtomicBool>,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static {
    let seen = AtomicU64::new(0);
    body.into_data_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(e.to_string()))?;
        let total = seen.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
        if total > limit {
            exceeded.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("request body exceeds the limit"));
        }
        Ok(chunk)
    })
}

//! Every `/v1/` route ctxgate does not rewrite: forwarded with both bodies streamed.
//!
//! The route table's fallback: the edge has already refused what is not under `/v1/` and authenticated the rest.
//!
//! Nothing is buffered: a 200 MB download or upload moves through in chunks, so memory stays flat. The request
//! body is counted as it streams, and one over `max_body_bytes` is refused with 413 — up front when its
//! `Content-Length` says so, otherwise at the byte that crosses the limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use axum::Extension;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::Response;
use futures_util::StreamExt;

use super::auth::Caller;
use super::error::ProxyError;
use super::upstream::SendBody;
use super::{Outbound, UpstreamWait, forward, path_and_query, relay, route_label};
use crate::state::AppState;

/// Forwards the request; the edge has authenticated it (the [`Caller`]) and times it (the [`UpstreamWait`]).
pub async fn handle(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    Extension(wait): Extension<UpstreamWait>,
    request: Request,
) -> Result<Response, ProxyError> {
    let (parts, body) = request.into_parts();
    let method = parts.method.clone();
    let route = route_label(&method, parts.uri.path());
    let path_and_query = path_and_query(&parts.uri);
    let limit = state.config.max_body_bytes;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ProxyError::BodyTooLarge { limit });
    }
    let chunked = parts.headers.contains_key(header::TRANSFER_ENCODING);
    let exceeded = Arc::new(AtomicBool::new(false));
    let upstream_body = if declared.is_none() && !chunked {
        SendBody::empty()
    } else {
        SendBody::stream(limited(body, limit, exceeded.clone()))
    };
    let outbound = Outbound {
        method,
        path_and_query: &path_and_query,
        client_headers: &parts.headers,
        body: upstream_body,
        body_len: None,
    };
    match forward(&state, route, &wait, &caller, outbound).await {
        Ok(upstream) => Ok(relay(&state, upstream, Vec::new())),
        Err(_) if exceeded.load(Ordering::Relaxed) => Err(ProxyError::BodyTooLarge { limit }),
        Err(e) => Err(e.into_proxy_error()),
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

//! Transport: everything between the client's socket and the upstream's that does not look inside a turn.
//!
//! [`upstream`] is the one HTTP client, [`headers`] decides which headers cross, [`auth`] says who is calling and
//! which credential goes upstream, [`passthrough`] forwards any `/v1/` route with streamed bodies both ways, and
//! [`forward`] / [`relay`] are the two halves every route shares — so an unmodified `/v1/responses` request (see
//! [`crate::turn`]) takes exactly the same path as a passed-through one. [`error`] is the one error type rendered
//! to clients.

pub mod auth;
pub mod error;
pub mod headers;
pub mod passthrough;
pub mod upstream;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::response::Response;

use crate::state::AppState;
use auth::Caller;
use upstream::UpstreamResponse;

/// Low-cardinality route label for metrics and logs.
pub fn route_label(method: &Method, path: &str) -> &'static str {
    match (method, path.trim_end_matches('/')) {
        (&Method::POST, "/v1/responses") => "responses",
        (&Method::POST, "/v1/responses/compact") => "responses_compact",
        (_, p) if p.starts_with("/v1/responses") => "responses_other",
        (_, p) if p.starts_with("/v1/models") => "models",
        (_, p) if p.starts_with("/v1/chat/completions") => "chat_completions",
        (_, p) if p.starts_with("/v1/") => "other",
        _ => "unknown",
    }
}

/// How long one request waited for the upstream, shared between the code that sends (which adds to it) and the
/// edge, which records the request's overhead as its time less this wait.
#[derive(Clone, Debug, Default)]
pub struct UpstreamWait(Arc<AtomicU64>);

impl UpstreamWait {
    pub fn add(&self, waited: Duration) {
        let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}

/// The path and query of a client's request, as the upstream URL takes them.
pub fn path_and_query(uri: &axum::http::Uri) -> String {
    uri.path_and_query()
        .map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string())
}

/// One request on its way upstream.
pub struct Outbound<'a> {
    pub method: Method,
    pub path_and_query: &'a str,
    pub client_headers: &'a HeaderMap,
    pub body: upstream::SendBody,
    /// Set when ctxgate built the body (so the client's `Content-Length` no longer applies).
    pub body_len: Option<usize>,
}

/// Sends one request upstream with the caller's credential and records the wait.
pub async fn forward(
    state: &AppState,
    route: &'static str,
    wait: &UpstreamWait,
    caller: &Caller,
    outbound: Outbound<'_>,
) -> Result<UpstreamResponse, upstream::SendError> {
    let Outbound {
        method,
        path_and_query,
        client_headers,
        body,
        body_len,
    } = outbound;
    let mut out = headers::upstream_request_headers(client_headers);
    out.remove(header::AUTHORIZATION);
    if let Some(auth) = &caller.upstream_auth {
        out.insert(header::AUTHORIZATION, auth.clone());
    }
    if let Some(len) = body_len {
        out.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    let sent = Instant::now();
    let result = state.upstream.send(method, path_and_query, out, body).await;
    wait.add(sent.elapsed());
    match &result {
        Ok(r) => state.metrics.observe_upstream(route, r.waited),
        Err(e) => state.metrics.upstream_error(e.kind()),
    }
    result
}

/// Turns the upstream's answer into the client's: status and end-to-end headers unchanged, body streamed as it
/// arrives, plus ctxgate's own `x-ctxgate-*` headers.
pub fn relay(
    state: &AppState,
    upstream: UpstreamResponse,
    extra_headers: Vec<(HeaderName, HeaderValue)>,
) -> Response {
    let status = upstream.response.status();
    let mut headers = headers::client_response_headers(upstream.response.headers());
    for (name, value) in extra_headers {
        headers.insert(name, value);
    }
    let body = Body::from_stream(state.upstream.relay(upstream.response));
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

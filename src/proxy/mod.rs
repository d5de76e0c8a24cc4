//! The proxy proper: everything between the client's socket and the upstream's.
//!
//! [`passthrough`] forwards any `/v1/` route with streamed bodies both ways; [`responses`] runs `POST
//! /v1/responses` through the turn pipeline (parse → tenant → stages → serialize) and then forwards it the same
//! way. Both share [`forward`] and [`relay`], so an unmodified request takes exactly the same path whichever route
//! it arrived on.

pub mod auth;
pub mod cache;
pub mod compress;
pub mod error;
pub mod expand;
pub mod fold;
pub mod headers;
pub mod item_facts;
pub mod originals;
pub mod passthrough;
pub mod responses;
pub mod turn;
pub mod upstream;

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::response::Response;

use crate::server::AppState;
use auth::Caller;
use error::ProxyError;
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

/// Time bookkeeping for the overhead histogram: everything from arrival to the response headers, less the upstream
/// wait.
pub struct Clock {
    arrived: Instant,
    upstream_wait: Duration,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            arrived: Instant::now(),
            upstream_wait: Duration::ZERO,
        }
    }

    pub fn overhead(&self) -> Duration {
        self.arrived.elapsed().saturating_sub(self.upstream_wait)
    }
}

/// One request on its way upstream.
pub struct Outbound<'a> {
    pub method: Method,
    pub path_and_query: &'a str,
    pub client_headers: &'a HeaderMap,
    pub body: reqwest::Body,
    /// Set when ctxgate built the body (so the client's `Content-Length` no longer applies).
    pub body_len: Option<usize>,
}

/// Sends one request upstream with the caller's credential and records the wait.
pub async fn forward(
    state: &AppState,
    route: &'static str,
    clock: &mut Clock,
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
    clock.upstream_wait += sent.elapsed();
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

/// Renders ctxgate's own error and counts it.
pub fn render_error(
    state: &AppState,
    route: &'static str,
    method: &Method,
    clock: &Clock,
    error: ProxyError,
) -> Response {
    use axum::response::IntoResponse;
    let status = error.status().as_u16();
    tracing::info!(route, status, error = %error, "request refused");
    state
        .metrics
        .observe_request(route, method.as_str(), status);
    state.metrics.observe_overhead(route, clock.overhead());
    error.into_response()
}

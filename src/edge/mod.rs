//! The edge: the route table and the one layer every request passes before a handler sees it.
//!
//! The layer (`edge`) does three things, in this order, in one pass (each layer of its own would box the
//! request's future once more and wrap every chunk of a streamed answer, which a proxy that relays thousands of
//! events a second pays on each):
//! 1. a span per request for the logs, at debug level, and one debug line when the handler answered (method, path,
//!    status, time) — a warning whatever the level when the answer is a server error (5xx, the upstream's included);
//! 2. for the proxied routes (`/v1/responses` and every passed-through `/v1/` route), the request is counted by
//!    route and status and its overhead (its time less the upstream wait) recorded: here, once, whatever the
//!    handler answered — a refused credential included;
//! 3. every route but the [`OPEN_ROUTES`] needs a credential; the [`Caller`](crate::proxy::auth::Caller) it names
//!    goes into the request's extensions for the handler. The operator routes ([`admin::ADMIN_ROUTES`]) check their
//!    own admin key instead. A path that is neither open, nor an operator route, nor under `/v1/` does not exist.
//!
//! Handlers return `Result<Response, ProxyError>`: an error is rendered once, by [`ProxyError`]'s `IntoResponse`.

pub mod admin;
pub mod ctxzip;
pub mod health;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::proxy::error::ProxyError;
use crate::proxy::{UpstreamWait, passthrough, route_label};
use crate::state::AppState;
use crate::turn::handler;
use tracing::Instrument;

/// Routes anyone may call, without a credential. Everything else needs one.
pub const OPEN_ROUTES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];
/// ctxgate's own side endpoints: authenticated, but not proxied (not counted as upstream traffic).
const SIDE_PREFIX: &str = "/v1/ctxzip/";

/// The route table and layer stack.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/admin/stats", get(admin::stats))
        .route("/v1/responses", post(handler::handle))
        .route("/v1/ctxzip/stats", get(ctxzip::stats))
        .route("/v1/ctxzip/expand", post(ctxzip::post_expand))
        .route("/v1/ctxzip/{hash}", get(ctxzip::get_original))
        .fallback(passthrough::handle)
        .layer(middleware::from_fn_with_state(state.clone(), edge))
        .with_state(state)
}

/// The request's span, count and credential (see the module's list); a refusal is counted like any answer.
async fn edge(State(state): State<Arc<AppState>>, mut request: Request, next: Next) -> Response {
    let arrived = Instant::now();
    let span =
        tracing::debug_span!("request", method = %request.method(), path = %request.uri().path());
    // Kept for the line a server error logs whatever the level (a refcount, not a copy of the path).
    let (method, uri) = (request.method().clone(), request.uri().clone());
    let path = uri.path();
    let open = OPEN_ROUTES.contains(&path) || admin::ADMIN_ROUTES.contains(&path);
    let observed = (!open && !path.starts_with(SIDE_PREFIX))
        .then(|| (route_label(&method, path), UpstreamWait::default()));
    if let Some((_, wait)) = &observed {
        request.extensions_mut().insert(wait.clone());
    }
    let response = authenticate(&state, request, next, open)
        .instrument(span.clone())
        .await
        .into_response();
    let status = response.status().as_u16();
    if let Some((route, wait)) = observed {
        state
            .metrics
            .observe_request(route, method.as_str(), status);
        state
            .metrics
            .observe_overhead(route, arrived.elapsed().saturating_sub(wait.total()));
    }
    span.in_scope(|| tracing::debug!(status, elapsed = ?arrived.elapsed(), "answered"));
    if response.status().is_server_error() {
        let elapsed = arrived.elapsed();
        tracing::warn!(%method, path = %uri.path(), status, ?elapsed, "answered with a server error");
    }
    response
}

/// Puts the [`Caller`](crate::proxy::auth::Caller) in the request, or refuses it: a path outside the open routes
/// and `/v1/` with 404, a bad or missing credential (when the proxy holds the upstream key) with 401.
async fn authenticate(
    state: &AppState,
    mut request: Request,
    next: Next,
    open: bool,
) -> Result<Response, ProxyError> {
    if open {
        return Ok(next.run(request).await);
    }
    let path = request.uri().path();
    if !path.starts_with("/v1/") {
        return Err(ProxyError::NotFound(path.to_string()));
    }
    let caller = state.credentials.authenticate(request.headers())?;
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

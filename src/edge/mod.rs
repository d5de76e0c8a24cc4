//! The edge: the route table and the layers every request passes before a handler sees it.
//!
//! Layers, outermost first:
//! 1. `TraceLayer` — one span per request for the logs (at debug level).
//! 2. [`observe`] — for the proxied routes (`/v1/responses` and every passed-through `/v1/` route), the request is
//!    counted by route and status and its overhead (its time less the upstream wait) recorded: here, once, whatever
//!    the handler answered.
//! 3. [`authenticate`] — every route but the [`OPEN_ROUTES`] needs a credential; the [`Caller`](crate::proxy::auth::Caller) it names goes into
//!    the request's extensions for the handler. The operator routes ([`admin::ADMIN_ROUTES`]) check their own
//!    admin key instead. A path that is neither open, nor an operator route, nor under `/v1/` does not exist.
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
use axum::response::Response;
use axum::routing::{get, post};

use crate::proxy::error::ProxyError;
use crate::proxy::{UpstreamWait, passthrough, route_label};
use crate::state::AppState;
use crate::turn::handler;

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
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
        .layer(tower_http::trace::TraceLayer::new_for_http())
}

/// Puts the [`Caller`](crate::proxy::auth::Caller) in the request, or refuses it: a path outside the open routes and `/v1/` with 404, a bad
/// or missing credential (when the proxy holds the upstream key) with 401.
async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Result<Response, ProxyError> {
    let path = request.uri().path();
    if OPEN_ROUTES.contains(&path) || admin::ADMIN_ROUTES.contains(&path) {
        return Ok(next.run(request).await);
    }
    if !path.starts_with("/v1/") {
        return Err(ProxyError::NotFound(path.to_string()));
    }
    let caller = state.credentials.authenticate(request.headers())?;
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

/// Counts a proxied request by route and status and records its overhead, once, whatever answered it.
async fn observe(State(state): State<Arc<AppState>>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if OPEN_ROUTES.contains(&path)
        || path.starts_with(SIDE_PREFIX)
        || admin::ADMIN_ROUTES.contains(&path)
    {
        return next.run(request).await;
    }
    let arrived = Instant::now();
    let method = request.method().clone();
    let route = route_label(&method, path);
    let wait = UpstreamWait::default();
    request.extensions_mut().insert(wait.clone());
    let response = next.run(request).await;
    let status = response.status().as_u16();
    state
        .metrics
        .observe_request(route, method.as_str(), status);
    state
        .metrics
        .observe_overhead(route, arrived.elapsed().saturating_sub(wait.total()));
    response
}

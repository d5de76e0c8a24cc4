//! The mock's router: API routes, request recording, latency and control endpoints.
//!
//! Recording wraps every API route (and the fallback) as the outermost layer, so a
//! request is on record before any handler or configured latency runs; the
//! `/__mock/*` control routes sit outside it so inspecting the mock never pollutes
//! what it recorded.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{any, get, post};
use serde_json::{Value, json};

use super::MockConfig;
use super::ids::{self, base64};
use super::passthrough;
use super::scenario::Scenario;
use super::state::{MockState, RecordBody, Recorded};
use super::{compact, responses};

/// Large enough for any transcript a test throws at it; the real API's own limit
/// is not the mock's business.
const BODY_LIMIT: usize = 512 * 1024 * 1024;

/// What every handler can reach.
#[derive(Debug)]
pub(crate) struct App {
    pub cfg: MockConfig,
    pub state: MockState,
}

/// Builds the mock's router around `state`, which the caller keeps to inspect it.
pub fn router(cfg: MockConfig, state: MockState) -> Router {
    let app = Arc::new(App {
        cfg,
        state: state.clone(),
    });
    let api = Router::new()
        .route("/v1/responses", post(responses::handle))
        .route("/v1/responses/compact", post(compact::handle))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/mock/bytes", get(passthrough::bytes))
        .route("/v1/mock/digest", post(passthrough::digest))
        .route("/v1/mock/echo", post(passthrough::echo))
        .route("/v1/mock/headers", any(passthrough::headers))
        .route("/v1/mock/status/{code}", any(passthrough::status))
        .route("/v1/mock/sleep", get(passthrough::sleep))
        .route("/v1/mock/stall", get(passthrough::stall))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(app.clone(), latency))
        .layer(middleware::from_fn_with_state(state, record));
    let control = Router::new()
        .route(
            "/__mock/requests",
            get(list_requests).delete(clear_requests),
        )
        .route("/__mock/stats", get(stats));
    api.merge(control).with_state(app)
}

/// Puts the request on record, then lets the body be appended as it is read.
async fn record(State(state): State<MockState>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let id = state.begin(&parts);
    let body = Body::from_stream(RecordBody::new(body.into_data_stream(), state, id));
    next.run(Request::from_parts(parts, body)).await
}

async fn latency(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    if !app.cfg.latency.is_zero() {
        tokio::time::sleep(app.cfg.latency).await;
    }
    next.run(req).await
}

async fn not_found(req: Request) -> Response {
    let msg = format!(
        "ctxgate-mock: no route for {} {}",
        req.method(),
        req.uri().path()
    );
    ids::error_response(
        StatusCode::NOT_FOUND,
        &msg,
        "invalid_request_error",
        Some("unknown_url"),
    )
}

/// `GET /v1/models`: the scenario names, so clients that list models see them.
async fn models() -> Response {
    let data: Vec<Value> = Scenario::NAMES.iter().map(|id| model_object(id)).collect();
    ids::json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

/// `GET /v1/models/{id}`: every id exists, since every model name gets an answer.
async fn model(Path(id): Path<String>) -> Response {
    ids::json_response(StatusCode::OK, &model_object(&id))
}

fn model_object(id: &str) -> Value {
    json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "ctxgate-mock"})
}

/// JSON form of a recorded request: the body as text when it is UTF-8, else as
/// base64, always with its length.
fn recorded_json(r: &Recorded) -> Value {
    let (body, body_base64) = match std::str::from_utf8(&r.body) {
        Ok(text) => (json!(text), Value::Null),
        Err(_) => (Value::Null, json!(base64(&r.body))),
    };
    json!({
        "method": r.method,
        "path": r.path,
        "query": r.query,
        "headers": r.headers,
        "body": body,
        "body_base64": body_base64,
        "body_len": r.body_len,
    })
}

async fn list_requests(State(app): State<Arc<App>>) -> Response {
    let list: Vec<Value> = app.state.received().iter().map(recorded_json).collect();
    ids::json_response(StatusCode::OK, &Value::Array(list))
}

async fn clear_requests(State(app): State<Arc<App>>) -> StatusCode {
    app.state.clear();
    StatusCode::NO_CONTENT
}

async fn stats(State(app): State<Arc<App>>) -> Response {
    let s = &app.state;
    let value = json!({
        "cancelled_streams": s.cancelled_streams(),
        "completed_streams": s.completed_streams(),
        "requests": s.request_count(),
    });
    ids::json_response(StatusCode::OK, &value)
}

//! Byte-level helpers under `/v1/mock/` for the proxy's passthrough tests.
//!
//! Requests that ctxgate does not rewrite must be streamed through untouched, in
//! both directions and at any size, with headers and statuses preserved and
//! timeouts enforced. These endpoints make each of those properties observable
//! without the mock ever holding a large body in memory.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt, stream};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::ids::{self, hex};
use super::server::App;
use super::state::Tracked;

/// Content of `/v1/mock/bytes` and `/v1/mock/stall`: byte `i` of a body is
/// `BYTES_PATTERN[i % 64]`, so a receiver can verify every byte it got.
pub const BYTES_PATTERN: &[u8; 64] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";

/// Size of generated chunks; a multiple of the pattern length so every chunk
/// starts at pattern offset 0 and one shared buffer serves them all.
const CHUNK: usize = 64 * 1024;
/// Upper bound on `/v1/mock/sleep`, so a typo cannot hang a test run for hours.
const MAX_SLEEP_MS: u64 = 600_000;

fn pattern_chunk() -> Bytes {
    Bytes::from(
        BYTES_PATTERN
            .iter()
            .copied()
            .cycle()
            .take(CHUNK)
            .collect::<Vec<u8>>(),
    )
}

/// `n` pattern bytes as a stream of chunks sharing one buffer.
fn pattern_stream(n: u64) -> impl Stream<Item = Result<Bytes, std::convert::Infallible>> + Send {
    let chunk = pattern_chunk();
    stream::unfold(0u64, move |sent| {
        let chunk = chunk.clone();
        async move {
            let left = n.saturating_sub(sent);
            (left > 0).then(|| {
                let take = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
                (Ok(chunk.slice(..take)), sent + take as u64)
            })
        }
    })
}

fn with_type(mut res: Response, content_type: &'static str) -> Response {
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

#[derive(Debug, Deserialize)]
pub(crate) struct BytesQuery {
    n: u64,
    /// Omit `content-length` so the body goes out chunked.
    #[serde(default)]
    chunked: bool,
}

/// `GET /v1/mock/bytes?n=N[&chunked=true]`: N pattern bytes, generated as sent.
pub(crate) async fn bytes(State(app): State<Arc<App>>, Query(q): Query<BytesQuery>) -> Response {
    let expected = (!q.chunked).then_some(q.n);
    let body = Body::from_stream(Tracked::new(
        Box::pin(pattern_stream(q.n)),
        app.state.clone(),
        expected,
    ));
    let mut res = with_type(
        (StatusCode::OK, body).into_response(),
        "application/octet-stream",
    );
    if !q.chunked {
        res.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(q.n));
    }
    res
}

/// `POST /v1/mock/digest`: `{"bytes":n,"sha256":"hex"}` of the body, read as a stream.
pub(crate) async fn digest(body: Body) -> Response {
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    let mut data = body.into_data_stream();
    while let Some(chunk) = data.next().await {
        match chunk {
            Ok(chunk) => {
                total += chunk.len() as u64;
                hasher.update(&chunk);
            }
            Err(err) => {
                let msg = format!("ctxgate-mock: request body failed after {total} bytes: {err}");
                return ids::error_response(
                    StatusCode::BAD_REQUEST,
                    &msg,
                    "invalid_request_error",
                    None,
                );
            }
        }
    }
    let value = json!({"bytes": total, "sha256": hex(&hasher.finalize())});
    ids::json_response(StatusCode::OK, &value)
}

/// `POST /v1/mock/echo`: the body streamed straight back with its content-type.
pub(crate) async fn echo(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let tracked = Tracked::new(body.into_data_stream(), app.state.clone(), None);
    let mut res = (StatusCode::OK, Body::from_stream(tracked)).into_response();
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    res.headers_mut().insert(header::CONTENT_TYPE, content_type);
    res
}

/// `GET /v1/mock/headers`: received headers as `{name: value}`; repeated
/// headers are joined with `, ` as HTTP allows.
pub(crate) async fn headers(headers: HeaderMap) -> Response {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        map.entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    ids::json_response(StatusCode::OK, &json!(map))
}

/// `GET /v1/mock/status/{code}`: that status, a small JSON body and `x-mock: 1`.
pub(crate) async fn status(Path(code): Path<u16>) -> Response {
    let Some(status) = StatusCode::from_u16(code)
        .ok()
        .filter(|_| (200..=599).contains(&code))
    else {
        return ids::error_response(
            StatusCode::BAD_REQUEST,
            "ctxgate-mock: status must be within 200..=599",
            "invalid_request_error",
            None,
        );
    };
    // These statuses must not carry a body.
    let body = if matches!(code, 204 | 304) {
        Body::empty()
    } else {
        Body::from(json!({"status": code, "mock": true}).to_string())
    };
    let mut res = (status, body).into_response();
    let headers = res.headers_mut();
    headers.insert(
        HeaderName::from_static("x-mock"),
        HeaderValue::from_static("1"),
    );
    if !matches!(code, 204 | 304) {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    res
}

#[derive(Debug, Deserialize)]
pub(crate) struct SleepQuery {
    #[serde(default)]
    ms: u64,
}

/// `GET /v1/mock/sleep?ms=N`: answers after N ms, for request-timeout tests.
pub(crate) async fn sleep(Query(q): Query<SleepQuery>) -> Response {
    let ms = q.ms.min(MAX_SLEEP_MS);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ids::json_response(StatusCode::OK, &json!({"slept_ms": ms}))
}

#[derive(Debug, Deserialize)]
pub(crate) struct StallQuery {
    #[serde(default)]
    after: u64,
}

/// `GET /v1/mock/stall?after=N`: N pattern bytes, then the stream stays open
/// without sending anything, for idle-timeout tests.
pub(crate) async fn stall(State(app): State<Arc<App>>, Query(q): Query<StallQuery>) -> Response {
    let body = pattern_stream(q.after).chain(stream::pending());
    let tracked = Tracked::new(Box::pin(body), app.state.clone(), None);
    with_type(
        (StatusCode::OK, Body::from_stream(tracked)).into_response(),
        "application/octet-stream",
    )
}

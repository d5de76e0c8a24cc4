//! `POST /v1/responses`: the turn pipeline, from the request's bytes to the relayed answer.
//!
//! parse → tenant → stages → serialize → send → relay. The body is read whole (a stage needs all of it), parsed
//! into a [`RequestBody`] that keeps the client's bytes, handed to the configured stages, and serialized; with no
//! stage changing anything the upstream receives the client's exact bytes. A body ctxgate cannot read as a
//! Responses request (not JSON, compressed, not an object) is forwarded unchanged: the upstream is the judge of
//! what is valid, not the proxy.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use super::Turn;
use super::expand::rounds;
use super::stage::run_stages;
use crate::proxy::auth::Caller;
use crate::proxy::error::ProxyError;
use crate::proxy::{Outbound, UpstreamWait, forward, path_and_query, relay};
use crate::responses::RequestBody;
use crate::state::AppState;

const ROUTE: &str = "responses";

/// `POST /v1/responses`; the edge has authenticated the caller and records status and overhead.
pub async fn handle(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    Extension(wait): Extension<UpstreamWait>,
    request: Request,
) -> Result<Response, ProxyError> {
    let (parts, body) = request.into_parts();
    let bytes = read_body(body, &parts.headers, state.config.max_body_bytes).await?;
    let request_id = state.next_request_id();
    let path_and_query = path_and_query(&parts.uri);
    let (outgoing, response_headers) = if has_content_encoding(&parts.headers) {
        (bytes, Vec::new())
    } else {
        let tenant = caller.tenant.as_str();
        // A body shorter than a known list cannot repeat one.
        let known = if bytes.len() >= crate::turn::known::MIN_BYTES {
            state.known_inputs.for_tenant(tenant)
        } else {
            Vec::new()
        };
        match RequestBody::parse_known(bytes.clone(), &known) {
            Err(e) => {
                tracing::debug!(%request_id, error = %e, "body is not a Responses request; forwarded unchanged");
                (bytes, Vec::new())
            }
            Ok(parsed) => {
                state.known_inputs.remember(tenant, &parsed);
                let mut turn = Turn::new(
                    request_id.clone(),
                    caller.clone(),
                    parsed,
                    parts.headers.clone(),
                );
                if !turn.bypass() {
                    turn.offer_from_head = super::expand::inject::offer_from_head(
                        &state.expander.settings,
                        &turn.body,
                    );
                    run_stages(&state.stages, &mut turn, &state.metrics).await?;
                }
                if turn.expand_active {
                    // The last phase: the proxy may have to answer context_expand calls, so it reads the answer
                    // and runs the rounds.
                    return rounds::run(state, turn, path_and_query, &wait).await;
                }
                (turn.body.to_bytes(), turn.response_headers)
            }
        }
    };
    let len = outgoing.len();
    let outbound = Outbound {
        method: Method::POST,
        path_and_query: &path_and_query,
        client_headers: &parts.headers,
        body: crate::proxy::upstream::SendBody::full(outgoing),
        body_len: Some(len),
    };
    let upstream = forward(&state, ROUTE, &wait, &caller, outbound)
        .await
        .map_err(|e| e.into_proxy_error())?;
    tracing::debug!(%request_id, status = upstream.response.status().as_u16(), "turn relayed");
    Ok(relay(&state, upstream, response_headers))
}

fn has_content_encoding(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
}

/// Reads the whole body, refusing it as soon as it passes `limit` (or up front when `Content-Length` says so).
///
/// A body that arrives as one chunk (most bodies of a few KB: hyper hands over what one socket read brought) is
/// that chunk itself; only a body of several chunks is copied into one buffer.
pub async fn read_body(body: Body, headers: &HeaderMap, limit: u64) -> Result<Bytes, ProxyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ProxyError::BodyTooLarge { limit });
    }
    let mut stream = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut buf: Option<BytesMut> = None;
    let mut len = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ProxyError::BadRequestBody(e.to_string()))?;
        len += chunk.len() as u64;
        if len > limit {
            return Err(ProxyError::BodyTooLarge { limit });
        }
        match (&mut buf, first.take()) {
            (Some(buf), _) => buf.extend_from_slice(&chunk),
            (None, None) => first = Some(chunk),
            (None, Some(head)) => {
                let capacity = declared.unwrap_or(len).min(limit).max(len) as usize;
                let mut joined = BytesMut::with_capacity(capacity);
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&chunk);
                buf = Some(joined);
            }
        }
    }
    Ok(match (buf, first) {
        (Some(buf), _) => buf.freeze(),
        (None, Some(only)) => only,
        (None, None) => Bytes::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(parts: &[&'static [u8]]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        Body::from_stream(futures_util::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_body_of_one_chunk_is_that_chunk_and_of_several_their_concatenation() {
        let headers = HeaderMap::new();
        let one = read_body(chunked(&[b"{\"a\":1}"]), &headers, 1024).await;
        assert_eq!(one.ok().as_deref(), Some(&b"{\"a\":1}"[..]));
        let three = read_body(chunked(&[b"{\"a\"", b":", b"1}"]), &headers, 1024).await;
        assert_eq!(three.ok().as_deref(), Some(&b"{\"a\":1}"[..]));
        let none = read_body(chunked(&[]), &headers, 1024).await;
        assert_eq!(none.ok().as_deref(), Some(&b""[..]));
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_refused_whether_in_one_chunk_or_several() {
        let headers = HeaderMap::new();
        let one = read_body(chunked(&[b"0123456789"]), &headers, 9).await;
        assert!(matches!(one, Err(ProxyError::BodyTooLarge { limit: 9 })));
        let split = read_body(chunked(&[b"01234", b"56789"]), &headers, 9).await;
        assert!(matches!(split, Err(ProxyError::BodyTooLarge { limit: 9 })));
        let fits = read_body(chunked(&[b"01234", b"5678"]), &headers, 9).await;
        assert_eq!(fits.ok().as_deref(), Some(&b"012345678"[..]));
    }
}

//! The expand loop for SSE answers: events are relayed as they arrive, rounds stitched into one stream.
//!
//! Each upstream round is fed to the [`Stitcher`], which hides the `context_expand` items, holds back the
//! terminal event of a round that continues, and renumbers what the client sees. When a round ends with expand
//! calls, they are answered and the next round starts; the client sees one `response.created`, strictly increasing
//! `sequence_number`s, `output_index` counting only its own items and one terminal event with the summed usage.
//! A round cut off upstream ends the client's stream there, truncated — never with an invented ending. A client
//! that hangs up stops the loop and cancels the upstream request.

use axum::body::Body;
use axum::http::header;
use axum::response::Response;
use futures_util::StreamExt;

use super::inject::remember_alias;
use super::rounds::Rounds;
use crate::expand::stitch::{Stitcher, Terminal};
use crate::expand::tool::EXPAND_TOOL;
use crate::proxy::{Clock, headers, relay, render_error};

const ROUTE: &str = "responses";

type Chunk = Result<bytes::Bytes, std::io::Error>;

fn cut(reason: &str) -> Chunk {
    Err(std::io::Error::other(reason.to_string()))
}

/// Runs a streamed turn with expansion: the first round's headers go out at once, the rounds follow.
pub async fn run_stream(mut rounds: Rounds, mut clock: Clock) -> Response {
    let state = rounds.state.clone();
    let method = axum::http::Method::POST;
    let first = match rounds.send(&mut clock).await {
        Ok(u) => u,
        Err(e) => return render_error(&state, ROUTE, &method, &clock, e),
    };
    let status = first.response.status();
    let is_sse = first
        .response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    // An encoded body (the upstream ignored the plain Accept-Encoding) cannot be read, so it is only relayed.
    let encoded = first
        .response
        .headers()
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
    if !status.is_success() || !is_sse || encoded {
        let response = relay(&state, first, rounds.extra_headers.clone());
        state
            .metrics
            .observe_request(ROUTE, "POST", status.as_u16());
        state.metrics.observe_overhead(ROUTE, clock.overhead());
        return response;
    }
    let mut out_headers = headers::client_response_headers(first.response.headers());
    out_headers.remove(header::CONTENT_LENGTH);
    for (k, v) in &rounds.extra_headers {
        out_headers.insert(k.clone(), v.clone());
    }
    state
        .metrics
        .observe_request(ROUTE, "POST", status.as_u16());
    state.metrics.observe_overhead(ROUTE, clock.overhead());

    let (tx, rx) = tokio::sync::mpsc::channel::<Chunk>(64);
    tokio::spawn(async move {
        let mut stitcher = Stitcher::new(EXPAND_TOOL);
        let mut upstream = first;
        let mut round = 0usize;
        loop {
            let mut body = rounds.state.upstream.relay(upstream.response);
            while let Some(chunk) = body.next().await {
                match chunk {
                    Ok(bytes) => {
                        for out in stitcher.push(&bytes) {
                            if tx.send(Ok(out)).await.is_err() {
                                return; // the client hung up: dropping `body` cancels the upstream request
                            }
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
            let end = stitcher.end_round();
            if end.terminal == Terminal::Missing {
                let _ = tx
                    .send(cut("upstream stream ended without a terminal event"))
                    .await;
                return;
            }
            let max_rounds = rounds.state.expander.settings.max_rounds;
            if end.expand_calls.is_empty() || round >= max_rounds {
                for out in stitcher.finish() {
                    if tx.send(Ok(out)).await.is_err() {
                        return;
                    }
                }
                if let (Some(first_id), Some(real_id)) =
                    (stitcher.response_id(), end.response_id.as_deref())
                {
                    let state = &rounds.state;
                    remember_alias(
                        &state.expander,
                        &state.tasks,
                        rounds.caller.tenant.as_str(),
                        first_id,
                        real_id,
                    );
                }
                return;
            }
            round += 1;
            rounds
                .prepare_next(&end.output, &end.expand_calls, round)
                .await;
            let mut clock = Clock::start();
            upstream = match rounds.send(&mut clock).await {
                Ok(u) if u.response.status().is_success() => u,
                Ok(u) => {
                    let status = u.response.status();
                    let _ = tx
                        .send(cut(&format!("follow-up round answered HTTP {status}")))
                        .await;
                    return;
                }
                Err(e) => {
                    let _ = tx.send(cut(&e.to_string())).await;
                    return;
                }
            };
            stitcher.begin_round();
        }
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = status;
    *response.headers_mut() = out_headers;
    response
}

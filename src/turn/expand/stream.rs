//! The expand loop for SSE answers: events are relayed as they arrive, rounds stitched into one stream.
//!
//! Each upstream round is fed to the [`Stitcher`]. While nothing must be hidden it relays the upstream's events
//! as they came (the echoed tool and directive spliced out of the response objects), so a turn that is offered
//! `context_expand` and never calls it costs about what a plain relay costs; from the event that opens an expand
//! call it hides the call, holds back the terminal event of a round that continues, and renumbers what the client
//! sees. When a round ends with expand calls, they are answered and the next round starts; the client sees one
//! `response.created`, strictly increasing `sequence_number`s, `output_index` counting only its own items and one
//! terminal event with the summed usage. A round cut off upstream ends the client's stream there, truncated —
//! never with an invented ending. The whole loop is a stream polled by the client connection itself (no task, no
//! channel): a client that hangs up drops it, which cancels the upstream request.

use std::task::Poll;

use axum::body::Body;
use axum::http::header;
use axum::response::Response;
use futures_util::StreamExt;

use super::rounds::Rounds;
use crate::expand::stitch::{Stitcher, Terminal};
use crate::expand::tool::EXPAND_TOOL;
use crate::proxy::error::ProxyError;
use crate::proxy::upstream::BodyStream;
use crate::proxy::{UpstreamWait, headers, relay};

type Chunk = Result<bytes::Bytes, std::io::Error>;

/// The most client bytes read ahead before the headers go out: a long answer that is already here still starts
/// reaching the client early.
const READ_AHEAD_MAX: usize = 64 * 1024;

/// The most scheduler passes the read-ahead gives the upstream connection to hand over what it has read.
const READ_AHEAD_PASSES: u8 = 32;

fn cut(reason: &str) -> Chunk {
    Err(std::io::Error::other(reason.to_string()))
}

/// Runs a streamed turn with expansion: the first round's headers go out with what the upstream has already sent
/// (`Driver::read_ahead`), the rest of the rounds follows as it arrives.
pub async fn run_stream(rounds: Rounds, wait: &UpstreamWait) -> Result<Response, ProxyError> {
    let state = rounds.state.clone();
    let first = rounds.send(wait).await?;
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
        return Ok(relay(&state, first, rounds.extra_headers.clone()));
    }
    let mut out_headers = headers::client_response_headers(first.response.headers());
    out_headers.remove(header::CONTENT_LENGTH);
    for (k, v) in &rounds.extra_headers {
        out_headers.insert(k.clone(), v.clone());
    }
    let mut stitcher = Stitcher::new(EXPAND_TOOL);
    let parallel = !matches!(
        rounds.request.get("parallel_tool_calls"),
        Some(serde_json::Value::Bool(false))
    );
    stitcher.set_parallel_calls(parallel);
    let body = rounds.state.upstream.relay(first.response);
    let mut driver = Driver {
        rounds,
        stitcher,
        body: Some(body),
        round: 0,
        queue: std::collections::VecDeque::new(),
    };
    driver.read_ahead().await;
    // The body is driven by the connection that writes it to the client: no task and no channel in between.
    let stream = futures_util::stream::unfold(driver, |mut driver| async move {
        driver.next().await.map(|chunk| (chunk, driver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = status;
    *response.headers_mut() = out_headers;
    Ok(response)
}

/// The state of a streamed turn with expansion, polled by the client connection.
struct Driver {
    rounds: Rounds,
    stitcher: Stitcher,
    /// The current round's upstream body; `None` once the client stream is over.
    body: Option<BodyStream>,
    round: usize,
    /// Client bytes ready to go.
    queue: std::collections::VecDeque<Chunk>,
}

impl Driver {
    /// Stitches what the upstream has already sent of the first round, without waiting for anything that has not
    /// arrived, before the client's headers go out.
    ///
    /// The upstream connection hands its answer over one decoded chunk per pass of its task, and the round's end
    /// only after its last event. Once the headers are out, every time the relay has nothing ready the client
    /// connection writes what it holds, so a round that arrived in one read would leave in two writes: its events,
    /// then the terminal event once the end was seen. Here the connection's task steps aside while each pass still
    /// brings something (at most [`READ_AHEAD_PASSES`] passes and [`READ_AHEAD_MAX`] bytes), and stops at the first
    /// pass that brings nothing: an answer that is already here goes out with the headers in one write, and a slow
    /// upstream delays the headers by one pass of the scheduler.
    async fn read_ahead(&mut self) {
        let mut passes = 0u8;
        let mut stepped_aside = false;
        // One chunk for the client connection, not one per upstream chunk: each costs it a frame to encode.
        let mut ahead = bytes::BytesMut::new();
        let error = std::future::poll_fn(|cx| {
            loop {
                let Some(body) = self.body.as_mut() else {
                    return Poll::Ready(None);
                };
                match body.as_mut().poll_next(cx) {
                    Poll::Ready(Some(Ok(bytes))) => {
                        stepped_aside = false;
                        self.stitcher.push_into(&bytes, &mut ahead);
                        if ahead.len() >= READ_AHEAD_MAX {
                            return Poll::Ready(None);
                        }
                    }
                    Poll::Ready(Some(Err(e))) => {
                        self.body = None;
                        return Poll::Ready(Some(e));
                    }
                    Poll::Ready(None) => {
                        // The round is over; `next` ends it (which may start another round) when the client
                        // connection asks for more.
                        self.body = Some(Box::pin(futures_util::stream::empty()));
                        return Poll::Ready(None);
                    }
                    Poll::Pending if !stepped_aside && passes < READ_AHEAD_PASSES => {
                        stepped_aside = true;
                        passes += 1;
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    Poll::Pending => return Poll::Ready(None),
                }
            }
        })
        .await;
        if !ahead.is_empty() {
            self.queue.push_back(Ok(ahead.freeze()));
        }
        if let Some(e) = error {
            self.queue.push_back(Err(e));
        }
    }

    /// The next piece of the client's stream (`None` at its end). A client that hangs up drops the driver, and
    /// with it the upstream request.
    async fn next(&mut self) -> Option<Chunk> {
        loop {
            if let Some(chunk) = self.queue.pop_front() {
                return Some(chunk);
            }
            let body = self.body.as_mut()?;
            match body.next().await {
                Some(Ok(bytes)) => {
                    let out = self.stitcher.push(&bytes);
                    self.queue.extend(out.into_iter().map(Ok));
                }
                Some(Err(e)) => {
                    self.body = None;
                    return Some(Err(e));
                }
                None => self.end_round().await,
            }
        }
    }

    /// The round's upstream body ended: finish the client stream, or answer the expand calls and start the next
    /// round.
    async fn end_round(&mut self) {
        self.body = None;
        let end = self.stitcher.end_round();
        if end.terminal == Terminal::Missing {
            self.queue
                .push_back(cut("upstream stream ended without a terminal event"));
            return;
        }
        let state = self.rounds.state.clone();
        let max_rounds = state.expander.settings.max_rounds;
        if end.expand_calls.is_empty() || self.round >= max_rounds || end.shown_client_calls > 0 {
            self.queue
                .extend(self.stitcher.finish().into_iter().map(Ok));
            if let (Some(first_id), Some(real_id)) =
                (self.stitcher.response_id(), end.response_id.as_deref())
            {
                self.rounds.remember(first_id, real_id);
            }
            return;
        }
        self.round += 1;
        self.rounds
            .prepare_next(&end.output, &end.expand_calls, self.round)
            .await;
        // A follow-up round's wait is not the first response's: it is not recorded as the request's overhead.
        match self.rounds.send(&UpstreamWait::default()).await {
            Ok(u) if u.response.status().is_success() => {
                self.stitcher.begin_round();
                self.stitcher.offer_expand(self.round < max_rounds);
                self.body = Some(state.upstream.relay(u.response));
            }
            Ok(u) => {
                let status = u.response.status();
                self.queue
                    .push_back(cut(&format!("follow-up round answered HTTP {status}")));
            }
            Err(e) => self.queue.push_back(cut(&e.to_string())),
        }
    }
}

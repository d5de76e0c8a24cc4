//! Deterministic mock of an OpenAI-style Responses API upstream (`ctxgate-mock`).
//!
//! ctxgate's integration tests, its benchmarks and people trying ctxgate without an
//! API key need an upstream that answers like the real `/v1/responses` API, byte for
//! byte the same for the same request, and that can misbehave on demand (errors,
//! truncated bodies, slow or oddly framed streams). The request's `model` (or
//! `metadata.mock`, which wins) picks the behaviour; see [`scenario`] for the table.
//! Every request is recorded so tests can assert on what the proxy actually sent.
//!
//! Layout: `server` wires the router, recording and control endpoints
//! (`/__mock/requests`, `/__mock/stats`), `responses` answers `/v1/responses`,
//! `sse` builds event streams, `compact` answers `/v1/responses/compact`,
//! `passthrough` holds the byte-level helpers under `/v1/mock/`, `state` the shared
//! recording and stream counters, `input` reads requests, `ids` derives ids.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use axum::serve::ListenerExt;

pub mod agent;
mod compact;
mod ids;
mod input;
mod passthrough;
mod responses;
pub mod scenario;
mod server;
mod sse;
mod state;

pub use passthrough::BYTES_PATTERN;
pub use server::router;
pub use state::{MockState, Recorded};

/// How long `serve` keeps waiting for open connections after a shutdown signal:
/// stalled and slow streams are held open on purpose and would otherwise block exit.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Knobs that apply to the whole mock rather than to one request.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// Waited before answering any API request, to emulate a distant upstream.
    pub latency: Duration,
    /// Waited between SSE events, so streaming is observable in tests and benchmarks.
    pub chunk_delay: Duration,
    /// When set, `/v1/responses/compact` answers this status with an error body,
    /// emulating upstreams that lack the compaction endpoint.
    pub compact_status: Option<u16>,
    /// Record only the last this many requests (`None`: every request until `DELETE /__mock/requests`).
    pub record_last: Option<usize>,
    /// Send each normally paced SSE answer as one body chunk (its events joined), as an upstream behind a
    /// buffering hop does, instead of one chunk per event; no effect when `chunk_delay` spaces the events.
    pub sse_whole: bool,
}

/// A mock started by [`start`]; the server runs until the tokio runtime ends.
#[derive(Debug, Clone)]
pub struct MockHandle {
    pub addr: SocketAddr,
    pub state: MockState,
}

impl MockHandle {
    /// `http://127.0.0.1:PORT`, handy as a proxy's upstream base.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, what OpenAI SDKs take as `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

/// Binds `127.0.0.1:0` and serves the mock in a background task, so each test gets
/// its own isolated upstream and recording.
pub async fn start(cfg: MockConfig) -> std::io::Result<MockHandle> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let state = MockState::keeping_last(cfg.record_last);
    let app = router(cfg, state.clone());
    tokio::spawn(async move {
        if let Err(err) = axum::serve(events_unheld(listener), app).await {
            tracing::warn!(%err, "ctxgate-mock server stopped");
        }
    });
    Ok(MockHandle { addr, state })
}

/// The mock's connections with TCP_NODELAY set: events spaced by `chunk_delay` leave when they are written, as a
/// real upstream streams them. Without it Nagle's algorithm holds each small event until the reader's delayed ACK
/// (~40 ms), so a paced answer would reach the proxy in a few bursts instead of event by event.
fn events_unheld(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    listener.tap_io(unheld)
}

fn unheld(tcp: &mut tokio::net::TcpStream) {
    if let Err(err) = tcp.set_nodelay(true) {
        tracing::debug!(%err, "could not set TCP_NODELAY on a mock connection");
    }
}

/// Serves the mock on `listener` until ctrl-c or SIGTERM; used by the binary.
/// In-flight requests get 2 s to finish (stalled streams never would), then it returns anyway.
pub async fn serve(listener: tokio::net::TcpListener, cfg: MockConfig) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    tracing::info!("ctxgate-mock listening on http://{addr}");
    let state = MockState::keeping_last(cfg.record_last);
    let app = router(cfg, state);
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let server = axum::serve(events_unheld(listener), app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            tracing::info!("ctxgate-mock shutting down");
            let _ = stop_tx.send(true);
        })
        .into_future();
    let forced = async move {
        if stop_rx.wait_for(|stopped| *stopped).await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        res = server => res,
        () = forced => Ok(()),
    }
}

/// Resolves on ctrl-c or (on unix) SIGTERM; a signal that cannot be installed
/// simply never fires, so the server keeps running rather than exiting at once.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use axum::serve::Listener;

    /// Paced events must leave as they are written: the mock's side of every connection has Nagle's algorithm off.
    #[tokio::test]
    async fn the_mocks_connections_send_small_writes_at_once() {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let mut unheld = events_unheld(listener);
        let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
        let (io, _) = unheld.accept().await;
        assert!(io.nodelay().unwrap());
        client.await.unwrap().unwrap();
    }
}

//! The one client that talks to the upstream Responses API.
//!
//! It maps a client path under `/v1/` onto the configured base URL, sends with the configured connect and
//! response-header timeouts, and hands back the response with a body stream guarded by an idle timeout — a
//! stream may run for as long as the model writes, but a silent upstream is cut. Redirects are not followed and
//! bodies are not decompressed: the client gets what the upstream sent.

use std::pin::Pin;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, Method, header};
use bytes::Bytes;
use std::future::Future;

use futures_util::{Stream, StreamExt};

use super::error::ProxyError;
use crate::config::UpstreamConfig;

/// A body stream as the proxy relays it.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// Largest answer ctxgate reads into memory for a call of its own.
const MAX_OWN_CALL_BODY: usize = 64 * 1024 * 1024;

thread_local! {
    /// Which server worker (one current-thread runtime per core) this thread runs; 0 outside workers.
    static WORKER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks the current thread as server worker `index`: its upstream requests use that worker's own connection
/// pool, so a pooled connection's task always runs on the thread that uses it (no wake-ups across threads).
pub fn set_worker(index: usize) {
    WORKER.with(|w| w.set(index));
}

#[derive(Clone)]
pub struct Upstream {
    /// One client (connection pool) per server worker, indexed by [`set_worker`]'s index.
    clients: std::sync::Arc<[reqwest::Client]>,
    base: reqwest::Url,
    read_timeout: Duration,
    idle_timeout: Duration,
}

/// What came back from the upstream, and how long it took to start answering.
pub struct UpstreamResponse {
    pub response: reqwest::Response,
    pub waited: Duration,
}

impl Upstream {
    pub fn new(cfg: &UpstreamConfig) -> Result<Upstream, ProxyError> {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let clients = (0..workers)
            .map(|_| {
                reqwest::Client::builder()
                    .connect_timeout(cfg.connect_timeout)
                    .redirect(reqwest::redirect::Policy::none())
                    .pool_idle_timeout(Duration::from_secs(90))
                    .tcp_nodelay(true)
                    .build()
                    .map_err(|e| ProxyError::Misconfigured(format!("upstream client: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Upstream {
            clients: clients.into(),
            base: cfg.url.clone(),
            read_timeout: cfg.read_timeout,
            idle_timeout: cfg.stream_idle_timeout,
        })
    }

    pub fn base(&self) -> &reqwest::Url {
        &self.base
    }

    /// `/v1/responses?x=1` → `{base}/responses?x=1`.
    pub fn url_for(&self, path_and_query: &str) -> String {
        let rest = path_and_query.strip_prefix("/v1").unwrap_or(path_and_query);
        format!("{}{}", self.base.as_str().trim_end_matches('/'), rest)
    }

    /// Sends one request and waits (at most the read timeout) for the response headers.
    pub async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        headers: HeaderMap,
        body: reqwest::Body,
    ) -> Result<UpstreamResponse, SendError> {
        let index = WORKER.with(std::cell::Cell::get);
        let client = self
            .clients
            .get(index % self.clients.len().max(1))
            .ok_or_else(|| SendError::Other("no upstream client".into()))?;
        let request = client
            .request(method, self.url_for(path_and_query))
            .headers(headers)
            .body(body);
        let started = Instant::now();
        match tokio::time::timeout(self.read_timeout, request.send()).await {
            Err(_) => Err(SendError::Timeout(self.read_timeout)),
            Ok(Err(e)) => Err(SendError::from_reqwest(e, self.read_timeout)),
            Ok(Ok(response)) => Ok(UpstreamResponse {
                response,
                waited: started.elapsed(),
            }),
        }
    }

    /// Sends a JSON body the proxy built itself (fold and expand calls) with the given identity headers, and
    /// reads the whole answer (at most `MAX_OWN_CALL_BODY` bytes).
    pub async fn call_json(
        &self,
        path: &str,
        identity: &HeaderMap,
        body: Bytes,
    ) -> Result<(u16, Bytes), SendError> {
        let mut headers = identity.clone();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let answer = self
            .send(Method::POST, path, headers, reqwest::Body::from(body))
            .await?;
        let status = answer.response.status().as_u16();
        let mut stream = self.relay(answer.response);
        let mut buf = bytes::BytesMut::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| SendError::Other(format!("reading the answer: {e}")))?;
            if buf.len() + chunk.len() > MAX_OWN_CALL_BODY {
                return Err(SendError::Other("answer larger than 64 MiB".into()));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok((status, buf.freeze()))
    }

    /// The response body as a stream that ends with an error when the upstream stays silent longer than the idle
    /// timeout or breaks off: the client then sees a truncated body, never an invented ending.
    pub fn relay(&self, response: reqwest::Response) -> BodyStream {
        idle_guarded(response.bytes_stream(), self.idle_timeout)
    }
}

/// Largest run of already-arrived chunks joined into one write to the client.
const COALESCE_MAX: usize = 64 * 1024;

/// Wraps a byte stream so that each chunk must arrive within `idle` of the previous one.
///
/// Chunks that are ready are joined into one (up to 64 KiB) before they are handed on, so an upstream that writes
/// each SSE event as its own chunk costs fewer writes to the client when the events arrive together; nothing ever
/// waits for more data to join, so no delay is added. (The HTTP client hands over one decoded chunk per poll of its
/// connection task, so in practice chunks join only when that task got ahead.) One idle timer, re-armed only when
/// the relay has to wait: a chunk already there costs no timer.
pub fn idle_guarded<S, E>(inner: S, idle: Duration) -> BodyStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    Box::pin(IdleGuarded {
        inner: Box::pin(inner),
        idle,
        timer: Box::pin(tokio::time::sleep(idle)),
        armed: false,
        held: None,
        joined: None,
        failed: None,
        done: false,
    })
}

struct IdleGuarded<S> {
    inner: Pin<Box<S>>,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// Whether `timer` counts the current wait (it is re-armed when a wait starts).
    armed: bool,
    /// The first chunk held back for joining (kept as it is when nothing joins it).
    held: Option<Bytes>,
    /// Chunks joined so far, when more than one arrived.
    joined: Option<bytes::BytesMut>,
    /// An error met while joining, handed on after what was joined.
    failed: Option<std::io::Error>,
    done: bool,
}

impl<S> IdleGuarded<S> {
    fn held_len(&self) -> usize {
        self.joined
            .as_ref()
            .map_or_else(|| self.held.as_ref().map_or(0, Bytes::len), |j| j.len())
    }

    fn hold(&mut self, chunk: Bytes) {
        match (&mut self.joined, self.held.take()) {
            (Some(joined), _) => joined.extend_from_slice(&chunk),
            (None, None) => self.held = Some(chunk),
            (None, Some(first)) => {
                let mut joined = bytes::BytesMut::with_capacity(first.len() + chunk.len());
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&chunk);
                self.joined = Some(joined);
            }
        }
    }

    fn take(&mut self) -> Option<Bytes> {
        match self.joined.take() {
            Some(joined) => Some(joined.freeze()),
            None => self.held.take(),
        }
    }
}

impl<S, E> Stream for IdleGuarded<S>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = self.get_mut();
        if let Some(e) = this.failed.take() {
            this.done = true;
            return Poll::Ready(Some(Err(e)));
        }
        if this.done {
            return Poll::Ready(this.take().map(Ok));
        }
        loop {
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    this.armed = false;
                    this.hold(chunk);
                    if this.held_len() >= COALESCE_MAX {
                        return Poll::Ready(this.take().map(Ok));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    let e = std::io::Error::other(e.to_string());
                    match this.take() {
                        Some(chunk) => {
                            this.failed = Some(e);
                            return Poll::Ready(Some(Ok(chunk)));
                        }
                        None => {
                            this.done = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                    }
                }
                Poll::Ready(None) => {
                    this.done = true;
                    return Poll::Ready(this.take().map(Ok));
                }
                Poll::Pending if this.held.is_some() || this.joined.is_some() => {
                    return Poll::Ready(this.take().map(Ok));
                }
                Poll::Pending => {
                    if !this.armed {
                        this.armed = true;
                        let deadline = tokio::time::Instant::now() + this.idle;
                        this.timer.as_mut().reset(deadline);
                    }
                    if this.timer.as_mut().poll(cx).is_ready() {
                        this.done = true;
                        let idle = this.idle;
                        let e = std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("upstream idle for {idle:?}"),
                        );
                        return Poll::Ready(Some(Err(e)));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;

    #[tokio::test]
    async fn ready_chunks_are_joined_and_an_error_still_ends_the_stream() {
        let chunks: Vec<Result<Bytes, String>> = vec![
            Ok(Bytes::from_static(b"event: a\n\n")),
            Ok(Bytes::from_static(b"event: b\n\n")),
            Err("cut".into()),
        ];
        let mut relayed = idle_guarded(futures_util::stream::iter(chunks), Duration::from_secs(1));
        let first = relayed.next().await.unwrap().unwrap();
        assert_eq!(first, Bytes::from_static(b"event: a\n\nevent: b\n\n"));
        assert!(
            relayed.next().await.unwrap().is_err(),
            "the cut reaches the client"
        );
        assert!(relayed.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_upstream_is_cut_after_the_idle_timeout() {
        let silent = futures_util::stream::pending::<Result<Bytes, String>>();
        let mut relayed = idle_guarded(silent, Duration::from_secs(5));
        let err = relayed.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(relayed.next().await.is_none());
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("connect failed: {0}")]
    Connect(String),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("request body failed: {0}")]
    Body(String),
    #[error("{0}")]
    Other(String),
}

impl SendError {
    fn from_reqwest(e: reqwest::Error, read_timeout: Duration) -> SendError {
        let text = error_chain(&e);
        if e.is_timeout() {
            SendError::Timeout(read_timeout)
        } else if e.is_connect() {
            SendError::Connect(text)
        } else if body_failed(&e) {
            SendError::Body(text)
        } else {
            SendError::Other(text)
        }
    }

    /// Low-cardinality label for the upstream error counter.
    pub fn kind(&self) -> &'static str {
        match self {
            SendError::Connect(_) => "connect",
            SendError::Timeout(_) => "timeout",
            SendError::Body(_) => "request_body",
            SendError::Other(_) => "other",
        }
    }

    pub fn into_proxy_error(self) -> ProxyError {
        match self {
            SendError::Timeout(d) => ProxyError::UpstreamTimeout(d),
            SendError::Connect(m) | SendError::Body(m) | SendError::Other(m) => {
                ProxyError::UpstreamUnreachable(m)
            }
        }
    }
}

/// Whether sending failed on the request body: by the client library's own error kinds (reqwest's body kind, or
/// the HTTP library's user-body and aborted-body-write kinds in its source chain), never by the message text.
fn body_failed(e: &reqwest::Error) -> bool {
    if e.is_body() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_user() || h.is_body_write_aborted() {
                return true;
            }
        }
        source = s.source();
    }
    false
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

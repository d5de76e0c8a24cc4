//! The one client that talks to the upstream Responses API.
//!
//! It maps a client path under `/v1/` onto the configured base URL, sends with the configured connect and
//! response-header timeouts, and hands back the response with a body stream guarded by an idle timeout (`idle`) —
//! a stream may run for as long as the model writes, but a silent upstream is cut. Redirects are not followed and
//! bodies are not decompressed: the client gets what the upstream sent.
//!
//! Requests go out on hyper's pooled client directly: a general-purpose client (URL parsing on every request,
//! a redirect layer, default headers) cost about as many instructions per turn as everything else ctxgate does
//! to a 10 KB turn. When the environment names an HTTP proxy for the upstream (`HTTPS_PROXY`, `HTTP_PROXY`,
//! `ALL_PROXY`, less `NO_PROXY`), requests go through reqwest instead, which speaks to proxies; the proxy is
//! chosen once, at start.

mod idle;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, Method, Uri, header};
use bytes::Bytes;

use futures_util::{Stream, StreamExt};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::error::ProxyError;
use crate::config::UpstreamConfig;
pub use idle::idle_guarded;

/// A body stream as the proxy relays it.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// Largest answer ctxgate reads into memory for a call of its own.
const MAX_OWN_CALL_BODY: usize = 64 * 1024 * 1024;

/// How long an unused pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

thread_local! {
    /// Which server worker (one current-thread runtime per core) this thread runs; 0 outside workers.
    static WORKER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks the current thread as server worker `index`: its upstream requests use that worker's own connection
/// pool, so a pooled connection's task always runs on the thread that uses it (no wake-ups across threads).
pub fn set_worker(index: usize) {
    WORKER.with(|w| w.set(index));
}

type DirectClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, SendBody>;

/// The connection pools, one per server worker: hyper's own, or reqwest's when a proxy is configured.
#[derive(Clone)]
enum Pools {
    Direct(std::sync::Arc<[DirectClient]>),
    Proxied(std::sync::Arc<[reqwest::Client]>),
}

#[derive(Clone)]
pub struct Upstream {
    pools: Pools,
    base: reqwest::Url,
    /// The base URL without its trailing slash, to which a request's path after `/v1` is appended.
    prefix: String,
    read_timeout: Duration,
    connect_timeout: Duration,
    idle_timeout: Duration,
}

/// The body of a request sent upstream: bytes ctxgate holds (a turn's body, its own calls), or the client's body
/// streamed through (pass-through routes).
pub enum SendBody {
    Full(Option<Bytes>),
    Stream(BodyStream),
}

impl SendBody {
    pub fn full(bytes: Bytes) -> SendBody {
        SendBody::Full(Some(bytes))
    }

    pub fn empty() -> SendBody {
        SendBody::Full(None)
    }

    pub fn stream(
        stream: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> SendBody {
        SendBody::Stream(Box::pin(stream))
    }

    fn into_reqwest(self) -> reqwest::Body {
        match self {
            SendBody::Full(bytes) => reqwest::Body::from(bytes.unwrap_or_default()),
            SendBody::Stream(stream) => reqwest::Body::wrap_stream(stream),
        }
    }
}

impl http_body::Body for SendBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            SendBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            SendBody::Stream(stream) => stream
                .as_mut()
                .poll_next(cx)
                .map(|chunk| chunk.map(|c| c.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, SendBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SendBody::Full(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            SendBody::Stream(_) => SizeHint::default(),
        }
    }
}

/// The body of the upstream's answer, from whichever client sent the request.
pub enum RecvBody {
    Direct(hyper::body::Incoming),
    Proxied(reqwest::Body),
}

/// What came back from the upstream, and how long it took to start answering.
pub struct UpstreamResponse {
    pub response: axum::http::Response<RecvBody>,
    pub waited: Duration,
}

impl Upstream {
    pub fn new(cfg: &UpstreamConfig) -> Result<Upstream, ProxyError> {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let base_uri: Uri = cfg
            .url
            .as_str()
            .parse()
            .map_err(|e| ProxyError::Misconfigured(format!("upstream url: {e}")))?;
        let proxied = hyper_util::client::proxy::matcher::Matcher::from_system()
            .intercept(&base_uri)
            .is_some();
        let pools = if proxied {
            let clients = (0..workers)
                .map(|_| {
                    reqwest::Client::builder()
                        .connect_timeout(cfg.connect_timeout)
                        .redirect(reqwest::redirect::Policy::none())
                        .pool_idle_timeout(POOL_IDLE)
                        .tcp_nodelay(true)
                        .build()
                        .map_err(|e| ProxyError::Misconfigured(format!("upstream client: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Pools::Proxied(clients.into())
        } else {
            let clients = (0..workers)
                .map(|_| direct_client(cfg.connect_timeout))
                .collect::<Result<Vec<_>, _>>()?;
            Pools::Direct(clients.into())
        };
        Ok(Upstream {
            pools,
            prefix: cfg.url.as_str().trim_end_matches('/').to_string(),
            base: cfg.url.clone(),
            read_timeout: cfg.read_timeout,
            connect_timeout: cfg.connect_timeout,
            idle_timeout: cfg.stream_idle_timeout,
        })
    }

    pub fn base(&self) -> &reqwest::Url {
        &self.base
    }

    /// Whether requests go through an HTTP proxy named by the environment.
    pub fn is_proxied(&self) -> bool {
        matches!(self.pools, Pools::Proxied(_))
    }

    /// `/v1/responses?x=1` → `{base}/responses?x=1`.
    pub fn url_for(&self, path_and_query: &str) -> String {
        let rest = path_and_query.strip_prefix("/v1").unwrap_or(path_and_query);
        let mut url = String::with_capacity(self.prefix.len() + rest.len());
        url.push_str(&self.prefix);
        url.push_str(rest);
        url
    }

    /// Sends one request and waits (at most the read timeout) for the response headers.
    pub async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        headers: HeaderMap,
        body: SendBody,
    ) -> Result<UpstreamResponse, SendError> {
        let index = WORKER.with(std::cell::Cell::get);
        let url = self.url_for(path_and_query);
        let started = Instant::now();
        let answer = match &self.pools {
            Pools::Direct(clients) => {
                let client = pick(clients, index)?;
                let uri = Uri::try_from(url)
                    .map_err(|e| SendError::Other(format!("upstream url: {e}")))?;
                let mut request = axum::http::Request::new(body);
                *request.method_mut() = method;
                *request.uri_mut() = uri;
                *request.headers_mut() = headers;
                match tokio::time::timeout(self.read_timeout, client.request(request)).await {
                    Err(_) => return Err(SendError::Timeout(self.read_timeout)),
                    Ok(Err(e)) => return Err(self.classify(&e)),
                    Ok(Ok(response)) => response.map(RecvBody::Direct),
                }
            }
            Pools::Proxied(clients) => {
                let client = pick(clients, index)?;
                let request = client
                    .request(method, url)
                    .headers(headers)
                    .body(body.into_reqwest());
                match tokio::time::timeout(self.read_timeout, request.send()).await {
                    Err(_) => return Err(SendError::Timeout(self.read_timeout)),
                    Ok(Err(e)) if e.is_timeout() => {
                        return Err(SendError::Timeout(self.read_timeout));
                    }
                    Ok(Err(e)) => return Err(self.classify(&e)),
                    Ok(Ok(response)) => {
                        axum::http::Response::<reqwest::Body>::from(response).map(RecvBody::Proxied)
                    }
                }
            }
        };
        Ok(UpstreamResponse {
            response: answer,
            waited: started.elapsed(),
        })
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
            .send(Method::POST, path, headers, SendBody::full(body))
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
    pub fn relay(&self, response: axum::http::Response<RecvBody>) -> BodyStream {
        match response.into_body() {
            RecvBody::Direct(body) => idle_guarded(body.into_data_stream(), self.idle_timeout),
            RecvBody::Proxied(body) => idle_guarded(body.into_data_stream(), self.idle_timeout),
        }
    }

    /// What a failed send was: a timeout (connecting, or a read the client library timed), a refused or failed
    /// connection, a request body that failed, or something else — by the libraries' error kinds in the source
    /// chain, never by message text.
    fn classify(&self, e: &(dyn std::error::Error + 'static)) -> SendError {
        let text = error_chain(e);
        let mut connect = false;
        let mut body = false;
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(s) = source {
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::TimedOut {
                    return SendError::Timeout(self.connect_timeout);
                }
            }
            if let Some(c) = s.downcast_ref::<hyper_util::client::legacy::Error>() {
                connect |= c.is_connect();
            }
            if let Some(r) = s.downcast_ref::<reqwest::Error>() {
                connect |= r.is_connect();
                body |= r.is_body();
            }
            if let Some(h) = s.downcast_ref::<hyper::Error>() {
                body |= h.is_user() || h.is_body_write_aborted();
            }
            source = s.source();
        }
        if connect {
            SendError::Connect(text)
        } else if body {
            SendError::Body(text)
        } else {
            SendError::Other(text)
        }
    }
}

/// Worker `index`'s pool.
fn pick<T>(pools: &[T], index: usize) -> Result<&T, SendError> {
    pools
        .get(index % pools.len().max(1))
        .ok_or_else(|| SendError::Other("no upstream client".into()))
}

/// hyper's pooled client over TCP (no Nagle delay) or TLS with the Mozilla roots, HTTP/2 when the server offers
/// it by ALPN, HTTP/1.1 otherwise.
fn direct_client(connect_timeout: Duration) -> Result<DirectClient, ProxyError> {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(connect_timeout));
    http.set_nodelay(true);
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
        .map_err(|e| ProxyError::Misconfigured(format!("upstream TLS: {e}")))?
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE)
        .pool_timer(TokioTimer::new())
        .build(https))
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

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

//! Test harness: the real ctxgate app and the real mock upstream, both on loopback port 0.
#![allow(dead_code, reason = "shared by several test crates; each uses a part")]
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use ctxgate::config::Config;
use ctxgate::config::raw::RawConfig;
use ctxgate::mock::{MockConfig, MockHandle};
use ctxgate::state::AppState;

pub mod redis;
pub mod serve;

pub struct Proxy {
    pub addr: SocketAddr,
    pub url: String,
    pub state: Arc<AppState>,
    pub store_path: std::path::PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
}

impl Proxy {
    /// Sends the shutdown signal and waits for the drain to finish.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }

    pub fn v1(&self, path: &str) -> String {
        format!("{}/v1{}", self.url, path)
    }
}

pub struct ProxyOptions {
    pub raw: RawConfig,
    pub env: HashMap<String, String>,
    /// Reuse a store file (restart tests); a fresh temp dir otherwise.
    pub store_path: Option<std::path::PathBuf>,
}

impl ProxyOptions {
    pub fn new(upstream: &str) -> ProxyOptions {
        let mut raw = RawConfig::default();
        raw.server.listen = Some("127.0.0.1:0".into());
        raw.upstream.url = Some(upstream.to_string());
        raw.server.shutdown_grace_secs = Some(5);
        ProxyOptions {
            raw,
            env: HashMap::new(),
            store_path: None,
        }
    }
}

pub async fn start_proxy(upstream: &str) -> Proxy {
    start_proxy_with(ProxyOptions::new(upstream)).await
}

pub async fn start_proxy_with(mut opts: ProxyOptions) -> Proxy {
    let (dir, store_path) = match opts.store_path.take() {
        Some(p) => (None, p),
        None => {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("store/ctxgate.redb");
            (Some(dir), p)
        }
    };
    opts.raw.store.path = Some(store_path.display().to_string());
    let config = Config::resolve(opts.raw).unwrap();
    let app = ctxgate::App::build(config, &opts.env).unwrap();
    let state = app.state.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(app.serve(listener, async move {
        let _ = rx.await;
    }));
    Proxy {
        addr,
        url: format!("http://{addr}"),
        state,
        store_path,
        stop: Some(tx),
        task: Some(task),
        _dir: dir,
    }
}

pub async fn start_mock() -> MockHandle {
    ctxgate::mock::start(MockConfig::default()).await.unwrap()
}

pub fn mock_url(mock: &MockHandle) -> String {
    format!("http://{}/v1", mock.addr)
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().build().unwrap()
}

/// A Responses request body as a client would send it, with deliberately odd whitespace and an unknown field.
pub fn responses_body(model: &str, stream: bool) -> String {
    format!(
        "{{\"model\": \"{model}\",  \"stream\":{stream},\n \"input\":[{{\"type\":\"message\",\"role\":\"developer\",\"content\":\"be brief\"}},\n  {{\"role\":\"user\", \"content\": [{{\"type\":\"input_text\",\"text\":\"say hi\"}}]}}, {{\"type\":\"future_item\",\"payload\":{{\"z\":1,\"a\":[1.50,2e3]}}}}],\n \"x_unknown\": {{\"kept\": true}} }}"
    )
}

/// Parses an SSE body into (event, data) pairs.
pub fn sse_events(body: &str) -> Vec<(String, serde_json::Value)> {
    body.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .filter_map(|block| {
            let mut event = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    event = e.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            serde_json::from_str(&data).ok().map(|v| (event, v))
        })
        .collect()
}

/// A tool-output fixture: the repository's own `tests/fixtures/tool_outputs/` (small excerpts of real outputs),
/// so the suite runs on a fresh clone with nothing beside it.
pub fn corpus_file(name: &str) -> String {
    format!(
        "{}/tests/fixtures/tool_outputs/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// One real tool output from the corpus.
pub fn corpus(name: &str) -> String {
    std::fs::read_to_string(corpus_file(name)).unwrap()
}

impl Proxy {
    /// The Prometheus text of `/metrics`.
    pub async fn metrics(&self) -> String {
        client()
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

/// POSTs `body` to the proxy's `/v1/responses` with `Bearer {key}`.
pub async fn post_responses(
    proxy: &Proxy,
    body: &serde_json::Value,
    key: &str,
) -> reqwest::Response {
    client()
        .post(proxy.v1("/responses"))
        .header("authorization", format!("Bearer {key}"))
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// The `/v1/responses` requests the mock received, as JSON, in order.
pub fn turn_requests(mock: &ctxgate::mock::MockHandle) -> Vec<serde_json::Value> {
    mock.state
        .received()
        .iter()
        .filter(|r| r.path == "/v1/responses")
        .map(|r| r.json().unwrap())
        .collect()
}

/// The text of the `function_call_output` with `call_id` in a request the upstream received.
pub fn output_of(request: &serde_json::Value, call_id: &str) -> String {
    request["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == call_id)
        .and_then(|i| i["output"].as_str())
        .unwrap()
        .to_string()
}

/// The body of `GET /v1/ctxzip/{hash}` (the whole original) with `Bearer {key}`.
pub async fn get_original(proxy: &Proxy, hash: &str, key: &str) -> String {
    client()
        .get(proxy.v1(&format!("/ctxzip/{hash}")))
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// `GET /v1/ctxzip/stats` as the tenant of `Bearer {key}`.
pub async fn stats_of(proxy: &Proxy, key: &str) -> serde_json::Value {
    client()
        .get(proxy.v1("/ctxzip/stats"))
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The usual start of a test: a fresh mock upstream and a proxy in front of it.
pub async fn mock_and_proxy() -> (MockHandle, Proxy) {
    mock_and_proxy_with(|_| {}).await
}

/// [`mock_and_proxy`] with the proxy's options adjusted first (the upstream is already the mock).
pub async fn mock_and_proxy_with(configure: impl FnOnce(&mut ProxyOptions)) -> (MockHandle, Proxy) {
    let mock = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    configure(&mut opts);
    let proxy = start_proxy_with(opts).await;
    (mock, proxy)
}

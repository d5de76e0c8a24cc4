//! Two ctxgate replicas sharing one store — a real Redis, and again a real three-master Redis Cluster — behave as
//! one: a marker made through A expands through B (the tool loop and the side endpoint), a fold made on A is reused
//! byte for byte on B, concurrent over-budget requests on A and B make one summary call, and another credential
//! gets 404 for a hash on either replica. Each replica is a separate app (its own state, caches and locks), as two
//! `ctxgate serve` processes would be.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
#[path = "fold_proxy/harness.rs"]
#[expect(
    dead_code,
    reason = "the fold tests' harness: these tests use a part of it"
)]
mod fold_harness;

use common::redis::{shared_cluster, shared_redis, unique_prefix};
use common::*;
use ctxgate::mock::{MockConfig, MockHandle};
use serde_json::{Value, json};

/// Two replicas on the same store (`url`, one key prefix), in front of `mock`.
async fn replicas(mock: &MockHandle, url: &str, test: &str, fold: bool) -> (Proxy, Proxy) {
    let prefix = unique_prefix(test);
    let start = || {
        let mut opts = ProxyOptions::new(&mock_url(mock));
        opts.raw.store.url = Some(url.to_string());
        opts.raw.store.key_prefix = Some(prefix.clone());
        // Generous: these tests check what replicas share, on a machine that may be busy, not Redis's speed.
        opts.raw.store.timeout_ms = Some(5_000);
        if fold {
            opts.raw.fold.mode = Some("local".into());
            opts.raw.fold.budget = Some(4000);
            opts.raw.fold.model = Some("mock-summary".into());
        }
        start_proxy_with(opts)
    };
    let a = start().await;
    let b = start().await;
    (a, b)
}

/// A conversation whose tool output is compressed.
fn conversation(model: &str) -> Value {
    json!({
        "model": model,
        "prompt_cache_key": "replica-thread",
        "tools": [{"type":"function","name":"shell","parameters":{"type":"object","properties":{}}}],
        "input": [
            {"role":"user","content":"What failed in the build?"},
            {"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"cargo build -vv\"}"},
            {"type":"function_call_output","call_id":"c1","output": corpus("cargo_build_vv.log")}
        ]
    })
}

async fn status_of(proxy: &Proxy, hash: &str, key: &str) -> u16 {
    client()
        .get(proxy.v1(&format!("/ctxzip/{hash}")))
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn compressed_on_a_expands_on_b(url: String, test: &str) {
    let mock = start_mock().await;
    let (a, b) = replicas(&mock, &url, test, false).await;
    let resp = post_responses(&a, &conversation("mock-ok"), "sk-a").await;
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "1");
    let original = corpus("cargo_build_vv.log");
    let hash = ctxgate::ctxzip::hash_of(&original);
    let sent_by_a = turn_requests(&mock).pop().unwrap();
    assert!(output_of(&sent_by_a, "c1").contains(&format!("<<ctxzip:{hash} ")));
    // The side endpoint on B serves A's original whole.
    assert_eq!(get_original(&b, &hash, "sk-a").await, original);
    // The tool loop on B: the model asks for the marker A made; B answers from the shared store.
    mock.state.clear();
    let mut body = sent_by_a.clone();
    body["model"] = json!("mock-expand");
    body.as_object_mut().unwrap().remove("instructions");
    body["tools"] = conversation("mock-ok")["tools"].clone();
    let resp = post_responses(&b, &body, "sk-a").await;
    assert_eq!(resp.status(), 200);
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 2, "one expansion round on B");
    let round2 = sent[1]["input"].as_array().unwrap();
    let answer = round2
        .iter()
        .rev()
        .find(|i| i["type"] == "function_call_output")
        .unwrap()["output"]
        .as_str()
        .unwrap();
    assert!(
        original.starts_with(answer.split("\n[ctxzip: ").next().unwrap()),
        "B answered with a window of A's original: {answer:.200}"
    );
    // Tenant isolation holds on both replicas.
    for proxy in [&a, &b] {
        assert_eq!(status_of(proxy, &hash, "sk-a").await, 200);
        assert_eq!(status_of(proxy, &hash, "sk-other").await, 404);
        assert_eq!(status_of(proxy, &hash[..8], "sk-other").await, 404);
    }
    // The tenant's savings add up across replicas.
    a.state.settled().await;
    b.state.settled().await;
    let stats = stats_of(&b, "sk-a").await;
    assert_eq!(stats["totals"]["compressions"], 1, "{stats}");
    assert!(
        stats["totals"]["expansions"].as_u64().unwrap() >= 2,
        "{stats}"
    );
    assert_eq!(stats["process_totals"]["compressions"], 0, "{stats}");
    a.stop().await;
    b.stop().await;
}

async fn a_fold_made_on_a_is_reused_byte_for_byte_on_b(url: String, test: &str) {
    let mock = start_mock().await;
    let (a, b) = replicas(&mock, &url, test, true).await;
    let items = fold_harness::transcript(10);
    let (outcome, _) = fold_harness::turn(&a, &items).await;
    assert_eq!(outcome, "applied");
    let on_a = fold_harness::last_turn_input(&mock);
    let (outcome, _) = fold_harness::turn(&b, &items).await;
    assert_eq!(outcome, "reused", "B reuses A's fold");
    let on_b = fold_harness::last_turn_input(&mock);
    assert_eq!(on_a, on_b, "the same bytes upstream from either replica");
    let summaries = fold_harness::calls(&mock, "/v1/responses")
        .into_iter()
        .filter(|b| b["model"] == "mock-summary")
        .count();
    assert_eq!(summaries, 1);
    a.stop().await;
    b.stop().await;
}

async fn concurrent_folds_on_two_replicas_make_one_summary_call(url: String, test: &str) {
    let mock = ctxgate::mock::start(MockConfig {
        latency: std::time::Duration::from_millis(300),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let (a, b) = replicas(&mock, &url, test, true).await;
    let items = fold_harness::transcript(10);
    let (x, y) = tokio::join!(
        fold_harness::turn(&a, &items),
        fold_harness::turn(&b, &items)
    );
    let mut outcomes = [x.0, y.0];
    outcomes.sort();
    assert_eq!(outcomes, ["applied".to_string(), "reused".to_string()]);
    let summaries = fold_harness::calls(&mock, "/v1/responses")
        .into_iter()
        .filter(|b| b["model"] == "mock-summary")
        .count();
    assert_eq!(summaries, 1, "one summary call for two replicas");
    a.stop().await;
    b.stop().await;
}

/// A compressible build log mentioning `token` once.
fn log_with(token: &str, n: usize) -> String {
    let mut log: String = (0..3000)
        .map(|i| format!("   Compiling crate{i}-{n} v0.1.{i}\n"))
        .collect();
    log.push_str(&format!("warning: {token} retried on worker {n}\n"));
    log
}

async fn keep_pattern_counts_add_up_across_replicas(url: String, test: &str) {
    let mock = start_mock().await;
    let (a, b) = replicas(&mock, &url, test, false).await;
    let mut hashes = Vec::new();
    for n in 0..3 {
        let log = log_with("PoolTimeoutError", n);
        hashes.push(ctxgate::ctxzip::hash_of(&log));
        let body = json!({"model":"mock-ok","input":[
            {"role":"user","content":"why is it slow"},
            {"type":"function_call","call_id":"c","name":"exec_command","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output": log}]});
        let resp = post_responses(&a, &body, "sk-p").await;
        assert_eq!(resp.headers()["x-ctxgate-compressed"], "1");
    }
    // Each original expanded on both replicas at once: every pattern counts each original once, and no
    // increment is lost to the other replica's.
    for hash in &hashes {
        let expand = |proxy: &Proxy| {
            client()
                .post(proxy.v1("/ctxzip/expand"))
                .header("authorization", "Bearer sk-p")
                .body(json!({"hash": hash, "query": "retried"}).to_string())
                .send()
        };
        let (x, y) = tokio::join!(expand(&a), expand(&b));
        assert_eq!(x.unwrap().status(), 200);
        assert_eq!(y.unwrap().status(), 200);
    }
    a.state.settled().await;
    b.state.settled().await;
    for proxy in [&a, &b] {
        let stats = stats_of(proxy, "sk-p").await;
        let found = stats["suggestions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| {
                s["pattern"]
                    .as_str()
                    .unwrap()
                    .eq_ignore_ascii_case("PoolTimeoutError")
            })
            .cloned();
        assert_eq!(found.unwrap_or_default()["expansions"], 3, "{stats}");
        assert_eq!(stats["totals"]["expansions"], 6, "{stats}");
    }
    a.stop().await;
    b.stop().await;
}

macro_rules! on_backend {
    ($backend:ident, $url:expr, $($test:ident),+ $(,)?) => {
        mod $backend {
            use super::*;
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test($url, stringify!($test)).await;
                }
            )+
        }
    };
}

on_backend!(
    redis,
    shared_redis().url(),
    compressed_on_a_expands_on_b,
    a_fold_made_on_a_is_reused_byte_for_byte_on_b,
    concurrent_folds_on_two_replicas_make_one_summary_call,
    keep_pattern_counts_add_up_across_replicas,
);
on_backend!(
    cluster,
    shared_cluster().url(),
    compressed_on_a_expands_on_b,
    a_fold_made_on_a_is_reused_byte_for_byte_on_b,
    concurrent_folds_on_two_replicas_make_one_summary_call,
    keep_pattern_counts_add_up_across_replicas,
);

//! A shared store that goes down mid-run loses no request: with a real `redis-server` — and again a whole
//! three-master Redis Cluster — killed (SIGKILL) under a running ctxgate, requests still pass — uncompressed, and no
//! marker whose original was not stored — `/readyz` says not ready, the state change is counted once, and service
//! resumes by itself once the store is back. The same scenarios run on both; only the store differs.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::time::{Duration, Instant};

use common::redis::{Outage, RedisCluster, RedisServer, unique_prefix};
use common::*;
use serde_json::{Value, json};

fn conversation(call: &str, output: &str) -> Value {
    json!({
        "model": "mock-ok",
        "prompt_cache_key": format!("thread-{call}"),
        "input": [
            {"role":"user","content":"What failed in the build?"},
            {"type":"function_call","call_id":call,"name":"shell","arguments":"{}"},
            {"type":"function_call_output","call_id":call,"output": output}
        ]
    })
}

async fn ready(proxy: &Proxy) -> u16 {
    client()
        .get(format!("{}/readyz", proxy.url))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn redis_killed_mid_run_fails_open_and_recovers_by_itself() {
    killed_mid_run_fails_open_and_recovers_by_itself(RedisServer::start()).await;
}

#[tokio::test]
async fn cluster_killed_mid_run_fails_open_and_recovers_by_itself() {
    killed_mid_run_fails_open_and_recovers_by_itself(RedisCluster::start()).await;
}

#[tokio::test]
async fn ctxgate_starts_while_redis_is_down_and_becomes_ready_when_it_comes() {
    starts_while_the_store_is_down_and_becomes_ready_when_it_comes(RedisServer::start()).await;
}

#[tokio::test]
async fn ctxgate_starts_while_the_cluster_is_down_and_becomes_ready_when_it_comes() {
    starts_while_the_store_is_down_and_becomes_ready_when_it_comes(RedisCluster::start()).await;
}

/// Options of a ctxgate on `store`, with a short call bound so "down" is noticed fast.
fn on_store(store: &impl Outage, test: &str) -> impl FnOnce(&mut ProxyOptions) {
    let (url, prefix) = (store.url(), unique_prefix(test));
    move |o| {
        o.raw.store.url = Some(url);
        o.raw.store.key_prefix = Some(prefix);
        o.raw.store.timeout_ms = Some(300);
    }
}

async fn killed_mid_run_fails_open_and_recovers_by_itself(mut redis: impl Outage) {
    let (mock, proxy) = mock_and_proxy_with(on_store(&redis, "down")).await;
    let log = corpus("cargo_build_vv.log");
    let resp = post_responses(&proxy, &conversation("c1", &log), "sk-a").await;
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "1");
    assert_eq!(ready(&proxy).await, 200);

    redis.kill();
    for n in 0..5 {
        // A new output each time (the earlier one's decision is in memory): each would be compressed if it could.
        let output = format!("run {n}\n{log}");
        mock.state.clear();
        let resp = post_responses(&proxy, &conversation(&format!("d{n}"), &output), "sk-a").await;
        assert_eq!(resp.status(), 200, "the request passes while Redis is down");
        assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
        let sent = turn_requests(&mock).pop().unwrap();
        assert_eq!(
            output_of(&sent, &format!("d{n}")),
            output,
            "sent uncompressed: no marker without its original"
        );
    }
    assert_eq!(ready(&proxy).await, 503);
    let metrics = proxy.metrics().await;
    assert!(metrics.contains("ctxgate_store_up 0"), "{metrics}");
    assert!(
        metrics.contains("ctxgate_store_state_changes_total{to=\"down\"} 1"),
        "one state change, not one per request: {metrics}"
    );

    redis.restart();
    let back = Instant::now();
    while ready(&proxy).await != 200 {
        assert!(
            back.elapsed() < Duration::from_secs(15),
            "service did not resume after Redis came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let output = format!("after\n{log}");
    let resp = post_responses(&proxy, &conversation("e1", &output), "sk-a").await;
    assert_eq!(
        resp.headers()["x-ctxgate-compressed"],
        "1",
        "compression resumes"
    );
    let hash = ctxgate::ctxzip::hash_of(&output);
    assert_eq!(get_original(&proxy, &hash, "sk-a").await, output);
    let metrics = proxy.metrics().await;
    assert!(metrics.contains("ctxgate_store_up 1"), "{metrics}");
    assert!(
        metrics.contains("ctxgate_store_state_changes_total{to=\"up\"} 1"),
        "{metrics}"
    );
    proxy.stop().await;
}

async fn starts_while_the_store_is_down_and_becomes_ready_when_it_comes(mut redis: impl Outage) {
    redis.kill();
    let (mock, proxy) = mock_and_proxy_with(on_store(&redis, "late")).await;
    assert_eq!(ready(&proxy).await, 503);
    let log = corpus("cargo_build_vv.log");
    let resp = post_responses(&proxy, &conversation("c1", &log), "sk-a").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(output_of(&turn_requests(&mock).pop().unwrap(), "c1"), log);
    redis.restart();
    let back = Instant::now();
    while ready(&proxy).await != 200 {
        assert!(
            back.elapsed() < Duration::from_secs(15),
            "never became ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    proxy.stop().await;
}

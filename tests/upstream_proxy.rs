//! An HTTP proxy named by the environment (`HTTP_PROXY`, `NO_PROXY`, …) is honoured on the way upstream: a user
//! behind a corporate proxy reaches the provider through it, and a host the environment exempts is reached
//! directly. The real binary runs with the variables set, in front of the in-process mock.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::serve::{Log, spawn_serve};
use common::*;

async fn serve_with(
    upstream: String,
    env: Vec<(&'static str, String)>,
) -> (common::serve::Served, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ctxgate.redb");
    let args = ["--upstream", &upstream, "--store", store.to_str().unwrap()].map(String::from);
    let served = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        spawn_serve(&args, &env, Log::Kept)
    })
    .await
    .unwrap();
    (served, dir)
}

/// Sends one turn through the served proxy and checks the upstream's answer came back.
async fn a_turn_is_answered(served: &common::serve::Served) {
    let resp = client()
        .post(format!("http://{}/v1/responses", served.addr))
        .header("content-type", "application/json")
        .body(responses_body("mock-ok", false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

#[tokio::test]
async fn the_upstream_is_reached_through_the_proxy_the_environment_names() {
    let mock = start_mock().await;
    // The upstream's name does not resolve: only the proxy (the mock, which answers absolute-form requests) can
    // take the request.
    let proxy = format!("http://{}", mock.addr);
    let (served, _dir) = serve_with(
        "http://upstream.invalid/v1".into(),
        vec![("HTTP_PROXY", proxy), ("NO_PROXY", String::new())],
    )
    .await;
    assert!(
        served.listening.contains("through the HTTP proxy"),
        "{}",
        served.listening
    );
    a_turn_is_answered(&served).await;
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 1, "the proxy got the turn");
    assert_eq!(sent[0]["model"], "mock-ok");
}

#[tokio::test]
async fn a_host_the_environment_exempts_is_reached_directly() {
    let mock = start_mock().await;
    // Nothing listens on port 9 of loopback: a request that went to this proxy would fail.
    let (served, _dir) = serve_with(
        mock_url(&mock),
        vec![
            ("HTTP_PROXY", "http://127.0.0.1:9".to_string()),
            ("NO_PROXY", "127.0.0.1".to_string()),
        ],
    )
    .await;
    assert!(
        !served.listening.contains("through the HTTP proxy"),
        "{}",
        served.listening
    );
    a_turn_is_answered(&served).await;
    assert_eq!(turn_requests(&mock).len(), 1);
}

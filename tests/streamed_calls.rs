//! A streamed turn offered `context_expand` is not held back: when no expand call can follow a client function call
//! in its round (`parallel_tool_calls: false` makes it the round's only call), the call's events reach the client
//! while the upstream is still writing the round, not with its end.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
#[path = "expand_proxy/harness.rs"]
mod harness;

use std::time::Duration;

use common::*;
use harness::*;

#[tokio::test]
async fn a_client_call_that_no_expand_call_can_follow_is_streamed_before_the_round_ends() {
    // Events spaced by the mock, so the round's end is written well after the call's events.
    let mock = ctxgate::mock::start(ctxgate::mock::MockConfig {
        chunk_delay: Duration::from_millis(40),
        ..Default::default()
    })
    .await
    .unwrap();
    let proxy = start_proxy(&mock_url(&mock)).await;
    let mut body = conversation("mock-call", true);
    body["parallel_tool_calls"] = false.into();
    let mut resp = post(&proxy, &body, "sk-a").await;
    assert_eq!(resp.status(), 200);
    let mut early = String::new();
    while !early.contains("response.function_call_arguments.done") {
        let chunk = resp.chunk().await.unwrap().expect("stream ended early");
        early.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        !early.contains("response.completed"),
        "the call came with the round's end: {early}"
    );
    assert!(early.contains(r#""name":"shell""#), "{early}");
    let mut rest = String::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        rest.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(rest.contains("response.completed"), "{rest}");
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 1, "one round: the client answers its own call");
    assert!(
        sent[0]["tools"].to_string().contains("context_expand"),
        "the tool was offered"
    );
    proxy.stop().await;
}

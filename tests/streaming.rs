//! Bodies are streamed, not buffered: SSE event by event, big downloads and uploads in chunks, and a client that
//! hangs up cancels the upstream request.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::time::Duration;

use common::*;
use futures_util::StreamExt;

#[tokio::test]
async fn sse_bytes_are_identical_to_a_direct_stream() {
    let (mock, proxy) = mock_and_proxy().await;
    for model in ["mock-ok", "mock-call", "mock-split", "mock-incomplete"] {
        let body = responses_body(model, true);
        let direct = client()
            .post(format!("{}/responses", mock_url(&mock)))
            .body(body.clone())
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let proxied = client()
            .post(proxy.v1("/responses"))
            .header("accept", "text/event-stream")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(proxied.status(), 200);
        assert!(
            proxied.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let proxied = proxied.bytes().await.unwrap();
        assert_eq!(proxied, direct, "{model}");
        let events = sse_events(std::str::from_utf8(&proxied).unwrap());
        assert!(events.len() >= 4, "{model}: {events:?}");
        let seqs: Vec<i64> = events
            .iter()
            .map(|(_, v)| v["sequence_number"].as_i64().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{model}");
    }
    proxy.stop().await;
}

#[tokio::test]
async fn events_are_relayed_as_they_arrive() {
    let (mock, proxy) = mock_and_proxy().await;
    // mock-slow spaces its deltas; the first event must reach the client long before the stream ends.
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(responses_body("mock-slow", true))
        .send()
        .await
        .unwrap();
    let mut stream = resp.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(2), stream.next())
        .await
        .expect("first chunk did not arrive while the stream is still running")
        .unwrap()
        .unwrap();
    assert!(
        std::str::from_utf8(&first)
            .unwrap()
            .contains("response.created")
    );
    assert_eq!(
        mock.state.completed_streams(),
        0,
        "the upstream stream is still running"
    );
    drop(stream);
    proxy.stop().await;
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_the_upstream_stream() {
    let (mock, proxy) = mock_and_proxy().await;
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(responses_body("mock-slow", true))
        .send()
        .await
        .unwrap();
    let mut stream = resp.bytes_stream();
    let _ = stream.next().await.unwrap().unwrap();
    drop(stream);
    let mut cancelled = 0;
    for _ in 0..100 {
        cancelled = mock.state.cancelled_streams();
        if cancelled > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cancelled, 1, "the upstream saw the cancellation");
    assert_eq!(mock.state.completed_streams(), 0);
    proxy.stop().await;
}

#[tokio::test]
async fn a_truncated_upstream_stream_reaches_the_client_truncated() {
    let (_mock, proxy) = mock_and_proxy().await;
    let body = responses_body("mock-truncate", true);
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(body)
        .send()
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(c) => got.extend_from_slice(&c),
            Err(_) => break,
        }
    }
    let text = String::from_utf8(got).unwrap();
    let events = sse_events(&text);
    assert!(!events.is_empty());
    assert!(
        events.iter().all(|(e, _)| !matches!(
            e.as_str(),
            "response.completed" | "response.incomplete" | "response.failed"
        )),
        "no invented terminal event: {text}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_silent_upstream_stream_is_cut_by_the_idle_timeout() {
    let (_mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.upstream.stream_idle_timeout_ms = Some(300);
    })
    .await;
    let resp = client()
        .get(proxy.v1("/mock/stall?after=100"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let outcome = tokio::time::timeout(Duration::from_secs(5), resp.bytes()).await;
    match outcome {
        Ok(Err(_)) => {}
        Ok(Ok(b)) => panic!(
            "expected a cut stream, got {} bytes and a clean end",
            b.len()
        ),
        Err(_) => panic!("the idle timeout did not cut the stream"),
    }
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_upload_streams_through_intact() {
    let (_mock, proxy) = mock_and_proxy().await;
    let payload: Vec<u8> = (0..20 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let expected = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(&payload);
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    // Once with a length, once chunked.
    let with_length = client()
        .post(proxy.v1("/mock/digest"))
        .body(payload.clone())
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = with_length.json().await.unwrap();
    assert_eq!(v["bytes"], payload.len());
    assert_eq!(v["sha256"], expected);
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        payload.chunks(1 << 20).map(|c| Ok(c.to_vec())).collect();
    let chunked = client()
        .post(proxy.v1("/mock/digest"))
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = chunked.json().await.unwrap();
    assert_eq!(v["bytes"], payload.len());
    assert_eq!(v["sha256"], expected);
    proxy.stop().await;
}

//! ctxgate-mock's byte-level helpers under `/v1/mock/` and its recording, as the
//! proxy's passthrough and timeout tests will use them.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use ctxgate::mock::{self, BYTES_PATTERN, MockConfig, MockHandle};
use futures_util::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

async fn start() -> MockHandle {
    mock::start(MockConfig::default()).await.unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn wait_for(what: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !what() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn digest_of_a_streamed_5mb_upload() {
    let h = start().await;
    let data: Vec<u8> = (0..5 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(31) >> 3) as u8)
        .collect();
    let expected = hex(&Sha256::digest(&data));
    let chunks: Vec<Result<Bytes, std::io::Error>> = data
        .chunks(100_000)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let res = reqwest::Client::new()
        .post(format!("{}/v1/mock/digest", h.url()))
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body, json!({"bytes": data.len(), "sha256": expected}));
    let rec = &h.state.received()[0];
    assert_eq!(rec.body_len, data.len() as u64);
    assert_eq!(rec.body.len(), data.len());
}

#[tokio::test]
async fn bytes_sends_exactly_n_pattern_bytes() {
    let h = start().await;
    let n = 1_000_003usize;
    let res = reqwest::get(format!("{}/v1/mock/bytes?n={n}", h.url()))
        .await
        .unwrap();
    assert_eq!(res.content_length(), Some(n as u64));
    let body = res.bytes().await.unwrap();
    assert_eq!(body.len(), n);
    assert!(
        body.iter()
            .enumerate()
            .all(|(i, b)| *b == BYTES_PATTERN[i % 64])
    );

    let res = reqwest::get(format!("{}/v1/mock/bytes?n=70000&chunked=true", h.url()))
        .await
        .unwrap();
    assert_eq!(res.headers().get("transfer-encoding").unwrap(), "chunked");
    assert_eq!(res.bytes().await.unwrap().len(), 70_000);
    assert_eq!(
        reqwest::get(format!("{}/v1/mock/bytes?n=0", h.url()))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .len(),
        0
    );
    wait_for(|| h.state.completed_streams() == 3).await;
    assert_eq!(
        (h.state.completed_streams(), h.state.cancelled_streams()),
        (3, 0)
    );
}

#[tokio::test]
async fn echo_streams_the_body_back_with_its_content_type() {
    let h = start().await;
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    let res = reqwest::Client::new()
        .post(format!("{}/v1/mock/echo", h.url()))
        .header("content-type", "application/x-test")
        .body(data.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-type"], "application/x-test");
    assert_eq!(res.bytes().await.unwrap().to_vec(), data);
}

#[tokio::test]
async fn headers_status_and_sleep_helpers() {
    let h = start().await;
    let client = reqwest::Client::new();
    let body: Value = client
        .get(format!("{}/v1/mock/headers", h.url()))
        .header("x-test", "abc")
        .header("authorization", "Bearer sk-test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["x-test"], "abc");
    assert_eq!(body["authorization"], "Bearer sk-test");

    let res = client
        .get(format!("{}/v1/mock/status/418", h.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 418);
    assert_eq!(res.headers()["x-mock"], "1");
    assert_eq!(res.json::<Value>().await.unwrap()["status"], 418);
    let res = client
        .get(format!("{}/v1/mock/status/204", h.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    assert!(res.bytes().await.unwrap().is_empty());

    let started = Instant::now();
    let res = client
        .get(format!("{}/v1/mock/sleep?ms=150", h.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.json::<Value>().await.unwrap()["slept_ms"], 150);
    assert!(started.elapsed() >= Duration::from_millis(150));
    let err = client
        .get(format!("{}/v1/mock/sleep?ms=2000", h.url()))
        .timeout(Duration::from_millis(50))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
}

#[tokio::test]
async fn stall_holds_the_stream_open_until_the_client_leaves() {
    let h = start().await;
    let res = reqwest::get(format!("{}/v1/mock/stall?after=10", h.url()))
        .await
        .unwrap();
    let mut stream = res.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(&first[..], &BYTES_PATTERN[..10]);
    let next = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(next.is_err(), "nothing after the first N bytes");
    drop(stream);
    wait_for(|| h.state.cancelled_streams() == 1).await;
    assert_eq!(h.state.cancelled_streams(), 1);
}

#[tokio::test]
async fn every_request_is_recorded_and_inspectable_over_http() {
    let h = start().await;
    let client = reqwest::Client::new();
    let req = json!({"model": "mock-ok", "input": "record me"});
    client
        .post(format!("{}/v1/responses?trace=1", h.url()))
        .header("authorization", "Bearer sk-abc")
        .json(&req)
        .send()
        .await
        .unwrap();
    client
        .post(format!("{}/v1/mock/echo", h.url()))
        .body(vec![0xff, 0xfe, 0x00])
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let res = client
        .get(format!("{}/v1/unknown", h.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);

    let got = h.state.received();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].path, "/v1/responses");
    assert_eq!(got[0].query.as_deref(), Some("trace=1"));
    assert_eq!(got[0].header("Authorization"), Some("Bearer sk-abc"));
    assert_eq!(got[0].json(), Some(req));
    assert_eq!(got[2].path, "/v1/unknown");

    let listed: Value = client
        .get(format!("{}/__mock/requests", h.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 3, "control endpoints are not recorded");
    assert_eq!(
        listed[0]["body"],
        r#"{"model":"mock-ok","input":"record me"}"#
    );
    assert_eq!(listed[1]["body"], Value::Null);
    assert_eq!(listed[1]["body_base64"], "//4A");
    assert_eq!(listed[1]["body_len"], 3);

    let stats: Value = client
        .get(format!("{}/__mock/stats", h.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["requests"], 3);
    assert_eq!(stats["completed_streams"], 1);
    assert_eq!(stats["cancelled_streams"], 0);

    let res = client
        .delete(format!("{}/__mock/requests", h.url()))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    assert!(h.state.received().is_empty());
    h.state.clear();
}

/// A load benchmark's mock keeps only its last requests: memory stays flat, and what a benchmark reads right after a
/// request (the seed turn's marker) is still there.
#[tokio::test]
async fn the_recording_can_keep_only_the_last_requests() {
    let m = mock::start(MockConfig {
        record_last: Some(2),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    echo_five(&m).await;
    let bodies: Vec<Bytes> = m.state.received().into_iter().map(|r| r.body).collect();
    assert_eq!(
        bodies,
        vec![Bytes::from("request 3"), Bytes::from("request 4")],
        "the last two, oldest first"
    );
    // The default keeps every request.
    let all = start().await;
    echo_five(&all).await;
    assert_eq!(all.state.received().len(), 5);
}

/// Five echo requests, `request 0` … `request 4`, each answered with its own body.
async fn echo_five(m: &MockHandle) {
    let client = reqwest::Client::new();
    for n in 0..5 {
        let answer = client
            .post(format!("{}/v1/mock/echo", m.url()))
            .body(format!("request {n}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.bytes().await.unwrap(), format!("request {n}"));
    }
}

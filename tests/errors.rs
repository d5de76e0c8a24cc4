//! ctxgate's own errors: the right status, in the OpenAI error shape, and never an upstream call it should not make.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;

async fn error_of(resp: reqwest::Response) -> (u16, serde_json::Value) {
    let status = resp.status().as_u16();
    let v: serde_json::Value = resp.json().await.unwrap();
    assert!(v["error"]["message"].is_string(), "{v}");
    assert!(v["error"]["type"].is_string(), "{v}");
    assert!(v["error"]["code"].is_string(), "{v}");
    (status, v)
}

#[tokio::test]
async fn over_max_body_bytes_is_413_on_every_route() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.server.max_body_bytes = Some(1000);
    })
    .await;
    let big = "x".repeat(5000);
    let body = format!("{{\"model\":\"mock-ok\",\"input\":\"{big}\"}}");
    let (status, v) = error_of(
        client()
            .post(proxy.v1("/responses"))
            .body(body.clone())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 413);
    assert_eq!(v["error"]["code"], "request_too_large");
    let (status, _) = error_of(
        client()
            .post(proxy.v1("/mock/digest"))
            .body(body.clone())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 413);
    // Chunked (no Content-Length): refused when the limit is crossed.
    let chunks = || -> Vec<Result<Vec<u8>, std::io::Error>> {
        body.as_bytes()
            .chunks(700)
            .map(|c| Ok(c.to_vec()))
            .collect()
    };
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks(),
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(resp).await.0, 413);
    let resp = client()
        .post(proxy.v1("/mock/digest"))
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks(),
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    assert!(
        mock.state
            .received()
            .iter()
            .all(|r| r.path != "/v1/responses"),
        "an over-limit turn never reaches the upstream"
    );
    proxy.stop().await;
}

/// Sends one turn and checks ctxgate answered 502 `upstream_unreachable`.
async fn turn_is_502_unreachable(proxy: &Proxy) {
    let (status, v) = error_of(
        client()
            .post(proxy.v1("/responses"))
            .body(responses_body("mock-ok", false))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 502);
    assert_eq!(v["error"]["code"], "upstream_unreachable");
}

#[tokio::test]
async fn unreachable_upstream_is_502() {
    // A port that was just free: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let proxy = start_proxy(&format!("http://127.0.0.1:{port}/v1")).await;
    turn_is_502_unreachable(&proxy).await;
    let (status, _) = error_of(client().get(proxy.v1("/models")).send().await.unwrap()).await;
    assert_eq!(status, 502);
    let metrics = proxy.metrics().await;
    assert!(
        metrics.contains("ctxgate_upstream_errors_total{kind=\"connect\"}"),
        "{metrics}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn an_https_upstream_that_does_not_speak_tls_is_502() {
    // The mock speaks plain HTTP: the TLS handshake of an `https` upstream URL fails, and the client gets a clear
    // 502, counted as a connect error.
    let mock = start_mock().await;
    let proxy = start_proxy(&format!("https://{}/v1", mock.addr)).await;
    turn_is_502_unreachable(&proxy).await;
    assert!(
        turn_requests(&mock).is_empty(),
        "nothing reached the upstream in clear"
    );
    let metrics = proxy.metrics().await;
    assert!(
        metrics.contains("ctxgate_upstream_errors_total{kind=\"connect\"}"),
        "{metrics}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn slow_upstream_is_504_after_the_read_timeout() {
    let (_mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.upstream.read_timeout_ms = Some(200);
    })
    .await;
    let started = std::time::Instant::now();
    let (status, v) = error_of(
        client()
            .get(proxy.v1("/mock/sleep?ms=3000"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 504);
    assert_eq!(v["error"]["code"], "upstream_timeout");
    assert!(started.elapsed() < std::time::Duration::from_millis(2500));
    proxy.stop().await;
}

#[tokio::test]
async fn a_stream_is_not_cut_for_its_total_length() {
    // read timeout shorter than the whole stream, idle timeout longer than any gap: the stream completes.
    let (_mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.upstream.read_timeout_ms = Some(1000);
        opts.raw.upstream.stream_idle_timeout_ms = Some(1000);
    })
    .await;
    let text = client()
        .post(proxy.v1("/responses"))
        .body(responses_body("mock-slow", true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("response.completed"));
    proxy.stop().await;
}

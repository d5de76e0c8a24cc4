//! What ctxgate does not rewrite reaches the other side byte for byte: bodies, statuses, headers.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;

#[tokio::test]
async fn unmodified_responses_body_reaches_upstream_byte_for_byte() {
    let (mock, proxy) = mock_and_proxy().await;
    let body = responses_body("mock-ok", false);
    let resp = client()
        .post(proxy.v1("/responses"))
        .header("authorization", "Bearer sk-test")
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let json: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(json["object"], "response");
    let received = mock.state.received();
    assert_eq!(received.len(), 1, "exactly one upstream call");
    assert_eq!(received[0].path, "/v1/responses");
    assert_eq!(received[0].body.as_ref(), body.as_bytes());
    proxy.stop().await;
}

#[tokio::test]
async fn json_answer_is_identical_to_a_direct_call() {
    let (mock, proxy) = mock_and_proxy().await;
    let body = responses_body("mock-call", false);
    let direct = client()
        .post(format!("{}/responses", mock_url(&mock)))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let direct_status = direct.status();
    let direct_bytes = direct.bytes().await.unwrap();
    let proxied = client()
        .post(proxy.v1("/responses"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status(), direct_status);
    assert_eq!(proxied.bytes().await.unwrap(), direct_bytes);
    proxy.stop().await;
}

#[tokio::test]
async fn other_routes_and_methods_pass_through() {
    let (mock, proxy) = mock_and_proxy().await;
    let models = client().get(proxy.v1("/models")).send().await.unwrap();
    assert_eq!(models.status(), 200);
    let list: serde_json::Value = models.json().await.unwrap();
    assert_eq!(list["object"], "list");

    let status = client()
        .get(proxy.v1("/mock/status/418?x=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(status.status(), 418);
    assert_eq!(status.headers().get("x-mock").unwrap(), "1");

    let echoed = client()
        .put(proxy.v1("/mock/echo"))
        .header("content-type", "application/octet-stream")
        .body(vec![0u8, 1, 2, 255])
        .send()
        .await
        .unwrap();
    // PUT is not an echo route on the mock: whatever it answers must arrive as it answered.
    let direct = client()
        .put(format!("{}/mock/echo", mock_url(&mock)))
        .header("content-type", "application/octet-stream")
        .body(vec![0u8, 1, 2, 255])
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.status(), direct.status());

    let methods = mock
        .state
        .received()
        .iter()
        .map(|r| (r.method.clone(), r.path.clone(), r.query.clone()))
        .collect::<Vec<_>>();
    assert!(
        methods.contains(&(
            "GET".into(),
            "/v1/mock/status/418".into(),
            Some("x=1".into())
        )) || methods.iter().any(|(m, p, q)| m == "GET"
            && p == "/v1/mock/status/418"
            && q.as_deref().unwrap_or("").contains("x=1")),
        "{methods:?}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn headers_cross_both_ways_except_hop_by_hop() {
    let (mock, proxy) = mock_and_proxy().await;
    let resp = client()
        .get(proxy.v1("/mock/headers"))
        .header("authorization", "Bearer sk-client")
        .header("openai-beta", "responses=v1")
        .header("x-custom", "kept")
        .header("connection", "keep-alive, x-drop-me")
        .header("x-drop-me", "1")
        .header("proxy-authorization", "Basic c2VjcmV0")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let rec = mock.state.received();
    let headers: std::collections::HashMap<String, String> =
        rec[0].headers.iter().cloned().collect();
    assert_eq!(
        headers.get("authorization").map(String::as_str),
        Some("Bearer sk-client")
    );
    assert_eq!(
        headers.get("openai-beta").map(String::as_str),
        Some("responses=v1")
    );
    assert_eq!(headers.get("x-custom").map(String::as_str), Some("kept"));
    assert!(!headers.contains_key("x-drop-me"));
    assert!(!headers.contains_key("proxy-authorization"));
    // Host names the upstream, not the proxy.
    assert_eq!(
        headers.get("host").map(String::as_str),
        Some(mock.addr.to_string().as_str())
    );
    proxy.stop().await;
}

#[tokio::test]
async fn body_that_is_not_json_goes_upstream_unchanged() {
    let (mock, proxy) = mock_and_proxy().await;
    for body in [
        "not json at all",
        "[1,2,3]",
        "{\"input\": 42}",
        "{\"input\":[1,",
    ] {
        mock.state.clear();
        let resp = client()
            .post(proxy.v1("/responses"))
            .body(body)
            .send()
            .await
            .unwrap();
        // Whatever the mock thinks of it, ctxgate did not judge it.
        let _ = resp.bytes().await.unwrap();
        let rec = mock.state.received();
        assert_eq!(rec.len(), 1);
        assert_eq!(rec[0].body.as_ref(), body.as_bytes());
    }
    proxy.stop().await;
}

#[tokio::test]
async fn upstream_errors_are_returned_verbatim() {
    let (mock, proxy) = mock_and_proxy().await;
    let body = responses_body("mock-error-429", false);
    let direct = client()
        .post(format!("{}/responses", mock_url(&mock)))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let direct_status = direct.status();
    let direct_body = direct.bytes().await.unwrap();
    let proxied = client()
        .post(proxy.v1("/responses"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status(), 429);
    assert_eq!(direct_status, 429);
    assert_eq!(proxied.bytes().await.unwrap(), direct_body);
    proxy.stop().await;
}

#[tokio::test]
async fn routes_outside_v1_are_an_openai_shaped_404() {
    let (mock, proxy) = mock_and_proxy().await;
    let resp = client()
        .get(format!("{}/nope", proxy.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let v: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "not_found");
    assert!(v["error"]["message"].is_string());
    assert!(v["error"]["type"].is_string());
    assert!(mock.state.received().is_empty());
    proxy.stop().await;
}

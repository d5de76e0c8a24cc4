//! Who may call, and which key goes upstream: forwarded client keys, or the proxy-held key.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;

fn header_of(rec: &ctxgate::mock::Recorded, name: &str) -> Option<String> {
    rec.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

#[tokio::test]
async fn proxy_held_key_replaces_the_client_key() {
    let mock = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.upstream.api_key_env = Some("UPSTREAM_KEY_FOR_TEST".into());
    opts.raw.auth.keys = Some(vec!["team-a".into(), "team-b".into()]);
    opts.env
        .insert("UPSTREAM_KEY_FOR_TEST".into(), "sk-upstream-secret".into());
    let proxy = start_proxy_with(opts).await;

    for auth in [
        None,
        Some("Bearer wrong"),
        Some("team-a"),
        Some("Basic dGVhbS1h"),
    ] {
        let mut req = client()
            .post(proxy.v1("/responses"))
            .body(responses_body("mock-ok", false));
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "{auth:?}");
        let v: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], "invalid_api_key");
        assert_eq!(v["error"]["type"], "invalid_request_error");
    }
    let resp = client()
        .get(proxy.v1("/models"))
        .header("authorization", "Bearer nope")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401, "passthrough routes are guarded too");
    assert!(
        mock.state.received().is_empty(),
        "refused calls never reach the upstream"
    );

    let ok = client()
        .post(proxy.v1("/responses"))
        .header("authorization", "Bearer team-b")
        .body(responses_body("mock-ok", false))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let rec = mock.state.received();
    assert_eq!(rec.len(), 1);
    assert_eq!(
        header_of(&rec[0], "authorization").as_deref(),
        Some("Bearer sk-upstream-secret")
    );

    // Open routes need no credential.
    let health = client()
        .get(format!("{}/healthz", proxy.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // Refusals are answers: counted once each under their route and status, like the one that went through;
    // the open routes are not proxied traffic and are not counted.
    let text = proxy.metrics().await;
    for line in [
        "ctxgate_requests_total{route=\"responses\",method=\"POST\",status=\"401\"} 4",
        "ctxgate_requests_total{route=\"models\",method=\"GET\",status=\"401\"} 1",
        "ctxgate_requests_total{route=\"responses\",method=\"POST\",status=\"200\"} 1",
        "ctxgate_overhead_seconds_count{route=\"responses\"} 5",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    assert!(!text.contains("route=\"unknown\""), "{text}");
    proxy.stop().await;
}

#[tokio::test]
async fn missing_upstream_key_variable_is_a_startup_error() {
    let mut raw = ctxgate::config::raw::RawConfig::default();
    raw.upstream.api_key_env = Some("CTXGATE_TEST_UNSET_VAR".into());
    raw.auth.keys = Some(vec!["k".into()]);
    let dir = tempfile::tempdir().unwrap();
    raw.store.path = Some(dir.path().join("s.redb").display().to_string());
    let config = ctxgate::config::Config::resolve(raw).unwrap();
    let env = std::collections::HashMap::<String, String>::new();
    let err = ctxgate::App::build(config, &env).err().expect("must fail");
    assert!(err.to_string().contains("CTXGATE_TEST_UNSET_VAR"), "{err}");
}

#[tokio::test]
async fn forwarded_credential_derives_distinct_tenants_and_never_logs_the_key() {
    let (mock, proxy) = mock_and_proxy().await;
    let a = proxy.state.credentials.authenticate(&{
        let mut h = axum::http::HeaderMap::new();
        h.insert("authorization", "Bearer sk-aaa".parse().unwrap());
        h
    });
    let b = proxy.state.credentials.authenticate(&{
        let mut h = axum::http::HeaderMap::new();
        h.insert("authorization", "Bearer sk-bbb".parse().unwrap());
        h
    });
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.tenant, b.tenant);
    assert!(!a.tenant.as_str().contains("aaa"));
    let resp = client()
        .post(proxy.v1("/responses"))
        .header("authorization", "Bearer sk-aaa")
        .body(responses_body("mock-ok", false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        header_of(&mock.state.received()[0], "authorization").as_deref(),
        Some("Bearer sk-aaa")
    );
    proxy.stop().await;
}

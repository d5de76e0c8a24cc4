//! The operator's view across tenants, `GET /admin/stats`, on a real loopback server over the redb file and over a
//! real Redis: an admin key sees every tenant's savings counters and their sum; a client's key gets 403 and learns
//! nothing of other tenants; no credential gets 401; with no admin key configured the route is off (404).
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::redis::{shared_redis, unique_prefix};
use common::*;
use ctxgate::proxy::auth::Tenant;
use serde_json::{Value, json};

const ADMIN: &str = "ops-admin-key";

fn conversation(call: &str, output: &str) -> Value {
    json!({
        "model": "mock-ok",
        "prompt_cache_key": format!("admin-{call}"),
        "input": [
            {"role":"user","content":"What failed in the build?"},
            {"type":"function_call","call_id":call,"name":"shell","arguments":"{}"},
            {"type":"function_call_output","call_id":call,"output": output}
        ]
    })
}

/// `GET /admin/stats` with `Authorization: Bearer {key}` (none when `key` is `None`): status and JSON body.
async fn admin_stats(proxy: &Proxy, key: Option<&str>) -> (u16, Value) {
    let mut req = client().get(format!("{}/admin/stats", proxy.url));
    if let Some(key) = key {
        req = req.header("authorization", format!("Bearer {key}"));
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn tenant_of(key: &str) -> String {
    Tenant::from_credential(format!("Bearer {key}").as_bytes())
        .as_str()
        .to_string()
}

/// Tenant A compresses one output, tenant B two; the admin view lists both with their own counts.
async fn admin_sees_every_tenant_and_clients_see_none(configure: impl FnOnce(&mut ProxyOptions)) {
    let (_mock, proxy) = mock_and_proxy_with(|o| {
        o.raw.auth.admin_keys = Some(vec![ADMIN.into()]);
        configure(o);
    })
    .await;
    let log = corpus("cargo_build_vv.log");
    for (key, call) in [("sk-a", "a1"), ("sk-b", "b1"), ("sk-b", "b2")] {
        let output = format!("run {call}\n{log}");
        let resp = post_responses(&proxy, &conversation(call, &output), key).await;
        assert_eq!(resp.headers()["x-ctxgate-compressed"], "1", "{call}");
    }
    // The counters are flushed in the background within a second: wait for that.
    proxy.state.settled().await;

    let (status, v) = admin_stats(&proxy, Some(ADMIN)).await;
    assert_eq!(status, 200, "{v}");
    let rows = v["tenants"].as_array().unwrap();
    let (a, b) = (tenant_of("sk-a"), tenant_of("sk-b"));
    let mut expected = vec![(a.clone(), 1), (b.clone(), 2)];
    expected.sort();
    let got: Vec<(String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["tenant"].as_str().unwrap().to_string(),
                r["totals"]["compressions"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected, "{v}");
    assert_eq!(v["totals"]["compressions"], 3);
    let saved: u64 = rows
        .iter()
        .map(|r| r["totals"]["saved_tokens"].as_u64().unwrap())
        .sum();
    assert!(saved > 0);
    assert_eq!(v["totals"]["saved_tokens"], saved, "the sum of the tenants");

    // A client's key: 403, and nothing of another tenant in the answer.
    let (status, v) = admin_stats(&proxy, Some("sk-a")).await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(v["error"]["code"], "admin_key_required");
    let text = v.to_string();
    assert!(!text.contains(&a) && !text.contains(&b), "{text}");
    // No credential: 401. A path next to the route is no operator route.
    let (status, v) = admin_stats(&proxy, None).await;
    assert_eq!(status, 401, "{v}");
    let other = client()
        .get(format!("{}/admin/tenants", proxy.url))
        .header("authorization", format!("Bearer {ADMIN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    // The client's own view is still its own tenant only.
    let own = stats_of(&proxy, "sk-a").await;
    assert_eq!(own["tenant"], a.as_str());
    assert_eq!(own["totals"]["compressions"], 1);
    proxy.stop().await;
}

#[tokio::test]
async fn admin_view_on_redb() {
    admin_sees_every_tenant_and_clients_see_none(|_| {}).await;
}

#[tokio::test]
async fn admin_view_on_redis() {
    let url = shared_redis().url();
    admin_sees_every_tenant_and_clients_see_none(|o| {
        o.raw.store.url = Some(url);
        o.raw.store.key_prefix = Some(unique_prefix("admin"));
        o.raw.store.timeout_ms = Some(5_000);
    })
    .await;
}

#[tokio::test]
async fn without_admin_keys_the_view_is_off() {
    let (_mock, proxy) = mock_and_proxy().await;
    for key in [Some(ADMIN), Some("sk-a"), None] {
        let (status, v) = admin_stats(&proxy, key).await;
        assert_eq!(status, 404, "{key:?}: {v}");
        assert_eq!(v["error"]["code"], "admin_disabled");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("admin_keys"),
            "{v}"
        );
    }
    proxy.stop().await;
}

/// In proxy-held mode a client key opens `/v1/` but not the operator view, and the admin key opens the operator
/// view but is no client key (401 on `/v1/`).
#[tokio::test]
async fn admin_and_client_keys_stay_apart_in_proxy_held_mode() {
    let (_mock, proxy) = mock_and_proxy_with(|o| {
        o.raw.upstream.api_key_env = Some("UPSTREAM_KEY".into());
        o.raw.auth.keys = Some(vec!["client-1".into()]);
        o.raw.auth.admin_keys = Some(vec![ADMIN.into()]);
        o.env.insert("UPSTREAM_KEY".into(), "sk-upstream".into());
    })
    .await;
    let (status, _) = admin_stats(&proxy, Some(ADMIN)).await;
    assert_eq!(status, 200);
    let (status, _) = admin_stats(&proxy, Some("client-1")).await;
    assert_eq!(status, 403);
    let resp = post_responses(&proxy, &conversation("c", "hi"), ADMIN).await;
    assert_eq!(resp.status(), 401, "an admin key is no client key");
    let resp = post_responses(&proxy, &conversation("c", "hi"), "client-1").await;
    assert_eq!(resp.status(), 200);
    proxy.stop().await;
}

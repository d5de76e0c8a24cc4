//! Tenants never see each other's originals: through the expand loop, the side endpoints and prefix lookups, a
//! hash of another tenant's original is a miss, exactly like a hash that never existed.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
#[path = "expand_proxy/harness.rs"]
mod harness;

use common::*;
use harness::*;
use serde_json::{Value, json};

/// The hash of the compressed tool output of [`conversation`].
fn log_hash() -> String {
    ctxgate::ctxzip::hash_of(&corpus("cargo_build_vv.log"))
}

#[tokio::test]
async fn tenants_cannot_reach_each_others_originals() {
    let (mock, proxy) = mock_and_proxy().await;
    // Tenant A's turn stores the original.
    let _ = post(&proxy, &conversation("mock-ok", false), "sk-a")
        .await
        .bytes()
        .await;
    let hash = log_hash();
    let get = |key: &'static str, path: String| {
        let url = proxy.v1(&path);
        async move {
            client()
                .get(url)
                .header("authorization", format!("Bearer {key}"))
                .send()
                .await
                .unwrap()
        }
    };
    let own = get("sk-a", format!("/ctxzip/{hash}")).await;
    assert_eq!(own.status(), 200);
    let text = own.text().await.unwrap();
    assert!(corpus("cargo_build_vv.log").starts_with(text.split("\n[ctxzip: ").next().unwrap()));
    let other = get("sk-b", format!("/ctxzip/{hash}")).await;
    assert_eq!(other.status(), 404);
    let v: Value = other.json().await.unwrap();
    assert_eq!(v["error"]["code"], "original_not_found");
    // A unique prefix of 6 works; with a query only matching lines come back.
    let prefix = get("sk-a", format!("/ctxzip/{}", &hash[..6].to_uppercase())).await;
    assert_eq!(prefix.status(), 200);
    let grep = get("sk-a", format!("/ctxzip/{hash}?query=openssl"))
        .await
        .text()
        .await
        .unwrap();
    assert!(grep.to_lowercase().contains("openssl"));
    let posted = client()
        .post(proxy.v1("/ctxzip/expand"))
        .header("authorization", "Bearer sk-a")
        .body(
            json!({"hash": format!("<<ctxzip:{hash} 5_lines_offloaded>>"), "limit": 100})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 200);
    let v: Value = posted.json().await.unwrap();
    assert_eq!(v["hash"], hash);
    let posted_b = client()
        .post(proxy.v1("/ctxzip/expand"))
        .header("authorization", "Bearer sk-b")
        .body(json!({"hash": hash}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(posted_b.status(), 404);

    // In the loop too: tenant B's model asking for A's hash gets the miss text.
    mock.state.clear();
    let mut body = conversation("mock-expand", false);
    body["input"][2]["output"] = json!(format!(
        "<<ctxzip:{hash} 9_lines_offloaded>> copied from elsewhere"
    ));
    let _ = post(&proxy, &body, "sk-b").await.bytes().await;
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 2);
    let answer = sent[1]["input"].as_array().unwrap().last().unwrap()["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        answer.contains("expired") || answer.contains("never existed"),
        "{answer}"
    );

    // Totals are per tenant: A's hits count for A, B's misses (asking for A's hash) for B.
    proxy.state.settled().await;
    let stats: Value = get("sk-a", "/ctxzip/stats".into())
        .await
        .json()
        .await
        .unwrap();
    assert!(stats["totals"]["expansions"].as_u64().unwrap() >= 3);
    let of_b: Value = get("sk-b", "/ctxzip/stats".into())
        .await
        .json()
        .await
        .unwrap();
    assert_ne!(stats["tenant"], of_b["tenant"]);
    assert_eq!(of_b["totals"]["expansions"], 0, "{of_b}");
    assert!(
        of_b["totals"]["expansion_misses"].as_u64().unwrap() >= 2,
        "{of_b}"
    );
    proxy.stop().await;
}

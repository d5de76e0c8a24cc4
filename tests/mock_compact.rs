//! `/v1/responses/compact` and `/v1/models` of ctxgate-mock, over real HTTP.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use ctxgate::mock::{self, MockConfig, MockHandle};
use serde_json::{Value, json};

async fn start() -> MockHandle {
    mock::start(MockConfig::default()).await.unwrap()
}

async fn post(h: &MockHandle, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}{path}", h.url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn compact_keeps_user_messages_and_appends_a_compaction_item() {
    let h = start().await;
    let input = json!([
        {"role": "user", "content": "first question"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "answer"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "second"}]},
    ]);
    let req = json!({"model": "mock-ok", "input": input});
    let res = post(&h, "/v1/responses/compact", &req).await;
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert!(body["id"].as_str().unwrap().starts_with("cmp_"));
    assert_eq!(body["object"], "response.compaction");
    assert!(body["created_at"].is_u64());
    let out = body["output"].as_array().unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(out[0]["content"], "first question");
    assert_eq!(out[1], input[2]);
    assert_eq!(out[2]["type"], "compaction");
    assert!(out[2]["id"].as_str().unwrap().starts_with("cmpt_"));
    assert!(out[2]["encrypted_content"].as_str().unwrap().len() > 40);
    assert!(body["usage"]["total_tokens"].as_u64().unwrap() > 0);
    let again: Value = post(&h, "/v1/responses/compact", &req)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again, body);

    let res = post(
        &h,
        "/v1/responses/compact",
        &json!({"model": "mock-nocompact", "input": input}),
    )
    .await;
    assert_eq!(res.status(), 404);
    assert!(res.json::<Value>().await.unwrap()["error"]["message"].is_string());

    let refusing = mock::start(MockConfig {
        compact_status: Some(501),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(
        post(&refusing, "/v1/responses/compact", &req)
            .await
            .status(),
        501
    );
    assert_eq!(post(&refusing, "/v1/responses", &req).await.status(), 200);
    assert_eq!(
        refusing.state.received().len(),
        2,
        "compact calls are recorded too"
    );
}

#[tokio::test]
async fn models_lists_the_scenarios() {
    let h = start().await;
    let body: Value = reqwest::get(format!("{}/v1/models", h.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["object"], "list");
    let ids: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"mock-ok") && ids.contains(&"mock-call"));
    let one: Value = reqwest::get(format!("{}/v1/models/mock-slow", h.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["id"], "mock-slow");
}

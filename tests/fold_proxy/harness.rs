//! The fold tests' own harness: a transcript that grows past a small budget, a proxy folding it, one turn through
//! it, and what the mock received.

use super::common::*;
use ctxgate::mock::MockHandle;
use serde_json::{Value, json};

/// A client transcript: a developer prompt, a user task, then `turns` tool exchanges of ~2 KB each.
pub fn transcript(turns: usize) -> Vec<Value> {
    let mut items = vec![
        json!({"type":"message","role":"developer","content":"You are a careful coding agent."}),
        json!({"type":"message","role":"user","content":"Find why the build fails."}),
    ];
    for t in 0..turns {
        items.push(json!({"type":"function_call","call_id":format!("call_{t}"),"name":"shell","arguments":format!("{{\"cmd\":\"step {t}\"}}")}));
        let output: String = (0..40)
            .map(|l| format!("turn {t} line {l}: some build output here\n"))
            .collect();
        items.push(
            json!({"type":"function_call_output","call_id":format!("call_{t}"),"output":output}),
        );
    }
    items
}

pub fn body(items: &[Value], model: &str) -> String {
    json!({"model": model, "input": items, "prompt_cache_key": "thread-1", "store": false})
        .to_string()
}

pub async fn proxy_with(mock: &MockHandle, mode: &str, fold_model: &str) -> Proxy {
    let mut opts = ProxyOptions::new(&mock_url(mock));
    opts.raw.fold.mode = Some(mode.into());
    opts.raw.fold.budget = Some(4000);
    opts.raw.fold.model = Some(fold_model.into());
    start_proxy_with(opts).await
}

pub async fn turn(proxy: &Proxy, items: &[Value]) -> (String, Value) {
    let resp = client()
        .post(proxy.v1("/responses"))
        .header("authorization", "Bearer sk-fold")
        .body(body(items, "mock-ok"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let header = resp.headers()["x-ctxgate-fold"]
        .to_str()
        .unwrap()
        .to_string();
    (header, resp.json().await.unwrap())
}

pub fn calls(mock: &MockHandle, path: &str) -> Vec<Value> {
    mock.state
        .received()
        .iter()
        .filter(|r| r.path == path)
        .map(|r| r.json().unwrap())
        .collect()
}

/// The `input` array of the last `/v1/responses` turn request (not a summary call), as raw text.
pub fn last_turn_input(mock: &MockHandle) -> String {
    let rec = mock.state.received();
    let r = rec
        .iter()
        .rev()
        .find(|r| r.path == "/v1/responses" && r.json().unwrap()["model"] == "mock-ok")
        .unwrap();
    let text = std::str::from_utf8(&r.body).unwrap();
    let start = text.find("\"input\":").unwrap() + "\"input\":".len();
    let v: Value = serde_json::from_str(text).unwrap();
    let len = serde_json::to_string(&v["input"]).unwrap().len();
    // The proxy writes the input compactly when it rewrote it; find the matching bracket span.
    text[start..start + len.min(text.len() - start)].to_string()
}

//! `/v1/responses` of ctxgate-mock (JSON and SSE, every scenario),
//! exercised over real HTTP so the bytes the proxy will see are what is checked.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use std::time::{Duration, Instant};

use ctxgate::mock::{self, MockConfig, MockHandle};
use futures_util::StreamExt;
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

async fn post_json(h: &MockHandle, body: &Value) -> Value {
    let res = post(h, "/v1/responses", body).await;
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

fn parse_sse(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    event = Some(e.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str(d).unwrap());
                }
            }
            (event.unwrap(), data.unwrap())
        })
        .collect()
}

/// Streams a request and returns (body frames received, parsed events).
async fn sse(h: &MockHandle, body: &Value) -> (usize, Vec<(String, Value)>) {
    let mut body = body.clone();
    body["stream"] = json!(true);
    let res = post(h, "/v1/responses", &body).await;
    assert_eq!(res.status(), 200);
    let ct = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let mut frames = 0;
    let mut buf = Vec::new();
    let mut stream = res.bytes_stream();
    while let Some(chunk) = stream.next().await {
        frames += 1;
        buf.extend_from_slice(&chunk.unwrap());
    }
    let events = parse_sse(std::str::from_utf8(&buf).unwrap());
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], json!(name), "event line matches data.type");
        assert_eq!(
            data["sequence_number"],
            json!(i),
            "sequence numbers count up from 0"
        );
    }
    (frames, events)
}

fn types(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(t, _)| t.as_str()).collect()
}

fn text_of(resp: &Value) -> String {
    resp["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["type"] == "message")
        .flat_map(|o| o["content"].as_array().unwrap().iter())
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect()
}

#[rustfmt::skip]
const RESPONSE_FIELDS: &[&str] = &[
    "id", "object", "created_at", "status", "error", "incomplete_details", "instructions", "max_output_tokens",
    "model", "output", "parallel_tool_calls", "previous_response_id", "reasoning", "store", "temperature", "text",
    "tool_choice", "tools", "top_p", "truncation", "usage", "user", "metadata",
];

#[tokio::test]
async fn json_ok_has_the_real_response_shape_and_is_deterministic() {
    let h = start().await;
    let req = json!({"model": "mock-ok", "input": [{"role": "user", "content": "what is in src?"}], "temperature": 0.2});
    let body_len = serde_json::to_vec(&req).unwrap().len();
    let resp = post_json(&h, &req).await;
    for field in RESPONSE_FIELDS {
        assert!(resp.get(*field).is_some(), "missing {field}");
    }
    assert!(resp["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(resp["object"], "response");
    assert_eq!(resp["status"], "completed");
    assert_eq!(resp["model"], "mock-ok");
    assert_eq!(resp["temperature"], 0.2);
    assert!(resp["error"].is_null());
    let msg = &resp["output"][0];
    assert_eq!(msg["type"], "message");
    assert!(msg["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(msg["status"], "completed");
    assert_eq!(msg["role"], "assistant");
    assert_eq!(msg["content"][0]["type"], "output_text");
    assert_eq!(msg["content"][0]["annotations"], json!([]));
    assert_eq!(
        msg["content"][0]["text"],
        "Hello from ctxgate-mock. Last input: what is in src?"
    );
    let usage = &resp["usage"];
    assert_eq!(usage["input_tokens"], json!(body_len / 4));
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 0);
    let total = usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap();
    assert_eq!(usage["total_tokens"], json!(total));

    let a = post(&h, "/v1/responses", &req).await.bytes().await.unwrap();
    let b = post(&h, "/v1/responses", &req).await.bytes().await.unwrap();
    assert_eq!(a, b, "same request, same bytes");
}

#[tokio::test]
async fn json_scenarios_pick_their_behaviour() {
    let h = start().await;
    let tools = json!([{"type": "web_search"}, {"type": "function", "name": "run", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]);
    let call = post_json(
        &h,
        &json!({"model": "mock-call", "input": "x", "tools": tools}),
    )
    .await;
    let fc = &call["output"][0];
    assert_eq!(fc["type"], "function_call");
    assert!(fc["id"].as_str().unwrap().starts_with("fc_"));
    assert!(fc["call_id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(fc["name"], "run");
    assert_eq!(fc["arguments"], r#"{"cmd":"ls"}"#);
    assert_eq!(fc["status"], "completed");
    assert_eq!(call["tools"][1]["name"], "run");

    let shell = post_json(&h, &json!({"model": "mock-call", "input": "x"})).await;
    assert_eq!(shell["output"][0]["name"], "shell");

    let inc = post_json(&h, &json!({"model": "mock-incomplete", "input": "x"})).await;
    assert_eq!(inc["status"], "incomplete");
    assert_eq!(
        inc["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert!(!text_of(&inc).is_empty());

    let failed = post_json(&h, &json!({"model": "mock-failed", "input": "x"})).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "server_error");

    let req = json!({"model": "gpt-5", "metadata": {"mock": "mock-summary"}, "input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]});
    let summary = post_json(&h, &req).await;
    assert_eq!(
        summary["model"], "gpt-5",
        "model is echoed even when metadata picks the scenario"
    );
    assert!(
        text_of(&summary).starts_with("SUMMARY: items=2 "),
        "{}",
        text_of(&summary)
    );

    let notext = post_json(&h, &json!({"model": "mock-summary-notext", "input": "x"})).await;
    assert_eq!(notext["status"], "completed");
    assert_eq!(text_of(&notext), "");

    let req = json!({"model": "mock-summary-toolarge", "input": "y".repeat(3000)});
    let large = post_json(&h, &req).await;
    assert!(text_of(&large).len() > serde_json::to_vec(&req).unwrap().len());

    let partial = post_json(
        &h,
        &json!({"model": "mock-summary-incomplete", "input": "x"}),
    )
    .await;
    assert_eq!(partial["status"], "incomplete");
    assert!(text_of(&partial).starts_with("SUMM"));
}

#[tokio::test]
async fn expand_asks_for_the_marker_then_quotes_the_output() {
    let h = start().await;
    let tools = json!([{"type": "function", "name": "context_expand", "parameters": {}}]);
    let marker = "<<ctxzip:0123456789ab 40 lines of build log>>";
    let mut input = vec![json!({"role": "user", "content": format!("see {marker}")})];
    let first = post_json(
        &h,
        &json!({"model": "mock-expand", "input": input, "tools": tools}),
    )
    .await;
    let call = &first["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "context_expand");
    assert_eq!(call["arguments"], r#"{"hash":"0123456789ab"}"#);

    input.push(call.clone());
    input.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": "line 1\nline 2"}));
    let second = post_json(
        &h,
        &json!({"model": "mock-expand", "input": input, "tools": tools}),
    )
    .await;
    assert_eq!(text_of(&second), "Expanded content: \"line 1\nline 2\"");

    let no_tool = post_json(
        &h,
        &json!({"model": "mock-expand", "input": format!("see {marker}")}),
    )
    .await;
    assert_eq!(no_tool["output"][0]["type"], "message");
}

const MESSAGE_ORDER: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
];

#[tokio::test]
async fn sse_follows_the_responses_event_sequence() {
    let h = start().await;
    let (_, events) = sse(&h, &json!({"model": "mock-ok", "input": "hello"})).await;
    assert_eq!(types(&events), MESSAGE_ORDER);
    let item_id = events[2].1["item"]["id"].clone();
    for (_, data) in &events[3..10] {
        assert_eq!(data["item_id"], item_id);
        assert_eq!(data["output_index"], 0);
        assert_eq!(data["content_index"], 0);
    }
    let deltas: String = events
        .iter()
        .filter(|(t, _)| t == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    let final_resp = &events.last().unwrap().1["response"];
    assert_eq!(deltas, text_of(final_resp));
    assert_eq!(events[0].1["response"]["status"], "in_progress");
    assert_eq!(events[0].1["response"]["id"], final_resp["id"]);
    let json_resp = post_json(&h, &json!({"model": "mock-ok", "input": "hello"})).await;
    assert_eq!(
        text_of(&json_resp),
        deltas,
        "JSON and SSE agree on the text"
    );

    let (_, call) = sse(&h, &json!({"model": "mock-call", "input": "x"})).await;
    let order = types(&call);
    assert_eq!(order[2], "response.output_item.added");
    assert!(
        order[3..order.len() - 3]
            .iter()
            .all(|t| *t == "response.function_call_arguments.delta")
    );
    assert_eq!(
        order[order.len() - 3..],
        [
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let (_, inc) = sse(&h, &json!({"model": "mock-incomplete", "input": "x"})).await;
    assert_eq!(types(&inc).last(), Some(&"response.incomplete"));
    let (_, failed) = sse(&h, &json!({"model": "mock-failed", "input": "x"})).await;
    assert_eq!(
        types(&failed),
        [
            "response.created",
            "response.in_progress",
            "response.failed"
        ]
    );
}

#[tokio::test]
async fn split_arrives_in_many_frames_but_reassembles_like_ok() {
    let h = start().await;
    let (ok_frames, ok) = sse(&h, &json!({"model": "mock-ok", "input": "split me"})).await;
    let (frames, split) = sse(&h, &json!({"model": "mock-split", "input": "split me"})).await;
    assert!(
        frames > split.len() + ok_frames,
        "{frames} frames for {} events",
        split.len()
    );
    assert_eq!(types(&split), types(&ok));
    assert_eq!(
        text_of(&split.last().unwrap().1["response"]),
        text_of(&ok.last().unwrap().1["response"])
    );
}

#[tokio::test]
async fn truncate_ends_without_a_terminal_event() {
    let h = start().await;
    let (_, events) = sse(&h, &json!({"model": "mock-truncate", "input": "x"})).await;
    assert_eq!(events.len(), 5);
    assert!(types(&events).iter().all(|t| !matches!(
        *t,
        "response.completed" | "response.incomplete" | "response.failed"
    )));

    let res = post(
        &h,
        "/v1/responses",
        &json!({"model": "mock-truncate", "input": "x"}),
    )
    .await;
    assert_eq!(res.status(), 200);
    let body = res.bytes().await.unwrap();
    assert!(body.starts_with(b"{\"id\":\"resp_"));
    assert!(
        serde_json::from_slice::<Value>(&body).is_err(),
        "body is cut mid-document"
    );
    let full = post(
        &h,
        "/v1/responses",
        &json!({"model": "mock-ok", "input": "x"}),
    )
    .await
    .bytes()
    .await
    .unwrap();
    assert!(body.len() < full.len());
}

#[tokio::test]
async fn error_scenarios_answer_their_status_with_an_openai_error_body() {
    let h = start().await;
    for (model, status, stream) in [
        ("mock-error-429", 429, false),
        ("mock-error-500", 500, true),
        ("mock-error-503", 503, true),
    ] {
        let res = post(
            &h,
            "/v1/responses",
            &json!({"model": model, "input": "x", "stream": stream}),
        )
        .await;
        assert_eq!(res.status(), status);
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let body: Value = res.json().await.unwrap();
        assert!(body["error"]["message"].is_string());
        assert!(body["error"]["type"].is_string());
        assert!(body["error"].get("code").is_some());
    }
    let res = reqwest::Client::new()
        .post(format!("{}/v1/responses", h.url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
}

#[tokio::test]
async fn slow_stream_dropped_by_the_client_counts_as_cancelled() {
    let h = start().await;
    let (_, _) = sse(&h, &json!({"model": "mock-ok", "input": "x"})).await;
    assert_eq!(h.state.completed_streams(), 1);

    let res = post(
        &h,
        "/v1/responses",
        &json!({"model": "mock-slow", "input": "x", "stream": true}),
    )
    .await;
    let mut stream = res.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    while h.state.cancelled_streams() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(h.state.cancelled_streams(), 1);
    assert_eq!(h.state.completed_streams(), 1);
}

#[tokio::test]
async fn latency_and_chunk_delay_slow_the_answer_down() {
    let cfg = MockConfig {
        latency: Duration::from_millis(150),
        chunk_delay: Duration::from_millis(20),
        compact_status: None,
        record_last: None,
        sse_whole: false,
    };
    let h = mock::start(cfg).await.unwrap();
    let started = Instant::now();
    let (_, events) = sse(&h, &json!({"model": "mock-ok", "input": "x"})).await;
    let gaps = u32::try_from(events.len() - 1).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150) + Duration::from_millis(20) * gaps);
}

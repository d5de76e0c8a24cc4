//! The fold through the running proxy, with `ctxgate-mock` upstream: a transcript growing turn by turn past the
//! budget is folded by `/responses/compact` or a local summary call, the fold is reused byte-stably, re-folded,
//! backed off after failures, survives a restart, and is made once for concurrent requests.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
#[path = "fold_proxy/harness.rs"]
mod harness;

use common::*;
use ctxgate::mock::MockConfig;
use harness::*;
use serde_json::{Value, json};

#[tokio::test]
async fn compact_mode_splices_the_compaction_and_reuses_it_byte_stably() {
    let mock = start_mock().await;
    let proxy = proxy_with(&mock, "compact", "mock-ok").await;
    let (h, _) = turn(&proxy, &transcript(2)).await;
    assert_eq!(h, "none");
    assert!(calls(&mock, "/v1/responses/compact").is_empty());

    let items = transcript(10);
    let (h, answer) = turn(&proxy, &items).await;
    assert_eq!(h, "applied");
    assert_eq!(
        answer["object"], "response",
        "the client gets the upstream's answer"
    );
    let compact = calls(&mock, "/v1/responses/compact");
    assert_eq!(compact.len(), 1, "one compaction call");
    assert_eq!(compact[0]["model"], "mock-ok");
    let sent = calls(&mock, "/v1/responses");
    let input = sent.last().unwrap()["input"].as_array().unwrap().clone();
    assert!(
        input.iter().any(|i| i["type"] == "compaction"),
        "compaction item spliced: {input:?}"
    );
    // The developer prompt is pinned after the output; the kept tail ends the input verbatim.
    assert!(input.iter().any(|i| i["role"] == "developer"));
    assert_eq!(input.last().unwrap(), items.last().unwrap());
    assert!(input.len() < items.len());
    let first_input = last_turn_input(&mock);

    // Two more turns: no new call, and each rewritten input starts with the previous one's bytes.
    let mut previous = first_input;
    for extra in [11, 12] {
        let (h, _) = turn(&proxy, &transcript(extra)).await;
        assert_eq!(h, "reused");
        let now = last_turn_input(&mock);
        let stem = &previous[..previous.len() - 1]; // without the closing bracket
        assert!(
            now.starts_with(stem),
            "turn {extra} input does not extend the previous one"
        );
        previous = now;
    }
    assert_eq!(
        calls(&mock, "/v1/responses/compact").len(),
        1,
        "reuse made no call"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn local_mode_sends_the_documented_summary_request_and_refolds() {
    let mock = start_mock().await;
    let proxy = proxy_with(&mock, "local", "mock-summary").await;
    let mut items = transcript(10);
    items.insert(
        3,
        json!({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}),
    );
    let (h, _) = turn(&proxy, &items).await;
    assert_eq!(h, "applied");
    let summaries: Vec<Value> = calls(&mock, "/v1/responses")
        .into_iter()
        .filter(|b| b["model"] == "mock-summary")
        .collect();
    assert_eq!(summaries.len(), 1);
    let req = &summaries[0];
    assert_eq!(req["store"], false);
    assert!(req.get("tools").is_none() && req.get("instructions").is_none());
    assert_eq!(req["max_output_tokens"], 2000, "min(budget/2, 8192)");
    let input = req["input"].as_array().unwrap();
    assert!(
        input.iter().all(|i| i["type"] != "reasoning"),
        "reasoning items are left out"
    );
    let last = input.last().unwrap();
    assert_eq!(last["role"], "user");
    let prompt = serde_json::to_string(last).unwrap().to_lowercase();
    assert!(prompt.contains("summar"), "{prompt}");
    let sent = calls(&mock, "/v1/responses")
        .into_iter()
        .rfind(|b| b["model"] == "mock-ok")
        .unwrap();
    let spliced = sent["input"].as_array().unwrap();
    let summary_text = spliced[0]["content"].as_str().unwrap();
    assert!(
        summary_text.starts_with("Summary of the conversation so far:\n\nSUMMARY: "),
        "{summary_text}"
    );

    // The transcript grows past the budget again: the second fold re-folds the first summary.
    let mut longer = items.clone();
    longer.extend(transcript(30).into_iter().skip(items.len() - 1));
    let (h, _) = turn(&proxy, &longer).await;
    assert_eq!(h, "applied");
    let summaries: Vec<Value> = calls(&mock, "/v1/responses")
        .into_iter()
        .filter(|b| b["model"] == "mock-summary")
        .collect();
    assert_eq!(summaries.len(), 2);
    let refold_input = serde_json::to_string(&summaries[1]["input"]).unwrap();
    assert!(
        refold_input.contains("Summary of the conversation so far:"),
        "previous summary folded again"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn summary_failures_are_asked_twice_then_sent_unfolded_and_backed_off() {
    for model in [
        "mock-summary-notext",
        "mock-summary-incomplete",
        "mock-summary-toolarge",
    ] {
        let mock = start_mock().await;
        let proxy = proxy_with(&mock, "local", model).await;
        let items = transcript(10);
        let (h, _) = turn(&proxy, &items).await;
        assert_eq!(h, "failed", "{model}");
        let asked = calls(&mock, "/v1/responses")
            .into_iter()
            .filter(|b| b["model"] == model)
            .count();
        assert_eq!(asked, 2, "{model}: asked once more, then gave up");
        let sent = calls(&mock, "/v1/responses")
            .into_iter()
            .rfind(|b| b["model"] == "mock-ok")
            .unwrap();
        assert_eq!(
            sent["input"].as_array().unwrap().len(),
            items.len(),
            "{model}: sent unfolded"
        );
        // The next turn, one item longer, is backed off: no new summary call.
        let (h, _) = turn(
            &proxy,
            &transcript(10)
                .into_iter()
                .chain(transcript(11).into_iter().skip(22).take(1))
                .collect::<Vec<_>>(),
        )
        .await;
        assert_eq!(h, "backed_off", "{model}");
        let asked = calls(&mock, "/v1/responses")
            .into_iter()
            .filter(|b| b["model"] == model)
            .count();
        assert_eq!(asked, 2, "{model}: no call while backed off");
        proxy.stop().await;
    }
}

#[tokio::test]
async fn auto_mode_falls_back_to_local_when_compact_is_404_and_remembers() {
    let mock = ctxgate::mock::start(MockConfig {
        compact_status: Some(404),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let proxy = proxy_with(&mock, "auto", "mock-summary").await;
    let (h, _) = turn(&proxy, &transcript(10)).await;
    assert_eq!(h, "applied");
    assert_eq!(calls(&mock, "/v1/responses/compact").len(), 1);
    let summaries = calls(&mock, "/v1/responses")
        .into_iter()
        .filter(|b| b["model"] == "mock-summary")
        .count();
    assert_eq!(summaries, 1, "fell back to a local summary");
    // Another conversation: compact is not tried again.
    let mut other = transcript(10);
    other[1] = json!({"type":"message","role":"user","content":"A different task."});
    let resp = client()
        .post(proxy.v1("/responses"))
        .header("authorization", "Bearer sk-fold")
        .body(json!({"model":"mock-ok","input": other}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-ctxgate-fold"], "applied");
    assert_eq!(
        calls(&mock, "/v1/responses/compact").len(),
        1,
        "remembered per upstream"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn upstream_errors_send_unfolded_by_default_or_fail_when_configured() {
    let mock = ctxgate::mock::start(MockConfig {
        compact_status: Some(500),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let proxy = proxy_with(&mock, "compact", "mock-ok").await;
    let items = transcript(10);
    let (h, _) = turn(&proxy, &items).await;
    assert_eq!(h, "failed");
    let sent = calls(&mock, "/v1/responses").last().cloned().unwrap();
    assert_eq!(sent["input"].as_array().unwrap().len(), items.len());
    proxy.stop().await;

    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.fold.mode = Some("compact".into());
    opts.raw.fold.budget = Some(4000);
    opts.raw.fold.on_error = Some("fail".into());
    let proxy = start_proxy_with(opts).await;
    mock.state.clear();
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(body(&items, "mock-ok"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 502);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "fold_failed");
    assert!(
        calls(&mock, "/v1/responses").is_empty(),
        "the turn was not sent"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_restart_reuses_the_stored_fold_and_the_back_off() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.redb");
    let start = |fold_model: &'static str| {
        let mut opts = ProxyOptions::new(&mock_url(&mock));
        opts.raw.fold.mode = Some("local".into());
        opts.raw.fold.budget = Some(4000);
        opts.raw.fold.model = Some(fold_model.into());
        opts.store_path = Some(store.clone());
        start_proxy_with(opts)
    };
    let proxy = start("mock-summary").await;
    assert_eq!(turn(&proxy, &transcript(10)).await.0, "applied");
    let first = last_turn_input(&mock);
    proxy.stop().await;
    let proxy = start("mock-summary").await;
    assert_eq!(turn(&proxy, &transcript(10)).await.0, "reused");
    assert_eq!(last_turn_input(&mock), first, "same bytes after a restart");
    let summaries = calls(&mock, "/v1/responses")
        .into_iter()
        .filter(|b| b["model"] == "mock-summary")
        .count();
    assert_eq!(summaries, 1);
    proxy.stop().await;

    // A failed fold is remembered across a restart too.
    let mut other = transcript(10);
    other[1] = json!({"type":"message","role":"user","content":"Another thread."});
    let send = |proxy: &Proxy, items: Vec<Value>| {
        client()
            .post(proxy.v1("/responses"))
            .header("authorization", "Bearer sk-fold")
            .body(json!({"model":"mock-ok","input": items}).to_string())
            .send()
    };
    let proxy = start("mock-summary-notext").await;
    assert_eq!(
        send(&proxy, other.clone()).await.unwrap().headers()["x-ctxgate-fold"],
        "failed"
    );
    proxy.stop().await;
    let proxy = start("mock-summary-notext").await;
    assert_eq!(
        send(&proxy, other).await.unwrap().headers()["x-ctxgate-fold"],
        "backed_off"
    );
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_share_one_summary_call() {
    let mock = ctxgate::mock::start(MockConfig {
        latency: std::time::Duration::from_millis(300),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let proxy = proxy_with(&mock, "local", "mock-summary").await;
    let items = transcript(10);
    let (a, b) = tokio::join!(turn(&proxy, &items), turn(&proxy, &items));
    let mut outcomes = [a.0, b.0];
    outcomes.sort();
    assert_eq!(outcomes, ["applied".to_string(), "reused".to_string()]);
    let summaries = calls(&mock, "/v1/responses")
        .into_iter()
        .filter(|b| b["model"] == "mock-summary")
        .count();
    assert_eq!(summaries, 1, "one summary call for two requests");
    proxy.stop().await;
}

#[tokio::test]
async fn server_side_history_and_opt_outs_pass_through() {
    let mock = start_mock().await;
    let proxy = proxy_with(&mock, "local", "mock-summary").await;
    let items = transcript(10);
    let with_prev =
        json!({"model":"mock-ok","input": items, "previous_response_id":"resp_1"}).to_string();
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(with_prev.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-ctxgate-fold"], "none");
    assert_eq!(
        mock.state.received().last().unwrap().body.as_ref(),
        with_prev.as_bytes()
    );
    let off = client()
        .post(proxy.v1("/responses"))
        .header("x-ctxgate-fold", "off")
        .body(body(&items, "mock-ok"))
        .send()
        .await
        .unwrap();
    assert_eq!(off.headers()["x-ctxgate-fold"], "none");
    let big_budget = client()
        .post(proxy.v1("/responses"))
        .header("x-ctxgate-budget", "1000000")
        .body(body(&items, "mock-ok"))
        .send()
        .await
        .unwrap();
    assert_eq!(big_budget.headers()["x-ctxgate-fold"], "none");
    let text = json!({"model":"mock-ok","input": "x".repeat(100_000)}).to_string();
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(text)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-ctxgate-fold"], "none");
    assert!(
        calls(&mock, "/v1/responses")
            .iter()
            .all(|b| b["model"] != "mock-summary")
    );
    let metrics = proxy.metrics().await;
    assert!(!metrics.contains("ctxgate_folds_total{outcome=\"applied\"}"));
    proxy.stop().await;
}

#[tokio::test]
async fn the_client_gets_the_upstream_answer_unchanged_and_metrics_count_folds() {
    let mock = start_mock().await;
    let proxy = proxy_with(&mock, "local", "mock-summary").await;
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(body(&transcript(10), "mock-ok"))
        .send()
        .await
        .unwrap();
    let got = resp.bytes().await.unwrap();
    // What the mock answers for the body it really received is exactly what the client got.
    let rec = mock.state.received();
    let turn_req = rec
        .iter()
        .rev()
        .find(|r| r.path == "/v1/responses")
        .unwrap();
    let direct = client()
        .post(format!("{}/responses", mock_url(&mock)))
        .body(turn_req.body.clone())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(got, direct);
    let metrics = proxy.metrics().await;
    assert!(
        metrics.contains("ctxgate_folds_total{outcome=\"applied\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("ctxgate_fold_calls_total 1"), "{metrics}");
    proxy.stop().await;
}

//! A turn replays the head of its conversation settled on earlier turns and examines only its new items; the bytes
//! the upstream receives are exactly those of a proxy that examines the whole transcript (its memory cold, as after
//! a restart) — when the transcript grows, when an item inside the settled head changes, when the transcript
//! loses its end so that protected positions move back over settled items, and when new outputs repeat old ones.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;
use serde_json::{Value, json};

const KEY: &str = "sk-heads";

fn call(id: &str, name: &str) -> Value {
    json!({"type":"function_call","call_id":id,"name":name,"arguments":format!("{{\"cmd\":\"run {id}\"}}")})
}

fn output(id: &str, text: &str) -> Value {
    json!({"type":"function_call_output","call_id":id,"output":text})
}

/// A test run that repeats most of an earlier one (the repeats path), and differs in its verdict.
fn test_run(verdict: &str) -> String {
    let mut s = String::new();
    for i in 0..40 {
        s.push_str(&format!(
            "tests/test_widgets.py::test_case_{i:02} PASSED          [{:3}%]\n",
            i * 100 / 41
        ));
    }
    s.push_str(&format!("=========== {verdict} ===========\n"));
    s
}

/// The turns of one conversation, each a whole transcript as the client sends it.
fn turns() -> Vec<Vec<Value>> {
    let mut base = vec![
        json!({"type":"message","role":"developer","content":"You are a coding agent."}),
        json!({"role":"user","content":"Why does poll_frame fail in the tokio build?"}),
    ];
    let steps = [
        ("c1", "exec_command", corpus("cargo_build_vv.log")),
        ("c2", "exec_command", test_run("40 passed in 1.20s")),
        ("c3", "exec_command", corpus("grep_fn_poll.txt")),
        ("c4", "exec_command", test_run("40 passed in 1.31s")),
        ("c5", "exec_command", corpus("dpkg_list.txt")),
    ];
    let mut out = Vec::new();
    for (id, name, text) in &steps[..3] {
        base.push(call(id, name));
        base.push(output(id, text));
    }
    out.push(base.clone());
    // Grows: a repeat of an earlier output and a new big one.
    let mut grown = base.clone();
    for (id, name, text) in &steps[3..] {
        grown.push(call(id, name));
        grown.push(output(id, text));
    }
    out.push(grown.clone());
    // The same again, and once more with a user message at its end.
    out.push(grown.clone());
    let mut asked = grown.clone();
    asked.push(json!({"role":"user","content":"And now?"}));
    out.push(asked.clone());
    // An item inside the settled head changed (the client edited its history).
    let mut edited = asked.clone();
    edited[5] = output("c2", &test_run("1 failed, 39 passed in 1.25s"));
    out.push(edited);
    // The transcript lost its end (the last output, its call kept): it still starts with the settled head, but the
    // newest output is now one the head let through — protected again, so the head is not replayed.
    out.push(grown[..11].to_vec());
    out.push(base[..6].to_vec());
    out.push(asked);
    out
}

fn configure(opts: &mut ProxyOptions) {
    opts.raw.fold.mode = Some("off".into());
    opts.raw.compress.protect_recent = Some(1);
}

async fn send(proxy: &Proxy, items: &[Value]) -> (String, String) {
    let body = json!({"model":"mock-ok","input": items, "prompt_cache_key":"heads"});
    let resp = post_responses(proxy, &body, KEY).await;
    assert_eq!(resp.status(), 200);
    let h = |name: &str| resp.headers()[name].to_str().unwrap().to_string();
    (h("x-ctxgate-compressed"), h("x-ctxgate-saved-tokens"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_head_sends_what_a_whole_pass_sends() {
    let turns = turns();
    // Warm: one proxy for the whole conversation.
    let (warm_mock, warm) = mock_and_proxy_with(configure).await;
    let mut warm_headers = Vec::new();
    for items in &turns {
        warm_headers.push(send(&warm, items).await);
    }
    warm.stop().await;
    // Cold: a proxy started afresh for every turn (same store), so every turn is examined whole.
    let cold_mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("s.redb");
    let mut cold_headers = Vec::new();
    for items in &turns {
        let mut opts = ProxyOptions::new(&mock_url(&cold_mock));
        opts.store_path = Some(store_path.clone());
        configure(&mut opts);
        let cold = start_proxy_with(opts).await;
        cold_headers.push(send(&cold, items).await);
        cold.stop().await;
    }
    let (warm_sent, cold_sent) = (warm_mock.state.received(), cold_mock.state.received());
    assert_eq!(warm_sent.len(), turns.len());
    assert_eq!(cold_sent.len(), turns.len());
    for (t, (w, c)) in warm_sent.iter().zip(cold_sent.iter()).enumerate() {
        assert!(w.body == c.body, "turn {t}: the upstream got other bytes");
    }
    assert_eq!(warm_headers, cold_headers);
    // The conversation was compressed at all, and the repeat pointed back.
    let last: Value = warm_sent.last().unwrap().json().unwrap();
    assert!(ctxgate::ctxzip::contains_marker(&output_of(&last, "c1")));
    assert!(ctxgate::ctxzip::contains_marker(&output_of(&last, "c4")));
    // With the transcript cut before c5's output, c4 is the newest output again: protected, so sent as the client
    // sent it, though the turns before sent it compressed.
    let before: Value = warm_sent[turns.len() - 4].json().unwrap();
    assert!(ctxgate::ctxzip::contains_marker(&output_of(&before, "c4")));
    let cut: Value = warm_sent[turns.len() - 3].json().unwrap();
    assert_eq!(output_of(&cut, "c4"), test_run("40 passed in 1.31s"));
}

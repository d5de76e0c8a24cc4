//! The live zone through the running proxy. Long notes the model writes on its way to a tool call are decided at
//! first sight, like tool outputs — compressed (original stored, expandable) and then byte-stable on every later
//! turn — while a chat answer in the user's recent turns stays as the client sent it; once it leaves them it is
//! compressed only when that is worth the provider's cached prefix it gives up.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;
use serde_json::{Value, json};

/// Long working notes: the kind of text an agent writes before a command (a listing it read, with its plan).
fn notes() -> String {
    format!(
        "THOUGHT: the package list shows what is installed:\n{}\nI will check the versions next.",
        corpus("dpkg_list.txt")
    )
}

fn assistant(text: &str) -> Value {
    json!({"type":"message","role":"assistant","content":[{"type":"output_text","text": text}]})
}

fn step(call: &str, command: &str, output: &str) -> [Value; 2] {
    [
        json!({"type":"function_call","call_id": call,"name":"bash","arguments": json!({"command": command}).to_string()}),
        json!({"type":"function_call_output","call_id": call,"output": output}),
    ]
}

fn body(items: &[Value]) -> Value {
    json!({"model":"mock-ok","input": items,"prompt_cache_key":"agent-1","store": false})
}

/// The raw bytes of the `input` array of the `n`th request the mock received.
fn raw_input(mock: &ctxgate::mock::MockHandle, n: usize) -> String {
    let received = mock.state.received();
    let raw = std::str::from_utf8(&received[n].body).unwrap().to_string();
    let parsed: Value = serde_json::from_str(&raw).unwrap();
    let len = serde_json::to_string(&parsed["input"]).unwrap().len();
    let start = raw.find("\"input\":").unwrap() + "\"input\":".len();
    raw[start..start + len].to_string()
}

fn session() -> Vec<Value> {
    let mut items = vec![
        json!({"type":"message","role":"developer","content":"You are a coding agent."}),
        json!({"type":"message","role":"user","content":"Which libssl version is installed?"}),
        assistant(&notes()),
    ];
    items.extend(step("c1", "dpkg -l | grep libssl", "ii  libssl3  3.0.11-1"));
    items
}

#[tokio::test]
async fn notes_on_the_way_to_a_call_are_compressed_at_first_sight_and_stay_put() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
    })
    .await;
    let mut items = session();
    let first = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-ctxgate-compressed"], "1");
    let sent = turn_requests(&mock).pop().unwrap();
    let visible = sent["input"][2]["content"][0]["text"].as_str().unwrap();
    let markers = ctxgate::ctxzip::find_markers(visible);
    assert!(!markers.is_empty(), "{visible}");
    assert!(
        markers.iter().all(|(h, _)| *h == markers[0].0),
        "one original"
    );
    assert!(visible.starts_with("THOUGHT: the package list"));
    assert!(visible.ends_with("I will check the versions next."));
    assert_eq!(get_original(&proxy, &markers[0].0, "sk-a").await, notes());

    // The next step: the notes keep the bytes they were given, so the provider's cached prefix holds.
    items.push(assistant("Checking the version."));
    items.extend(step("c2", "openssl version", "OpenSSL 3.0.11"));
    let second = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(second.status(), 200);
    let before = raw_input(&mock, 0);
    let after = raw_input(&mock, 1);
    // Turn 1's input without its closing bracket.
    let head = &before[..before.len() - 1];
    assert!(
        after.starts_with(head),
        "turn 2 must extend turn 1's input byte for byte"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn with_agent_steps_off_the_notes_wait_for_the_live_zone() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
        opts.raw.compress.agent_steps = Some(false);
    })
    .await;
    let resp = post_responses(&proxy, &body(&session()), "sk-a").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
    let sent = turn_requests(&mock).pop().unwrap();
    assert_eq!(sent["input"][2]["content"][0]["text"], notes());
    proxy.stop().await;
}

#[tokio::test]
async fn a_chat_answer_in_the_recent_turns_stays_verbatim() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
    })
    .await;
    // The answer is followed by the user's next message, not by a call: it is chat, and the live zone keeps it.
    let items = vec![
        json!({"type":"message","role":"user","content":"List the installed packages."}),
        assistant(&notes()),
        json!({"type":"message","role":"user","content":"Thanks. Which one is libssl?"}),
    ];
    let resp = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
    let sent = turn_requests(&mock).pop().unwrap();
    assert_eq!(sent["input"][1]["content"][0]["text"], notes());
    proxy.stop().await;
}

/// A chat whose long answer has just left the user's two most recent turns, followed by `tail` more text.
fn chat(tail: &str) -> Vec<Value> {
    vec![
        json!({"type":"message","role":"user","content":"List the installed packages."}),
        assistant(&notes()),
        json!({"type":"message","role":"user","content": format!("Thanks. Here is my config:\n{tail}")}),
        assistant("Noted."),
        json!({"type":"message","role":"user","content":"Which one is libssl?"}),
    ]
}

/// A proxy whose changes to cached bytes must save half of what they make the provider read again.
async fn strict_proxy() -> (ctxgate::mock::MockHandle, Proxy) {
    mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
        opts.raw.compress.min_saved_prefix_percent = Some(50);
    })
    .await
}

/// A long text to put after the answer: compressing the answer then makes the provider read all of it again.
fn big_tail() -> String {
    corpus("ls_laR_dist_packages.txt").repeat(4)
}

#[tokio::test]
async fn a_chat_answer_sent_verbatim_is_compressed_later_only_when_worth_the_cache() {
    let (mock, proxy) = strict_proxy().await;
    let items = chat(&big_tail());
    // Turn 1 stops before the user's last message: the answer is within the two most recent user turns.
    let first = post_responses(&proxy, &body(&items[..4]), "sk-a").await;
    assert_eq!(first.headers()["x-ctxgate-compressed"], "0");
    let second = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(second.status(), 200);
    assert_eq!(second.headers()["x-ctxgate-compressed"], "0");
    let sent = turn_requests(&mock).pop().unwrap();
    assert_eq!(sent["input"][1]["content"][0]["text"], notes());
    // The conversation carries no marker yet: the answer waits for the first one, which would make the provider
    // read the whole prefix again anyway.
    let metrics = proxy.metrics().await;
    assert!(
        metrics.contains("ctxgate_compress_skipped_total{reason=\"awaiting_first_marker\"} 1"),
        "{metrics}"
    );
    // A later turn that brings nothing worth a marker does not change the answer either.
    let mut more = items.clone();
    more.push(assistant("libssl3."));
    more.push(json!({"type":"message","role":"user","content":"And openssl?"}));
    let third = post_responses(&proxy, &body(&more), "sk-a").await;
    assert_eq!(third.headers()["x-ctxgate-compressed"], "0");
    proxy.stop().await;
}

#[tokio::test]
async fn a_chat_answer_leaving_the_recent_turns_is_compressed_when_worth_it() {
    let (mock, proxy) = strict_proxy().await;
    let items = chat("indent = 4");
    let first = post_responses(&proxy, &body(&items[..4]), "sk-a").await;
    assert_eq!(first.headers()["x-ctxgate-compressed"], "0");
    let second = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(second.headers()["x-ctxgate-compressed"], "1");
    let sent = turn_requests(&mock).pop().unwrap();
    let visible = sent["input"][1]["content"][0]["text"].as_str().unwrap();
    assert!(ctxgate::ctxzip::contains_marker(visible));
    proxy.stop().await;
}

#[tokio::test]
async fn a_transcript_seen_whole_for_the_first_time_is_compressed_whatever_follows() {
    let (mock, proxy) = strict_proxy().await;
    // Nothing of it went through ctxgate before, so no cached copy is given up: the long tail does not matter.
    let resp = post_responses(&proxy, &body(&chat(&big_tail())), "sk-a").await;
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "1");
    let sent = turn_requests(&mock).pop().unwrap();
    let visible = sent["input"][1]["content"][0]["text"].as_str().unwrap();
    assert!(ctxgate::ctxzip::contains_marker(visible));
    proxy.stop().await;
}

/// An agent session whose first output was the newest (protected by `protect_recent = 1`) when first sent.
fn protected_output_session(tail: &str) -> Vec<Value> {
    let mut items = vec![
        json!({"type":"message","role":"user","content":"Which libssl version is installed?"}),
    ];
    items.extend(step("c1", "dpkg -l", &notes()));
    items.push(json!({"type":"message","role":"user","content": format!("My config:\n{tail}")}));
    items.extend(step("c2", "openssl version", "OpenSSL 3.0.11"));
    items
}

async fn protecting_proxy() -> (ctxgate::mock::MockHandle, Proxy) {
    mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
        opts.raw.compress.protect_recent = Some(1);
        opts.raw.compress.min_saved_prefix_percent = Some(50);
    })
    .await
}

#[tokio::test]
async fn an_output_leaving_the_protect_recent_window_follows_the_late_rule() {
    // Not worth it: a long text after the output would be read again in full.
    let (mock, proxy) = protecting_proxy().await;
    let items = protected_output_session(&big_tail());
    let first = post_responses(&proxy, &body(&items[..3]), "sk-a").await;
    assert_eq!(first.headers()["x-ctxgate-compressed"], "0");
    let second = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(second.headers()["x-ctxgate-compressed"], "0");
    assert_eq!(output_of(&turn_requests(&mock)[1], "c1"), notes());
    proxy.stop().await;

    // Worth it: nothing long follows.
    let (mock, proxy) = protecting_proxy().await;
    let items = protected_output_session("indent = 4");
    let first = post_responses(&proxy, &body(&items[..3]), "sk-a").await;
    assert_eq!(first.headers()["x-ctxgate-compressed"], "0");
    let second = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(second.headers()["x-ctxgate-compressed"], "1");
    assert!(ctxgate::ctxzip::contains_marker(&output_of(
        &turn_requests(&mock)[1],
        "c1"
    )));
    proxy.stop().await;
}

/// Reasoning as an agent writes it before a command: some 1.5 KB (under the tool-output threshold), one line naming
/// an error.
fn reasoning() -> String {
    let mut t = String::from("THOUGHT: the listing shows the parser module.\n");
    for i in 0..24 {
        if i == 12 {
            t.push_str("So the TypeError comes from the alias handling.\n");
        }
        t.push_str(&format!(
            "Step {i}: the builder calls the documenter for alias {i}.\n"
        ));
    }
    t.push_str("I will print the documenter used for each alias.");
    assert!((1024..2048).contains(&t.len()), "{}", t.len());
    t
}

/// A session whose first step's output pays for the expand tool (a note alone saves less than the tool costs),
/// then the note and its call.
fn reasoning_session() -> Vec<Value> {
    let mut items = vec![
        json!({"type":"message","role":"user","content":"Why are the alias docstrings ignored?"}),
    ];
    items.extend(step("c0", "dpkg -l", &corpus("dpkg_list.txt")));
    items.push(assistant(&reasoning()));
    items.extend(step("c1", "python repro.py", "ScaffoldOpts: alias of Dict"));
    items
}

#[tokio::test]
async fn notes_keep_their_head_tail_and_error_lines_from_a_thousand_characters_on() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
    })
    .await;
    let resp = post_responses(&proxy, &body(&reasoning_session()), "sk-a").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "2");
    let sent = turn_requests(&mock).pop().unwrap();
    let visible = sent["input"][3]["content"][0]["text"].as_str().unwrap();
    let original = reasoning();
    let (seen, all): (Vec<&str>, Vec<&str>) =
        (visible.lines().collect(), original.lines().collect());
    assert_eq!(seen[..6], all[..6], "what the model saw");
    assert_eq!(
        seen[seen.len() - 8..],
        all[all.len() - 8..],
        "what it does next"
    );
    assert!(seen.contains(&"So the TypeError comes from the alias handling."));
    assert!(!visible.contains("alias 10."), "{visible}");
    let markers = ctxgate::ctxzip::find_markers(visible);
    assert_eq!(get_original(&proxy, &markers[0].0, "sk-a").await, original);
    proxy.stop().await;
}

#[tokio::test]
async fn with_agent_notes_off_or_in_a_chat_a_short_answer_stays_verbatim() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
        opts.raw.compress.agent_notes = Some(false);
    })
    .await;
    let resp = post_responses(&proxy, &body(&reasoning_session()), "sk-a").await;
    assert_eq!(
        resp.headers()["x-ctxgate-compressed"],
        "1",
        "the output only"
    );
    assert_eq!(
        turn_requests(&mock).pop().unwrap()["input"][3]["content"][0]["text"],
        reasoning()
    );
    proxy.stop().await;

    // With the default, a chat answer of the same size that has left the recent turns is not a note: it is held to
    // the tool-output threshold and stays as it is.
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.fold.mode = Some("off".into());
    })
    .await;
    let mut items = reasoning_session();
    items.truncate(4);
    items.extend([
        json!({"type":"message","role":"user","content":"Go on."}),
        assistant("Noted."),
        json!({"type":"message","role":"user","content":"And the fix?"}),
    ]);
    let resp = post_responses(&proxy, &body(&items), "sk-a").await;
    assert_eq!(
        resp.headers()["x-ctxgate-compressed"],
        "1",
        "the output only"
    );
    assert_eq!(
        turn_requests(&mock).pop().unwrap()["input"][3]["content"][0]["text"],
        reasoning()
    );
    proxy.stop().await;
}

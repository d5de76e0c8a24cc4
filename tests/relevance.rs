//! What an output keeps for the task, through the running proxy: the query a compression keeps lines for is the
//! call's own words, then the user's task — not the scene an agent harness sets (the Codex CLI's AGENTS.md and
//! environment context come as the first user message), and not a long task's prose crowding out the call's
//! words.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;
use serde_json::{Value, json};

/// A passing `pytest -v` run of 400 tests of many names, `named` among them far from the head and the tail.
fn verbose_run(named: &str) -> String {
    const MODULES: [&str; 7] = ["auth", "cache", "models", "views", "forms", "api", "utils"];
    const VERBS: [&str; 9] = [
        "creates", "rejects", "updates", "lists", "renders", "parses", "saves", "loads", "sorts",
    ];
    const NOUNS: [&str; 11] = [
        "user", "session", "token", "invoice", "widget", "report", "profile", "order", "comment",
        "page", "file",
    ];
    let mut log = String::from(
        "============================= test session starts ==============================\n\
         platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0\n\
         rootdir: /work/proj\ncollected 400 items\n\n",
    );
    for t in 0..400 {
        let name = if t == 200 {
            named.to_owned()
        } else {
            let (m, v, n) = (MODULES[t % 7], VERBS[(t / 7) % 9], NOUNS[(t / 63 + t) % 11]);
            format!("tests/test_{m}.py::test_{v}_{n}_{t}")
        };
        log.push_str(&format!("{name} PASSED [{:>3}%]\n", t / 4));
    }
    log.push_str(
        "\n============================= 400 passed in 3.21s ==============================\n",
    );
    log
}

/// The output of call `c1` as the upstream received it, after a turn of `input` items in conversation `key`.
async fn received(
    proxy: &Proxy,
    mock: &ctxgate::mock::MockHandle,
    key: &str,
    input: Value,
) -> String {
    let body = json!({"model": "mock-ok", "prompt_cache_key": key, "input": input});
    assert_eq!(
        post_responses(proxy, &body, "sk-relevance").await.status(),
        200
    );
    output_of(turn_requests(mock).last().unwrap(), "c1")
}

/// `got`, the run as the upstream received it, is compressed and still shows the line of test `named`.
fn assert_picked(log: &str, got: &str, named: &str) {
    assert!(got.len() < log.len() / 4, "not compressed:\n{got}");
    let line = format!("{named} PASSED [ 50%]");
    assert!(got.lines().any(|l| l == line), "{line} missing:\n{got}");
}

fn call_and_output(command: &str, output: &str) -> [Value; 2] {
    [
        json!({"type": "function_call", "call_id": "c1", "name": "shell",
               "arguments": json!({"command": command}).to_string()}),
        json!({"type": "function_call_output", "call_id": "c1", "output": output}),
    ]
}

/// Codex sends AGENTS.md and its environment as the first user message and the task after it: the task's words
/// pick the test it names out of a long passing run.
#[tokio::test]
async fn a_codex_task_after_the_harness_scene_is_the_query() {
    let (mock, proxy) = mock_and_proxy().await;
    let named = "tests/test_auth.py::test_rejects_login_timeout";
    let log = verbose_run(named);
    let [call, output] = call_and_output("pytest -v", &log);
    let input = json!([
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "# AGENTS.md instructions for /work/proj\n\n<INSTRUCTIONS>\nRun the tests with pytest.\n</INSTRUCTIONS>"},
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/work/proj</cwd>\n  <shell>bash</shell>\n</environment_context>"}
        ]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Make test_rejects_login_timeout stop flaking"}]},
        call,
        output
    ]);
    let got = received(&proxy, &mock, "relevance", input).await;
    assert_picked(&log, &got, named);
}

/// A long task fills the query's places; the call's own words (the test it selected) come first.
#[tokio::test]
async fn a_long_task_does_not_crowd_out_the_calls_own_words() {
    let (mock, proxy) = mock_and_proxy().await;
    let named = "tests/test_cache.py::test_loads_cache_expiry";
    let log = verbose_run(named);
    let [call, output] = call_and_output("pytest -v -k test_loads_cache_expiry", &log);
    // None of its words is in the run's test names.
    let task = "The dashboard shows stale tiles after midnight: timezone offsets, locale calendars, \
                daylight transitions, cron schedules, ledger snapshots, exchange quotes, warehouse stock, \
                courier routes, parcel labels, refund queues, audit trails, webhook retries, tenant quotas, \
                billing cycles, coupon codes, loyalty tiers and newsletter digests all disagree.";
    let input = json!([
        {"type": "message", "role": "user", "content": task},
        call,
        output
    ]);
    let got = received(&proxy, &mock, "relevance", input).await;
    assert_picked(&log, &got, named);
}

/// A task's plain words are no query: "session" and "token" name a tenth of the run's tests each, and as terms
/// they kept twenty of those lines visible. The run compresses as it does after a task with no words of its own;
/// an identifier the task names still picks its line.
#[tokio::test]
async fn a_tasks_prose_keeps_no_lines_but_its_identifiers_do() {
    let (mock, proxy) = mock_and_proxy().await;
    let named = "tests/test_views.py::test_renders_expiry_banner";
    let log = verbose_run(named);
    // Each task in a conversation of its own: a conversation decides an output once.
    let turn = |task: &str| {
        let [call, output] = call_and_output("pytest -v", &log);
        json!([{"type": "message", "role": "user", "content": task}, call, output])
    };
    let prose = turn("Users say the session token expires early.");
    let plain = received(&proxy, &mock, "prose", prose).await;
    let none = received(&proxy, &mock, "no-words", turn("Fix it.")).await;
    assert_eq!(plain, none);
    assert!(plain.len() < log.len() / 4, "not compressed:\n{plain}");
    let named_task = "Users say the session token expires early; see test_renders_expiry_banner.";
    let got = received(&proxy, &mock, "named", turn(named_task)).await;
    assert_picked(&log, &got, named);
}

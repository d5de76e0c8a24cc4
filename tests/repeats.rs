//! Outputs that repeat an earlier output of the conversation, through the running proxy: a re-run points back to
//! the earlier run's lines and keeps what changed and every error line; the pointing form is the same bytes on
//! every later turn and when the whole transcript is first seen by a fresh proxy; the original comes back whole;
//! a form is never reused where the output it points to is not there; and the setting turns it off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{Value, json};

const KEY: &str = "sk-repeats";

/// A source file printed with line numbers: what an agent views, edits, and views again.
fn file_view(changed: &str) -> String {
    let mut s = String::from("<returncode>0</returncode>\n<output>\n");
    for i in 1..=120 {
        let line = match (i, i % 4) {
            (60, _) => format!("        return {changed}"),
            (_, 0) => format!("class Widget{i}(Base):"),
            (_, 1) => format!("    def render_{i}(self, value, scale={i}):"),
            (_, 2) => format!("        result = self.cache.get(\"key_{i}\", None)"),
            _ => format!("        return result or compute(value, {i})"),
        };
        s.push_str(&format!("{i:6}\t{line}\n"));
    }
    s.push_str("</output>");
    s
}

/// A test run: passing lines, one failure with its traceback, the verdict.
fn test_run(seconds: &str) -> String {
    let mut s = String::from("<returncode>1</returncode>\n<output>\n");
    for i in 0..16 {
        s.push_str(&format!(
            "tests/test_widgets.py::test_widget_case_{i:02} PASSED            [{:3}%]\n",
            i * 100 / 17
        ));
    }
    s.push_str("tests/test_widgets.py::test_render FAILED\n");
    s.push_str("E       AssertionError: assert 'a' == 'b'\n");
    s.push_str(&format!(
        "=========== 1 failed, 16 passed in {seconds}s ===========\n</output>"
    ));
    s
}

fn call(id: &str, command: &str) -> Value {
    json!({"type": "function_call", "call_id": id, "name": "bash", "arguments": json!({"command": command}).to_string()})
}

fn output(id: &str, text: &str) -> Value {
    json!({"type": "function_call_output", "call_id": id, "output": text})
}

fn body(input: &[Value]) -> Value {
    json!({"model": "mock-ok", "prompt_cache_key": "repeats-session", "input": input})
}

/// The turns of one session: view a file, run the tests, edit and view it again, run the tests again.
fn session() -> Vec<Vec<Value>> {
    let mut input = vec![json!({"role": "user", "content": "Fix the widget rendering."})];
    let mut turns = Vec::new();
    let steps = [
        ("c1", "cat -n widgets.py", file_view("old_value")),
        ("c2", "pytest tests", test_run("1.20")),
        ("c3", "cat -n widgets.py", file_view("new_value")),
        ("c4", "pytest tests", test_run("1.31")),
    ];
    for (id, command, text) in steps {
        input.push(call(id, command));
        input.push(output(id, &text));
        turns.push(input.clone());
    }
    turns
}

#[tokio::test]
async fn a_repeated_output_points_back_and_keeps_what_changed_on_every_turn() {
    let (mock, proxy) = mock_and_proxy().await;
    for input in session() {
        assert_eq!(
            post_responses(&proxy, &body(&input), KEY).await.status(),
            200
        );
    }
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 4);
    // The second view of the file: the unchanged lines point back to the first view, the edited line stays.
    let view = output_of(&sent[2], "c3");
    assert!(
        view.contains("repeat lines 1-61 of the output of c1"),
        "{view}"
    );
    assert!(
        view.contains("    60\t        return new_value\n"),
        "{view}"
    );
    assert!(view.contains("repeat lines 63-"), "{view}");
    assert!(view.len() * 3 < file_view("new_value").len());
    // The second test run: the failure, its error line and the new verdict stay verbatim.
    let run = output_of(&sent[3], "c4");
    assert!(run.contains("of the output of c2"), "{run}");
    for line in [
        "tests/test_widgets.py::test_render FAILED",
        "E       AssertionError: assert 'a' == 'b'",
        "=========== 1 failed, 16 passed in 1.31s ===========",
    ] {
        assert!(run.contains(&format!("\n{line}\n")), "{line}: {run}");
    }
    // The first view and the first run have nothing to point to and are too small to compress on their own.
    assert_eq!(output_of(&sent[3], "c1"), file_view("old_value"));
    assert_eq!(output_of(&sent[3], "c2"), test_run("1.20"));
    // Decided once: the later turn sends the same bytes for the second view.
    assert_eq!(output_of(&sent[3], "c3"), view);
    // The model gets the whole original back.
    let hash = ctxgate::ctxzip::hash_of(&file_view("new_value"));
    assert_eq!(
        get_original(&proxy, &hash, KEY).await,
        file_view("new_value")
    );

    // A fresh proxy that first sees the whole transcript at once makes the same bytes.
    let (mock2, fresh) = mock_and_proxy().await;
    let last = session().pop().unwrap();
    assert_eq!(
        post_responses(&fresh, &body(&last), KEY).await.status(),
        200
    );
    let whole_seen = &turn_requests(&mock2)[0];
    assert_eq!(output_of(whole_seen, "c3"), view);
    assert_eq!(output_of(whole_seen, "c4"), run);
}

#[tokio::test]
async fn a_form_is_not_reused_where_what_it_points_to_is_missing() {
    let (mock, proxy) = mock_and_proxy().await;
    let turns = session();
    assert_eq!(
        post_responses(&proxy, &body(&turns[2]), KEY).await.status(),
        200
    );
    // The same anchor and the same later output, but the first view is not in this transcript.
    let without_first = vec![
        json!({"role": "user", "content": "Fix the widget rendering."}),
        call("c3", "cat -n widgets.py"),
        output("c3", &file_view("new_value")),
    ];
    assert_eq!(
        post_responses(&proxy, &body(&without_first), KEY)
            .await
            .status(),
        200
    );
    let sent = turn_requests(&mock);
    assert!(output_of(&sent[0], "c3").contains("of the output of c1"));
    assert_eq!(output_of(&sent[1], "c3"), file_view("new_value"));
}

#[tokio::test]
async fn repeats_can_be_turned_off() {
    let (mock, proxy) =
        mock_and_proxy_with(|opts| opts.raw.compress.min_repeat_chars = Some(0)).await;
    let last = session().pop().unwrap();
    assert_eq!(
        post_responses(&proxy, &body(&last), KEY).await.status(),
        200
    );
    let sent = turn_requests(&mock);
    assert_eq!(output_of(&sent[0], "c3"), file_view("new_value"));
    assert_eq!(output_of(&sent[0], "c4"), test_run("1.31"));
}

/// Source whose identifiers say `error` every third line (`violation_error_message`, `on_error`): each is an
/// error line by the floor's definition and stays visible, wherever it stands.
fn error_word_view() -> String {
    let mut s = String::from("<returncode>0</returncode>\n<output>\n");
    for i in 1..=90 {
        let line = match i % 3 {
            0 => format!("        self.violation_error_message_{i} = violation_error_message"),
            1 => format!("    def validate_{i}(self, model, instance, exclude=None, using={i}):"),
            _ => format!("        queryset = model._default_manager.using(using).filter(pk={i})"),
        };
        s.push_str(&format!("{i:6}\t{line}\n"));
    }
    s.push_str("</output>");
    s
}

#[tokio::test]
async fn a_repeat_goes_on_through_the_error_lines_it_keeps_visible() {
    // Before, a repeat ended at every error line, and pieces of two lines were not worth a marker: the second
    // view went whole.
    let (mock, proxy) = mock_and_proxy().await;
    let view = error_word_view();
    let mut input = vec![json!({"role": "user", "content": "Fix the constraint."})];
    for id in ["v1", "v2"] {
        input.push(call(id, "nl -ba django/db/models/constraints.py"));
        input.push(output(id, &view));
        let status = post_responses(&proxy, &body(&input), KEY).await.status();
        assert_eq!(status, 200);
    }
    let sent = turn_requests(&mock);
    let second = output_of(&sent[1], "v2");
    assert!(
        second
            .contains("repeat lines 1-93 of the output of v1; the 30 lines below are among them\n"),
        "{second}"
    );
    assert!(ctxgate::ctxzip::keeps_floor(&view, &second), "{second}");
    assert_eq!(
        second.matches("<<ctxzip:").count(),
        1,
        "one marker for the whole repeat: {second}"
    );
    assert!(second.len() * 2 < view.len(), "{second}");
    assert_eq!(output_of(&sent[1], "v1"), view);
}

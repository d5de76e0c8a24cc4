//! `ctxgate report` run as a user runs it: a small corpus folder in, the tables' rows (`--json`) and the dumped
//! upstream requests out.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::process::Command;

use common::corpus;
use serde_json::{Value, json};

fn step(call: &str, command: &str, output: &str) -> [Value; 2] {
    [
        json!({"type":"function_call","call_id": call,"name":"bash","arguments": json!({"command": command}).to_string()}),
        json!({"type":"function_call_output","call_id": call,"output": output}),
    ]
}

/// A corpus folder: two labelled tool outputs and one agent transcript.
fn corpus_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("tool_outputs");
    std::fs::create_dir(&outputs).unwrap();
    for name in ["cargo_build_vv.log", "dpkg_list.txt"] {
        std::fs::write(outputs.join(name), corpus(name)).unwrap();
    }
    std::fs::write(
        outputs.join("manifest.tsv"),
        "filename\tkind\tnote\ncargo_build_vv.log\tbuild_log\tcommand: cargo build -vv\ndpkg_list.txt\tdir_listing\t\n",
    )
    .unwrap();
    let transcripts = dir.path().join("transcripts");
    std::fs::create_dir(&transcripts).unwrap();
    let mut items =
        vec![json!({"type":"message","role":"user","content":"Why does the build fail?"})];
    items.extend(step("c1", "cargo build -vv", &corpus("cargo_build_vv.log")));
    items.push(json!({"type":"message","role":"assistant","content":[{"type":"output_text","text": "Looking at the packages next."}]}));
    items.extend(step("c2", "dpkg -l", &corpus("dpkg_list.txt")));
    std::fs::write(
        transcripts.join("session.json"),
        serde_json::to_string(&items).unwrap(),
    )
    .unwrap();
    dir
}

/// `ctxgate report ARGS`, which must succeed; its standard output.
fn report_of<'a>(args: impl IntoIterator<Item = &'a std::ffi::OsStr>) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .arg("report")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn report_prints_every_row_and_dumps_what_the_upstream_received() {
    let dir = corpus_dir();
    let dump = tempfile::tempdir().unwrap();
    let stdout = report_of([
        dir.path().as_os_str(),
        "--json".as_ref(),
        "--dump".as_ref(),
        dump.path().join("sent").as_os_str(),
    ]);
    let report: Value = serde_json::from_slice(&stdout).unwrap();
    let outputs = report["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2);
    for row in outputs {
        assert!(
            row["tokens_after"].as_u64() < row["tokens_before"].as_u64(),
            "{row}"
        );
        assert_eq!(row["error_lines_kept"], row["error_lines"], "{row}");
    }
    // The naive rule's count: the build log (259 lines, 4 error lines) loses its middle to it.
    let build = outputs
        .iter()
        .find(|r| r["name"] == "cargo_build_vv.log")
        .unwrap();
    let naive = build["tokens_naive"].as_u64().unwrap();
    assert!(
        0 < naive && naive < build["tokens_before"].as_u64().unwrap(),
        "{build}"
    );
    assert_eq!(
        report["outputs_total"]["tokens_naive"].as_u64().unwrap(),
        outputs
            .iter()
            .map(|r| r["tokens_naive"].as_u64().unwrap())
            .sum::<u64>()
    );
    let transcript = &report["transcripts"][0];
    assert_eq!(transcript["name"], "session.json");
    assert!(transcript["tokens_after"].as_u64() < transcript["tokens_before"].as_u64());
    assert_eq!(
        report["replays"][0]["turns"], 3,
        "one request per model call"
    );
    // The first marker brings the expand tool: the head changes, and the task message the first turn sent is read
    // again at full price. Sent as the agent sent them, nothing before a new item ever changes.
    let replay = &report["replays"][0];
    assert_eq!(replay["direct"]["reread"], 0, "{replay}");
    assert!(replay["proxy"]["reread"].as_u64().unwrap() > 0, "{replay}");
    // Where the transcript's tokens are: the parts add up to its totals; the two outputs (neither a source view)
    // shrank, the task, the notes and the calls did not.
    let parts = report["breakdown"]["parts"].as_array().unwrap();
    let sum = |key: &str| parts.iter().map(|p| p[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("before"), transcript["tokens_before"].as_u64().unwrap());
    assert_eq!(sum("after"), transcript["tokens_after"].as_u64().unwrap());
    let part = |i: usize| {
        (
            parts[i]["before"].as_u64().unwrap(),
            parts[i]["after"].as_u64().unwrap(),
        )
    };
    let (views, outputs, calls) = (part(0), part(2), part(5));
    assert_eq!(views, (0, 0));
    assert!(outputs.1 * 2 < outputs.0, "{outputs:?}");
    assert!(calls.0 > 0 && calls.0 == calls.1, "{calls:?}");

    // The dump is the request the upstream received: the outputs carry markers, the rest is the transcript's.
    let sent: Value = serde_json::from_str(
        &std::fs::read_to_string(dump.path().join("sent/session.json")).unwrap(),
    )
    .unwrap();
    let input = sent["input"].as_array().unwrap();
    assert_eq!(input.len(), 7, "the transcript and the final \"continue\"");
    assert_eq!(
        input[3]["content"][0]["text"],
        "Looking at the packages next."
    );
    for i in [2, 5] {
        let text = input[i]["output"].as_str().unwrap();
        assert!(!ctxgate::ctxzip::find_markers(text).is_empty(), "{i}");
    }
}

#[test]
fn a_missing_corpus_folder_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["report", "/nonexistent/corpus"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/corpus: no such folder"), "{err}");
}

#[test]
fn the_text_report_shows_where_the_tokens_are_and_what_the_cache_breaks_cost() {
    let dir = corpus_dir();
    let transcripts = dir.path().join("transcripts");
    let text = String::from_utf8(report_of([
        "--transcripts".as_ref(),
        transcripts.as_os_str(),
    ]))
    .unwrap();
    assert!(
        text.contains("### Where the transcripts' tokens are"),
        "{text}"
    );
    for part in [
        "| tool outputs: the others |",
        "| tool calls (the model's commands and edits) |",
        "| instructions, tools and framing |",
    ] {
        assert!(text.contains(part), "{part} missing:\n{text}");
    }
    let reread = text
        .lines()
        .find(|l| l.starts_with("Read again at full price after a cache break"))
        .unwrap();
    assert!(
        reread.contains("direct 0 tokens (0.0 % of its cost)"),
        "{reread}"
    );
}

/// `--task`: the user message each output is sent after; its words are the query, so a task about openssl changes
/// which lines of the build log are kept.
#[test]
fn a_task_given_to_the_report_becomes_the_query() {
    let dir = corpus_dir();
    let after = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            dir.path().as_os_str(),
            "--json".as_ref(),
            "--no-replay".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let report: Value = serde_json::from_slice(&report_of(args)).unwrap();
        let row = report["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "cargo_build_vv.log")
            .cloned()
            .unwrap();
        row["tokens_after"].as_u64().unwrap()
    };
    let plain = after(&[]);
    let openssl = after(&["--task", "Why does openssl-sys not find OpenSSL?"]);
    assert_ne!(openssl, plain);
}

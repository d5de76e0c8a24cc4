//! The offline commands of the `ctxgate` binary, run as a user runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

fn corpus_file(name: &str) -> String {
    let dir = std::env::var("CTXGATE_CORPUS").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/tool_outputs").to_string()
    });
    format!("{dir}/{name}")
}

#[test]
fn compress_prints_what_the_model_would_see_and_its_stats() {
    let file = corpus_file("cargo_build_vv.log");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["compress", &file, "--query", "openssl build failed"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let original = std::fs::read_to_string(&file).unwrap();
    let hash = ctxgate::ctxzip::hash_of(&original);
    assert!(
        text.contains(&format!("<<ctxzip:{hash} ")),
        "the result carries the marker"
    );
    assert!(text.contains("kind: log"));
    assert!(text.contains(&format!("hash: {hash}")));
    assert!(text.contains("(0 missing)"));
    for line in original
        .lines()
        .filter(|l| ctxgate::ctxzip::is_error_line(l))
    {
        assert!(text.contains(line), "error line lost: {line}");
    }

    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args([
            "compress",
            &corpus_file("litellm_model_cost.json"),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "json_array");
    assert_eq!(v["compressed"], true);
    assert!(v["tokens_after"].as_u64().unwrap() < v["tokens_before"].as_u64().unwrap());
    serde_json::from_str::<serde_json::Value>(v["result"].as_str().unwrap())
        .expect("the JSON result stays valid JSON");
}

#[test]
fn compress_of_a_missing_file_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["compress", "/nonexistent/file.txt"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/file.txt"), "{err}");
}

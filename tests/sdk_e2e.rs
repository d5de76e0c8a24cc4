//! The real `openai` Python SDK drives ctxgate in front of `ctxgate-mock`: `responses.create` plain and with
//! `stream=True`, and `responses.stream()`, all succeed and see the mock's text. The SDK validates every event it
//! parses, so this is also a check that ctxgate relays streams the SDK accepts.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;

/// The venv interpreter `scripts/test.sh` prepares (or `CTXGATE_E2E_PYTHON`).
fn python() -> String {
    if let Ok(p) = std::env::var("CTXGATE_E2E_PYTHON") {
        return p;
    }
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python");
    assert!(
        std::path::Path::new(venv).exists(),
        "the end-to-end tests need the openai SDK: run ./scripts/test.sh (it creates .venv) or set CTXGATE_E2E_PYTHON"
    );
    venv.to_string()
}

async fn run_sdk_check(base_url: String) -> std::process::Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/sdk_check.py");
    let py = python();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(py)
            .arg(script)
            .arg(base_url)
            .env("OPENAI_API_KEY", "sk-e2e-test")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_python_sdk_through_ctxgate() {
    let (mock, proxy) = mock_and_proxy().await;
    let out = run_sdk_check(format!("{}/v1", proxy.url)).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sdk check failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for call in [
        "ok   create (",
        "ok   create(stream=True)",
        "ok   responses.stream(",
        "ok   errors and responses.compact",
        "all SDK checks passed",
    ] {
        assert!(stdout.contains(call), "{call} missing:\n{stdout}");
    }
    // Every SDK call went through the proxy to the mock.
    let calls = mock
        .state
        .received()
        .iter()
        .filter(|r| r.path == "/v1/responses")
        .count();
    assert!(calls >= 3, "{calls}");
    proxy.stop().await;
}

/// A turn ctxgate stitches from two upstream rounds (the mock calls `context_expand`, ctxgate answers it and asks
/// again) is one response the SDK accepts in all three call styles, with no trace of the tool; every case really made
/// both rounds: the first offered `context_expand` on a compressed input, the second carried its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_python_sdk_across_an_expand_round() {
    let (mock, proxy) = mock_and_proxy().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/sdk_expand_check.py");
    let (py, base_url) = (python(), format!("{}/v1", proxy.url));
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(py)
            .arg(script)
            .arg(base_url)
            .env("OPENAI_API_KEY", "sk-e2e-test")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "expand sdk check failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for line in [
        "ok   create (mock-expand, mock-expand-mixed)",
        "ok   create(stream=True) (mock-expand, mock-expand-mixed)",
        "ok   responses.stream(...).get_final_response() (mock-expand, mock-expand-mixed)",
        "all expand SDK checks passed",
    ] {
        assert!(stdout.contains(line), "{line} missing:\n{stdout}");
    }
    // Group what the mock received by the script's per-case `prompt_cache_key`.
    let mut rounds: std::collections::BTreeMap<String, Vec<serde_json::Value>> = Default::default();
    for r in mock.state.received() {
        if r.path == "/v1/responses" {
            let body = r.json().unwrap();
            let key = body["prompt_cache_key"].as_str().unwrap_or("").to_string();
            rounds.entry(key).or_default().push(body);
        }
    }
    let names = |t: &serde_json::Value| -> Vec<String> {
        t["tools"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    for api in ["create", "stream", "helper"] {
        for model in ["mock-expand", "mock-expand-mixed"] {
            let key = format!("sdk-expand-{api}-{model}");
            let sent = rounds.get(&key).map(Vec::as_slice).unwrap_or_default();
            assert_eq!(sent.len(), 2, "{key}: two upstream rounds");
            assert!(sent.iter().all(|r| r["model"] == model), "{key}");
            // Round 1: the log rode compressed, and the tool was offered next to the client's `shell`.
            assert!(sent[0]["input"].to_string().contains("<<ctxzip:"), "{key}");
            assert_eq!(names(&sent[0]), ["shell", "context_expand"], "{key}");
            // Round 2: the model's expand call and ctxgate's answer; the mixed round's `shell` call is not carried.
            let input = sent[1]["input"].as_array().unwrap();
            let calls: Vec<&serde_json::Value> = input[3..]
                .iter()
                .filter(|i| i["type"] == "function_call")
                .collect();
            assert_eq!(calls.len(), 1, "{key}: {calls:?}");
            assert_eq!(calls[0]["name"], "context_expand", "{key}");
            assert!(
                input.iter().any(|i| i["type"] == "function_call_output"
                    && i["call_id"] == calls[0]["call_id"]
                    && i["output"].as_str().is_some_and(|o| !o.is_empty())),
                "{key}: the expand call is answered"
            );
        }
    }
    assert_eq!(
        rounds.values().map(Vec::len).sum::<usize>(),
        12,
        "{:?}",
        rounds.keys()
    );
    proxy.stop().await;
}

//! The real `openai` Python SDK drives ctxgate in front of `ctxgate-mock`: `responses.create` plain and with
//! `stream=True`, and `responses.stream()`, all succeed and see the mock's text. The SDK validates every event it
//! parses, so this is also a check that ctxgate relays streams the SDK accepts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

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
    let mock = start_mock().await;
    let proxy = start_proxy(&mock_url(&mock)).await;
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

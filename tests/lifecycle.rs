//! Start, health, metrics and a graceful stop: the binary as a user runs it, and the app in-process.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::serve::{Log, spawn_serve, wait_for_line};
use common::*;

#[tokio::test]
async fn health_ready_and_metrics() {
    let (_mock, proxy) = mock_and_proxy().await;
    let c = client();
    assert_eq!(
        c.get(format!("{}/healthz", proxy.url))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        c.get(format!("{}/readyz", proxy.url))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let _ = c
        .post(proxy.v1("/responses"))
        .body(responses_body("mock-ok", false))
        .send()
        .await
        .unwrap()
        .bytes()
        .await;
    let _ = c
        .get(proxy.v1("/models"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await;
    let text = proxy.metrics().await;
    assert!(
        text.contains(
            "ctxgate_requests_total{route=\"responses\",method=\"POST\",status=\"200\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("ctxgate_requests_total{route=\"models\",method=\"GET\",status=\"200\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("ctxgate_upstream_latency_seconds_bucket{"),
        "{text}"
    );
    assert!(
        text.contains("ctxgate_overhead_seconds_count{route=\"responses\"} 1"),
        "{text}"
    );
    // A closed store makes the proxy not ready.
    proxy.state.store.close().await.unwrap();
    assert_eq!(
        c.get(format!("{}/readyz", proxy.url))
            .send()
            .await
            .unwrap()
            .status(),
        503
    );
    proxy.stop().await;
}

#[tokio::test]
async fn store_file_is_created_private_with_its_directory() {
    let (_mock, proxy) = mock_and_proxy().await;
    let meta = std::fs::metadata(&proxy.store_path).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }
    assert!(meta.is_file());
    proxy.stop().await;
}

#[tokio::test]
async fn in_flight_stream_finishes_during_graceful_shutdown() {
    let (_mock, proxy) = mock_and_proxy().await;
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(responses_body("mock-slow", true))
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(async move { resp.text().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    proxy.stop().await; // returns once the drain is over
    let text = reader.await.unwrap().unwrap();
    assert!(
        text.contains("response.completed"),
        "the in-flight stream ran to its end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_logs_where_it_listens_and_stops_gracefully_on_sigterm() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("deep/er/ctxgate.redb");
    let upstream = mock_url(&mock);
    let args = ["--upstream", &upstream, "--store", store.to_str().unwrap()].map(String::from);
    let mut served = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_serve(&args, &[], Log::Kept)
    })
    .await
    .unwrap();
    let line = served.listening.clone();
    assert!(line.contains(&upstream), "{line}");
    assert!(line.contains(store.to_str().unwrap()), "{line}");
    let addr = served.addr.clone();
    let log = served.log.take().unwrap();
    let url = format!("http://{addr}/v1/responses");
    let resp = client()
        .post(&url)
        .body(responses_body("mock-slow", true))
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(async move { resp.text().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = served.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let text = reader.await.unwrap().unwrap();
    assert!(
        text.contains("response.completed"),
        "in-flight stream finished after SIGTERM"
    );
    let status = tokio::task::spawn_blocking(move || served.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    wait_for_line(&log, "ctxgate stopped");
    // The store was closed cleanly: it opens again at once.
    let reopened = ctxgate::store::redb::RedbStore::open(&store);
    assert!(reopened.is_ok());
}

#[test]
fn unusable_store_path_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let bad = file.join("store.redb");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot open store"), "{err}");
    assert!(err.contains("a-file"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unknown_config_key_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[server]\nlisten_addr = \"127.0.0.1:0\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["serve", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("listen_addr"), "{err}");
}

/// The binary in front of `mock`, its store in `dir`, with `env` (e.g. a log level).
async fn serve_with(
    mock: &ctxgate::mock::MockHandle,
    dir: &std::path::Path,
    env: &'static [(&'static str, &'static str)],
    log: Log,
) -> common::serve::Served {
    let store = dir.join("ctxgate.redb");
    let args = [
        "--upstream",
        &mock_url(mock),
        "--store",
        store.to_str().unwrap(),
    ]
    .map(String::from);
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_serve(&args, env, log)
    })
    .await
    .unwrap()
}

const DEBUG: &[(&str, &str)] = &[("CTXGATE_LOG", "debug")];

/// A ctxgate started from a shell that went away writes its log into a closed pipe. Losing the log must not lose
/// the requests: a failed log write used to panic the request's task (the log layer reported its own write error on
/// the same closed stderr), cutting answers off mid-body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_answered_whole_after_the_log_pipe_closes() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    // Every request logs at debug level, so each one writes into the closed pipe.
    let served = serve_with(&mock, dir.path(), DEBUG, Log::Closed).await;
    let addr = &served.addr;
    let url = format!("http://{addr}/v1/responses");
    for stream in [false, true, false, true] {
        let resp = client()
            .post(&url)
            .body(responses_body("mock-ok", stream))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let text = resp.text().await.unwrap();
        if stream {
            assert!(text.contains("response.completed"), "{text}");
        } else {
            let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(answer["status"], "completed", "{text}");
        }
    }
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_debug_level_each_request_logs_one_line_when_answered_inside_its_span() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve_with(&mock, dir.path(), DEBUG, Log::Kept).await;
    let log = served.log.take().unwrap();
    let resp = client()
        .post(format!("http://{}/v1/responses", served.addr))
        .body(responses_body("mock-ok", true))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().contains("response.completed"));
    let line = tokio::task::spawn_blocking(move || wait_for_line(&log, "answered"))
        .await
        .unwrap();
    for part in [
        "method=POST",
        "path=/v1/responses",
        "status=200",
        "elapsed=",
    ] {
        assert!(line.contains(part), "{part} in {line}");
    }
    drop(served);
}

/// A server error is worth a line at the default level, the upstream's own included (relayed as it came).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_logs_a_warning_at_the_default_level() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve_with(&mock, dir.path(), &[], Log::Kept).await;
    let log = served.log.take().unwrap();
    let url = format!("http://{}/v1/responses", served.addr);
    let ok = client()
        .post(&url)
        .body(responses_body("mock-ok", false))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let failed = client()
        .post(&url)
        .body(responses_body("mock-error-500", false))
        .send()
        .await
        .unwrap();
    assert_eq!(failed.status(), 500);
    let line =
        tokio::task::spawn_blocking(move || wait_for_line(&log, "answered with a server error"))
            .await
            .unwrap();
    for part in ["WARN", "method=POST", "path=/v1/responses", "status=500"] {
        assert!(line.contains(part), "{part} in {line}");
    }
    drop(served);
}

//! The offline commands of the `ctxgate` binary, run as a user runs them.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on what it did not expect"
)]

use std::process::Command;

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
    // Every error line (the floor's words: error, fail, exception…) stays; warnings may go to the marker once a few
    // of their kind are shown (this build prints one build-script warning per compiled C file).
    for line in original
        .lines()
        .filter(|l| ctxgate::ctxzip::is_floor_line(l))
    {
        assert!(text.contains(line), "error line lost: {line}");
    }
    assert!(text.contains("warning: aws-lc-sys@0.47.0: Compilation of "));

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
fn compress_notes_keeps_a_short_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("note.txt");
    let mut note = String::from("THOUGHT: the listing shows the parser module.\n");
    for i in 0..40 {
        let opening = ["Then", "So", "Next,"][i % 3];
        note.push_str(&format!(
            "{opening} the builder calls the documenter for alias {i}.\n"
        ));
    }
    note.push_str("I will print the documenter used for each alias.");
    std::fs::write(&path, &note).unwrap();
    let run = |notes: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
        cmd.args(["compress", path.to_str().unwrap(), "--json"]);
        if notes {
            cmd.arg("--notes");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (notes, plain) = (run(true), run(false));
    let result = notes["result"].as_str().unwrap();
    assert!(result.starts_with("THOUGHT: the listing shows the parser module.\n"));
    assert!(result.ends_with("I will print the documenter used for each alias."));
    assert!(!result.contains("alias 20."), "{result}");
    assert!(notes["tokens_after"].as_u64() < plain["tokens_after"].as_u64());
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

mod common;

use common::*;
use serde_json::json;

/// A compressible build log that mentions a domain identifier the operator may want to keep.
fn log_with(token: &str, n: usize) -> String {
    let mut log = String::new();
    for i in 0..3000 {
        log.push_str(&format!("   Compiling crate{i}-{n} v0.1.{i}\n"));
    }
    log.push_str(&format!("warning: {token} retried on worker {n}\n"));
    log
}

/// The store a proxy writes and the offline commands then read: the redb file, or a real Redis (the CLI finds it
/// through `CTXGATE_STORE_URL`, as `serve` does).
enum Backend {
    Redb(std::path::PathBuf),
    Redis { url: String, prefix: String },
}

impl Backend {
    fn configure(&self, opts: &mut ProxyOptions) {
        match self {
            Backend::Redb(path) => opts.store_path = Some(path.clone()),
            Backend::Redis { url, prefix } => {
                opts.raw.store.url = Some(url.clone());
                opts.raw.store.key_prefix = Some(prefix.clone());
                opts.raw.store.timeout_ms = Some(5_000);
            }
        }
    }

    /// `ctxgate ARGS…` pointed at this store.
    fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
        cmd.args(args);
        match self {
            Backend::Redb(path) => {
                cmd.args(["--store", path.to_str().unwrap()]);
            }
            Backend::Redis { url, prefix } => {
                cmd.env("CTXGATE_STORE_URL", url)
                    .env("CTXGATE_STORE_KEY_PREFIX", prefix);
            }
        }
        cmd.output().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suggestions_stats_and_offline_expand_over_redb() {
    let dir = tempfile::tempdir().unwrap();
    suggestions_stats_and_offline_expand(Backend::Redb(dir.path().join("s.redb"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suggestions_stats_and_offline_expand_over_redis() {
    let backend = Backend::Redis {
        url: common::redis::shared_redis().url(),
        prefix: common::redis::unique_prefix("cli"),
    };
    suggestions_stats_and_offline_expand(backend).await;
}

/// A redb file on the command line and a Redis in the environment: the CLI refuses to guess.
#[test]
fn a_store_file_beside_a_store_url_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["stats", "--store", "/tmp/x.redb"])
        .env("CTXGATE_STORE_URL", "redis://127.0.0.1:1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--store /tmp/x.redb") && err.contains("redis://127.0.0.1:1"),
        "{err}"
    );
}

/// A Redis the CLI cannot use is named with the reason, without the hint about a redb file held by `serve`.
#[test]
fn a_redis_the_cli_cannot_use_is_a_clear_error() {
    let run = |extra: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
        cmd.args(["stats"])
            .env("CTXGATE_STORE_URL", "redis://127.0.0.1:1")
            .env("CTXGATE_STORE_TIMEOUT_MS", "200");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&[("CTXGATE_STORE_PASSWORD_ENV", "CTXGATE_TEST_UNSET_PASSWORD")]);
    assert!(err.contains("CTXGATE_TEST_UNSET_PASSWORD"), "{err}");
    assert!(!err.contains("ctxgate serve is running"), "{err}");
    let err = run(&[]);
    assert!(
        err.contains("store unavailable") && err.contains("127.0.0.1:1"),
        "{err}"
    );
    assert!(!err.contains("ctxgate serve is running"), "{err}");
}

async fn suggestions_stats_and_offline_expand(backend: Backend) {
    let mock = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    backend.configure(&mut opts);
    let proxy = start_proxy_with(opts).await;
    let mut hashes = Vec::new();
    for n in 0..3 {
        let log = log_with("PoolTimeoutError", n);
        hashes.push(ctxgate::ctxzip::hash_of(&log));
        let body = json!({"model":"mock-ok","input":[
            {"role":"user","content":"why is it slow"},
            {"type":"function_call","call_id":"c","name":"exec_command","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output": log}]});
        let resp = client()
            .post(proxy.v1("/responses"))
            .header("authorization", "Bearer sk-cli")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["x-ctxgate-compressed"], "1");
        // The model (here: a script) expands each original once, with a query that finds the token.
        let expanded = client()
            .post(proxy.v1("/ctxzip/expand"))
            .header("authorization", "Bearer sk-cli")
            .body(json!({"hash": hashes[n], "query": "retried"}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(expanded.status(), 200);
    }
    // Suggestions are written in the background: wait for that work to finish.
    proxy.state.settled().await;
    let stats = stats_of(&proxy, "sk-cli").await;
    let suggestions = stats["suggestions"].as_array().unwrap();
    assert!(
        suggestions
            .iter()
            .any(|s| s["pattern"] == "PoolTimeoutError" && s["expansions"] == 3),
        "{stats}"
    );
    assert_eq!(stats["totals"]["compressions"], 3);
    proxy.stop().await;

    let out = backend.cli(&["expand", &hashes[1][..8]]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(log_with("PoolTimeoutError", 1).starts_with(text.split("\n[ctxzip: ").next().unwrap()));

    let out = backend.cli(&["stats", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["totals"]["compressions"], 3,
        "totals survive the restart of the process"
    );
    assert!(v["totals"]["expansions"].as_u64().unwrap() >= 3);
    let tenant = v["tenants"].as_object().unwrap().values().next().unwrap();
    assert_eq!(tenant["originals"], 3);
    assert_eq!(tenant["suggestions"][0]["pattern"], "PoolTimeoutError");

    let out = backend.cli(&["expand", "ffffffffffff"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("expired") || err.contains("never existed"),
        "{err}"
    );
}

/// `ctxgate health` (the image's HEALTHCHECK): exit 0 on a 2xx, non-zero with the reason on another status or no
/// server at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_probes_a_running_ctxgate() {
    let (_mock, proxy) = mock_and_proxy().await;
    let probe = |url: String| async move {
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_ctxgate"))
                .args(["health", "--url", &url, "--timeout-ms", "2000"])
                .output()
                .unwrap()
        })
        .await
        .unwrap()
    };
    let out = probe(format!("{}/healthz", proxy.url)).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("200 OK"));
    let out = probe(format!("{}/nowhere", proxy.url)).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("answered 404"));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/healthz", closed.local_addr().unwrap());
    drop(closed);
    let out = probe(url).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ctxgate: error: http://"));
    proxy.stop().await;
}

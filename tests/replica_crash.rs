//! A replica killed with SIGKILL mid-stream leaves no marker without its original: a real `ctxgate serve` process
//! on a real Redis relays several streams, is killed while they run, and another replica then serves the original
//! of every marker the upstream ever received.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::redis::{shared_redis, unique_prefix};
use common::*;
use ctxgate::mock::MockConfig;
use serde_json::json;

struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_leaves_no_marker_without_its_original() {
    let mock = ctxgate::mock::start(MockConfig {
        chunk_delay: Duration::from_millis(20),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let prefix = unique_prefix("crash");
    let url = shared_redis().url();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &mock_url(&mock),
        ])
        .args([
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/ctxgate.toml"),
        ])
        .env("CTXGATE_STORE_URL", &url)
        .env("CTXGATE_STORE_KEY_PREFIX", &prefix)
        .env_remove("CTXGATE_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let child = Killed(child);
    // Its log is read to the end (a closed pipe would fail its writes), the listening address sent back.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let addr = tokio::task::spawn_blocking(move || {
        while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                return rest
                    .split([',', ' '])
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
        }
        String::new()
    })
    .await
    .unwrap();
    assert!(!addr.is_empty(), "ctxgate serve did not start");
    let log = corpus("cargo_build_vv.log");
    let mut streams = Vec::new();
    for n in 0..4 {
        let body = json!({
            "model": "mock-slow",
            "stream": true,
            "prompt_cache_key": format!("crash-{n}"),
            "input": [
                {"role":"user","content":"What failed in the build?"},
                {"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"},
                {"type":"function_call_output","call_id":"c1","output": format!("attempt {n}\n{log}")}
            ]
        });
        let resp = client()
            .post(format!("http://{addr}/v1/responses"))
            .header("authorization", "Bearer sk-crash")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        streams.push(resp);
    }
    // Every stream has started relaying: kill the replica in the middle of them.
    for s in &mut streams {
        let first = s.chunk().await;
        assert!(matches!(first, Ok(Some(_))), "{first:?}");
    }
    let mut child = child;
    child.0.kill().unwrap();
    let _ = child.0.wait();
    for s in streams {
        let text = String::from_utf8_lossy(&s.bytes().await.unwrap_or_default()).into_owned();
        assert!(!text.contains("response.completed"), "the streams were cut");
    }

    let (_, other) = mock_and_proxy_with(|o| {
        o.raw.store.url = Some(url.clone());
        o.raw.store.key_prefix = Some(prefix.clone());
    })
    .await;
    let originals: std::collections::HashMap<String, String> = (0..4)
        .map(|n| format!("attempt {n}\n{log}"))
        .map(|o| (ctxgate::ctxzip::hash_of(&o), o))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for request in turn_requests(&mock) {
        let output = output_of(&request, "c1");
        for piece in output.split("<<ctxzip:").skip(1) {
            let hash = piece[..12].to_string();
            let original = originals.get(&hash).unwrap();
            assert_eq!(
                &get_original(&other, &hash, "sk-crash").await,
                original,
                "the original of a marker the upstream received is in the shared store"
            );
            seen.insert(hash);
        }
    }
    assert_eq!(seen.len(), 4, "each request went upstream with its marker");
    other.stop().await;
}

//! A replica killed with SIGKILL mid-stream leaves no marker without its original: a real `ctxgate serve` process
//! on a real Redis relays several streams, is killed while they run, and another replica then serves the original
//! of every marker the upstream ever received.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::time::Duration;

use common::redis::{shared_redis, unique_prefix};
use common::serve::{Log, spawn_serve};
use common::*;
use ctxgate::mock::MockConfig;
use serde_json::json;

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
    // Its log is read to the end (a closed pipe loses the log, and this test wants the process as a user runs it).
    let upstream = mock_url(&mock);
    let env = [
        ("CTXGATE_STORE_URL".to_string(), url.to_string()),
        ("CTXGATE_STORE_KEY_PREFIX".to_string(), prefix.clone()),
    ];
    let mut served = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        spawn_serve(&["--upstream", &upstream], &env, Log::Kept)
    })
    .await
    .unwrap();
    let addr = served.addr.clone();
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
    served.child.kill().unwrap();
    let _ = served.child.wait();
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

//! Compression through the running proxy keeps the conversation's prefix byte-stable across turns — and across a
//! restart — while every marker's original is safe in the store before the request carrying it leaves.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;
use ctxgate::mock::MockHandle;
use ctxgate::store::redb::RedbStore;
use serde_json::{Value, json};

const OUTPUTS: [&str; 5] = [
    "cargo_build_vv.log",
    "grep_fn_poll.txt",
    "litellm_model_cost.json",
    "ls_laR_dist_packages.txt",
    "dpkg_list.txt",
];

fn transcript(turns: usize) -> Vec<Value> {
    let mut items = vec![
        json!({"type":"message","role":"developer","content":"You are a coding agent."}),
        json!({"type":"message","role":"user","content":"Why does poll_frame fail in the tokio build?"}),
    ];
    for (t, name) in OUTPUTS.iter().enumerate().take(turns) {
        items.push(json!({"type":"function_call","call_id":format!("call_{t}"),"name":"exec_command","arguments":format!("{{\"cmd\":\"cat {name}\"}}")}));
        items.push(json!({"type":"function_call_output","call_id":format!("call_{t}"),"output":corpus(name)}));
        items.push(json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":format!("Looked at {name}.")}]}));
    }
    items
}

async fn send(proxy: &Proxy, items: &[Value], auth: &str) -> reqwest::Response {
    let body =
        json!({"model":"mock-ok","input": items, "prompt_cache_key":"thread-7", "stream": false});
    let resp = client()
        .post(proxy.v1("/responses"))
        .header("authorization", auth)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp
}

/// The raw `input` text of the last request the mock received.
fn sent_input(mock: &MockHandle) -> String {
    let rec = mock.state.received();
    let body = std::str::from_utf8(&rec.last().unwrap().body)
        .unwrap()
        .to_string();
    let v: Value = serde_json::from_str(&body).unwrap();
    let start = body.find("\"input\":").unwrap() + "\"input\":".len();
    let len = serde_json::to_string(&v["input"]).unwrap().len();
    body[start..start + len].to_string()
}

fn markers_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = ctxgate::ctxzip::find_markers(text)
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_extend_the_previous_input_byte_for_byte_even_across_a_restart() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("s.redb");
    let start = || {
        let mut opts = ProxyOptions::new(&mock_url(&mock));
        opts.store_path = Some(store_path.clone());
        opts.raw.fold.mode = Some("off".into());
        start_proxy_with(opts)
    };
    let mut proxy = start().await;
    let mut previous: Option<String> = None;
    for turn in 1..=OUTPUTS.len() {
        if turn == 3 {
            proxy.stop().await; // a restart between turns changes nothing
            proxy = start().await;
        }
        let resp = send(&proxy, &transcript(turn), "Bearer sk-a").await;
        let compressed: usize = resp.headers()["x-ctxgate-compressed"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let saved: u64 = resp.headers()["x-ctxgate-saved-tokens"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            compressed, turn,
            "every big output of turn {turn} rides compressed"
        );
        assert!(saved > 0);
        let input = sent_input(&mock);
        let raw_len: usize = transcript(turn).iter().map(|i| i.to_string().len()).sum();
        assert!(
            input.len() * 3 < raw_len,
            "turn {turn}: {} vs {raw_len}",
            input.len()
        );
        if let Some(prev) = &previous {
            let stem = &prev[..prev.len() - 1];
            assert!(
                input.starts_with(stem),
                "turn {turn} does not start with turn {}'s input",
                turn - 1
            );
        }
        previous = Some(input);
    }
    let input = previous.unwrap();
    let hashes = markers_in(&input);
    assert_eq!(hashes.len(), OUTPUTS.len());
    proxy.stop().await;

    // Every original is in the store, byte for byte, under its hash and this tenant only.
    let store = RedbStore::open(&store_path).unwrap();
    let tenant = ctxgate::proxy::auth::Tenant::from_credential(b"Bearer sk-a");
    let other = ctxgate::proxy::auth::Tenant::from_credential(b"Bearer sk-b");
    for name in OUTPUTS {
        let original = corpus(name);
        let hash = ctxgate::ctxzip::hash_of(&original);
        assert!(hashes.contains(&hash), "{name}");
        let (meta, text) = ctxgate::store::records::load_original(&store, tenant.as_str(), &hash)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text, original, "{name}");
        assert_eq!(meta.tool, "exec_command");
        assert!(
            ctxgate::store::records::load_original(&store, other.as_str(), &hash)
                .await
                .unwrap()
                .is_none()
        );
    }
}

fn tool_output(call: &str, name: &str, output: &str) -> Vec<Value> {
    vec![
        json!({"type":"function_call","call_id":call,"name":name,"arguments":"{}"}),
        json!({"type":"function_call_output","call_id":call,"output":output}),
    ]
}

#[tokio::test]
async fn what_must_stay_verbatim_stays_verbatim() {
    let mock = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.compress.exclude_tools = Some(vec!["read_file".into()]);
    // Failing outputs are compressed around their error regions by default (tests/error_floor.rs); the old
    // behaviour, kept by this setting, sends them whole.
    opts.raw.compress.failures = Some("verbatim".into());
    opts.raw.fold.mode = Some("off".into()); // this transcript is over the fold budget: only compression is tested
    let proxy = start_proxy_with(opts).await;
    let log = corpus("cargo_build_vv.log");
    let failing = format!(
        "Chunk ID: 9\nWall time: 2.0 seconds\nProcess exited with code 101\nOutput:\n{log}"
    );
    let traceback = corpus("python_traceback_httpx.txt").repeat(2);
    let marked = format!("<<ctxzip:0123456789ab 5_lines_offloaded>>\n{log}");
    let mut items = vec![json!({"role":"user","content":"build it"})];
    items.extend(tool_output("c1", "exec_command", &failing));
    items.extend(tool_output("c2", "exec_command", &traceback));
    items.extend(tool_output("c3", "read_file", &log));
    items.extend(tool_output("c4", "context_expand", &log));
    items.extend(tool_output("c5", "exec_command", &marked));
    items.extend(tool_output("c6", "exec_command", "short output"));
    let body = json!({"model":"mock-ok","input": items}).to_string();
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
    // No item is rewritten: the input goes upstream byte for byte (the output that already holds a marker only
    // makes ctxgate offer the expand tool beside it).
    let input_bytes = serde_json::to_string(&json!(items)).unwrap();
    let sent = mock.state.received().last().unwrap().body.clone();
    assert!(
        std::str::from_utf8(&sent).unwrap().contains(&input_bytes),
        "nothing rewritten"
    );

    // The same transcript with a compressible output is rewritten — unless the client asks for a bypass.
    let mut with_big = items.clone();
    with_big.extend(tool_output("c7", "exec_command", &log));
    let body = json!({"model":"mock-ok","input": with_big}).to_string();
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "1");
    let bypass = client()
        .post(proxy.v1("/responses"))
        .header("x-ctxgate-bypass", "1")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(bypass.status(), 200);
    assert_eq!(
        mock.state.received().last().unwrap().body.as_ref(),
        body.as_bytes()
    );
    proxy.stop().await;
}

#[tokio::test]
async fn recent_outputs_and_turns_are_protected_when_configured() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.compress.protect_recent = Some(1);
    })
    .await;
    let log = corpus("cargo_build_vv.log");
    let grep = corpus("grep_fn_poll.txt");
    let long_reply = format!("Here is what I found:\n{}", corpus("dpkg_list.txt"));
    let mut items = vec![
        json!({"role":"developer","content":"be brief"}),
        json!({"role":"user","content":"first task"}),
        json!({"type":"message","role":"assistant","content":[{"type":"output_text","text": long_reply}]}),
        json!({"role":"user","content":"second task"}),
        json!({"role":"user","content":"third task"}),
    ];
    items.extend(tool_output("c1", "exec_command", &log));
    items.extend(tool_output("c2", "exec_command", &grep));
    let resp = send(&proxy, &items, "Bearer sk-p").await;
    // The older output and the assistant message (outside the last 2 user turns) are compressed; the newest output
    // is protected.
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "2");
    let sent: Value = mock.state.received().last().unwrap().json().unwrap();
    assert!(ctxgate::ctxzip::contains_marker(
        &sent["input"][2].to_string()
    ));
    assert!(ctxgate::ctxzip::contains_marker(
        sent["input"][6]["output"].as_str().unwrap()
    ));
    assert_eq!(sent["input"][8]["output"].as_str().unwrap(), grep);
    proxy.stop().await;
}

#[tokio::test]
async fn a_store_that_cannot_be_written_leaves_items_verbatim_and_the_turn_goes_on() {
    let (mock, proxy) = mock_and_proxy().await;
    proxy.state.store.close().await.unwrap();
    let mut items = vec![json!({"role":"user","content":"go"})];
    items.extend(tool_output(
        "c1",
        "exec_command",
        &corpus("cargo_build_vv.log"),
    ));
    let body = json!({"model":"mock-ok","input": items}).to_string();
    let resp = client()
        .post(proxy.v1("/responses"))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
    assert_eq!(
        mock.state.received().last().unwrap().body.as_ref(),
        body.as_bytes()
    );
    let metrics = proxy.metrics().await;
    assert!(
        metrics.contains("ctxgate_compress_skipped_total{reason=\"store_failed\"} 1"),
        "{metrics}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn savings_are_counted_per_compression_and_per_wire_use() {
    let (_mock, proxy) = mock_and_proxy().await;
    let items = transcript(1);
    let first = send(&proxy, &items, "Bearer sk-s").await;
    let saved: u64 = first.headers()["x-ctxgate-saved-tokens"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let _ = send(&proxy, &items, "Bearer sk-s").await;
    let metrics = proxy.metrics().await;
    assert!(
        metrics.contains("ctxgate_compressions_total{kind=\"log\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!("ctxgate_compress_saved_tokens_total {saved}")),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!("ctxgate_wire_saved_tokens_total {}", 2 * saved)),
        "{metrics}"
    );
    proxy.stop().await;
}

/// The expiry of a tenant's original as the store holds it.
async fn original_expiry(proxy: &Proxy, tenant: &ctxgate::proxy::auth::Tenant, hash: &str) -> u64 {
    proxy
        .state
        .store
        .get(
            ctxgate::store::Namespace::Originals,
            tenant.as_str(),
            hash,
            0,
        )
        .await
        .unwrap()
        .unwrap()
        .expires_at
        .unwrap()
}

#[tokio::test]
async fn a_marker_still_carried_keeps_its_original_alive() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("s.redb");
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.store_path = Some(store_path.clone());
    opts.raw.compress.ttl_secs = Some(600);
    let proxy = start_proxy_with(opts).await;
    let items = transcript(1);
    let hash = ctxgate::ctxzip::hash_of(&corpus(OUTPUTS[0]));
    let tenant = ctxgate::proxy::auth::Tenant::from_credential(b"Bearer sk-ttl");
    let expiry = || original_expiry(&proxy, &tenant, &hash);
    // The original is written at some second between these two readings of the proxy's clock (a loaded machine may
    // take more than a second over the request).
    let before = proxy.state.clock.unix_now();
    let _ = send(&proxy, &items, "Bearer sk-ttl").await;
    proxy.state.settled().await;
    let after = proxy.state.clock.unix_now();
    let first = expiry().await;
    assert!(
        first >= before + 600 && first <= after + 600,
        "expiry {first} not TTL after the write ({before}..={after})"
    );
    // A later request still carrying the marker moves the expiry to at least TTL after it: the proxy's clock is
    // moved on (no sleeping), and the refresh written in the background is waited for.
    proxy.state.clock.advance(std::time::Duration::from_secs(2));
    let _ = send(&proxy, &items, "Bearer sk-ttl").await;
    let later = proxy.state.clock.unix_now();
    proxy.state.settled().await;
    let refreshed = expiry().await;
    assert!(
        refreshed >= later + 600,
        "expiry {refreshed} not refreshed past {}",
        later + 600
    );
    proxy.stop().await;
}

/// Expanding an original keeps it alive for the TTL after the expansion, but rewrites its record only when less
/// than the TTL is left: the rewrite copies the whole original, so expanding a large one again and again must not
/// cost a write each time.
#[tokio::test]
async fn an_expansion_keeps_its_original_alive_without_rewriting_it_each_time() {
    let mock = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.compress.ttl_secs = Some(600);
    let proxy = start_proxy_with(opts).await;
    let items = transcript(1);
    let hash = ctxgate::ctxzip::hash_of(&corpus(OUTPUTS[0]));
    let tenant = ctxgate::proxy::auth::Tenant::from_credential(b"Bearer sk-exp");
    let expiry = || original_expiry(&proxy, &tenant, &hash);
    let expand = || async {
        let answer = reqwest::Client::new()
            .get(format!("{}/v1/ctxzip/{hash}?limit=5", proxy.url))
            .header("authorization", "Bearer sk-exp")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        proxy.state.settled().await;
    };
    let _ = send(&proxy, &items, "Bearer sk-exp").await;
    proxy.state.settled().await;
    let written = expiry().await;
    // 100 s later less than the TTL is left: the expansion moves the expiry to TTL + slack after it.
    proxy
        .state
        .clock
        .advance(std::time::Duration::from_secs(100));
    let first_use = proxy.state.clock.unix_now();
    expand().await;
    let refreshed = expiry().await;
    assert!(
        refreshed > written && refreshed >= first_use + 600,
        "expiry {refreshed} not moved past {} (was {written})",
        first_use + 600
    );
    // 30 s after that the TTL is still ahead: expanding again leaves the record alone.
    proxy
        .state
        .clock
        .advance(std::time::Duration::from_secs(30));
    let second_use = proxy.state.clock.unix_now();
    expand().await;
    let kept = expiry().await;
    assert_eq!(
        kept, refreshed,
        "a refresh that was not due rewrote the original"
    );
    assert!(
        kept >= second_use + 600,
        "expiry {kept} is not a TTL after the last use"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_compression_that_saves_too_little_is_not_applied() {
    let (mock, proxy) = mock_and_proxy_with(|opts| {
        opts.raw.compress.min_saved_tokens = Some(1_000_000);
    })
    .await;
    let items = transcript(1);
    let resp = send(&proxy, &items, "Bearer sk-small").await;
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
    let sent: Value = mock.state.received().last().unwrap().json().unwrap();
    assert_eq!(sent["input"], json!(items), "sent as the client sent it");
    assert!(
        sent.get("tools").is_none(),
        "no marker, so no expand tool either"
    );
    assert!(
        proxy
            .metrics()
            .await
            .contains("ctxgate_compress_skipped_total{reason=\"awaiting_first_marker\"} 1")
    );
    proxy.stop().await;
}

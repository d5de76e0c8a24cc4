//! The time ctxgate adds to a `/v1/responses` turn: parse → stages (compress, fold) → serialize, with the app built
//! exactly as `ctxgate serve` builds it (real redb store, mock upstream in-process for the one fold call).
//!
//! Cases from the issues: a 2 MB transcript under the fold budget (target under 1 ms), a 2 MB transcript on a
//! reused fold (target under 3 ms), and a 1 MB transcript of real tool outputs all compressed on earlier turns
//! (target under 2 ms). `parse_only` is the floor: reading and re-writing the body with no stage.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use ctxgate::config::Config;
use ctxgate::config::raw::RawConfig;
use ctxgate::responses::RequestBody;
use ctxgate::turn::Turn;
use ctxgate::turn::stage::run_stages;
use serde_json::{Value, json};

/// A Codex-like transcript of about `bytes` bytes: developer prompt, task, then small build-log exchanges
/// (each under the compression threshold, so only the fold acts).
fn synthetic(bytes: usize) -> Vec<Value> {
    let mut items = vec![
        json!({"type":"message","role":"developer","content":"You are a coding agent.".repeat(40)}),
        json!({"type":"message","role":"user","content":"Fix the failing build."}),
    ];
    let mut t = 0;
    while serde_json::to_vec(&items).unwrap().len() < bytes {
        items.push(json!({"type":"function_call","call_id":format!("call_{t}"),"name":"exec_command","arguments":format!("{{\"cmd\":\"cargo build -p crate{t}\"}}")}));
        let out: String = (0..30)
            .map(|l| format!("Compiling crate{t} v0.{l}.0\n"))
            .collect();
        items.push(
            json!({"type":"function_call_output","call_id":format!("call_{t}"),"output":out}),
        );
        t += 1;
    }
    items
}

/// About `bytes` bytes of real tool outputs from the corpus, each a compressible `function_call_output`.
fn from_corpus(bytes: usize) -> Vec<Value> {
    let dir = std::env::var("CTXGATE_CORPUS").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tool_outputs").to_string()
    });
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut items =
        vec![json!({"type":"message","role":"user","content":"Why does the tokio build fail?"})];
    let mut total = 0;
    for (t, path) in names.iter().cycle().enumerate() {
        if total >= bytes {
            break;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let take: String = text.chars().take(120_000).collect();
        total += take.len();
        items.push(json!({"type":"function_call","call_id":format!("c{t}"),"name":"exec_command","arguments":"{}"}));
        items.push(json!({"type":"function_call_output","call_id":format!("c{t}"),"output":take}));
    }
    items
}

struct Rig {
    rt: tokio::runtime::Runtime,
    app: ctxgate::App,
    _dir: tempfile::TempDir,
    _mock: ctxgate::mock::MockHandle,
}

fn rig(budget: u64) -> Rig {
    rig_with(budget, None)
}

/// `min_repeat_chars = Some(0)` turns repeats off: the same turn without looking for them, for comparison.
fn rig_with(budget: u64, min_repeat_chars: Option<u64>) -> Rig {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt
        .block_on(ctxgate::mock::start(ctxgate::mock::MockConfig::default()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut raw = RawConfig::default();
    raw.upstream.url = Some(format!("http://{}/v1", mock.addr));
    raw.store.path = Some(dir.path().join("s.redb").display().to_string());
    raw.fold.mode = Some("local".into());
    raw.fold.model = Some("mock-summary".into());
    raw.fold.budget = Some(budget);
    raw.compress.min_repeat_chars = min_repeat_chars;
    let config = Config::resolve(raw).unwrap();
    let env = std::collections::HashMap::<String, String>::new();
    let app = rt
        .block_on(async { ctxgate::App::build(config, &env) })
        .unwrap();
    Rig {
        rt,
        app,
        _dir: dir,
        _mock: mock,
    }
}

/// One turn's work inside ctxgate, as the handler does it; returns the body sent and the stages' headers.
async fn run_turn(rig: &Rig, body: &Bytes) -> (Bytes, Vec<(String, String)>) {
    let state = &rig.app.state;
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("authorization", "Bearer sk-bench".parse().unwrap());
    let caller = state.credentials.authenticate(&headers).unwrap();
    let body = RequestBody::parse(body.clone()).unwrap();
    let mut turn = Turn::new("bench".into(), caller, body, headers);
    run_stages(&state.stages, &mut turn, &state.metrics)
        .await
        .unwrap();
    let headers = turn
        .response_headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    (turn.body.to_bytes(), headers)
}

fn header(headers: &[(String, String)], name: &str) -> String {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("turn");
    group.sample_size(30);

    let body = Bytes::from(
        json!({"model":"mock-ok","input": synthetic(2 << 20), "prompt_cache_key":"bench"})
            .to_string(),
    );
    let under = rig(10_000_000);
    let (_, h) = under.rt.block_on(run_turn(&under, &body));
    assert_eq!(header(&h, "x-ctxgate-fold"), "none");
    group.bench_function("2mb_under_budget", |b| {
        b.iter(|| under.rt.block_on(run_turn(&under, &body)))
    });

    let off = rig_with(10_000_000, Some(0));
    let _ = off.rt.block_on(run_turn(&off, &body));
    group.bench_function("2mb_under_budget_repeats_off", |b| {
        b.iter(|| off.rt.block_on(run_turn(&off, &body)))
    });

    let folded = rig(100_000);
    let (_, h) = folded.rt.block_on(run_turn(&folded, &body));
    assert_eq!(header(&h, "x-ctxgate-fold"), "applied");
    let (_, h) = folded.rt.block_on(run_turn(&folded, &body));
    assert_eq!(header(&h, "x-ctxgate-fold"), "reused");
    group.bench_function("2mb_reused_fold", |b| {
        b.iter(|| folded.rt.block_on(run_turn(&folded, &body)))
    });

    let real = Bytes::from(
        json!({"model":"mock-ok","input": from_corpus(1 << 20), "prompt_cache_key":"bench-c"})
            .to_string(),
    );
    let compressed = rig(10_000_000);
    let (sent, h) = compressed.rt.block_on(run_turn(&compressed, &real));
    assert_ne!(header(&h, "x-ctxgate-compressed"), "0");
    assert!(sent.len() < real.len() / 4);
    group.bench_function("1mb_all_compressed_earlier", |b| {
        b.iter(|| compressed.rt.block_on(run_turn(&compressed, &real)))
    });

    group.bench_function("2mb_parse_only", |b| {
        b.iter(|| RequestBody::parse(body.clone()).unwrap().to_bytes())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

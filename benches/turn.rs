//! The time ctxgate adds to a `/v1/responses` turn: parse → stages → serialize, with the real fold stage and the
//! real redb store, on a 2 MB transcript. Two cases from the fold issue: a transcript under budget (nothing to do;
//! target under 1 ms) and one on a reused fold (the stored output spliced in; target under 3 ms).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use ctxgate::config::Config;
use ctxgate::config::raw::RawConfig;
use ctxgate::proxy::auth::Credentials;
use ctxgate::proxy::fold::FoldStage;
use ctxgate::proxy::turn::{Stage, Turn};
use ctxgate::proxy::upstream::Upstream;
use ctxgate::responses::RequestBody;
use ctxgate::store::Store;
use ctxgate::store::redb::RedbStore;
use serde_json::{Value, json};

/// A Codex-like transcript of about `bytes` bytes: developer prompt, task, then tool exchanges of ~8 KB.
fn transcript(bytes: usize) -> Vec<Value> {
    let mut items = vec![
        json!({"type":"message","role":"developer","content":"You are a coding agent.".repeat(40)}),
        json!({"type":"message","role":"user","content":"Fix the failing build."}),
    ];
    let mut t = 0;
    while serde_json::to_vec(&items).unwrap().len() < bytes {
        items.push(json!({"type":"function_call","call_id":format!("call_{t}"),"name":"exec_command","arguments":format!("{{\"cmd\":\"cargo build -p crate{t}\"}}")}));
        let out: String = (0..100)
            .map(|l| format!("   Compiling crate{t} v0.{l}.0 (/src/crate{t}) warning: unused\n"))
            .collect();
        items.push(
            json!({"type":"function_call_output","call_id":format!("call_{t}"),"output":out}),
        );
        t += 1;
    }
    items
}

struct Rig {
    rt: tokio::runtime::Runtime,
    stage: Arc<dyn Stage>,
    credentials: Credentials,
    _dir: tempfile::TempDir,
    _mock: ctxgate::mock::MockHandle,
}

fn rig(budget: u64) -> Rig {
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
    raw.fold.mode = Some("local".into());
    raw.fold.model = Some("mock-summary".into());
    raw.fold.budget = Some(budget);
    let config = Config::resolve(raw).unwrap();
    let store: Arc<dyn Store> = Arc::new(RedbStore::open(&dir.path().join("s.redb")).unwrap());
    let upstream = Upstream::new(&config.upstream).unwrap();
    let stage: Arc<dyn Stage> = Arc::new(FoldStage::new(
        config.fold.clone(),
        store,
        upstream,
        Arc::new(ctxgate::telemetry::Metrics::new()),
        tokio_util::task::TaskTracker::new(),
    ));
    Rig {
        rt,
        stage,
        credentials: Credentials::forward(),
        _dir: dir,
        _mock: mock,
    }
}

/// One turn's work inside ctxgate, as the handler does it.
async fn run_turn(rig: &Rig, body: &Bytes) -> (Bytes, String) {
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("authorization", "Bearer sk-bench".parse().unwrap());
    let caller = rig.credentials.authenticate(&headers).unwrap();
    let mut turn = Turn {
        request_id: "bench".into(),
        caller,
        body: RequestBody::parse(body.clone()).unwrap(),
        client_headers: headers,
        response_headers: Vec::new(),
    };
    rig.stage.apply(&mut turn).await.unwrap();
    let outcome = turn
        .response_headers
        .iter()
        .find(|(k, _)| k == "x-ctxgate-fold")
        .map(|(_, v)| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (turn.body.to_bytes(), outcome)
}

fn bench(c: &mut Criterion) {
    let items = transcript(2 * 1024 * 1024);
    let body = Bytes::from(
        json!({"model":"mock-ok","input": items, "prompt_cache_key":"bench"}).to_string(),
    );
    let mut group = c.benchmark_group("turn_2mb");
    group.sample_size(30);

    let under = rig(10_000_000);
    let (_, outcome) = under.rt.block_on(run_turn(&under, &body));
    assert_eq!(outcome, "none");
    group.bench_function("under_budget", |b| {
        b.iter(|| under.rt.block_on(run_turn(&under, &body)))
    });

    let folded = rig(100_000);
    let (_, first) = folded.rt.block_on(run_turn(&folded, &body));
    assert_eq!(first, "applied");
    let (_, again) = folded.rt.block_on(run_turn(&folded, &body));
    assert_eq!(again, "reused");
    group.bench_function("reused_fold", |b| {
        b.iter(|| folded.rt.block_on(run_turn(&folded, &body)))
    });

    // The floor: parsing and re-serializing the body with no stage at all.
    group.bench_function("parse_only", |b| {
        b.iter(|| RequestBody::parse(body.clone()).unwrap().to_bytes())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

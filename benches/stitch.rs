//! The cost of the expand path's stream stitcher on a one-round SSE answer (the common case once a turn carries a
//! marker, the tool offered and not called): every event's head read, the injected tool and directive taken out of
//! the echoed response objects, the rest relayed as it came. The baseline in the same group is the SSE parser
//! alone over the same stream (what any reader of the events pays), so the stitcher's own share is the difference.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgate::expand::stitch::Stitcher;
use serde_json::json;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mock = rt
        .block_on(ctxgate::mock::start(ctxgate::mock::MockConfig::default()))
        .unwrap();
    let mut tools = vec![json!({"type":"function","name":"shell","parameters":{"type":"object"}})];
    tools.push(ctxgate::expand::tool::tool_definition());
    let body = json!({"model":"mock-ok","stream":true,"tools":tools,
        "instructions": ctxgate::expand::tool::append_directive(Some("be brief")),
        "input":[{"role":"user","content":"hello"}]});
    let stream = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("http://{}/v1/responses", mock.addr))
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    });
    let mut group = c.benchmark_group("stitch");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("sse_parser_alone", |b| {
        b.iter(|| {
            let mut p = ctxgate::expand::sse::SseParser::new();
            let events = p.push(&stream);
            events.len() + p.finish().events.len()
        })
    });
    group.bench_function("one_round_mock_ok", |b| {
        b.iter(|| {
            let mut s = Stitcher::new("context_expand");
            let mut n = 0;
            for out in s.push(&stream) {
                n += out.len();
            }
            let _ = s.end_round();
            for out in s.finish() {
                n += out.len();
            }
            n
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

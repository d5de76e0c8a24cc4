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
    group(c, "stitch", "", &stream, stream.len() as u64);
    // A long answer as a model streams it: one delta event per token or two, hundreds of them. The stitcher's
    // cost on such a stream is its per-event head read; the parser alone is again the baseline.
    let long = long_answer(&stream, 500);
    group(c, "stitch_long", "_500_deltas", &long, 500);
}

/// The SSE parser alone over `stream` (the baseline) and a one-round stitch of it; `throughput` in bytes for the
/// mock's answer, in events for the long one.
fn group(c: &mut Criterion, name: &str, suffix: &str, stream: &[u8], throughput: u64) {
    let mut group = c.benchmark_group(name);
    group.throughput(if suffix.is_empty() {
        Throughput::Bytes(throughput)
    } else {
        Throughput::Elements(throughput)
    });
    let round = if suffix.is_empty() {
        "one_round_mock_ok".to_string()
    } else {
        format!("one_round{suffix}")
    };
    group.bench_function(format!("sse_parser_alone{suffix}"), |b| {
        b.iter(|| {
            let mut p = ctxgate::expand::sse::SseParser::new();
            let events = p.push(stream);
            events.len() + p.finish().events.len()
        })
    });
    group.bench_function(round, |b| {
        b.iter(|| {
            let mut s = Stitcher::new("context_expand");
            let mut n = 0;
            for out in s.push(stream) {
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

/// The mock's answer with its text deltas replaced by `n` short ones, sequence numbers renumbered: the shape of a
/// long streamed message.
fn long_answer(stream: &[u8], n: usize) -> Vec<u8> {
    let text = std::str::from_utf8(stream).unwrap();
    let mut events: Vec<serde_json::Value> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let data = block
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap();
        events.push(serde_json::from_str(data).unwrap());
    }
    let first_delta = events
        .iter()
        .position(|e| e["type"] == "response.output_text.delta")
        .unwrap();
    let template = events[first_delta].clone();
    events.retain(|e| e["type"] != "response.output_text.delta");
    for i in 0..n {
        let mut delta = template.clone();
        delta["delta"] = json!(format!(" word{i}"));
        events.insert(first_delta + i, delta);
    }
    let mut out = Vec::new();
    for (seq, e) in events.iter_mut().enumerate() {
        e["sequence_number"] = json!(seq);
        let kind = e["type"].as_str().unwrap().to_string();
        out.extend_from_slice(format!("event: {kind}\ndata: {e}\n\n").as_bytes());
    }
    out
}

criterion_group!(benches, bench);
criterion_main!(benches);

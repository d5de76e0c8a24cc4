//! Throughput of ctxzip: per content kind over the corpus (files grouped by `detect`), and on synthetic
//! 10 MB inputs (a service log, a JSON list answer, one minified line) — the sizes the proxy must handle well
//! under a second on its hot path.
//!
//! Run: `CTXGATE_CORPUS=… cargo bench --bench ctxzip -- --warm-up-time 1 --measurement-time 3`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgate::ctxzip::{Options, compress, detect, query_terms};

fn corpus() -> Vec<(String, String)> {
    let dir = match std::env::var_os("CTXGATE_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tool_outputs"),
    };
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    Some((
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read_to_string(e.path()).ok()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

const TEN_MB: usize = 10 * 1024 * 1024;

fn synthetic_log() -> String {
    let mut s = String::with_capacity(TEN_MB + 200);
    let mut i = 0u64;
    while s.len() < TEN_MB {
        let level = match i % 997 {
            0 => "ERROR",
            500 => "WARN",
            _ => "INFO",
        };
        s.push_str(&format!(
            "2026-01-{:02}T{:02}:{:02}:{:02}.{:03}Z {level} worker-{} handled request id={:016x} path=/v1/items/{} in {}ms\n",
            1 + i % 28,
            i % 24,
            i % 60,
            (i / 60) % 60,
            i % 1000,
            i % 8,
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            i % 5000,
            i % 250
        ));
        i += 1;
    }
    s
}

fn synthetic_json() -> String {
    let mut s = String::with_capacity(TEN_MB + 200);
    s.push('[');
    let mut i = 0u64;
    while s.len() < TEN_MB {
        if i > 0 {
            s.push(',');
        }
        let status = if i % 1013 == 0 {
            "failed"
        } else if i % 7 == 0 {
            "skipped"
        } else {
            "ok"
        };
        s.push_str(&format!(
            "{{\"id\":{i},\"name\":\"job-{i}\",\"status\":\"{status}\",\"latency_ms\":{},\"tags\":[\"a\",\"b\"],\"message\":\"step {} finished\"}}",
            i % 977,
            i % 31
        ));
        i += 1;
    }
    s.push(']');
    s
}

fn bench(c: &mut Criterion) {
    let opts = Options {
        query: query_terms("why does hyper-util poll_flush fail"),
        ..Options::default()
    };
    let mut by_kind: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for (_, text) in corpus() {
        by_kind
            .entry(detect(&text).as_str())
            .or_default()
            .push(text);
    }
    let mut group = c.benchmark_group("corpus_kind");
    for (kind, texts) in &by_kind {
        let bytes: usize = texts.iter().map(String::len).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_function(*kind, |b| {
            b.iter(|| {
                for t in texts {
                    black_box(compress(black_box(t), &opts));
                }
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("synthetic_10mb");
    group.sample_size(10);
    let single_line = "{\"k\":\"v\",".repeat(TEN_MB / 10);
    for (name, text) in [
        ("log", synthetic_log()),
        ("json_array", synthetic_json()),
        ("single_line", single_line),
    ] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| black_box(compress(black_box(&text), &opts)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! The request body split that every `/v1/responses` turn starts with (`responses::split`), against the serde_json
//! scan it replaced (members borrowed as `RawValue`s, `input` as a list of them), in the same run.
//!
//! Bodies built from the tool outputs in `tests/fixtures/`: a 10 KB turn (one build log behind a function call)
//! and a 1 MB agent transcript (150 outputs, JSON ones among them, so strings full of `\n` and `\"`). The
//! transcript is also split as the next turn of its conversation is: its items known from the last body
//! (`responses::known`, checked by one hash over their bytes instead of walked).
#![expect(
    clippy::unwrap_used,
    reason = "a bench fails loudly on what it did not expect"
)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgate::responses::RequestBody;
use ctxgate::responses::split::{SplitInput, split, split_known};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;

fn fixtures() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tool_outputs");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

fn body(items: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"model": "mock-ok", "stream": false, "input": items})).unwrap()
}

fn head() -> Vec<Value> {
    vec![
        json!({"type":"message","role":"developer","content":"You are a coding agent working in a Rust repository."}),
        json!({"role":"user","content":"The release build fails on CI but not locally. Find out why and fix it."}),
    ]
}

/// A turn of about `bytes` bytes: one tool output (the build log) behind its call.
fn turn(fixtures: &[(String, String)], bytes: usize) -> Vec<u8> {
    let log = fixtures
        .iter()
        .find(|(name, _)| name.starts_with("cargo_build"))
        .map_or("", |(_, text)| text.as_str());
    let mut output: String = log.chars().take(bytes).collect();
    let mut items = head();
    items.push(json!({"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"}));
    items.push(json!({"type":"function_call_output","call_id":"c1","output":""}));
    while body(items.clone()).len() + output.len() > bytes {
        output.pop();
    }
    items[3]["output"] = Value::String(output);
    body(items)
}

/// An agent transcript of about `bytes` bytes: 150 tool outputs, slices of the fixtures in turn.
fn transcript(fixtures: &[(String, String)], bytes: usize) -> Vec<u8> {
    let per = bytes / 150;
    let mut items = head();
    for (i, (name, text)) in fixtures.iter().cycle().take(150).enumerate() {
        let piece: String = text.chars().cycle().skip(i * 997).take(per).collect();
        let call_id = format!("c{i}");
        let arguments = json!({ "cmd": name }).to_string();
        items.push(json!({"type":"function_call","call_id":call_id,"name":"exec_command","arguments":arguments}));
        items.push(json!({"type":"function_call_output","call_id":call_id,"output":piece}));
    }
    body(items)
}

/// The baseline: serde_json borrowing every member as a `RawValue` and the `input` array's items.
struct SerdeScan<'a> {
    members: Vec<(Cow<'a, str>, Option<&'a RawValue>)>,
    items: Vec<&'a RawValue>,
}

impl<'de> serde::Deserialize<'de> for SerdeScan<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SerdeScan<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut scan = SerdeScan {
                    members: Vec::new(),
                    items: Vec::new(),
                };
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "input" && scan.items.is_empty() {
                        scan.items = map.next_value()?;
                        scan.members.push((key, None));
                    } else {
                        scan.members.push((key, Some(map.next_value()?)));
                    }
                }
                Ok(scan)
            }
        }
        d.deserialize_map(V)
    }
}

fn bench(c: &mut Criterion) {
    let fixtures = fixtures();
    let mut group = c.benchmark_group("body_split");
    for (name, body) in [
        ("10k", turn(&fixtures, 10 << 10)),
        ("1m_transcript", transcript(&fixtures, 1 << 20)),
    ] {
        let items = match split(&body).unwrap().input {
            Some((_, SplitInput::Items(items))) => items.len(),
            _ => 0,
        };
        let scan = serde_json::from_slice::<SerdeScan<'_>>(&body).unwrap();
        assert_eq!(items, scan.items.len());
        assert!(scan.members.len() == 3 && items > 3);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(format!("{name}_split"), |b| {
            b.iter(|| split(&body).unwrap())
        });
        group.bench_function(format!("{name}_serde"), |b| {
            b.iter(|| serde_json::from_slice::<SerdeScan<'_>>(&body).unwrap())
        });
        if name == "1m_transcript" {
            let parsed = RequestBody::parse(bytes::Bytes::from(body.clone())).unwrap();
            let known = [Arc::new(parsed.known_items().unwrap())];
            assert!(split_known(&body, &known).unwrap().verified.is_some());
            group.bench_function(format!("{name}_split_known"), |b| {
                b.iter(|| split_known(&body, &known).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Realistic Responses API SSE rounds (same event order and framing as
//! `src/mock/sse.rs`) and a driver running the stitcher over them.

use bytes::Bytes;
use ctxgate::expand::sse::SseParser;
use ctxgate::expand::stitch::{RoundEnd, Stitcher};
use serde_json::{Map, Value, json};

pub const TOOL: &str = ctxgate::expand::tool::EXPAND_TOOL;

#[derive(Clone)]
pub enum It {
    Reasoning(&'static str),
    Message(&'static str),
    Call(&'static str, &'static str),
}

#[derive(Clone)]
pub struct Round {
    pub id: &'static str,
    pub items: Vec<It>,
    pub outcome: &'static str,
    pub usage: (u64, u64),
    /// Whether the echoed `tools` holds the expand tool ctxgate injected.
    pub with_tool: bool,
}

impl Round {
    pub fn new(id: &'static str, items: Vec<It>) -> Self {
        let usage = (100 * (items.len() as u64 + 1), 7 * items.len() as u64);
        Self {
            id,
            items,
            outcome: "completed",
            usage,
            with_tool: true,
        }
    }
}

fn item_id(r: &Round, i: usize) -> String {
    let prefix = match r.items[i] {
        It::Reasoning(_) => "rs",
        It::Message(_) => "msg",
        It::Call(..) => "fc",
    };
    format!("{prefix}_{}_{i}", r.id)
}

fn item(r: &Round, i: usize, done: bool) -> Value {
    let id = item_id(r, i);
    let status = if done { "completed" } else { "in_progress" };
    match r.items[i] {
        It::Reasoning(text) if done => json!({"id": id, "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}], "encrypted_content": "gAAA=="}),
        It::Reasoning(_) => json!({"id": id, "type": "reasoning", "summary": []}),
        It::Message(text) => {
            let content = if done {
                json!([text_part(text)])
            } else {
                json!([])
            };
            json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
        }
        It::Call(name, args) => json!({"type": "function_call", "id": id,
            "call_id": format!("call_{}_{i}", r.id), "name": name,
            "arguments": if done { args } else { "" }, "status": status}),
    }
}

fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

pub fn response(r: &Round, done: bool) -> Value {
    let mut tools =
        vec![json!({"type": "function", "name": "shell", "parameters": {}, "strict": true})];
    if r.with_tool {
        tools.push(json!({"type": "function", "name": TOOL, "parameters": {}, "strict": true}));
    }
    let (input, output) = r.usage;
    let usage = json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": input / 2},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 3},
        "total_tokens": input + output});
    json!({
        "id": r.id, "object": "response", "created_at": 1_700_000_000, "status": if done { r.outcome } else { "in_progress" },
        "error": null, "model": "gpt-test",
        "output": if done { (0..r.items.len()).map(|i| item(r, i, true)).collect() } else { vec![] },
        "parallel_tool_calls": true, "tools": tools,
        "usage": if done { usage } else { Value::Null },
        "metadata": {},
    })
}

fn split3(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(3).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// `(type, payload)` of every event of a round, terminal included.
pub fn events(r: &Round) -> Vec<(String, Value)> {
    let mut ev = vec![
        (
            "response.created".to_owned(),
            json!({"response": response(r, false)}),
        ),
        (
            "response.in_progress".to_owned(),
            json!({"response": response(r, false)}),
        ),
    ];
    let mut push = |kind: &str, payload: Value| ev.push((kind.to_owned(), payload));
    for (i, it) in r.items.iter().enumerate() {
        let id = item_id(r, i);
        push(
            "response.output_item.added",
            json!({"output_index": i, "item": item(r, i, false)}),
        );
        match *it {
            It::Reasoning(text) => {
                let at = json!({"item_id": id, "output_index": i, "summary_index": 0});
                let with = |extra: Value| merge(at.clone(), extra);
                push(
                    "response.reasoning_summary_part.added",
                    with(json!({"part": {"type": "summary_text", "text": ""}})),
                );
                for piece in split3(text) {
                    push(
                        "response.reasoning_summary_text.delta",
                        with(json!({"delta": piece})),
                    );
                }
                push(
                    "response.reasoning_summary_text.done",
                    with(json!({"text": text})),
                );
                push(
                    "response.reasoning_summary_part.done",
                    with(json!({"part": {"type": "summary_text", "text": text}})),
                );
            }
            It::Message(text) => {
                let at = json!({"item_id": id, "output_index": i, "content_index": 0});
                let with = |extra: Value| merge(at.clone(), extra);
                push(
                    "response.content_part.added",
                    with(json!({"part": text_part("")})),
                );
                for piece in split3(text) {
                    push(
                        "response.output_text.delta",
                        with(json!({"delta": piece, "logprobs": []})),
                    );
                }
                push(
                    "response.output_text.done",
                    with(json!({"text": text, "logprobs": []})),
                );
                push(
                    "response.content_part.done",
                    with(json!({"part": text_part(text)})),
                );
            }
            It::Call(_, args) => {
                for piece in split3(args) {
                    push(
                        "response.function_call_arguments.delta",
                        json!({"item_id": id, "output_index": i, "delta": piece}),
                    );
                }
                push(
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": i, "arguments": args}),
                );
            }
        }
        push(
            "response.output_item.done",
            json!({"output_index": i, "item": item(r, i, true)}),
        );
    }
    let kind = format!("response.{}", r.outcome);
    ev.push((kind, json!({"response": response(r, true)})));
    ev
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

/// `event: <type>\ndata: <json>\n\n` with `type` and `sequence_number` first.
pub fn frame(kind: &str, seq: usize, payload: Value) -> Vec<u8> {
    let mut obj = Map::new();
    obj.insert("type".into(), json!(kind));
    obj.insert("sequence_number".into(), json!(seq));
    if let Value::Object(rest) = payload {
        obj.extend(rest);
    }
    format!("event: {kind}\ndata: {}\n\n", Value::Object(obj)).into_bytes()
}

/// The round's SSE body; `cut` keeps only the first `cut` events.
pub fn stream(r: &Round, cut: Option<usize>) -> Vec<u8> {
    let ev = events(r);
    let keep = cut.unwrap_or(ev.len());
    body(ev.into_iter().take(keep))
}

/// Frames events with sequence numbers 0..n.
pub fn body(ev: impl IntoIterator<Item = (String, Value)>) -> Vec<u8> {
    ev.into_iter()
        .enumerate()
        .flat_map(|(seq, (k, p))| frame(&k, seq, p))
        .collect()
}

/// Runs the stitcher over whole round bodies, each split into chunks by `chunker`,
/// continuing while a round has expand calls; returns client bytes and round ends.
pub fn run(bodies: &[Vec<u8>], chunker: impl Fn(&[u8]) -> Vec<&[u8]>) -> (Vec<u8>, Vec<RoundEnd>) {
    let mut st = Stitcher::new(TOOL);
    let mut client: Vec<Bytes> = Vec::new();
    let mut ends = Vec::new();
    for (n, body) in bodies.iter().enumerate() {
        if n > 0 {
            st.begin_round();
        }
        for chunk in chunker(body) {
            client.extend(st.push(chunk));
        }
        let end = st.end_round();
        let stop = end.expand_calls.is_empty() || n + 1 == bodies.len();
        let missing = end.terminal == ctxgate::expand::stitch::Terminal::Missing;
        ends.push(end);
        if missing {
            break;
        }
        if stop {
            client.extend(st.finish());
            break;
        }
    }
    (client.concat(), ends)
}

pub fn whole(b: &[u8]) -> Vec<&[u8]> {
    vec![b]
}

pub fn bytewise(b: &[u8]) -> Vec<&[u8]> {
    b.chunks(1).collect()
}

/// The client stream's events as JSON (non-JSON events are an error).
pub fn parse(client: &[u8]) -> Vec<Value> {
    let mut p = SseParser::new();
    let mut events = p.push(client);
    let fin = p.finish();
    assert!(fin.leftover.is_none(), "client stream ends mid-event");
    events.extend(fin.events);
    events
        .iter()
        .map(|e| serde_json::from_str(&e.data()).unwrap_or(Value::Null))
        .collect()
}

/// Two rounds: the first calls the expand tool, the second answers.
pub fn two_rounds() -> (Round, Round) {
    let r1 = Round::new(
        "resp_1",
        vec![
            It::Reasoning("Need the élided lines"),
            It::Message("Let me check ✓"),
            It::Call(TOOL, r#"{"hash":"ab12","query":"error"}"#),
        ],
    );
    let r2 = Round::new("resp_2", vec![It::Message("The answer is 42 — found it")]);
    (r1, r2)
}

/// What the official SDKs check: lifecycle order, `sequence_number` 0..n,
/// `output_index` consistent with `output_item.added` order, one response id, and
/// a terminal whose output equals the streamed items. Returns the terminal response.
pub fn check_client(events: &[Value], first_id: &str) -> Value {
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(types.first(), Some(&"response.created"));
    assert_eq!(types.get(1), Some(&"response.in_progress"));
    for once in ["response.created", "response.in_progress"] {
        assert_eq!(types.iter().filter(|t| **t == once).count(), 1, "{once}");
    }
    let terminals = types.iter().filter(|t| {
        t.starts_with("response.complete")
            || t.starts_with("response.incomplete")
            || t.starts_with("response.failed")
    });
    assert_eq!(terminals.count(), 1);
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|e| e["sequence_number"].as_u64())
        .collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    let mut output: Vec<Value> = Vec::new();
    for e in events {
        if let Some(id) = e.get("response").map(|r| &r["id"]) {
            assert_eq!(id, first_id, "{}", e["type"]);
        }
        let Some(index) = e["output_index"].as_u64().map(|i| i as usize) else {
            continue;
        };
        match e["type"].as_str() {
            Some("response.output_item.added") => {
                assert_eq!(index, output.len(), "added out of order");
                output.push(e["item"].clone());
            }
            Some("response.output_item.done") => output[index] = e["item"].clone(),
            _ => assert!(index < output.len(), "event for an unknown item"),
        }
    }
    let last = events.last().cloned().unwrap_or_default();
    assert_eq!(last["response"]["output"], Value::Array(output));
    last["response"].clone()
}

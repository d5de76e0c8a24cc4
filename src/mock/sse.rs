//! Server-sent event sequences of the Responses API and their pacing on the wire.
//!
//! The event order and fields mirror the real API (and what the official SDKs'
//! stream accumulators check), so a proxy that parses, rewrites or re-frames the
//! stream is tested against realistic input. Pacing is separate from content: the
//! same events can be sent normally, slowly, or split into awkward body frames.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use serde_json::{Map, Value, json};

use super::MockConfig;
use super::responses::{Ctx, Phase, final_item, initial_item, response_object, text_part};
use super::scenario::{Item, Outcome, Pacing, Plan, TRUNCATE_AFTER};
use super::state::{MockState, Tracked};

/// Minimum spacing of `mock-slow` events, so a disconnect lands mid-stream.
const SLOW_DELAY: Duration = Duration::from_millis(20);
/// Pause between the frames of one `mock-split` event; long enough that each
/// frame leaves in its own write rather than being coalesced by the server.
const SPLIT_DELAY: Duration = Duration::from_millis(1);

/// The full event list for a plan: `(type, payload without type/sequence_number)`.
pub(crate) fn events(plan: &Plan, ctx: &Ctx<'_>) -> Vec<(&'static str, Value)> {
    let in_progress = response_object(ctx, plan, Phase::InProgress);
    let mut ev = vec![
        ("response.created", json!({"response": in_progress})),
        ("response.in_progress", json!({"response": in_progress})),
    ];
    for (index, item) in plan.items.iter().enumerate() {
        let item_id = ctx.item_id(index, item);
        ev.push((
            "response.output_item.added",
            json!({"output_index": index, "item": initial_item(ctx, index, item)}),
        ));
        match item {
            Item::Message { text } => {
                let at = |extra: Value| {
                    let mut m =
                        json!({"item_id": item_id, "output_index": index, "content_index": 0});
                    merge(&mut m, extra);
                    m
                };
                ev.push((
                    "response.content_part.added",
                    at(json!({"part": text_part("")})),
                ));
                for piece in split_chars(text, plan.pieces) {
                    ev.push((
                        "response.output_text.delta",
                        at(json!({"delta": piece, "logprobs": []})),
                    ));
                }
                ev.push((
                    "response.output_text.done",
                    at(json!({"text": text, "logprobs": []})),
                ));
                ev.push((
                    "response.content_part.done",
                    at(json!({"part": text_part(text)})),
                ));
            }
            Item::Call { arguments, .. } => {
                for piece in split_chars(arguments, 2) {
                    ev.push((
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": index, "delta": piece}),
                    ));
                }
                ev.push((
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
                ));
            }
        }
        let done = final_item(ctx, plan, index, item);
        ev.push((
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        ));
    }
    let terminal = match plan.outcome {
        Outcome::Completed => "response.completed",
        Outcome::Incomplete => "response.incomplete",
        Outcome::Failed => "response.failed",
    };
    ev.push((
        terminal,
        json!({"response": response_object(ctx, plan, Phase::Final)}),
    ));
    ev
}

fn merge(into: &mut Value, extra: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, extra) {
        a.extend(b);
    }
}

/// Splits into `n` pieces of near-equal character counts (fewer if `s` is short).
pub(crate) fn split_chars(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// `event: <type>\ndata: <json>\n\n`, with `type` and `sequence_number` first.
pub(crate) fn frame(kind: &str, seq: usize, payload: Value) -> Bytes {
    let mut obj = Map::new();
    obj.insert("type".into(), json!(kind));
    obj.insert("sequence_number".into(), json!(seq));
    if let Value::Object(rest) = payload {
        obj.extend(rest);
    }
    let data = serde_json::to_string(&Value::Object(obj)).unwrap_or_default();
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// Cuts one frame inside `event:`, inside `data:`, mid-JSON and between the final
/// two newlines: the places a naive SSE parser gets wrong.
fn split_frame(frame: &Bytes) -> Vec<Bytes> {
    let len = frame.len();
    let data_at = frame
        .windows(6)
        .position(|w| w == b"\ndata:")
        .map_or(len / 2, |p| p + 1);
    let json_mid = data_at + 6 + (len.saturating_sub(data_at + 8)) / 2;
    let mut cuts = vec![3, data_at + 2, json_mid, len.saturating_sub(1)];
    cuts.retain(|&c| c > 0 && c < len);
    cuts.sort_unstable();
    cuts.dedup();
    let mut parts = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        parts.push(frame.slice(start..cut));
        start = cut;
    }
    parts.push(frame.slice(start..));
    parts
}

/// `(pause before, bytes)` for every body chunk of an answer made of `frames`, paced as `pacing` and `cfg` ask.
fn writes(pacing: Pacing, frames: &[Bytes], cfg: &MockConfig) -> Vec<(Duration, Bytes)> {
    let event_gap = match pacing {
        Pacing::Slow => cfg.chunk_delay.max(SLOW_DELAY),
        Pacing::Normal | Pacing::Split => cfg.chunk_delay,
    };
    if cfg.sse_whole && pacing == Pacing::Normal && event_gap.is_zero() {
        return vec![(Duration::ZERO, Bytes::from(frames.concat()))];
    }
    let mut writes = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let gap = if i == 0 { Duration::ZERO } else { event_gap };
        if pacing == Pacing::Split {
            for (j, part) in split_frame(frame).into_iter().enumerate() {
                writes.push((if j == 0 { gap } else { SPLIT_DELAY }, part));
            }
        } else {
            writes.push((gap, frame.clone()));
        }
    }
    writes
}

/// Renders the plan as a `text/event-stream` answer paced as the plan asks.
pub(crate) fn respond(plan: &Plan, ctx: &Ctx<'_>, cfg: &MockConfig, state: &MockState) -> Response {
    let mut frames: Vec<Bytes> = events(plan, ctx)
        .into_iter()
        .enumerate()
        .map(|(seq, (kind, payload))| frame(kind, seq, payload))
        .collect();
    if plan.truncate {
        frames.truncate(TRUNCATE_AFTER);
    }
    let writes = writes(plan.pacing, &frames, cfg);
    let body = stream::iter(writes).then(|(pause, bytes)| async move {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        Ok::<_, std::convert::Infallible>(bytes)
    });
    let tracked = Tracked::new(Box::pin(body), state.clone(), None);
    let mut res = (StatusCode::OK, Body::from_stream(tracked)).into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_frame_reassembles_and_cuts_awkwardly() {
        let f = frame("response.created", 0, json!({"response": {"id": "resp_1"}}));
        let parts = split_frame(&f);
        assert!(parts.len() >= 4);
        assert_eq!(parts.concat(), f.to_vec());
        assert_eq!(&parts[0][..], b"eve");
        assert_eq!(&parts[parts.len() - 1][..], b"\n");
    }

    #[test]
    fn a_whole_answer_is_one_chunk_of_the_same_bytes_unless_its_events_are_spaced() {
        let frames: Vec<Bytes> = (0..3)
            .map(|seq| frame("response.output_text.delta", seq, json!({"delta": "x"})))
            .collect();
        let whole = MockConfig {
            sse_whole: true,
            ..MockConfig::default()
        };
        let one = writes(Pacing::Normal, &frames, &whole);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].1.to_vec(), frames.concat());
        assert_eq!(
            writes(Pacing::Normal, &frames, &MockConfig::default()).len(),
            3
        );
        // Spaced, slow or split answers keep their pacing: the option only joins what leaves at once anyway.
        let spaced = MockConfig {
            chunk_delay: Duration::from_millis(1),
            ..whole.clone()
        };
        assert_eq!(writes(Pacing::Normal, &frames, &spaced).len(), 3);
        assert_eq!(writes(Pacing::Slow, &frames, &whole).len(), 3);
        assert!(writes(Pacing::Split, &frames, &whole).len() > 3);
    }

    #[test]
    fn split_chars_keeps_text() {
        let pieces = split_chars("héllo wörld", 4);
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces.concat(), "héllo wörld");
        assert!(split_chars("", 4).is_empty());
    }
}

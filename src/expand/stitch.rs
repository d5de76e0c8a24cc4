//! The stream stitcher: several upstream SSE rounds in, one coherent client stream out.
//!
//! When the model calls `context_expand` in a streamed response, ctxgate answers the
//! call itself and runs another upstream round. The client, which never declared
//! that tool, must see a single response: one `response.created`/`in_progress`,
//! sequence numbers and output indexes that continue across rounds, the first
//! round's id everywhere, no trace of the expand calls, and one terminal event
//! listing every visible item with usage summed over all rounds. This module is the
//! synchronous state machine doing that (bytes in, bytes out); the async driver
//! feeds it upstream chunks and forwards what it returns.
//!
//! Driver protocol, per round: [`Stitcher::push`] every upstream chunk (forwarding
//! the result), then [`Stitcher::end_round`]. If the round is [`Terminal::Missing`],
//! end the client stream as it is (truncated). Otherwise, if it has expand calls and
//! another round is wanted, answer them, call [`Stitcher::begin_round`] and stream
//! the next round; else send [`Stitcher::finish`] and end the stream.
//!
//! Held client calls: events of client tool-call items (see
//! [`is_client_call`](super::merge::is_client_call)) are withheld while their round
//! streams, because only the round's end tells whether it also expanded. They are
//! released by [`Stitcher::finish`] (just before the terminal event, after every
//! other item) and dropped by [`Stitcher::begin_round`], which is exactly "released
//! if the round had no expand call, else dropped" in the normal flow, and still does
//! the right thing when the driver stops expanding early (calls are then kept).
//! A cut round's held calls are never sent: the client stream is truncated anyway.

mod light;
mod round;
mod view;

use bytes::Bytes;
use serde_json::Value;

use super::merge::{self, ExpandCall};
use super::sse::SseEvent;
use round::{Kept, Round, Slot};
use view::frame;

/// How a round's upstream stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    Completed,
    Incomplete,
    Failed,
    /// The stream was cut: no terminal event.
    Missing,
}

/// What the driver needs to know when a round's upstream stream has ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundEnd {
    pub terminal: Terminal,
    /// The round's `context_expand` calls, to answer before the next round.
    pub expand_calls: Vec<ExpandCall>,
    /// Every output item in upstream order (the terminal's `response.output`, else
    /// the streamed items). Build the next input with [`merge::next_input`], which
    /// drops the client calls of a round that also expands.
    pub output: Vec<Value>,
    /// Client calls withheld and to be dropped because the round also expands.
    pub dropped_client_calls: usize,
    /// Client calls already shown while the round streamed (no expand call could follow them). A round with such
    /// a call must not be continued: the client will answer the call itself.
    pub shown_client_calls: usize,
    pub usage: Option<Value>,
    /// This round's real upstream response id.
    pub response_id: Option<String>,
}

/// Lifecycle events only the first round may show the client.
const OPENING: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
];

fn terminal_kind(kind: &str) -> Option<Terminal> {
    match kind {
        "response.completed" => Some(Terminal::Completed),
        "response.incomplete" => Some(Terminal::Incomplete),
        "response.failed" => Some(Terminal::Failed),
        _ => None,
    }
}

/// Stitches expand rounds into one client stream; see the module docs.
#[derive(Debug)]
pub struct Stitcher {
    tool: String,
    round_no: usize,
    /// Next client `sequence_number`.
    seq: u64,
    first_id: Option<String>,
    /// The first round's `created_at`: the one response the client sees was created then.
    first_created: Option<Value>,
    /// Response ids of later rounds, replaced by `first_id` wherever they appear.
    later_ids: Vec<String>,
    /// Final form of every client-visible item, by client output index.
    client_items: Vec<Value>,
    usages: Vec<Value>,
    round: Round,
    /// Client bytes produced while ending a round, sent first by the next call.
    pending: Vec<Bytes>,
    finished: bool,
    /// Whether the client's stream is still the upstream's (see [`light`]).
    light: bool,
    /// Whether `seq` has been set from the upstream's first sequence number.
    seq_known: bool,
    /// Whether the current round offers the expand tool (no call of it can come otherwise).
    offered: bool,
    /// Whether the model may make several calls in one round (`parallel_tool_calls`).
    parallel: bool,
}

impl Stitcher {
    /// A stitcher hiding calls of the function tool named `expand_tool`.
    pub fn new(expand_tool: &str) -> Self {
        Self {
            tool: expand_tool.to_owned(),
            round_no: 0,
            seq: 0,
            first_id: None,
            first_created: None,
            later_ids: Vec::new(),
            client_items: Vec::new(),
            usages: Vec::new(),
            round: Round::default(),
            pending: Vec::new(),
            finished: false,
            light: true,
            seq_known: false,
            offered: true,
            parallel: true,
        }
    }

    /// Whether the current round offers the expand tool (default: yes). A round that does not can hold no expand
    /// call, so its client calls stream as they come.
    pub fn offer_expand(&mut self, offered: bool) {
        self.offered = offered;
    }

    /// Whether the request allows several tool calls per round (`parallel_tool_calls`, default: yes). When it does
    /// not, a client call is the round's only call, so it is shown at once.
    pub fn set_parallel_calls(&mut self, parallel: bool) {
        self.parallel = parallel;
    }

    /// Whether client calls must be held until the round ends: only while an expand call may still follow.
    fn holds_calls(&self) -> bool {
        self.offered && self.parallel
    }

    /// The response id the client sees (the first round's), once known.
    pub fn response_id(&self) -> Option<&str> {
        self.first_id.as_deref()
    }

    /// Feeds the current round's upstream bytes; returns what to send the client now. The client bytes are joined
    /// into one piece when the round forwards several events (one write to the client instead of one per event).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Bytes> {
        join(self.push_parts(chunk))
    }

    /// [`Self::push`], the client bytes appended to `into`: a caller gathering several chunks into one write
    /// copies each event once.
    pub fn push_into(&mut self, chunk: &[u8], into: &mut bytes::BytesMut) {
        for part in self.push_parts(chunk) {
            into.extend_from_slice(&part);
        }
    }

    fn push_parts(&mut self, chunk: &[u8]) -> Vec<Bytes> {
        let mut out = std::mem::take(&mut self.pending);
        if self.finished {
            return out;
        }
        for event in self.round.parser.push(chunk) {
            self.on_event(event, &mut out);
        }
        out
    }

    /// The current round's upstream stream ended (cleanly or not).
    pub fn end_round(&mut self) -> RoundEnd {
        let finish = self.round.parser.finish();
        let mut out = std::mem::take(&mut self.pending);
        for event in finish.events {
            self.on_event(event, &mut out);
        }
        self.pending = out;
        let light_terminal = self.round.light_terminal.as_ref().map(|t| t.kind);
        let terminal = self
            .round
            .terminal
            .as_ref()
            .map(|t| t.0)
            .or(light_terminal)
            .unwrap_or(Terminal::Missing);
        let response = self
            .round
            .terminal
            .as_ref()
            .and_then(|t| t.1.obj.get("response"));
        let final_items = response
            .and_then(|r| r.get("output"))
            .and_then(Value::as_array)
            .cloned();
        let usage = response
            .and_then(|r| r.get("usage"))
            .filter(|u| u.is_object())
            .cloned();
        let response_id = self.round.id.clone().or_else(|| {
            response
                .and_then(|r| r.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        if let Some(items) = &final_items {
            self.adopt_final_forms(items);
        }
        if let (Some(u), false) = (&usage, self.round.ended) {
            self.usages.push(u.clone());
        }
        let expand_calls: Vec<ExpandCall> = self
            .slots_where(|s| matches!(s, Slot::Expand))
            .into_iter()
            .filter_map(|index| self.expand_call_at(index))
            .collect();
        let held = self.slots_where(|s| matches!(s, Slot::Held)).len();
        let output = final_items.unwrap_or_else(|| self.streamed_items());
        self.round.ended = true;
        RoundEnd {
            terminal,
            dropped_client_calls: if expand_calls.is_empty() { 0 } else { held },
            shown_client_calls: self.round.shown_calls,
            expand_calls,
            output,
            usage,
            response_id,
        }
    }

    /// A new upstream round starts: the previous round's held client calls and
    /// terminal event are dropped (the model re-issues calls it still wants).
    pub fn begin_round(&mut self) {
        if !self.round.ended {
            // Keep usage and ids of a round the driver forgot to end.
            let _ = self.end_round();
        }
        self.round = Round::default();
        self.round_no += 1;
    }

    /// The final bytes for the client: the held client calls of the last round,
    /// then one terminal event merging every round. Empty if the last round was cut.
    pub fn finish(&mut self) -> Vec<Bytes> {
        if self.finished {
            return Vec::new();
        }
        if !self.round.ended {
            let _ = self.end_round();
        }
        self.finished = true;
        if let Some(light) = self.round.light_terminal.take() {
            // Nothing was hidden: the upstream's terminal (echo spliced out) is the client's.
            let mut out = std::mem::take(&mut self.pending);
            self.release_held(&mut out);
            out.push(light.bytes);
            out.extend(self.round.done.take());
            return out;
        }
        let Some((_, terminal)) = self.round.terminal.take() else {
            self.pending.clear();
            return Vec::new();
        };
        let mut out = std::mem::take(&mut self.pending);
        self.release_held(&mut out);
        let Kept {
            event,
            mut obj,
            raw,
        } = terminal;
        let mut changed = false;
        if let Some(Value::Object(response)) = obj.get_mut("response") {
            let items = std::mem::take(&mut self.client_items).into_iter();
            let output = Value::Array(items.filter(|item| !item.is_null()).collect());
            if response.get("output") != Some(&output) {
                response.insert("output".into(), output);
                changed = true;
            }
            let usage = merge::sum_usage(&self.usages);
            if !usage.is_null() && response.get("usage") != Some(&usage) {
                response.insert("usage".into(), usage);
                changed = true;
            }
        }
        changed |= self.rewrite(&mut obj, None);
        out.push(frame(event.as_deref(), obj, raw, changed));
        out.extend(self.round.done.take());
        out
    }

    fn on_event(&mut self, event: SseEvent, out: &mut Vec<Bytes>) {
        let Some(event) = self.light(event, out) else {
            return;
        };
        let (parsed, done) = {
            let data = event.data();
            (
                serde_json::from_str::<Value>(&data),
                data.trim() == "[DONE]",
            )
        };
        let name = event.event().map(std::borrow::Cow::into_owned);
        let SseEvent { raw, .. } = event;
        let event = name;
        let Ok(Value::Object(mut obj)) = parsed else {
            if done {
                self.round.done = Some(raw);
            } else {
                out.push(raw); // comments, keep-alives, malformed data: untouched
            }
            return;
        };
        // From here on the client's stream is stitched: values parsed, events renumbered and re-framed.
        self.light = false;
        self.seq_known = true;
        let kind = obj.get("type").and_then(Value::as_str).or(event.as_deref());
        let kind = kind.unwrap_or_default().to_owned();
        self.learn_id(&obj);
        if let Some(t) = terminal_kind(&kind) {
            self.round.terminal = Some((t, Kept { event, obj, raw }));
            return;
        }
        if self.round_no > 0 && OPENING.contains(&kind.as_str()) {
            return;
        }
        let mut client_index = None;
        if let Some(index) = obj.get("output_index").and_then(Value::as_u64) {
            let item = obj.get("item").filter(|i| i.is_object());
            match self.slot(index, item) {
                Slot::Visible(ci) => {
                    if let (Some(item), Some(form)) = (item, self.client_items.get_mut(ci)) {
                        *form = item.clone();
                    }
                    client_index = Some(ci);
                }
                Slot::Expand => {
                    self.note_expand(index, &kind, &obj);
                    return;
                }
                Slot::Held => {
                    self.hold(index, Kept { event, obj, raw });
                    return;
                }
            }
        }
        let changed = self.rewrite(&mut obj, client_index);
        out.push(frame(event.as_deref(), obj, raw, changed));
    }
}

/// One piece for the client from the pieces of one upstream chunk.
fn join(mut parts: Vec<Bytes>) -> Vec<Bytes> {
    if parts.len() < 2 {
        return parts;
    }
    let mut joined = bytes::BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
    for part in parts.drain(..) {
        joined.extend_from_slice(&part);
    }
    vec![joined.freeze()]
}

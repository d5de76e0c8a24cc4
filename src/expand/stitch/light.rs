//! The stitcher's light path: a round that has hidden nothing yet is relayed as it came.
//!
//! A turn that offers `context_expand` usually never gets a call. Until something must be hidden from the client
//! (an expand call, a held client call) or renumbered (a later round), the client's stream is the upstream's
//! stream with the echoed tool and directive taken out of the response objects. So, while that holds, an event is
//! read only as far as its head (type, sequence number, output index, the item's type and name), forwarded as the
//! bytes that came, and the full stitching (values parsed, events re-framed) starts only at the event that opens
//! an item to hide. Lifecycle events have their `response` echo spliced out without a parse of the rest: the
//! response's identity and the spans of its echoed members are read in the same pass as the event's head, so
//! each event is scanned once. The round's terminal event is kept as bytes and sent by `finish`.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use serde_json::Value;

use super::round::Slot;
use super::{OPENING, Stitcher, terminal_kind};
use crate::expand::echo::{self, Head, ResponseEcho};
use crate::expand::merge;
use crate::expand::skim;
use crate::expand::sse::{self, SseEvent};

/// What the light path reads of an event; the rest of its bytes are skipped, not copied.
#[derive(Debug, Default, PartialEq, Eq)]
struct EventHead<'a> {
    kind: Option<Cow<'a, str>>,
    sequence_number: Option<u64>,
    output_index: Option<u64>,
    item: Option<Head<'a>>,
    response: Option<ResponseHead<'a>>,
}

/// The `response` object of a lifecycle event, as the light path took it.
#[derive(Debug, PartialEq, Eq)]
enum ResponseHead<'a> {
    /// Read: the response's identity and echoed members, and where the object stands in the event.
    Read(ResponseEcho<'a>, Range<usize>),
    /// Byte for byte the object the round's last lifecycle event carried, standing here: not read again.
    Same(Range<usize>),
}

impl<'a> EventHead<'a> {
    /// The head of an event's data, read with [`skim`] in one pass over it (the `response` object's members in
    /// the same pass). `None` for anything but one JSON object whose members read here appear at most once and
    /// have the types the light path expects (null reads as absent): the event then takes the full path.
    ///
    /// `last` is the `response` object the round's last lifecycle event carried (a whole object, as read then). A
    /// response that starts with those bytes is that object — where an object ends depends only on its own bytes —
    /// so it is not read again: `response.created` and `response.in_progress` carry the same one.
    fn read(data: &'a [u8], last: Option<&[u8]>) -> Option<EventHead<'a>> {
        let (mut kind, mut sequence_number, mut output_index, mut item, mut response) =
            (None, None, None, None, None);
        let mut members = skim::members(data, 0);
        while let Some(member) = members.next() {
            let member = member?;
            let start = member.start;
            match member.key()?.as_ref() {
                b"type" => skim::once(&mut kind, &mut members, skim::string)?,
                b"sequence_number" => {
                    skim::once(&mut sequence_number, &mut members, skim::unsigned)?
                }
                b"output_index" => skim::once(&mut output_index, &mut members, skim::unsigned)?,
                b"item" => skim::once_object(&mut item, &mut members, start, Head::read)?,
                b"response" => {
                    let known = last
                        .filter(|_| response.is_none())
                        .and_then(|last| skim::known_value(&mut members, last));
                    match known {
                        Some(span) => response = Some(Some(ResponseHead::Same(span))),
                        None => skim::once_object(&mut response, &mut members, start, |b, at| {
                            let (echo, end) = ResponseEcho::read(b, at)?;
                            Some((ResponseHead::Read(echo, at..end), end))
                        })?,
                    }
                }
                _ => {}
            }
        }
        skim::only_ws_after(data, members.end()?).then(|| EventHead {
            kind: kind.flatten(),
            sequence_number: sequence_number.flatten(),
            output_index: output_index.flatten(),
            item: item.flatten(),
            response: response.flatten(),
        })
    }
}

/// The `response` object of the round's last lifecycle event the light path read, and what it became for the
/// client: the next lifecycle event that carries the same bytes gets the same splice without a second reading.
#[derive(Debug)]
pub(super) struct LastResponse {
    /// The object as it came: a view of its event's bytes, not a copy.
    bytes: Bytes,
    /// The object with the echo taken out; `None` when nothing had to change.
    stripped: Option<Vec<u8>>,
}

impl LastResponse {
    /// The response at `span` of `data` (its event's data), given the splices that take the echo out of the event
    /// (ranges of `data`; `None`: nothing to change). `None` when a splice does not fall inside the response (the
    /// echoed members are its own, so they always do; checked rather than assumed): such a response is read
    /// afresh each time.
    fn new(
        data: &Bytes,
        span: Range<usize>,
        splices: Option<&[(Range<usize>, Vec<u8>)]>,
    ) -> Option<LastResponse> {
        let bytes = data.get(span.clone()).map(|_| data.slice(span.clone()))?;
        let stripped = match splices {
            None => None,
            Some(splices) => Some(echo::pieces(&bytes, span.start, splices)?.concat()),
        };
        Some(LastResponse { bytes, stripped })
    }

    /// The pieces of the data of an event whose response at `span` is this one, as the client must see it; `None`
    /// when nothing had to change.
    fn parts<'a>(&'a self, data: &'a [u8], span: Range<usize>) -> Option<[&'a [u8]; 3]> {
        let stripped = self.stripped.as_deref()?;
        Some([data.get(..span.start)?, stripped, data.get(span.end..)?])
    }
}

/// A terminal event the light path kept: its client bytes, sent by `finish` when no other round follows.
#[derive(Debug)]
pub(super) struct LightTerminal {
    pub(super) kind: super::Terminal,
    pub(super) bytes: Bytes,
}

impl Stitcher {
    /// Handles `event` on the light path if it can, taking it (its bytes are forwarded without a copy); an event
    /// handed back goes down the full path (which may end the light path for the rest of the turn).
    pub(super) fn light(&mut self, event: SseEvent, out: &mut Vec<Bytes>) -> Option<SseEvent> {
        if !self.light || self.round_no > 0 {
            return Some(event);
        }
        if self.passes_as_content(&event) {
            out.push(event.raw);
            return None;
        }
        let last = self.round.last_response.as_ref().map(|l| &l.bytes[..]);
        let Some(head) = EventHead::read(event.data_bytes(), last) else {
            return Some(event);
        };
        // The `event:` line is read only when the data does not name its type.
        let name = if head.kind.is_none() {
            event.event()
        } else {
            None
        };
        let kind = head.kind.as_deref().or(name.as_deref());
        let kind = kind.unwrap_or_default();
        if let Some(seq) = head.sequence_number {
            if !self.seq_known {
                // The client keeps the upstream's numbering for as long as nothing is hidden.
                self.seq = seq;
            }
            if seq != self.seq {
                return Some(event);
            }
        }
        let terminal = terminal_kind(kind);
        if let Some(response) = &head.response {
            if terminal.is_none() && !OPENING.contains(&kind) {
                return Some(event);
            }
            // A response taken as the last one has its id learned already.
            if let ResponseHead::Read(response, _) = response
                && let Some(id) = response.id.as_deref()
            {
                let created = response
                    .created_at
                    .clone()
                    .and_then(|c| event.data_bytes().get(c))
                    .and_then(|c| serde_json::from_slice::<Value>(c).ok());
                self.learn(id, created);
            }
        } else if terminal.is_some() {
            return Some(event);
        }
        if let Some(index) = head.output_index {
            let slot = match self.round.slots.get(&index) {
                Some(slot) => *slot,
                None => {
                    let hides = head.item.as_ref().is_some_and(|i| {
                        i.is_function(&self.tool)
                            || i.kind.as_deref().is_some_and(merge::is_client_call_type)
                                && self.holds_calls()
                    });
                    if hides {
                        return Some(event);
                    }
                    let shown_call = head
                        .item
                        .as_ref()
                        .is_some_and(|i| i.kind.as_deref().is_some_and(merge::is_client_call_type));
                    self.round.shown_calls += usize::from(shown_call);
                    // The item's final form comes from the terminal event, should a later item end the light path.
                    self.client_items.push(Value::Null);
                    let slot = Slot::Visible(self.client_items.len() - 1);
                    self.round.slots.insert(index, slot);
                    slot
                }
            };
            if !matches!(slot, Slot::Visible(ci) if ci as u64 == index) {
                return Some(event);
            }
        }
        let data = event.data_bytes();
        // Each changed event is framed once, from its own bytes around the splice.
        let stripped = match &head.response {
            Some(ResponseHead::Read(response, span)) => {
                let splices = echo::echo_splices(data, response, &self.tool);
                // A terminal event is the round's last: no later lifecycle event can repeat its response.
                if terminal.is_none()
                    && let Some(last) =
                        LastResponse::new(&event.data_shared(), span.clone(), splices.as_deref())
                {
                    self.round.last_response = Some(last);
                }
                splices
                    .as_deref()
                    .and_then(|splices| echo::pieces(data, 0, splices))
                    .map(|parts| sse::encode_parts(event.event().as_deref(), &parts))
            }
            Some(ResponseHead::Same(span)) => self
                .round
                .last_response
                .as_ref()
                .and_then(|l| l.parts(data, span.clone()))
                .map(|parts| sse::encode_parts(event.event().as_deref(), &parts)),
            None => None,
        };
        if head.sequence_number.is_some() {
            self.seq += 1;
            self.seq_known = true;
        }
        let bytes = stripped.unwrap_or(event.raw);
        match terminal {
            Some(kind) => self.round.light_terminal = Some(LightTerminal { kind, bytes }),
            None => out.push(bytes),
        }
        None
    }
}

/// Events that only carry an item's content (`response.output_text.delta`, a part added or done): no response
/// echo to take out, no item to place.
fn is_content_type(kind: &[u8]) -> bool {
    const DONE: [&[u8]; 9] = [
        b"response.output_text.done",
        b"response.output_text.annotation.added",
        b"response.content_part.added",
        b"response.content_part.done",
        b"response.reasoning_summary_part.added",
        b"response.reasoning_summary_part.done",
        b"response.reasoning_summary_text.done",
        b"response.reasoning_text.done",
        b"response.refusal.done",
    ];
    kind.starts_with(b"response.") && kind.ends_with(b".delta") || DONE.contains(&kind)
}

impl Stitcher {
    /// Whether `event` is a content event numbered as the client expects: then it passes as it came, its data not
    /// read past `"sequence_number"`. A streamed answer is mostly text deltas, and reading each one's every member
    /// was most of what a turn offered the tool cost. On the light path nothing is hidden (the first event it hands
    /// back ends it), so a content event has nothing to change. Only the shape OpenAI writes
    /// (`{"type":"…","sequence_number":N,…`) is recognised; anything else is read whole.
    fn passes_as_content(&mut self, event: &SseEvent) -> bool {
        if !self.seq_known {
            return false;
        }
        let Some(rest) = event.data_bytes().strip_prefix(b"{\"type\":\"") else {
            return false;
        };
        let Some(end) = memchr::memchr(b'"', rest) else {
            return false;
        };
        if !is_content_type(&rest[..end]) {
            return false;
        }
        let Some(number) = rest[end..].strip_prefix(b"\",\"sequence_number\":") else {
            return false;
        };
        let digits = number.iter().take_while(|b| b.is_ascii_digit()).count();
        if skim::unsigned(number, 0..digits) != Some(self.seq)
            || !matches!(number.get(digits), Some(b',' | b'}'))
        {
            return false;
        }
        self.seq += 1;
        true
    }
}

#[cfg(test)]
#[path = "light_tests.rs"]
mod tests;

//! Incremental server-sent-events parsing and encoding for the expand path.
//!
//! When ctxgate answers the model's `context_expand` calls itself, it must read the
//! upstream `text/event-stream` body event by event while the bytes arrive, and then
//! forward, rewrite or withhold each event. Upstream body frames cut events anywhere
//! (inside a field name, inside a UTF-8 character, between the two newlines that end
//! an event), so the parser buffers only the unfinished event and hands out complete
//! ones together with their exact original bytes: an event that needs no change is
//! forwarded byte for byte. Line handling follows the WHATWG SSE rules (`\n`, `\r\n`
//! and bare `\r` line ends, `:` comments, one optional space after the colon, a
//! leading BOM ignored).
//!
//! An event's data is not copied or decoded while parsing: the Responses API sends each
//! event as one `data:` line, whose value is a span of the event's own bytes, and the
//! light path reads it as bytes ([`SseEvent::data_bytes`]). Only an event with several
//! `data:` lines joins them into a string; [`SseEvent::data`] decodes on demand.

use bytes::{Bytes, BytesMut};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One complete event block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// Where the `event:` field's value is in `raw` (see [`SseEvent::event`]).
    event: Option<std::ops::Range<usize>>,
    /// The `data:` lines (see [`SseEvent::data`]).
    data: Data,
    /// The exact bytes of the block, blank line included, plus any stray blank lines
    /// that preceded it; concatenating every `raw` gives back the consumed input.
    pub raw: Bytes,
}

/// Where an event's data is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Data {
    /// No `data:` line, or one: its value's bytes in `raw`, as they came.
    Span(std::ops::Range<usize>),
    /// Several lines, each decoded (invalid UTF-8 replaced), joined with `\n`.
    Joined(String),
}

impl SseEvent {
    /// The `event:` field (`None` when absent or empty, which SSE treats as `message`); bytes that are not UTF-8
    /// read as U+FFFD. A span of the event's bytes until asked: most readers never look at it.
    pub fn event(&self) -> Option<std::borrow::Cow<'_, str>> {
        let span = self.event.clone()?;
        Some(decode(self.raw.get(span).unwrap_or_default()))
    }

    /// The `data:` lines joined with `\n` (empty for comment-only blocks such as
    /// keep-alives, which are still returned so a proxy can forward them); bytes that
    /// are not UTF-8 read as U+FFFD.
    pub fn data(&self) -> std::borrow::Cow<'_, str> {
        match &self.data {
            Data::Span(_) => decode(self.data_bytes()),
            Data::Joined(text) => std::borrow::Cow::Borrowed(text),
        }
    }

    /// The data as bytes: as they came for an event of one `data:` line, not checked
    /// for UTF-8 (for a reader that only looks for JSON members and forwards the rest).
    pub fn data_bytes(&self) -> &[u8] {
        match &self.data {
            Data::Span(span) => self.raw.get(span.clone()).unwrap_or_default(),
            Data::Joined(text) => text.as_bytes(),
        }
    }

    /// [`SseEvent::data_bytes`] as shared bytes: a view of the event's own buffer for an event of one `data:`
    /// line (no copy), a copy of the joined lines otherwise.
    pub fn data_shared(&self) -> Bytes {
        match &self.data {
            Data::Span(span) if span.end <= self.raw.len() && span.start <= span.end => {
                self.raw.slice(span.clone())
            }
            Data::Span(_) => Bytes::new(),
            Data::Joined(text) => Bytes::copy_from_slice(text.as_bytes()),
        }
    }
}

/// What was pending when the stream ended: an event without its closing blank line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The unterminated bytes, as received.
    pub raw: Bytes,
    /// The `event:` field, if that line was complete.
    pub event: Option<String>,
}

/// The outcome of [`SseParser::finish`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finish {
    /// Events completed by the end of input itself: a block whose last line ended
    /// with a bare `\r` is only known to be complete once no `\n` can follow.
    pub events: Vec<SseEvent>,
    /// `Some` when the stream was cut inside an event (a truncated upstream).
    pub leftover: Option<Leftover>,
}

/// Incremental parser: feed body chunks with [`push`](Self::push), then call
/// [`finish`](Self::finish) once the body ends.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes not yet handed out as part of an event.
    buf: BytesMut,
    /// Offset in `buf` of the first line not yet interpreted.
    line_start: usize,
    /// Offset up to which `buf` is known to hold no line terminator after
    /// `line_start`, so a long line arriving in small chunks is scanned once.
    scanned: usize,
    bom_checked: bool,
    /// The current block's `event:` value, a span of `buf` (the last such line counts).
    event: Option<std::ops::Range<usize>>,
    /// The current block's data: the span of its first `data:` value in `buf` until a
    /// second one comes, then the lines joined.
    data: Option<Data>,
    /// Whether the current block has any non-blank line (field or comment).
    has_lines: bool,
    last_id: Option<String>,
    retry: Option<u64>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `chunk` and returns every event it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        self.parse(false, &mut out);
        out
    }

    /// Ends the stream: returns the events only the end of input completes and the
    /// unterminated remainder, if any. The parser is then ready for a new stream.
    pub fn finish(&mut self) -> Finish {
        let mut events = Vec::new();
        self.parse(true, &mut events);
        let partial_line = self.line_start < self.buf.len();
        let leftover = (self.has_lines || partial_line).then(|| {
            let event = self.event.take();
            let raw = self.buf.split().freeze();
            let event = event.map(|span| decode(raw.get(span).unwrap_or_default()).into_owned());
            Leftover { raw, event }
        });
        *self = Self {
            last_id: self.last_id.take(),
            retry: self.retry,
            ..Self::default()
        };
        Finish { events, leftover }
    }

    /// The last `id:` field seen (what a reconnecting client would send back).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last valid `retry:` field seen, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    fn parse(&mut self, at_eof: bool, out: &mut Vec<SseEvent>) {
        if !self.bom_checked {
            let n = self.buf.len().min(BOM.len());
            if self.buf.get(..n) != BOM.get(..n) {
                self.bom_checked = true;
            } else if n == BOM.len() {
                self.bom_checked = true;
                self.line_start = n;
                self.scanned = n;
            } else if at_eof {
                self.bom_checked = true;
            } else {
                return; // could still become a BOM
            }
        }
        loop {
            let from = self.scanned.max(self.line_start);
            let Some(rest) = self.buf.get(from..) else {
                return;
            };
            let Some(pos) = memchr::memchr2(b'\n', b'\r', rest) else {
                self.scanned = self.buf.len();
                return;
            };
            let line_end = from + pos;
            let term_len = match (rest.get(pos), rest.get(pos + 1)) {
                (Some(b'\r'), Some(b'\n')) => 2,
                (Some(b'\r'), None) if !at_eof => {
                    // A `\n` may follow in the next chunk; deciding now would make the
                    // event's bytes depend on where the chunk boundary fell.
                    self.scanned = line_end;
                    return;
                }
                _ => 1,
            };
            let next = line_end + term_len;
            let line_start = self.line_start;
            if line_start == line_end {
                if self.has_lines {
                    self.dispatch(next, out);
                } else {
                    // A stray blank line: kept as a prefix of the next event's bytes.
                    self.line_start = next;
                    self.scanned = next;
                }
                continue;
            }
            self.line_start = next;
            self.scanned = next;
            self.field(line_start..line_end);
        }
    }

    /// Interprets the line at `line` in `buf`. Its name and value are found on the
    /// bytes (`:` and the space are ASCII, so a line that is not UTF-8 splits where its
    /// decoded form would); only the values kept as text are decoded.
    fn field(&mut self, line: std::ops::Range<usize>) {
        self.has_lines = true;
        let bytes = self.buf.get(line.clone()).unwrap_or_default();
        if bytes.first() == Some(&b':') {
            return;
        }
        let (name, value) = match memchr::memchr(b':', bytes) {
            Some(colon) => {
                let space = usize::from(bytes.get(colon + 1) == Some(&b' '));
                (colon, line.start + colon + 1 + space..line.end)
            }
            None => (bytes.len(), line.end..line.end),
        };
        let text = |buf: &BytesMut| decode(buf.get(value.clone()).unwrap_or_default()).into_owned();
        match bytes.get(..name).unwrap_or_default() {
            b"event" => self.event = (!value.is_empty()).then_some(value),
            b"data" => {
                self.data = Some(match self.data.take() {
                    None => Data::Span(value),
                    Some(Data::Span(first)) => {
                        let first = self.buf.get(first).unwrap_or_default();
                        let mut joined = decode(first).into_owned();
                        joined.push('\n');
                        joined.push_str(&text(&self.buf));
                        Data::Joined(joined)
                    }
                    Some(Data::Joined(mut joined)) => {
                        joined.push('\n');
                        joined.push_str(&text(&self.buf));
                        Data::Joined(joined)
                    }
                });
            }
            b"id" => {
                let id = text(&self.buf);
                if !id.contains('\0') {
                    self.last_id = Some(id);
                }
            }
            b"retry" => {
                let digits = self.buf.get(value).unwrap_or_default();
                if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                    self.retry = std::str::from_utf8(digits)
                        .ok()
                        .and_then(|d| d.parse().ok());
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, end: usize, out: &mut Vec<SseEvent>) {
        let raw = self.buf.split_to(end).freeze();
        self.line_start = 0;
        self.scanned = 0;
        self.has_lines = false;
        out.push(SseEvent {
            event: self.event.take(),
            data: self.data.take().unwrap_or(Data::Span(0..0)),
            raw,
        });
    }
}

/// `bytes` as text, U+FFFD for what is not UTF-8. Checked with `from_utf8` first: `from_utf8_lossy` walks its
/// input in chunks at several times the cost, which only a rare broken event should pay.
fn decode(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Frames one event: `event: X\ndata: D\n\n`, one `data:` line per line of `data`
/// (any of `\r\n`, `\r`, `\n` splits, as a client would split them). A line break
/// inside `event` would corrupt the framing, so the name is cut there.
pub fn encode(event: Option<&str>, data: &str) -> Bytes {
    encode_bytes(event, data.as_bytes())
}

/// [`encode`] for data that is bytes: an upstream event relayed with only the echo taken out keeps every other
/// byte as it came, UTF-8 or not, like the events relayed untouched.
pub fn encode_bytes(event: Option<&str>, data: &[u8]) -> Bytes {
    encode_parts(event, &[data])
}

/// [`encode_bytes`] for data given as the pieces it is made of (an event's bytes around a splice), framed without
/// joining them first: the common one-line event is copied once, into its frame.
pub fn encode_parts(event: Option<&str>, parts: &[&[u8]]) -> Bytes {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(len + 48);
    if let Some(name) = event {
        let name = name.split(['\r', '\n']).next().unwrap_or_default();
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    if parts
        .iter()
        .all(|part| memchr::memchr2(b'\n', b'\r', part).is_none())
    {
        // One line (every JSON event ctxgate writes): no splitting.
        out.extend_from_slice(b"data: ");
        parts.iter().for_each(|part| out.extend_from_slice(part));
        out.extend_from_slice(b"\n\n");
        return Bytes::from(out);
    }
    let data = parts.concat();
    let mut rest = data.as_slice();
    loop {
        let end = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&rest[..end]);
        out.push(b'\n');
        if end == rest.len() {
            break;
        }
        // `\r\n` is one break.
        let skip = if rest[end..].starts_with(b"\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
    }
    out.push(b'\n');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<Leftover>) {
        let mut p = SseParser::new();
        let mut events: Vec<SseEvent> = chunks.iter().flat_map(|c| p.push(c)).collect();
        let fin = p.finish();
        events.extend(fin.events);
        (events, fin.leftover)
    }

    /// BOM, CRLF, bare CR, stray blank lines, comments, multi-line data, `id:`,
    /// `retry:` and multi-byte characters.
    const STREAM: &str = "\u{FEFF}: hi\r\nevent: response.created\r\ndata: {\"a\":\"é✓\"}\r\n\r\n\n\
        event: x\rdata: 1\rdata: 2\r\rid: 3\nretry: 10\ndata: last ✓\n\n:tail\n\n";

    #[test]
    fn every_split_yields_the_same_events() {
        for tail in ["", "event: cut\ndata: {\"é", "data: 1\r\r"] {
            let input = format!("{STREAM}{tail}");
            let input = input.as_bytes();
            let whole = parse_all(&[input]);
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            assert_eq!(parse_all(&bytes), whole);
            for cut in 0..=input.len() {
                let (a, b) = input.split_at(cut);
                assert_eq!(parse_all(&[a, b]), whole, "cut at {cut}");
            }
            let (events, _) = &whole;
            let data: Vec<String> = events.iter().map(|e| e.data().into_owned()).collect();
            let mut expected = vec!["{\"a\":\"é✓\"}", "1\n2", "last ✓", ""];
            if tail.starts_with("data") {
                expected.push("1");
            }
            assert_eq!(data, expected);
            assert_eq!(whole.1.is_some(), tail.starts_with("event"));
        }
    }

    #[test]
    fn fields_comments_and_multiline_data() {
        let input = b": keep-alive\n\nevent: a\nid: 7\nretry: 150\ndata: x\ndata:y\n\ndata\n\n";
        let mut p = SseParser::new();
        let ev = p.push(input);
        assert_eq!(ev.len(), 3);
        assert_eq!(
            (ev[0].event().as_deref(), ev[0].data().as_ref()),
            (None, "")
        );
        assert_eq!(
            (ev[1].event().as_deref(), ev[1].data().as_ref()),
            (Some("a"), "x\ny")
        );
        assert_eq!(ev[2].data(), "");
        assert_eq!(p.last_event_id(), Some("7"));
        assert_eq!(p.retry(), Some(150));
        let joined: Vec<u8> = ev.iter().flat_map(|e| e.raw.to_vec()).collect();
        assert_eq!(joined, input.to_vec());
    }

    #[test]
    fn data_is_a_span_of_the_event_until_a_second_line_joins_it() {
        // One line: the value's bytes as they came, decoded only when asked (invalid UTF-8 as U+FFFD).
        let input = b"event: e\ndata: {\"a\":\"\xff\"}\n\ndata:x\ndata: \xfey\ndata\n\nid: 1\0\nid: 2\nretry: 99999999999999999999\nretry: 1x\ndata: z\n\n";
        let ev = SseParser::new().push(input);
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0].data_bytes(), b"{\"a\":\"\xff\"}");
        assert_eq!(ev[0].data(), "{\"a\":\"\u{FFFD}\"}");
        assert!(
            ev[0].raw.ends_with(b"\"}\n\n"),
            "the event's bytes are untouched"
        );
        // Several lines: each decoded, joined with \n (a bare `data` line is an empty value).
        assert_eq!(ev[1].data(), "x\n\u{FFFD}y\n");
        assert_eq!(ev[1].data_bytes(), "x\n\u{FFFD}y\n".as_bytes());
        assert_eq!(ev[2].data(), "z");
        let mut p = SseParser::new();
        p.push(input);
        assert_eq!(p.last_event_id(), Some("2"), "an id with NUL is ignored");
        assert_eq!(p.retry(), None, "neither retry is a number that fits");
    }

    #[test]
    fn bare_cr_waits_for_the_next_byte_or_the_end() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: 1\r\r").is_empty());
        let ev = p.push(b"data: 2\r\r");
        assert_eq!(ev.len(), 1);
        assert_eq!(&ev[0].raw[..], b"data: 1\r\r");
        let fin = p.finish();
        assert_eq!(fin.events.len(), 1);
        assert_eq!(fin.events[0].data(), "2");
        assert!(fin.leftover.is_none());
    }

    #[test]
    fn bom_is_skipped_even_when_split() {
        let (ev, _) = parse_all(&[b"\xEF", b"\xBB\xBFdata: a\n\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data(), "a");
        assert!(ev[0].raw.starts_with(BOM));
    }

    #[test]
    fn truncated_tail_is_reported() {
        let (ev, left) = parse_all(&[b"event: a\ndata: 1\n\nevent: b\ndata: {\"x"]);
        assert_eq!(ev.len(), 1);
        let left = left.unwrap_or_else(|| Leftover {
            raw: Bytes::new(),
            event: None,
        });
        assert_eq!(left.event.as_deref(), Some("b"));
        assert_eq!(&left.raw[..], b"event: b\ndata: {\"x");
        let (_, left) = parse_all(&[b"data: 1\n\n\n"]);
        assert!(
            left.is_none(),
            "stray blank lines are not a truncated event"
        );
    }

    #[test]
    fn encode_round_trips() {
        let framed = encode(Some("t"), "a\nb\r\nc\rd");
        assert_eq!(
            &framed[..],
            b"event: t\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
        );
        let ev = SseParser::new().push(&framed);
        assert_eq!(ev[0].data(), "a\nb\nc\nd");
        assert_eq!(&encode(None, "")[..], b"data: \n\n");
        assert_eq!(&encode(Some("x\ny"), " z")[..], b"event: x\ndata:  z\n\n");
        // Breaks at the end, a lone `\r` before `\r\n`, and bytes that are not UTF-8, kept as they are.
        assert_eq!(&encode(None, "a\r\n")[..], b"data: a\ndata: \n\n");
        assert_eq!(&encode(None, "\r\r\n")[..], b"data: \ndata: \ndata: \n\n");
        assert_eq!(
            &encode_bytes(Some("t"), b"{\"m\":\"a\xffb\"}")[..],
            b"event: t\ndata: {\"m\":\"a\xffb\"}\n\n"
        );
    }

    #[test]
    fn pieces_are_framed_as_their_concatenation_would_be() {
        // Line breaks inside one piece, across two (`\r` | `\n`), at either end, none at all, empty pieces.
        let cases: [&[&[u8]]; 6] = [
            &[b"{\"a\":", b"[1]", b"}"],
            &[b"a\nb", b"c"],
            &[b"a\r", b"\nb"],
            &[b"", b"x", b""],
            &[b"\n", b"\xff"],
            &[],
        ];
        for parts in cases {
            let joined = parts.concat();
            for name in [None, Some("response.created")] {
                assert_eq!(
                    encode_parts(name, parts),
                    encode_bytes(name, &joined),
                    "{parts:?}"
                );
            }
        }
        let shared = SseParser::new().push(b"event: e\ndata: {\"k\":1}\n\n");
        assert_eq!(&shared[0].data_shared()[..], b"{\"k\":1}");
        let joined = SseParser::new().push(b"data: a\ndata: b\n\n");
        assert_eq!(&joined[0].data_shared()[..], b"a\nb");
    }
}

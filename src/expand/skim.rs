//! Skim: a few members read out of upstream JSON that is relayed to the client as it came.
//!
//! A turn that offers `context_expand` reads every answer it relays: each SSE event's head (type, sequence
//! number, output index, the item's type and name) and, in a response object, its id and where the echoed tool
//! and directive stand. Everything else goes to the client byte for byte. serde_json validates every byte it
//! skips, and a lifecycle event is mostly the echoed tool's JSON schema and directive: about nine instructions a
//! byte, most of the cost of a streamed turn that offers the tool. Skim only finds where values end — a string by
//! jumping from quote to quote, a container by counting its brackets outside strings with the request body split's
//! block masks (`responses::split::container_end`) — so a skipped value costs well under an instruction a byte.
//!
//! Skim does not validate what it skips, because nothing it skips is changed: a malformed value reaches the
//! client as the upstream sent it, as before. What it reads it reads strictly (a number must be an unsigned
//! integer, a string must decode), and what the proxy changes — the echoed `tools` and `instructions` — is parsed
//! in full by serde before it is changed. Anything skim cannot follow (not an object, an unclosed string,
//! a container that does not close) is `None`, and the caller takes its full path.

use std::borrow::Cow;
use std::ops::Range;

use crate::responses::split::{string_end, string_end_escaped};

/// One member of an object: its key as written (between the quotes, escapes not decoded) and where its value
/// starts. Where the value ends is found only when asked ([`Members::value`]), or told by a caller that read the
/// value itself ([`Members::read_to`]): a nested object the caller reads member by member is then walked once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    key: &'a [u8],
    /// Whether the key is spelled with a backslash (an escape), so that it must be decoded to be compared.
    escaped: bool,
    pub start: usize,
}

impl<'a> Member<'a> {
    /// The key's bytes, decoded: as written unless it is spelled with escapes; `None` when it does not decode (a
    /// lone surrogate escape), which serde refused too. Bytes, not `str`: callers compare them with ASCII names,
    /// and checking UTF-8 (or raw control bytes, which no such name holds) would cost more than the comparison.
    #[inline]
    pub fn key(&self) -> Option<Cow<'a, [u8]>> {
        if !self.escaped {
            return Some(Cow::Borrowed(self.key));
        }
        let mut quoted = Vec::with_capacity(self.key.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(self.key);
        quoted.push(b'"');
        serde_json::from_slice::<String>(&quoted)
            .ok()
            .map(|k| Cow::Owned(k.into_bytes()))
    }

    /// Whether the key, decoded, is `name`.
    pub fn key_is(&self, name: &str) -> bool {
        self.key().is_some_and(|k| *k == *name.as_bytes())
    }
}

/// Reads the value of the member `members` last returned into `slot` with `read`, once: `null` reads as absent
/// (`Some(None)`), and a second member of the same name is `None`, as serde refuses a repeated field.
pub fn once<'a, T>(
    slot: &mut Option<Option<T>>,
    members: &mut Members<'a>,
    read: impl FnOnce(&'a [u8], Range<usize>) -> Option<T>,
) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    let value = members.value()?;
    *slot = Some(if is_null(members.b, &value) {
        None
    } else {
        Some(read(members.b, value)?)
    });
    Some(())
}

/// Where the value of the member `members` last returned stands, when it starts with `known`, the bytes of a
/// whole string, array or object read before: such a value ends where they end (where a string or container ends
/// depends only on its own bytes), so it is taken without a scan. `None`, with nothing read, otherwise.
pub fn known_value(members: &mut Members<'_>, known: &[u8]) -> Option<Range<usize>> {
    if !matches!(known.first(), Some(b'"' | b'[' | b'{')) {
        return None;
    }
    let start = members.pending?;
    let end = start + known.len();
    members.b.get(start..)?.starts_with(known).then(|| {
        members.read_to(end);
        start..end
    })
}

/// [`once`] for a member's span when its value is probably `known` (see [`known_value`]); anything else is
/// scanned.
pub fn once_span_known(
    slot: &mut Option<Option<Range<usize>>>,
    members: &mut Members<'_>,
    known: Option<&[u8]>,
) -> Option<()> {
    if slot.is_none() {
        if let Some(span) = known.and_then(|k| known_value(members, k)) {
            *slot = Some(Some(span));
            return Some(());
        }
    }
    once(slot, members, |_, value| Some(value))
}

/// Reads the object value of the member `members` last returned into `slot` with `read`, once, in the same
/// pass (`read` returns what it made and where the object ended); `null` reads as absent, anything else that is
/// not an object is `None`.
pub fn once_object<'a, T>(
    slot: &mut Option<Option<T>>,
    members: &mut Members<'a>,
    start: usize,
    read: impl FnOnce(&'a [u8], usize) -> Option<(T, usize)>,
) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    if members.b.get(start) != Some(&b'{') {
        let value = members.value()?;
        return is_null(members.b, &value).then(|| *slot = Some(None));
    }
    let (made, end) = read(members.b, start)?;
    members.read_to(end);
    *slot = Some(Some(made));
    Some(())
}

/// The members of the object whose `{` is the first non-whitespace byte at or after `at`, in order. Each item is
/// `None` once the object cannot be followed (and iteration stops there).
pub fn members(b: &[u8], at: usize) -> Members<'_> {
    let at = skip_ws(b, at);
    Members {
        b,
        at: at + 1,
        pending: None,
        state: if b.get(at) == Some(&b'{') {
            State::First
        } else {
            State::Broken
        },
    }
}

/// Iterator over an object's members; see [`members`].
pub struct Members<'a> {
    b: &'a [u8],
    /// The next byte to read.
    at: usize,
    state: State,
    /// Where the value of the member last returned starts, while its end is not known yet.
    pending: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Just after `{`.
    First,
    /// After a member.
    Next,
    /// After the closing `}`: `at` is the byte after it.
    Closed,
    /// Not an object: `None` is reported next.
    Broken,
    /// `None` was reported: the iteration is over.
    Failed,
}

impl<'a> Members<'a> {
    /// Where the object ends (the byte after its `}`), once every member was read.
    pub fn end(&self) -> Option<usize> {
        (self.state == State::Closed).then_some(self.at)
    }

    /// Where the value of the member last returned stands, found by skipping it; `None` when it cannot be followed
    /// (the next call to `next` then reports the object broken).
    #[inline]
    pub fn value(&mut self) -> Option<Range<usize>> {
        let start = self.pending.take()?;
        match value_end(self.b, start) {
            Some(end) => {
                self.at = end;
                Some(start..end)
            }
            None => {
                self.state = State::Broken;
                None
            }
        }
    }

    /// The caller read the value of the member last returned itself, up to `end` (exclusive).
    pub fn read_to(&mut self, end: usize) {
        if self.pending.take().is_some() {
            self.at = end;
        }
    }

    #[inline]
    fn member(&mut self) -> Option<Option<Member<'a>>> {
        let b = self.b;
        let mut i = skip_ws(b, self.at);
        match (self.state, b.get(i)) {
            (State::First | State::Next, Some(b'}')) => {
                self.state = State::Closed;
                self.at = i + 1;
                return None;
            }
            (State::Next, Some(b',')) => i = skip_ws(b, i + 1),
            (State::First, Some(b'"')) => {}
            _ => return Some(None),
        }
        if b.get(i) != Some(&b'"') {
            return Some(None);
        }
        let Some((key_end, escaped)) = string_end_escaped(b, i) else {
            return Some(None);
        };
        let colon = skip_ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return Some(None);
        }
        let start = skip_ws(b, colon + 1);
        if b.get(start).is_none() {
            return Some(None);
        }
        self.pending = Some(start);
        self.state = State::Next;
        Some(b.get(i + 1..key_end - 1).map(|key| Member {
            key,
            escaped,
            start,
        }))
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Option<Member<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.state {
            State::Closed | State::Failed => None,
            State::Broken => {
                self.state = State::Failed;
                Some(None)
            }
            State::First | State::Next => {
                if self.pending.is_some() && self.value().is_none() {
                    self.state = State::Failed;
                    return Some(None);
                }
                let member = self.member()?;
                if member.is_none() {
                    self.state = State::Failed;
                }
                Some(member)
            }
        }
    }
}

/// The elements of the array whose `[` stands at `at`, as ranges; `None` when it cannot be followed.
pub fn elements(b: &[u8], at: usize) -> Option<Vec<Range<usize>>> {
    if b.get(at) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, at + 1);
    if b.get(i) == Some(&b']') {
        return Some(out);
    }
    loop {
        let end = value_end(b, i)?;
        out.push(i..end);
        i = skip_ws(b, end);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b']' => return Some(out),
            _ => return None,
        }
    }
}

/// Whether only whitespace follows `at`.
pub fn only_ws_after(b: &[u8], at: usize) -> bool {
    skip_ws(b, at) == b.len()
}

/// The string value at `range`, decoded; borrowed when it holds no escape. `None` for anything but a valid
/// JSON string.
#[inline]
pub fn string<'a>(b: &'a [u8], range: Range<usize>) -> Option<Cow<'a, str>> {
    let raw = b.get(range)?;
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.contains(&b'\\') && inner.iter().all(|c| *c >= 0x20) {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<String>(raw).ok().map(Cow::Owned)
}

/// The unsigned integer at `range`, as serde reads a `u64` (no sign, fraction or exponent).
#[inline]
pub fn unsigned(b: &[u8], range: Range<usize>) -> Option<u64> {
    let raw = b.get(range)?;
    if raw.is_empty() || !raw.iter().all(u8::is_ascii_digit) || raw.len() > 1 && raw[0] == b'0' {
        return None;
    }
    std::str::from_utf8(raw).ok()?.parse().ok()
}

/// Whether the value at `range` is `null`.
pub fn is_null(b: &[u8], range: &Range<usize>) -> bool {
    b.get(range.clone()) == Some(b"null")
}

#[inline]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the value that starts at `at`, which must be its first byte.
#[inline]
pub fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match *b.get(at)? {
        b'"' => string_end(b, at),
        // Stage 1 of the request body split, 64 bytes at a time: a schema-dense `tools` echo costs about as much
        // per byte as a string.
        b'{' | b'[' => crate::responses::split::container_end(b, at),
        b',' | b':' | b'}' | b']' => None,
        _ => {
            // A number or literal: up to the next delimiter (read strictly only when a caller reads it).
            let len = b
                .get(at..)?
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(b.len() - at);
            Some(at + len)
        }
    }
}

#[cfg(test)]
#[path = "skim_tests.rs"]
mod tests;

//! The one pass over a `/v1/responses` body that finds what [`super::body::RequestBody`] keeps: every top-level
//! member's key and where its value stands, and where each item of the `input` array stands.
//!
//! Every request body goes through here once, before any stage runs. Agent transcripts are mostly tool outputs,
//! JSON strings with an escape every line (`\n`) or every few bytes (`\"`, when the output is itself JSON); a
//! scanner that stops at each escape pays for each one (serde_json's, which this replaced, cost about 7
//! instructions a byte on a 1.1 MB transcript). This one is a simdjson-style stage 1 (`blocks`: bitmasks of 64
//! bytes at a time, escapes and strings found with bit arithmetic) and a small stage 2 that visits only the bytes
//! outside strings that matter — brackets, commas, colons, quotes, the first byte of a number or literal — with
//! an explicit grammar state and depth stack, so any depth is fine. The cost per byte does not depend on how many
//! escapes the strings hold.
//!
//! It accepts exactly what serde_json accepts when it borrows each member as a `RawValue` (the scan it replaced,
//! kept as the test oracle): the body is one JSON object (whitespace around it allowed); keys are strings
//! (duplicates kept in order, escapes decoded); values are any JSON with valid escapes (a lone surrogate `\u`
//! escape is valid in a raw value) and no raw control bytes in strings; the body is UTF-8. The first `input`
//! member is split: a string is decoded, an array gives its items' spans; any other value is
//! [`BodyError::BadInput`], but only when the rest of the body is valid (otherwise [`BodyError::NotAnObject`]).
//! serde_json's depth limit (128) never applied: it counts the top-level object and the `input` array, and
//! skips every value below them without recursing.

mod blocks;
mod finish;
mod scalar;
mod skip;

use super::body::BodyError;
use super::known::{KnownItems, Verified};
use blocks::Scanner;
pub(crate) use scalar::number_len;
use scalar::scalar_end;
pub use skip::{container_end, string_end, string_end_escaped};
use std::ops::Range;
use std::sync::Arc;

/// The members and `input` items of a body, as byte ranges of it.
#[derive(Debug, PartialEq, Eq)]
pub struct Split {
    /// Every top-level member in the body's order: its key (decoded) and where its value stands.
    pub members: Vec<(String, Range<usize>)>,
    /// The first `input` member: its index in `members` and what it holds.
    pub input: Option<(usize, SplitInput)>,
    /// The known item list the first items were taken from ([`split_known`]).
    pub verified: Option<Verified>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum SplitInput {
    Text(String),
    /// Where each item of the array stands.
    Items(Vec<Range<usize>>),
}

/// Splits `body`, or says why it is not a request body: [`BodyError::NotAnObject`] (with the byte offset of the
/// first fault found) for anything that is not one valid JSON object, [`BodyError::BadInput`] for a valid object
/// whose first `input` is neither a string nor an array.
pub fn split(body: &[u8]) -> Result<Split, BodyError> {
    split_known(body, &[])
}

/// As [`split`], taking the first items of `input` from the first of `known` whose bytes they are
/// ([`super::known`]): the same result, without walking those bytes.
pub fn split_known(body: &[u8], known: &[Arc<KnownItems>]) -> Result<Split, BodyError> {
    let mut walk = Walk::new(body, known);
    let mut from = 0;
    while let Some(to) = walk.blocks(from)? {
        from = to;
    }
    walk.finish()
}

/// `bytes` as 64-byte blocks with their offsets; the last bytes are copied into `padded`, a block of spaces:
/// whitespace, so the padding neither opens nor closes anything.
#[inline(always)]
fn blocks_of<'a>(
    bytes: &'a [u8],
    padded: &'a mut [u8; 64],
) -> impl Iterator<Item = (&'a [u8; 64], usize)> + 'a {
    let chunks = bytes.chunks_exact(64);
    let tail = chunks.remainder();
    for (to, from) in padded.iter_mut().zip(tail) {
        *to = *from;
    }
    let last = (!tail.is_empty()).then_some(&*padded);
    chunks
        .filter_map(|chunk| <&[u8; 64]>::try_from(chunk).ok())
        .chain(last)
        .zip((0..).step_by(64))
}

/// A fault: what was wrong and at which byte.
#[derive(Debug)]
struct Fault {
    at: usize,
    what: &'static str,
}

impl From<Fault> for BodyError {
    fn from(f: Fault) -> BodyError {
        BodyError::NotAnObject(format!("{} at byte {}", f.what, f.at))
    }
}

fn fault<T>(at: usize, what: &'static str) -> Result<T, Fault> {
    Err(Fault { at, what })
}

/// What the next structural byte may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The body's opening `{`.
    Body,
    /// A key or `}` (after `{`).
    FirstKey,
    /// A key (after `,` in an object).
    Key,
    /// The quote that closes a key.
    KeyEnd,
    Colon,
    /// A value or `]` (after `[`).
    FirstValue,
    /// A value (after `:`, or `,` in an array).
    Value,
    /// The quote that closes a string value.
    StringEnd,
    /// `,` or the close of the innermost container (after a value).
    CommaOrClose,
    /// Nothing: the body's object is closed.
    End,
}

/// Stage 2: the grammar over the structural bytes, and the spans it records.
struct Walk<'a> {
    body: &'a [u8],
    expect: Expect,
    /// The open containers, innermost last: `true` for an array. Its length is the depth.
    stack: Vec<bool>,
    /// Where the string being read opened.
    string_start: usize,
    /// Where the current top-level member's value began, and the current input item.
    member_start: usize,
    item_start: usize,
    members: Vec<(String, Range<usize>)>,
    /// Index in `members` of the first `input`.
    input: Option<usize>,
    /// Whether the current top-level member is the first `input` and an array (its values at depth 2 are items).
    in_input: bool,
    items: Vec<Range<usize>>,
    /// Where the current run of blocks with non-ASCII bytes began (each run is checked as UTF-8 when it ends).
    utf8_run: Option<usize>,
    /// The first byte that is not UTF-8.
    utf8_error: Option<usize>,
    /// Item lists of earlier bodies the first items may be ([`super::known`]).
    known: &'a [Arc<KnownItems>],
    /// The known list the first items were, with the digests computed verifying it.
    verified: Option<Verified>,
    /// Set when known items were taken: where the walk resumes.
    resume: Option<usize>,
}

impl<'a> Walk<'a> {
    fn new(body: &'a [u8], known: &'a [Arc<KnownItems>]) -> Walk<'a> {
        Walk {
            body,
            expect: Expect::Body,
            stack: Vec::new(),
            string_start: 0,
            member_start: 0,
            item_start: 0,
            members: Vec::new(),
            input: None,
            in_input: false,
            items: Vec::new(),
            utf8_run: None,
            utf8_error: None,
            known,
            verified: None,
            resume: None,
        }
    }

    /// Walks the body from `from` (stage 1 starting afresh there) to its end, or until known items were taken:
    /// then returns where the walk resumes, after them.
    fn blocks(&mut self, from: usize) -> Result<Option<usize>, Fault> {
        let mut scanner = Scanner::default();
        let rest = self.body.get(from..).unwrap_or_default();
        let chunks = rest.chunks_exact(64);
        let tail = chunks.remainder();
        let blocks = chunks.filter_map(|chunk| <&[u8; 64]>::try_from(chunk).ok());
        // The last bytes padded with spaces: whitespace, so they neither open nor close anything.
        let mut padded = [b' '; 64];
        for (to, from) in padded.iter_mut().zip(tail) {
            *to = *from;
        }
        // One call site, so the block's work is inlined into this loop.
        let last = (!tail.is_empty()).then_some(&padded);
        for (block, base) in blocks.chain(last).zip((from..).step_by(64)) {
            self.block(block, base, &mut scanner)?;
            if let Some(to) = self.resume.take() {
                return Ok(Some(to));
            }
        }
        Ok(None)
    }

    #[inline]
    fn block(&mut self, bytes: &[u8; 64], base: usize, scanner: &mut Scanner) -> Result<(), Fault> {
        let block = scanner.classify(bytes);
        if block.non_ascii {
            self.utf8_run.get_or_insert(base);
        } else if let Some(start) = self.utf8_run.take() {
            // Blocks of ASCII on both sides: the run starts and ends on character boundaries.
            self.check_utf8(start..base);
        }
        if block.control_in_string != 0 {
            let at = base + block.control_in_string.trailing_zeros() as usize;
            return fault(at, "a control byte inside a string");
        }
        let mut escapes = block.escapes_to_check;
        while escapes != 0 {
            let i = escapes.trailing_zeros() as usize;
            escapes &= escapes - 1;
            self.check_escape(bytes[i & 63], base + i)?;
        }
        let mut structurals = block.structurals;
        while structurals != 0 {
            let i = structurals.trailing_zeros() as usize;
            structurals &= structurals - 1;
            self.step(bytes[i & 63], base + i)?;
            if self.resume.is_some() {
                break;
            }
        }
        Ok(())
    }

    fn check_utf8(&mut self, range: Range<usize>) {
        if self.utf8_error.is_none() {
            let start = range.start;
            self.utf8_error = self.body.get(range).and_then(|b| first_non_utf8(b, start));
        }
    }

    /// `byte` is escaped by a backslash; `"` and `\` never reach here.
    fn check_escape(&self, byte: u8, at: usize) -> Result<(), Fault> {
        match byte {
            b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(()),
            b'u' => match self.body.get(at + 1..at + 5) {
                Some(hex) if hex.iter().all(u8::is_ascii_hexdigit) => Ok(()),
                _ => fault(at, "a \\u escape without four hex digits"),
            },
            _ => fault(at, "an invalid escape"),
        }
    }

    /// One structural byte.
    fn step(&mut self, byte: u8, at: usize) -> Result<(), Fault> {
        // The first item of `input`: known items, perhaps.
        if self.expect == Expect::FirstValue
            && self.in_input
            && self.stack.len() == 2
            && self.take_known(at)
        {
            return Ok(());
        }
        match self.expect {
            // Inside a string the only structural byte is its closing quote.
            Expect::StringEnd => self.end_value(at + 1),
            Expect::KeyEnd => self.end_key(at)?,
            Expect::Value | Expect::FirstValue => match byte {
                b'{' => {
                    self.begin_value(at, byte);
                    self.stack.push(false);
                    self.expect = Expect::FirstKey;
                }
                b'[' => {
                    self.begin_value(at, byte);
                    self.stack.push(true);
                    self.expect = Expect::FirstValue;
                }
                b'"' => {
                    self.begin_value(at, byte);
                    self.string_start = at;
                    self.expect = Expect::StringEnd;
                }
                b']' if self.expect == Expect::FirstValue => self.close(at),
                b'}' | b']' | b',' | b':' => return fault(at, "expected a value"),
                _ => {
                    self.begin_value(at, byte);
                    let end = scalar_end(self.body, at).ok_or(Fault {
                        at,
                        what: "an invalid number or literal",
                    })?;
                    self.end_value(end);
                }
            },
            Expect::FirstKey | Expect::Key => match byte {
                b'"' => {
                    self.string_start = at;
                    self.expect = Expect::KeyEnd;
                }
                b'}' if self.expect == Expect::FirstKey => self.close(at),
                _ => return fault(at, "expected a key"),
            },
            Expect::Colon => match byte {
                b':' => self.expect = Expect::Value,
                _ => return fault(at, "expected `:` after a key"),
            },
            Expect::CommaOrClose => match (byte, self.stack.last()) {
                (b',', Some(false)) => self.expect = Expect::Key,
                (b',', Some(true)) => self.expect = Expect::Value,
                (b'}', Some(false)) | (b']', Some(true)) => self.close(at),
                _ => return fault(at, "expected `,` or the container's close"),
            },
            Expect::Body => match byte {
                b'{' => {
                    self.stack.push(false);
                    self.expect = Expect::FirstKey;
                }
                _ => return fault(at, "expected the body's `{`"),
            },
            Expect::End => return fault(at, "more after the body's object"),
        }
        Ok(())
    }

    /// At the first item of `input` (at `at`): takes the first of the known lists whose bytes follow, if any, as
    /// the items (the walk then resumes after them, expecting `,` or `]`). The bytes before are walked and the
    /// bytes after will be; a run of non-ASCII blocks open before `at` is checked as UTF-8 now (the byte at `at`
    /// opens a value, so is ASCII: a character boundary), since the walk does not come back to it.
    fn take_known(&mut self, at: usize) -> bool {
        if self.known.is_empty() {
            return false;
        }
        let Some(rest) = self.body.get(at..) else {
            return false;
        };
        // Lists whose edges match but whose bytes differ (history the client edited) cost a hash of their
        // length each: at most [`MAX_HASHED`] are hashed, so a body costs a bounded multiple of one pass.
        let candidates = self.known.iter().filter(|k| k.may_match(rest));
        let found = candidates.take(MAX_HASHED).find_map(|k| k.verify(rest, at));
        let Some((spans, verified)) = found else {
            return false;
        };
        let Some(end) = spans.last().map(|s| s.end) else {
            return false;
        };
        if let Some(start) = self.utf8_run.take() {
            self.check_utf8(start..at);
        }
        self.items = spans;
        self.verified = Some(verified);
        self.resume = Some(end);
        self.expect = Expect::CommaOrClose;
        true
    }

    /// A key closed at `at`: a top-level one is decoded and opens a member.
    fn end_key(&mut self, at: usize) -> Result<(), Fault> {
        self.expect = Expect::Colon;
        if self.stack.len() != 1 {
            return Ok(());
        }
        let key = match self.body.get(self.string_start + 1..at) {
            Some(raw) if !raw.contains(&b'\\') => std::str::from_utf8(raw).ok().map(str::to_owned),
            // Escapes are rare in keys: serde_json decodes them (and refuses a lone surrogate, as it did).
            _ => self
                .body
                .get(self.string_start..=at)
                .and_then(|quoted| serde_json::from_slice::<String>(quoted).ok()),
        };
        let Some(key) = key else {
            return fault(self.string_start, "a key that is not a valid string");
        };
        if self.input.is_none() && key == "input" {
            self.input = Some(self.members.len());
        }
        self.members.push((key, 0..0));
        Ok(())
    }

    fn begin_value(&mut self, at: usize, byte: u8) {
        match self.stack.len() {
            1 => {
                self.member_start = at;
                self.in_input =
                    byte == b'[' && matches!(self.input, Some(i) if i + 1 == self.members.len());
            }
            2 if self.in_input => self.item_start = at,
            _ => {}
        }
    }

    /// A value ended just before `end`.
    fn end_value(&mut self, end: usize) {
        match self.stack.len() {
            0 => {
                self.expect = Expect::End;
                return;
            }
            1 => {
                if let Some(member) = self.members.last_mut() {
                    member.1 = self.member_start..end;
                }
            }
            2 if self.in_input => self.items.push(self.item_start..end),
            _ => {}
        }
        self.expect = Expect::CommaOrClose;
    }

    /// The innermost container closes at `at` (the caller checked the byte matches it).
    fn close(&mut self, at: usize) {
        self.stack.pop();
        self.end_value(at + 1);
    }
}

/// Known lists hashed at most per body ([`Walk::take_known`]).
const MAX_HASHED: usize = 2;

/// The offset (from `base`) of the first byte of `bytes` that is not UTF-8.
fn first_non_utf8(bytes: &[u8], base: usize) -> Option<usize> {
    std::str::from_utf8(bytes)
        .err()
        .map(|e| base + e.valid_up_to())
}

#[cfg(test)]
#[path = "split_tests.rs"]
pub(crate) mod tests;

//! Relevance: what every compressor must keep visible — error lines, keep-pattern hits, query-term hits.
//!
//! In the request path this is the floor under all compression: whatever a compressor drops, a line with an
//! error word, a hit of an operator's keep pattern, or a line relevant to the conversation's pinned query
//! stays in the text the model sees. Matching is a single forward byte scan per line (no regex, no
//! allocation), so it costs little even on multi-megabyte outputs.

/// Lines longer than this are data (minified JSON, generated command lines), not messages: an error word in
/// them is incidental, and keeping them whole would defeat compression. The huge-line truncation still keeps a
/// window around their error words visible.
pub const MAX_ERROR_LINE_BYTES: usize = 4096;

/// Lines at least this long are outside the error floor (data, generated command lines, minified JSON).
pub const FLOOR_LINE_MAX: usize = 300;

/// The error floor every compressor honours: a line under [`FLOOR_LINE_MAX`] bytes that contains error, fail,
/// exception, fatal, panic or traceback as a case-insensitive substring stays visible, as the exact line. It is
/// deliberately wider than [`is_error_line`] (`test_fail_silently`, `ErrorHandler`, `errors.py` count): a reader
/// scanning for what went wrong looks for these words wherever they stand, and keeping a few harmless lines costs
/// less than hiding one that mattered.
pub fn is_floor_line(line: &str) -> bool {
    line.len() < FLOOR_LINE_MAX && has_floor_word(line.as_bytes())
}

/// Whether `b` contains one of the floor's words, in any case. One pass over the bytes: each candidate first
/// letter (`e`, `f`, `p`, `t`) is checked against the words starting with it.
pub(crate) fn has_floor_word(b: &[u8]) -> bool {
    const WORDS: [&[u8]; 6] = [
        b"error",
        b"fail",
        b"exception",
        b"fatal",
        b"panic",
        b"traceback",
    ];
    for (i, c) in b.iter().enumerate() {
        let c = c.to_ascii_lowercase();
        if !matches!(c, b'e' | b'f' | b'p' | b't') {
            continue;
        }
        for w in WORDS {
            if w[0] == c
                && b.get(i..i + w.len())
                    .is_some_and(|s| s.eq_ignore_ascii_case(w))
            {
                return true;
            }
        }
    }
    false
}

/// Whether `line` reads like an error or warning: it is at most [`MAX_ERROR_LINE_BYTES`] long and contains,
/// as a whole word and in any case, one of error(s), fail(s/ed/ure/ing), exception, critical, fatal, panic(ked),
/// timeout, timed out, denied, rejected, invalid, traceback, abort(ed), segfault, segmentation fault,
/// unreachable, refused, cannot, can't, could not, not found, no such file, unauthorized, forbidden,
/// out of memory, stack overflow, warning(s), `warn:`/`WARN`, `ERR!`. A word glued to `-`, `_`, `.`, `/`,
/// `::` or `=` is part of a name (`--error-format`, `quick-error`, `Self::Error`, `errors.py`), not a message.
pub fn is_error_line(line: &str) -> bool {
    line.len() <= MAX_ERROR_LINE_BYTES && find_error_word(line.as_bytes(), 0).is_some()
}

/// Whether `line` holds an error word other than a warning's (`warning`, `warnings`, `WARN`): what makes an error
/// line beyond a flood of warnings.
pub(crate) fn is_error_line_past_warnings(line: &str) -> bool {
    let b = line.as_bytes();
    let mut from = 0;
    while line.len() <= MAX_ERROR_LINE_BYTES
        && let Some((start, end)) = find_error_word(b, from)
    {
        if !b.get(start..end).is_some_and(is_warning_word) {
            return true;
        }
        from = end;
    }
    false
}

/// A warning's word as [`find_error_word`] matches it: `warning`, `warnings`, `WARN`.
pub(crate) fn is_warning_word(word: &[u8]) -> bool {
    [&b"warning"[..], b"warnings", b"warn"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

/// Byte range of the first error word at or after `from`.
///
/// Whole words only, case-insensitive, with boundaries strict enough to skip identifiers: a word glued to
/// `-`, `_`, `.`, `/`, `::` or `=` is part of a name (`--error-format`, `quick-error`, `Self::Error`,
/// `errors.py`, `timeout=30`), not a message. Uppercase `WARN`/`ERR!` log levels and a few phrases
/// (`timed out`, `not found`, `could not`, `no such file`, …) count too.
pub(crate) fn find_error_word(b: &[u8], from: usize) -> Option<(usize, usize)> {
    let n = b.len();
    let mut i = from;
    while i < n {
        if !b[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && is_ident_byte(b[i]) {
            i += 1;
        }
        if start > 0 && is_ident_byte(b[start - 1]) {
            continue;
        }
        if let Some(end) = match_word(b, start, i) {
            if prev_ok(b, start) && next_ok(b, end) {
                return Some((start, end));
            }
        }
    }
    None
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn prev_ok(b: &[u8], start: usize) -> bool {
    if start == 0 {
        return true;
    }
    match b[start - 1] {
        b'-' | b'.' | b'/' | b'\\' | b'$' | b'@' => false,
        b':' => !(start >= 2 && b[start - 2] == b':'),
        c => !is_ident_byte(c),
    }
}

fn next_ok(b: &[u8], end: usize) -> bool {
    let Some(&c) = b.get(end) else {
        return true;
    };
    match c {
        b'-' | b'/' | b'\\' | b'=' => false,
        b':' => b.get(end + 1) != Some(&b':'),
        b'.' => b.get(end + 1).is_none_or(|&d| !is_ident_byte(d)),
        _ => !is_ident_byte(c),
    }
}

/// If the token `b[start..end]` (letters, digits, `_`) starts an error word or phrase, where it ends.
fn match_word(b: &[u8], start: usize, end: usize) -> Option<usize> {
    let len = end - start;
    if !(2..=13).contains(&len) {
        return None;
    }
    let token = &b[start..end];
    let mut buf = [0u8; 13];
    for (d, s) in buf.iter_mut().zip(token) {
        *d = s.to_ascii_lowercase();
    }
    let lower = &buf[..len];
    let single = matches!(
        lower,
        b"error"
            | b"errors"
            | b"fail"
            | b"fails"
            | b"failed"
            | b"failure"
            | b"failures"
            | b"failing"
            | b"exception"
            | b"exceptions"
            | b"critical"
            | b"fatal"
            | b"panic"
            | b"panics"
            | b"panicked"
            | b"timeout"
            | b"timeouts"
            | b"denied"
            | b"rejected"
            | b"invalid"
            | b"traceback"
            | b"abort"
            | b"aborted"
            | b"aborting"
            | b"segfault"
            | b"unreachable"
            | b"refused"
            | b"cannot"
            | b"unauthorized"
            | b"forbidden"
            | b"warning"
            | b"warnings"
    );
    if single {
        return Some(end);
    }
    let next = b.get(end).copied();
    match lower {
        b"warn" if token == b"WARN" || matches!(next, Some(b':') | Some(b']')) => Some(end),
        b"err" if token == b"ERR" && matches!(next, Some(b'!') | Some(b']')) => {
            Some(end.saturating_add(1))
        }
        b"can" => phrase(b, end, b"'t").or_else(|| phrase(b, end, b" not")),
        b"couldn" => phrase(b, end, b"'t"),
        b"timed" => phrase(b, end, b" out"),
        b"not" => phrase(b, end, b" found"),
        b"could" => phrase(b, end, b" not"),
        b"no" => phrase(b, end, b" such file"),
        b"segmentation" => phrase(b, end, b" fault"),
        b"out" => phrase(b, end, b" of memory"),
        b"stack" => phrase(b, end, b" overflow"),
        _ => None,
    }
}

fn phrase(b: &[u8], end: usize, rest: &[u8]) -> Option<usize> {
    let tail = b.get(end..end + rest.len())?;
    tail.eq_ignore_ascii_case(rest).then_some(end + rest.len())
}

/// Hits of one line against the keep patterns and query terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hits {
    /// A keep pattern matched: the line must stay visible.
    pub keep: bool,
    /// Bit i set when query term i matched; the popcount ranks relevance.
    pub query: u32,
}

impl Hits {
    /// A keep-pattern or a query hit: what holds a line, a member or a body where it stands.
    pub(crate) fn holds(&self) -> bool {
        self.keep || self.query != 0
    }
}

/// A query term matching more lines than this may still be selective; above it, see [`selective_terms`].
const MIN_COMMON_HITS: usize = 8;

/// The query terms (as a mask over [`Hits::query`]) that pick lines out of a text of `total` lines, given each
/// matching line's bits. A term found on more than an eighth of the lines (and more than a few) marks the text,
/// not a line: the searched word on every line of a grep answer, `pytest` in every frame of a pytest run,
/// `tests` in every test path. A line the query picks only for such terms is an arbitrary one, so it is not
/// kept for the query; lines picked for a term that singles lines out still are.
pub(crate) fn selective_terms(bits: impl Iterator<Item = u32>, total: usize) -> u32 {
    let mut counts = [0usize; 32];
    for b in bits {
        let mut rest = b;
        while rest != 0 {
            counts[rest.trailing_zeros() as usize] += 1;
            rest &= rest - 1;
        }
    }
    (0..32)
        .filter(|&t| counts[t] <= MIN_COMMON_HITS || counts[t] * 8 <= total)
        .fold(0u32, |m, t| m | (1 << t))
}

#[derive(Clone, Debug)]
struct Pattern {
    lower: Vec<u8>,
    /// `None` for a keep pattern (plain substring), `Some(bit)` for a query term (must start a word).
    query_bit: Option<u32>,
}

/// Keep patterns (case-insensitive substrings) and query terms (case-insensitive, at a word start) compiled
/// for a one-pass scan: patterns are bucketed by first byte so each text byte costs one table look-up.
#[derive(Clone, Debug, Default)]
pub(crate) struct Matcher {
    patterns: Vec<Pattern>,
    /// For each lowercase first byte, the range of `patterns` starting with it (patterns sorted by it).
    buckets: Vec<(u16, u16)>,
}

/// Query terms beyond this many are ignored: a bitmask per line keeps scoring allocation-free.
pub(crate) const MAX_QUERY_TERMS: usize = 32;

impl Matcher {
    pub(crate) fn new(query: &[String], keep: &[String]) -> Self {
        let mut patterns = Vec::new();
        for p in keep {
            if !p.is_empty() {
                patterns.push(Pattern {
                    lower: p.to_ascii_lowercase().into_bytes(),
                    query_bit: None,
                });
            }
        }
        for (i, q) in query
            .iter()
            .filter(|q| !q.is_empty())
            .take(MAX_QUERY_TERMS)
            .enumerate()
        {
            let bit = u32::try_from(i).unwrap_or(0);
            patterns.push(Pattern {
                lower: q.to_ascii_lowercase().into_bytes(),
                query_bit: Some(bit),
            });
        }
        patterns.sort_by_key(|p| p.lower.first().copied().unwrap_or(0));
        let mut buckets = vec![(0u16, 0u16); 256];
        for (i, p) in patterns.iter().enumerate() {
            let idx = usize::from(p.lower.first().copied().unwrap_or(0));
            let i = u16::try_from(i).unwrap_or(u16::MAX);
            let slot = &mut buckets[idx];
            if slot.0 == slot.1 {
                *slot = (i, i.saturating_add(1));
            } else {
                slot.1 = i.saturating_add(1);
            }
        }
        Self { patterns, buckets }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Keep and query hits anywhere in `text`.
    pub(crate) fn scan(&self, text: &[u8]) -> Hits {
        let mut hits = Hits::default();
        if self.is_empty() {
            return hits;
        }
        self.each_hit(text, |_, p| {
            match p.query_bit {
                None => hits.keep = true,
                Some(bit) => hits.query |= 1 << bit,
            }
            true
        });
        hits
    }

    /// Byte offsets of up to `keep_limit` keep-pattern hits followed by up to `query_limit` query hits (each
    /// group in text order): where a shortened line keeps windows, keep hits first.
    pub(crate) fn positions(
        &self,
        text: &[u8],
        keep_limit: usize,
        query_limit: usize,
    ) -> Vec<usize> {
        let (mut keep, mut query) = (Vec::new(), Vec::new());
        if self.is_empty() || keep_limit + query_limit == 0 {
            return keep;
        }
        self.each_hit(text, |pos, p| {
            let (list, limit) = match p.query_bit {
                None => (&mut keep, keep_limit),
                Some(_) => (&mut query, query_limit),
            };
            if list.len() < limit && list.last() != Some(&pos) {
                list.push(pos);
            }
            keep.len() < keep_limit || query.len() < query_limit
        });
        keep.extend(query);
        keep
    }

    fn each_hit(&self, text: &[u8], mut f: impl FnMut(usize, &Pattern) -> bool) {
        for (i, &c) in text.iter().enumerate() {
            let (lo, hi) = self.buckets[usize::from(c.to_ascii_lowercase())];
            if lo == hi {
                continue;
            }
            for p in self
                .patterns
                .get(usize::from(lo)..usize::from(hi))
                .unwrap_or(&[])
            {
                let Some(window) = text.get(i..i + p.lower.len()) else {
                    continue;
                };
                if !window.eq_ignore_ascii_case(&p.lower) {
                    continue;
                }
                if p.query_bit.is_some() && i > 0 && text[i - 1].is_ascii_alphanumeric() {
                    continue;
                }
                if !f(i, p) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_words_are_whole_words() {
        for l in [
            "error[E0308]: mismatched types",
            "warning: unused variable: `timer`",
            "httpx.ConnectError: [Errno 111] Connection refused",
            "Traceback (most recent call last):",
            "2024-01-01 12:00:00 WARN disk almost full",
            "request timed out after 30s",
            "thread 'main' panicked at src/main.rs:3:5",
            "npm ERR! code E404",
            "FAILED tests/test_x.py::test_y",
            "ls: cannot access 'x': No such file or directory",
            "{\"level\":\"error\",\"msg\":\"boom\"}",
            "can't open file",
        ] {
            assert!(is_error_line(l), "{l}");
        }
        for l in [
            "--error-format=json --json=diagnostic-rendered-ansi",
            "quick-error v2.0.1",
            "Poll<Result<(), Self::Error>>",
            "-rw-r--r-- 1 root root 954 Jan  3  2023 error.py",
            "CARGO_CFG_PANIC=unwind",
            "features: no-panic, critical-section",
            "'--allow=clippy::unreachable'",
            "ParseIntError and failures_total",
            "timeout=30 retries=2",
            "Compiling thiserror v2.0.21",
            "warningless code",
        ] {
            assert!(!is_error_line(l), "{l}");
        }
    }

    #[test]
    fn an_error_past_warnings_needs_a_word_other_than_a_warnings() {
        for l in [
            "WARN slow query",
            "2 warnings generated",
            "Warning: deprecated",
        ] {
            assert!(is_error_line(l) && !is_error_line_past_warnings(l), "{l}");
        }
        for l in [
            "warning: request timed out",
            "WARN cannot reach db",
            "Warnings: 1, errors: 2",
        ] {
            assert!(is_error_line_past_warnings(l), "{l}");
        }
    }

    #[test]
    fn long_lines_are_data_not_errors() {
        let long = format!("error {}", "x".repeat(MAX_ERROR_LINE_BYTES));
        assert!(!is_error_line(&long));
        assert_eq!(find_error_word(long.as_bytes(), 0), Some((0, 5)));
    }

    #[test]
    fn a_term_on_most_lines_is_not_selective() {
        // Term 0 on 40 of 100 lines, term 1 on 3, term 2 on 9 of 100 (under an eighth).
        let bits = (0..40)
            .map(|_| 0b001)
            .chain((0..3).map(|_| 0b010))
            .chain((0..9).map(|_| 0b100));
        assert_eq!(selective_terms(bits, 100), !0b001);
        // A few hits are selective however short the text.
        assert_eq!(selective_terms((0..5).map(|_| 1), 6) & 1, 1);
    }

    #[test]
    fn matcher_scans_keep_and_query() {
        let m = Matcher::new(
            &["poll".to_string(), "tokio".to_string()],
            &["SECRET_ID".to_string()],
        );
        let h = m.scan(b"fn poll_frame in Tokio");
        assert_eq!(
            h,
            Hits {
                keep: false,
                query: 0b11
            }
        );
        assert!(m.scan(b"my secret_id=4").keep);
        assert_eq!(m.scan(b"epoll only").query, 0);
        assert_eq!(m.positions(b"tokio poll", 5, 5), vec![0, 6]);
        assert_eq!(m.positions(b"poll poll poll secret_id", 1, 1), vec![15, 0]);
    }
}

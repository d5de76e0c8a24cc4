//! A validating JSON scanner over raw bytes, without building values.
//!
//! In the request path the JSON compressors work on spans of the original text: rows that stay are copied
//! byte for byte (formatting and number spelling preserved) and only dropped parts are replaced. This scanner
//! finds those spans. It is iterative (an explicit stack, depth-limited like serde_json), so deep or hostile
//! input cannot overflow the call stack, and it validates as strictly as serde_json so that detection and the
//! final parse agree.

/// Nesting deeper than this is rejected, as `serde_json::Value` parsing does (its recursion limit is 128,
/// so 127 levels parse), so whatever is detected as JSON can also be parsed into a `Value` by the proxy.
pub(crate) const MAX_DEPTH: usize = 127;

/// A byte range `start..end` of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub(crate) fn len(self) -> usize {
        self.end - self.start
    }

    pub(crate) fn of(self, text: &str) -> &str {
        text.get(self.start..self.end).unwrap_or("")
    }
}

/// An object member: the key (with its quotes) and the value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Member {
    pub key: Span,
    pub value: Span,
}

pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// If `text` is exactly one JSON value (surrounding whitespace allowed), its first byte.
pub(crate) fn validate(text: &str) -> Option<u8> {
    let span = top_value(text)?;
    text.as_bytes().get(span.start).copied()
}

/// The span of the single JSON value that `text` consists of.
pub(crate) fn top_value(text: &str) -> Option<Span> {
    let b = text.as_bytes();
    let start = skip_ws(b, 0);
    let end = scan_value(b, start)?;
    (skip_ws(b, end) == b.len()).then_some(Span { start, end })
}

/// End (exclusive) of the string starting with the quote at `i`.
pub(crate) fn scan_string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        while j < b.len() && b[j] != b'"' && b[j] != b'\\' && b[j] >= 0x20 {
            j += 1;
        }
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => match *b.get(j + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'u' => {
                    let hex = b.get(j + 2..j + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    j += 6;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// End (exclusive) of the number starting at `i` (the grammar the request body split checks too).
fn scan_number(b: &[u8], i: usize) -> Option<usize> {
    crate::responses::split::number_len(b.get(i..)?).map(|n| i + n)
}

fn scan_literal(b: &[u8], i: usize, lit: &[u8]) -> Option<usize> {
    (b.get(i..i + lit.len())? == lit).then_some(i + lit.len())
}

/// `"key"` then `:` at `j`; returns the index after the colon.
fn scan_key(b: &[u8], j: usize) -> Option<usize> {
    let e = scan_string(b, j)?;
    let k = skip_ws(b, e);
    (b.get(k) == Some(&b':')).then_some(k + 1)
}

/// End (exclusive) of the value starting at `i` (no leading whitespace), validating it.
pub(crate) fn scan_value(b: &[u8], start: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let mut i = start;
    'value: loop {
        i = skip_ws(b, i);
        match *b.get(i)? {
            open @ (b'{' | b'[') => {
                if stack.len() >= MAX_DEPTH {
                    return None;
                }
                let j = skip_ws(b, i + 1);
                let close = if open == b'{' { b'}' } else { b']' };
                if b.get(j) == Some(&close) {
                    i = j + 1;
                } else {
                    stack.push(open);
                    i = if open == b'{' { scan_key(b, j)? } else { j };
                    continue 'value;
                }
            }
            b'"' => i = scan_string(b, i)?,
            b't' => i = scan_literal(b, i, b"true")?,
            b'f' => i = scan_literal(b, i, b"false")?,
            b'n' => i = scan_literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = scan_number(b, i)?,
            _ => return None,
        }
        loop {
            let Some(&top) = stack.last() else {
                return Some(i);
            };
            i = skip_ws(b, i);
            match (*b.get(i)?, top) {
                (b',', b'[') => {
                    i += 1;
                    continue 'value;
                }
                (b',', b'{') => {
                    let j = skip_ws(b, i + 1);
                    i = scan_key(b, j)?;
                    continue 'value;
                }
                (b']', b'[') | (b'}', b'{') => {
                    stack.pop();
                    i += 1;
                }
                _ => return None,
            }
        }
    }
}

/// Spans of the elements of the array at `span` (which covers `[` … `]`).
pub(crate) fn array_items(b: &[u8], span: Span) -> Option<Vec<Span>> {
    let mut items = Vec::new();
    if b.get(span.start) != Some(&b'[') {
        return None;
    }
    let mut i = skip_ws(b, span.start + 1);
    if b.get(i) == Some(&b']') {
        return Some(items);
    }
    loop {
        let end = scan_value(b, i)?;
        items.push(Span { start: i, end });
        i = skip_ws(b, end);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b']' => return Some(items),
            _ => return None,
        }
    }
}

/// Members of the object at `span` (which covers `{` … `}`).
pub(crate) fn object_members(b: &[u8], span: Span) -> Option<Vec<Member>> {
    let mut members = Vec::new();
    if b.get(span.start) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(b, span.start + 1);
    if b.get(i) == Some(&b'}') {
        return Some(members);
    }
    loop {
        let key_end = scan_string(b, i)?;
        let key = Span {
            start: i,
            end: key_end,
        };
        let colon = skip_ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        let vstart = skip_ws(b, colon + 1);
        let vend = scan_value(b, vstart)?;
        members.push(Member {
            key,
            value: Span {
                start: vstart,
                end: vend,
            },
        });
        i = skip_ws(b, vend);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(members),
            _ => return None,
        }
    }
}

/// The content of a string span without quotes, when it has no escapes (the common case, zero-copy).
/// The whole lines the value at `span` is written on: from the start of the line its first byte stands on (the key
/// before it: `"error-ex": {`) to the end of the line its last byte closes (`},`). What the error floor counts when a
/// value changes, since the floor keeps whole lines.
pub(crate) fn lines_around(text: &str, span: Span) -> Option<&str> {
    let start = text.get(..span.start)?.rfind('\n').map_or(0, |i| i + 1);
    let end = text
        .get(span.end..)?
        .find('\n')
        .map_or(text.len(), |i| span.end + i);
    text.get(start..end)
}

pub(crate) fn plain_str(text: &str, span: Span) -> Option<&str> {
    let inner = text.get(span.start + 1..span.end.checked_sub(1)?)?;
    (!inner.contains('\\')).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_serde_json() {
        let cases = [
            "[]",
            "{}",
            " [1, -2.5e3, true, false, null, \"a\\n\\u00e9\"] ",
            "{\"a\": {\"b\": [{}]}}",
            "[1,]",
            "{\"a\" 1}",
            "[01]",
            "[1.]",
            "[\"\\x\"]",
            "[\"a\u{1}\"]",
            "[1] x",
            "nul",
            "-",
            "\"s\"",
            "[[[[]]]]",
            "{\"a\":1,}",
            "[-0.0e-0]",
            "[1e5",
            "",
        ];
        for c in cases {
            let ours = validate(c).is_some();
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(c).is_ok();
            assert_eq!(ours, serde, "{c:?}");
        }
        let deep_ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let deep_bad = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(validate(&deep_ok).is_some());
        assert!(serde_json::from_str::<serde_json::Value>(&deep_ok).is_ok());
        assert!(validate(&deep_bad).is_none());
        assert!(serde_json::from_str::<serde_json::Value>(&deep_bad).is_err());
    }

    #[test]
    fn items_and_members() {
        let t = "[ {\"a\": 1}, [2], \"x\" ]";
        let items = array_items(
            t.as_bytes(),
            Span {
                start: 0,
                end: t.len(),
            },
        )
        .unwrap_or_default();
        let texts: Vec<&str> = items.iter().map(|s| s.of(t)).collect();
        assert_eq!(texts, vec!["{\"a\": 1}", "[2]", "\"x\""]);
        let o = "{\"k\" : [1], \"s\":\"v\"}";
        let m = object_members(
            o.as_bytes(),
            Span {
                start: 0,
                end: o.len(),
            },
        )
        .unwrap_or_default();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].key.of(o), "\"k\"");
        assert_eq!(m[1].value.of(o), "\"v\"");
        assert_eq!(plain_str(o, m[1].value), Some("v"));
    }
}

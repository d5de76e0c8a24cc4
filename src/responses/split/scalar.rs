//! Numbers and literals, the values stage 2 reads byte by byte (they are short): each must be exactly one JSON
//! number, `true`, `false` or `null`, ending where the run of bytes outside strings ends.

/// Whether `byte` can follow a number or literal: whitespace, `{ } [ ] , :` or a quote (anything else would
/// have been part of the same run of bytes).
fn ends_token(byte: u8) -> bool {
    matches!(
        byte,
        b' ' | b'\t' | b'\n' | b'\r' | b'{' | b'}' | b'[' | b']' | b',' | b':' | b'"'
    )
}

/// The end of the number or literal at `at`, when the run of bytes there is exactly one.
pub(super) fn scalar_end(body: &[u8], at: usize) -> Option<usize> {
    let rest = body.get(at..)?;
    let len = match rest.first()? {
        b't' => rest.starts_with(b"true").then_some(4)?,
        b'f' => rest.starts_with(b"false").then_some(5)?,
        b'n' => rest.starts_with(b"null").then_some(4)?,
        _ => number_len(rest)?,
    };
    match rest.get(len) {
        Some(&byte) if !ends_token(byte) => None,
        _ => Some(at + len),
    }
}

/// The length of the JSON number at the start of `s`: `-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?`.
pub(crate) fn number_len(s: &[u8]) -> Option<usize> {
    let digits = |from: usize| {
        s.iter()
            .skip(from)
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut i = usize::from(s.first() == Some(&b'-'));
    match s.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i += digits(i),
        _ => return None,
    }
    if s.get(i) == Some(&b'.') {
        let n = digits(i + 1);
        if n == 0 {
            return None;
        }
        i += 1 + n;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(i);
        if n == 0 {
            return None;
        }
        i += n;
    }
    Some(i)
}

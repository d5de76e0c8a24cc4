//! Markers: the only link between a compressed tool output and its stored original.
//!
//! In the request path, every compressor replaces what it drops by `<<ctxzip:HASH NOTE>>`; the proxy stores
//! the whole original under HASH before the request leaves, finds markers again in later turns (to inject the
//! `context_expand` tool and refresh TTLs), and never compresses a text that already carries one. The hash is
//! the first 12 lowercase hex characters of SHA-256 of the original, so it is stable across processes and
//! replicas (prefix-cache stability depends on it).

use sha2::{Digest, Sha256};

/// Every marker starts with this; a text containing it is never compressed again.
pub const MARKER_PREFIX: &str = "<<ctxzip:";
/// Every marker ends with this.
pub const MARKER_SUFFIX: &str = ">>";
/// Hex digits of SHA-256 kept in a marker: short enough to be cheap in tokens, long enough to be unique per
/// tenant store in practice (48 bits).
pub const HASH_LEN: usize = 12;
/// Longest note accepted when parsing; notes we write are far shorter. Bounds the scan on hostile input.
const MAX_NOTE_LEN: usize = 128;

/// First 12 lowercase hex characters of SHA-256 of `original`: the key the proxy stores the original under.
pub fn hash_of(original: &str) -> String {
    let digest = Sha256::digest(original.as_bytes());
    let mut out = String::with_capacity(HASH_LEN);
    for byte in digest.iter().take(HASH_LEN / 2) {
        out.push(hex_digit(byte >> 4));
        out.push(hex_digit(byte & 0x0f));
    }
    out
}

fn hex_digit(n: u8) -> char {
    match n {
        0..=9 => char::from(b'0' + n),
        _ => char::from(b'a' + (n - 10)),
    }
}

/// `<<ctxzip:HASH NOTE>>`. The note must stay one token-free word so that [`find_markers`] can parse it back:
/// whitespace and angle brackets are replaced by `_`.
pub fn marker(hash: &str, note: &str) -> String {
    let mut out = String::with_capacity(MARKER_PREFIX.len() + hash.len() + note.len() + 4);
    out.push_str(MARKER_PREFIX);
    out.push_str(hash);
    if !note.is_empty() {
        out.push(' ');
        for c in note.chars() {
            if c.is_whitespace() || c == '<' || c == '>' {
                out.push('_');
            } else {
                out.push(c);
            }
        }
    }
    out.push_str(MARKER_SUFFIX);
    out
}

/// Every well-formed marker in `text`, in order of appearance, as (hash, note). The hash is returned as
/// written (6–64 hex digits, either case) so that the proxy can resolve prefixes itself.
pub fn find_markers(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find(MARKER_PREFIX) {
        let start = from + pos + MARKER_PREFIX.len();
        if let Some((hash, note, _end)) = parse_at(text, start) {
            found.push((hash.to_string(), note.to_string()));
        }
        // Resume right after the prefix: markers never nest, and a malformed one must not hide the next.
        from = start;
    }
    found
}

/// Whether `text` carries at least one well-formed marker.
pub fn contains_marker(text: &str) -> bool {
    let mut from = 0;
    while let Some(pos) = text[from..].find(MARKER_PREFIX) {
        let start = from + pos + MARKER_PREFIX.len();
        if parse_at(text, start).is_some() {
            return true;
        }
        from = start;
    }
    false
}

/// Whether `bytes` hold a marker in the exact form ctxgate writes: the prefix, 12 lowercase hex characters, a
/// space, a note of 1–128 characters without whitespace or angle brackets, and the suffix. Deciding to offer
/// `context_expand` on anything looser would let a user's `<<ctxzip:zzzz>>` change the request.
pub fn has_own_marker(bytes: &[u8]) -> bool {
    // Built once: the inject stage asks this of every input item on every turn.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(MARKER_PREFIX.as_bytes()));
    let prefix = MARKER_PREFIX.as_bytes();
    FINDER.find_iter(bytes).any(|at| {
        let rest = &bytes[at + prefix.len()..];
        let Some(hash) = rest.get(..HASH_LEN) else {
            return false;
        };
        if !hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            || rest.get(HASH_LEN) != Some(&b' ')
        {
            return false;
        }
        let note = &rest[HASH_LEN + 1..];
        let end = note
            .iter()
            .take(MAX_NOTE_LEN + 1)
            .position(|b| b.is_ascii_whitespace() || *b == b'<' || *b == b'>');
        matches!(end, Some(n) if n > 0 && note[n..].starts_with(MARKER_SUFFIX.as_bytes()))
    })
}

/// Counts occurrences of the marker prefix, well-formed or not. The final check of `compress` compares it
/// with the well-formed markers so that no partial marker can leave the compressor.
pub(crate) fn prefix_count(text: &str) -> usize {
    text.matches(MARKER_PREFIX).count()
}

/// Parses `HASH[ NOTE]>>` starting at byte `start` (just after the prefix).
fn parse_at(text: &str, start: usize) -> Option<(&str, &str, usize)> {
    let rest = text.get(start..)?;
    let bytes = rest.as_bytes();
    let hash_len = bytes.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if !(6..=64).contains(&hash_len) {
        return None;
    }
    let hash = &rest[..hash_len];
    let after = &rest[hash_len..];
    if let Some(tail) = after.strip_prefix(MARKER_SUFFIX) {
        let _ = tail;
        return Some((hash, "", start + hash_len + MARKER_SUFFIX.len()));
    }
    let note_part = after.strip_prefix(' ')?;
    let end = note_part.find(MARKER_SUFFIX)?;
    if end == 0 || end > MAX_NOTE_LEN {
        return None;
    }
    let note = &note_part[..end];
    if note
        .chars()
        .any(|c| c.is_whitespace() || c == '<' || c == '>')
    {
        return None;
    }
    Some((hash, note, start + hash_len + 1 + end + MARKER_SUFFIX.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_12_lower_hex_of_sha256() {
        // sha256("") = e3b0c44298fc1c149afbf4c8996fb924...
        assert_eq!(hash_of(""), "e3b0c44298fc");
        assert_eq!(hash_of("abc"), "ba7816bf8f01");
    }

    #[test]
    fn marker_round_trips() {
        let m = marker("ba7816bf8f01", "38 rows offloaded");
        assert_eq!(m, "<<ctxzip:ba7816bf8f01 38_rows_offloaded>>");
        let text = format!("head\n{m}\ntail {}", marker("e3b0c44298fc", "x"));
        assert_eq!(
            find_markers(&text),
            vec![
                ("ba7816bf8f01".to_string(), "38_rows_offloaded".to_string()),
                ("e3b0c44298fc".to_string(), "x".to_string())
            ]
        );
        assert!(contains_marker(&text));
    }

    #[test]
    fn partial_markers_are_not_markers() {
        for t in [
            "<<ctxzip:",
            "<<ctxzip:zz 1>>",
            "<<ctxzip:abc 1>>",
            "<<ctxzip:abcdef12 a b>>",
            "<<ctxzip:abcdef12 x",
        ] {
            assert!(!contains_marker(t), "{t}");
            assert_eq!(prefix_count(t), 1);
        }
        assert!(contains_marker("<<ctxzip:abcdef>>"));
        for t in [
            "<<ctxzip:zzzz>>",
            "<<ctxzip:abcdef>>",
            "<<ctxzip:ABCDEF123456 n>>",
            "<<ctxzip:abcdef123456>>",
            "<<ctxzip:abcdef123456 >>",
            "<<ctxzip:abcdef1234567 n>>",
        ] {
            assert!(!has_own_marker(t.as_bytes()), "{t}");
        }
        assert!(has_own_marker(
            b"x <<ctxzip:abcdef123456 3_lines_offloaded>> y"
        ));
        assert!(contains_marker("<<<ctxzip:ABCDEF123456 n>>>"));
    }
}

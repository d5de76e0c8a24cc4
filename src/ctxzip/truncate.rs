//! Shortening of single long lines that stay visible.
//!
//! In the request path a kept line can itself be huge — a 1 MB minified JSON value cut off mid-way, a
//! 6 KB compiler command line. Such a line keeps its head and a few windows around error words, keep-pattern
//! and query hits; the rest goes behind a marker (`N_chars_offloaded`). Lines protected as error lines are
//! never shortened by callers (they stay byte-identical); this is only for the others.

use super::relevance::find_error_word;
use super::{Ctx, Tally, Unit};

/// Visible lines longer than this (bytes) are shortened.
pub(crate) const LONG_LINE: usize = 400;
/// Bytes of the head of a shortened line that stay visible.
const HEAD_KEEP: usize = 200;
/// Bytes shown on each side of a hit beyond the head.
const WINDOW: usize = 80;
/// At most this many hit windows per line, to bound the output whatever the line holds.
const MAX_WINDOWS: usize = 3;

/// `line` shortened to its head plus hit windows and a marker, or unchanged when that is not shorter.
pub(crate) fn shorten(line: &str, ctx: &Ctx, tally: &mut Tally) -> String {
    shorten_to(line, HEAD_KEEP, ctx, tally)
}

/// Like [`shorten`] with an explicit head size (single-line inputs show a larger head).
pub(crate) fn shorten_to(line: &str, head_keep: usize, ctx: &Ctx, tally: &mut Tally) -> String {
    if let Some(head) = blob_head(line) {
        return shorten_blob(line, head, ctx, tally);
    }
    if line.len() <= head_keep + 2 * WINDOW {
        return line.to_string();
    }
    let b = line.as_bytes();
    let head_end = floor_boundary(line, head_keep);
    // Hits in priority order: keep patterns, then query terms, then error words.
    let tail = b.get(head_end..).unwrap_or(&[]);
    let mut hits: Vec<usize> = ctx
        .matcher
        .positions(tail, MAX_WINDOWS, 1)
        .into_iter()
        .map(|p| p + head_end)
        .collect();
    let mut from = head_end;
    while hits.len() < 2 * MAX_WINDOWS {
        match find_error_word(b, from) {
            Some((s, e)) => {
                hits.push(s);
                from = e;
            }
            None => break,
        }
    }
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for h in hits {
        if windows.len() == MAX_WINDOWS {
            break;
        }
        if windows.iter().any(|w| w.0 <= h && h < w.1) {
            continue;
        }
        let s = floor_boundary(line, h.saturating_sub(WINDOW).max(head_end));
        let e = ceil_boundary(line, (h + WINDOW).min(line.len()));
        windows.push((s, e));
    }
    windows.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in windows {
        if let Some(last) = merged.last_mut().filter(|last| s <= last.1) {
            last.1 = last.1.max(e);
        } else {
            merged.push((s, e));
        }
    }
    let mut out = String::with_capacity(head_end + merged.len() * (2 * WINDOW + 8) + 48);
    out.push_str(&line[..head_end]);
    let mut shown_end = head_end;
    let mut dropped = 0;
    for (s, e) in merged {
        if s > shown_end {
            dropped += line[shown_end..s].chars().count();
            out.push_str(" … ");
        }
        out.push_str(&line[s.max(shown_end)..e]);
        shown_end = e;
    }
    if shown_end >= line.len() {
        return line.to_string();
    }
    dropped += line[shown_end..].chars().count();
    out.push_str(" … ");
    out.push_str(&ctx.marker(dropped, Unit::Chars));
    if out.len() >= line.len() {
        return line.to_string();
    }
    tally.add(Unit::Chars, dropped);
    out
}

/// An encoded blob shorter than this is shown whole.
const BLOB_MIN: usize = 256;
/// Characters of an encoded blob's payload that stay visible: enough to tell one blob from another.
const BLOB_HEAD: usize = 32;

/// Where the visible head of an encoded blob ends: a base64 or hex payload of at least [`BLOB_MIN`] characters
/// and nothing else (a `data:…;base64,` prefix allowed, and kept) — a notebook's `image/png` output, an inline
/// image in an HTML page, a serialized key or archive. None of its characters means anything to a reader, and
/// base64 costs a token per two or three characters, so only its first [`BLOB_HEAD`] stay, then the marker.
/// `None` for anything else (a minified script, a long URL, prose without spaces have other characters).
fn blob_head(line: &str) -> Option<usize> {
    let payload_at = match line.strip_prefix("data:") {
        Some(rest) => {
            let comma = rest.find(',')?;
            let mime = &rest[..comma];
            if mime.len() > 100 || mime.contains(char::is_whitespace) {
                return None;
            }
            "data:".len() + comma + 1
        }
        None => 0,
    };
    let payload = line.as_bytes().get(payload_at..)?;
    let encoded = payload
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'));
    (payload.len() >= BLOB_MIN && encoded).then_some(payload_at + BLOB_HEAD)
}

/// An ASCII-armored block (`-----BEGIN PGP SIGNATURE-----`, a PEM certificate or key) as its `BEGIN` line, the
/// first [`BLOB_HEAD`] characters of its payload and a marker; `None` for anything else. GitHub's commit answers
/// carry an 800-character signature per commit, a kubeconfig or a TLS secret its certificates: base64 lines of 64
/// characters each, so no line is long enough to be a blob, yet none means anything to a reader.
pub(crate) fn shorten_armored(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let body = text.trim_end();
    let first_end = body.find('\n')?;
    let begin = body[..first_end].trim_end_matches('\r');
    let label = begin.strip_prefix("-----BEGIN ")?.strip_suffix("-----")?;
    let last = body.rsplit('\n').next()?.trim_end_matches('\r');
    if last != format!("-----END {label}-----") || body.len() < BLOB_MIN {
        return None;
    }
    let inner = &body[first_end + 1..body.len() - last.len()];
    let armored = inner.lines().all(|l| {
        let l = l.trim_end_matches('\r');
        l.is_empty()
            || l.split_once(": ").is_some_and(|(key, _)| {
                !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
            || l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    });
    if !armored {
        return None;
    }
    let payload_at = first_end + 1 + (inner.len() - inner.trim_start().len());
    Some(shorten_blob(body, payload_at + BLOB_HEAD, ctx, tally))
}

/// `line`, an encoded blob ([`blob_head`]), as its first `head` bytes and a marker.
fn shorten_blob(line: &str, head: usize, ctx: &Ctx, tally: &mut Tally) -> String {
    let head = floor_boundary(line, head);
    let dropped = line[head..].chars().count();
    let mut out = String::with_capacity(head + 48);
    out.push_str(&line[..head]);
    out.push_str(" … ");
    out.push_str(&ctx.marker(dropped, Unit::Chars));
    tally.add(Unit::Chars, dropped);
    out
}

/// Largest char boundary ≤ `i`.
pub(crate) fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Smallest char boundary ≥ `i`.
pub(crate) fn ceil_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::super::{Options, find_markers};
    use super::*;

    #[test]
    fn keeps_head_and_error_window() {
        let ctx = Ctx::new("abcdefabcdef".into(), &Options::default());
        let mut t = Tally::default();
        let line = format!("{}ERROR here{}", "é".repeat(300), "x".repeat(2000));
        let s = shorten(&line, &ctx, &mut t);
        assert!(s.len() < line.len());
        assert!(s.contains("ERROR here"));
        assert_eq!(find_markers(&s).len(), 1);
        assert_eq!(shorten("short", &ctx, &mut t), "short");
    }

    /// A base64 payload keeps a few characters, not the 200 of a line's head; a line that only looks dense (a
    /// minified script, a URL) is shortened as any line.
    #[test]
    fn an_encoded_blob_keeps_only_a_short_head() {
        let ctx = Ctx::new("abcdefabcdef".into(), &Options::default());
        let mut t = Tally::default();
        let png: String = (0..3000u32)
            .map(|i| {
                char::from(
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                        [(i * 7 % 64) as usize],
                )
            })
            .collect();
        for blob in [png.clone(), format!("data:image/png;base64,{png}")] {
            let s = shorten(&blob, &ctx, &mut t);
            assert!(s.len() < 120, "{s}");
            assert!(blob.starts_with(s.split(" … ").next().unwrap_or_default()));
            assert_eq!(find_markers(&s).len(), 1);
        }
        let script = "function a(b){return b.map(function(c){return c*2})};".repeat(60);
        let s = shorten(&script, &ctx, &mut t);
        assert!(s.len() > HEAD_KEEP && s.len() < script.len());
        assert_eq!(blob_head(&png[..BLOB_MIN - 1]), None);
        assert_eq!(blob_head("data:text/plain, hello"), None);
    }
}

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
}

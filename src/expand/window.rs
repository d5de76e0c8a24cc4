//! What `context_expand` returns once the original is found: the original, a window of it, or matching lines.
//!
//! In the request path this runs after [`super::resolve`] found the hash and the store returned the original;
//! its output becomes the `function_call_output` the proxy sends upstream in the next round. Originals can be
//! hundreds of kilobytes, so one answer is bounded: a small original comes back verbatim, a large one as a window
//! that ends with one line telling exactly how to ask for the next, and a `query` returns only matching lines.
//! Offsets and sizes count characters (Unicode scalar values), never bytes, so no window splits a UTF-8 character.

use std::cmp::Reverse;

use serde_json::Value;

use super::resolve::ExpandArgs;
use super::tool::EXPAND_TOOL;
use crate::ctxzip::MAX_TERMS;

/// Default size of one answer, in characters (about 4,000 tokens).
pub const DEFAULT_MAX_CHARS: usize = 16_000;
/// Lines shown before and after each matching line, as `grep -C 2` does.
const CONTEXT_LINES: usize = 2;
/// An offset this close after a line start is moved back to it, so windows the model asks for begin at a line.
const SNAP_BACK_MAX: usize = 256;
/// A matching line longer than this is shown as an excerpt around the first hit.
const MATCH_LINE_MAX: usize = 2_000;
/// A context line longer than this is cut.
const CONTEXT_LINE_MAX: usize = 300;
/// Every status line starts with this, so the model (and a test) can tell it from the original's text.
const STATUS: &str = "[ctxzip: ";

/// The tool's answer for `original`, stored under `hash`.
///
/// - No query, no offset, no limit and at most `max_chars` characters: the original, byte for byte.
/// - No query otherwise: a window (see `span`), then `\n`, then one status line saying where it is and
///   how to get the next (or that the offset is past the end).
/// - A non-blank query: matching lines (see `render_query`) after a header line, and a "more" line
///   when they did not all fit.
///
/// `max_chars` 0 means [`DEFAULT_MAX_CHARS`]; a `limit` of 0 counts as no limit (a 0-character window could
/// never make progress). Never panics, whatever the input.
pub fn render(original: &str, args: &ExpandArgs, max_chars: usize, hash: &str) -> String {
    let max = if max_chars == 0 {
        DEFAULT_MAX_CHARS
    } else {
        max_chars
    };
    let limit = args.limit.filter(|&l| l > 0);
    let budget = limit.map_or(max, |l| l.min(max));
    let offset = args.offset.unwrap_or(0);
    if let Some(query) = args.query.as_deref().filter(|q| !q.trim().is_empty()) {
        return render_query(original, query, offset, budget, &Hint { hash, limit });
    }
    // A character is at most 4 bytes: only a text under 4 × max bytes can be short enough to need counting.
    let total = || original.chars().count();
    if args.offset.is_none()
        && limit.is_none()
        && (original.len() <= max || (original.len() / 4 <= max && total() <= max))
    {
        return original.to_owned();
    }
    render_window(original, total(), offset, budget, &Hint { hash, limit })
}

/// What the "next call" hints repeat back: the resolved hash and the limit the model asked for, if any.
struct Hint<'a> {
    hash: &'a str,
    limit: Option<usize>,
}

impl Hint<'_> {
    /// `{"hash":…,"query":…,"offset":…,"limit":…}` with only the fields given; values JSON-escaped.
    fn call(&self, query: Option<&str>, offset: Option<usize>) -> String {
        let mut out = format!("{{\"hash\":{}", Value::from(self.hash));
        if let Some(q) = query {
            out.push_str(&format!(",\"query\":{}", Value::from(q)));
        }
        if let Some(o) = offset {
            out.push_str(&format!(",\"offset\":{o}"));
        }
        if let Some(l) = self.limit {
            out.push_str(&format!(",\"limit\":{l}"));
        }
        out.push('}');
        out
    }
}

/// A window of the original, in characters and in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    start_byte: usize,
    end_byte: usize,
}

/// The window for `offset` of at most `budget` (≥ 1) characters of `text` (`total` characters long); `None` when
/// the offset is past the end.
///
/// The start moves back to its line's start when that is within `min(256, budget / 4)` characters (always less
/// than the budget, so the window still reaches past the offset asked for, and the offsets we hand out — line
/// starts, or cuts more than a budget into a long line — are never moved). The end moves back to the last line
/// end in the window when that keeps at least half of it.
fn span(text: &str, total: usize, offset: usize, budget: usize) -> Option<Span> {
    let budget = budget.max(1);
    if offset > total || (offset == total && total > 0) {
        return None;
    }
    let (mut start, mut start_byte) = (offset, byte_at(text, 0, offset));
    let line_start = text[..start_byte].rfind('\n').map_or(0, |p| p + 1);
    let back = text[line_start..start_byte].chars().count();
    if back > 0 && back <= SNAP_BACK_MAX.min(budget / 4) {
        start -= back;
        start_byte = line_start;
    }
    if start.saturating_add(budget) >= total {
        return Some(Span {
            start,
            end: total,
            start_byte,
            end_byte: text.len(),
        });
    }
    let cut_byte = byte_at(text, start_byte, budget);
    let body = &text[start_byte..cut_byte];
    if let Some(p) = body.rfind('\n') {
        let kept = body[..=p].chars().count();
        if kept * 2 >= budget {
            return Some(Span {
                start,
                end: start + kept,
                start_byte,
                end_byte: start_byte + p + 1,
            });
        }
    }
    Some(Span {
        start,
        end: start + budget,
        start_byte,
        end_byte: cut_byte,
    })
}

/// Byte index `chars` characters after byte `from` (clamped to the end).
fn byte_at(text: &str, from: usize, chars: usize) -> usize {
    text[from..]
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| from + i)
}

/// Number of lines, counting a last line without a newline; 0 for an empty text.
fn line_count(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// 1-based number of the line holding byte `at`.
fn line_at(text: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..at.min(text.len())]).count() + 1
}

fn render_window(
    text: &str,
    total: usize,
    offset: usize,
    budget: usize,
    hint: &Hint<'_>,
) -> String {
    let Some(s) = span(text, total, offset, budget) else {
        return format!(
            "{STATUS}offset {offset} is past the end of this original ({total} chars, {} lines); call \
             {EXPAND_TOOL} with {} to read it from the start]",
            line_count(text),
            hint.call(None, None)
        );
    };
    if total == 0 {
        return format!("\n{STATUS}the original is empty]");
    }
    let first = line_at(text, s.start_byte);
    let last = if s.end_byte > s.start_byte {
        line_at(text, s.end_byte - 1)
    } else {
        first
    };
    let position = format!(
        "{STATUS}showing chars {}-{} of {total} (lines {first}-{last} of {})",
        s.start,
        s.end,
        line_count(text)
    );
    let next = if s.end < total {
        format!(
            "; call {EXPAND_TOOL} with {} for more]",
            hint.call(None, Some(s.end))
        )
    } else {
        "; end of original]".to_owned()
    };
    format!("{}\n{position}{next}", &text[s.start_byte..s.end_byte])
}

/// Query terms, lowercased: the whole query when wrapped in double quotes (a phrase), else its distinct words
/// (at most [`MAX_TERMS`], the same bound as the terms a compression keeps lines for, which bounds the scan
/// cost of a runaway query).
fn terms(query: &str) -> Vec<String> {
    let q = query.trim();
    if let Some(phrase) = q.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        if !phrase.trim().is_empty() {
            return vec![phrase.to_lowercase()];
        }
    }
    let mut out: Vec<String> = Vec::new();
    for word in q.split_whitespace().map(str::to_lowercase).take(MAX_TERMS) {
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// One line of the original: its text (without `\n` or a trailing `\r`) and its offset in characters.
struct Line<'a> {
    text: &'a str,
    offset: usize,
}

fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut offset = 0;
    let body = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return out;
    }
    for raw in body.split('\n') {
        out.push(Line {
            text: raw.strip_suffix('\r').unwrap_or(raw),
            offset,
        });
        offset += raw.chars().count() + 1;
    }
    out
}

/// Lines matching any term, with `CONTEXT_LINES` around them, best first (most terms matched, then position).
///
/// `skip` (the `offset` argument in query mode) skips that many matches in that ranked order, so following the
/// "more" line pages through every match; each page is shown in original order, groups separated by `--`.
fn render_query(text: &str, query: &str, skip: usize, budget: usize, hint: &Hint<'_>) -> String {
    let words = terms(query);
    let lines = split_lines(text);
    let lowered: Vec<String> = lines.iter().map(|l| l.text.to_lowercase()).collect();
    let score = |i: usize| {
        words
            .iter()
            .filter(|w| lowered[i].contains(w.as_str()))
            .count()
    };
    let mut ranked: Vec<(usize, usize)> = (0..lines.len())
        .map(|i| (i, score(i)))
        .filter(|&(_, s)| s > 0)
        .collect();
    ranked.sort_by_key(|&(i, s)| (Reverse(s), i));
    let quoted = Value::from(query).to_string();
    if ranked.is_empty() {
        return format!(
            "{STATUS}no line matches {quoted} in this original ({} lines, {} chars); call {EXPAND_TOOL} with {} \
             and no query to read it]",
            lines.len(),
            text.chars().count(),
            hint.call(None, None)
        );
    }
    if skip >= ranked.len() {
        return format!(
            "{STATUS}{} lines match {quoted}; offset {skip} skips past all of them; call {EXPAND_TOOL} with {} to \
             see them from the first]",
            ranked.len(),
            hint.call(Some(query), None)
        );
    }
    let budget = budget.max(1);
    let mut shown = vec![false; lines.len()];
    let (mut used, mut taken) = (0usize, 0usize);
    for &(m, _) in &ranked[skip..] {
        let range = m.saturating_sub(CONTEXT_LINES)..(m + CONTEXT_LINES + 1).min(lines.len());
        let cost: usize = range
            .clone()
            .filter(|&i| !shown[i])
            .map(|i| {
                display(&lines[i], &lowered[i], &words, i, score(i) > 0, budget)
                    .chars()
                    .count()
                    + 1
            })
            .sum();
        // A match whose lines are all on the page already is free: taking it keeps the next page from repeating it.
        let cost = if cost == 0 { 0 } else { cost + 3 };
        if taken > 0 && cost > 0 && used + cost > budget {
            break;
        }
        range.for_each(|i| shown[i] = true);
        used += cost;
        taken += 1;
    }
    let mut body = String::new();
    let mut previous: Option<usize> = None;
    for i in (0..lines.len()).filter(|&i| shown[i]) {
        if previous.is_some_and(|p| p + 1 != i) {
            body.push_str("--\n");
        }
        body.push_str(&display(
            &lines[i],
            &lowered[i],
            &words,
            i,
            score(i) > 0,
            budget,
        ));
        body.push('\n');
        previous = Some(i);
    }
    let ranking = if words.len() > 1 {
        ", any word, lines matching more words first"
    } else {
        ""
    };
    let mut out = format!(
        "{STATUS}{} of {} lines match {quoted}{ranking}; showing matches {}-{} with {CONTEXT_LINES} lines of \
         context; \"N:\" marks a matching line, \"N-\" a context line]\n{body}",
        ranked.len(),
        lines.len(),
        skip + 1,
        skip + taken
    );
    let rest = ranked.len() - skip - taken;
    if rest > 0 {
        let call = hint.call(Some(query), Some(skip + taken));
        let noun = if rest == 1 { "line" } else { "lines" };
        out.push_str(&format!(
            "{STATUS}{rest} more matching {noun}; call {EXPAND_TOOL} with {call} for more]"
        ));
    }
    out
}

/// `N: text` for a matching line, `N- text` for context; long lines cut, a long match around its first hit.
fn display(
    line: &Line<'_>,
    lowered: &str,
    words: &[String],
    index: usize,
    is_match: bool,
    budget: usize,
) -> String {
    let number = index + 1;
    let mark = if is_match { ':' } else { '-' };
    let width = if is_match {
        MATCH_LINE_MAX
    } else {
        CONTEXT_LINE_MAX
    }
    .min(budget)
    .max(1);
    let len = line.text.chars().count();
    if len <= width {
        return format!("{number}{mark} {}", line.text);
    }
    // Position of the first hit, in characters of the lowercased line: close enough to centre the excerpt.
    let hit = words
        .iter()
        .filter_map(|w| lowered.find(w.as_str()))
        .min()
        .unwrap_or(0);
    let hit_char = lowered.get(..hit).map_or(0, |p| p.chars().count());
    let from = if is_match {
        hit_char.saturating_sub(width / 4).min(len - width)
    } else {
        0
    };
    let excerpt: String = line.text.chars().skip(from).take(width).collect();
    let lead = if from > 0 { "…" } else { "" };
    format!(
        "{number}{mark} {lead}{excerpt}… [line cut: {len} chars; call without query and with offset {} to read it]",
        line.offset
    )
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;

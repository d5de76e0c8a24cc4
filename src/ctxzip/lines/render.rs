//! The last step of a line-shaped compression: the selection written out. Kept lines stay as they were (an error
//! line byte for byte, a long line shortened, a repeat counted) and each dropped run becomes one marker line with
//! a census of what it held, so the model reading the result sees where text is missing, what kind, and which
//! hash brings it back.

use super::{ERROR, FLOOR, KEEP, Rec, Selection, strip_colours};
use crate::ctxzip::regions;
use crate::ctxzip::relevance::MAX_ERROR_LINE_BYTES;
use crate::ctxzip::summary::Census;
use crate::ctxzip::truncate::{LONG_LINE, shorten_to};
use crate::ctxzip::{Ctx, Tally, Unit};

/// What a dropped run of a repeated traceback's frames says in place of a census.
const REPEATED_FRAMES: &str = " (the same stack frames as above)";
/// The same, when the run is a code frame printed again (its source lines, failing line and caret).
const REPEATED_CODE_FRAME: &str = " (the same code frame as above)";
/// The same, when the run is a compiler's note printed again (its line and source snippet).
const REPEATED_NOTE: &str = " (the same note as above)";
/// The same, when the run is AddressSanitizer's shadow-byte map and its legend.
const SHADOW: &str = " (the sanitizer's shadow bytes and their legend)";
/// What the marker line says when only colour codes were left out.
const COLOURS: &str = " (terminal colour codes)";
/// Visible head of a shortened long line.
pub(super) const LINE_HEAD: usize = 200;
/// Visible head of a shortened line when the text has at most three lines.
const FEW_LINES_HEAD: usize = 2000;

/// Renders kept lines and one marker per dropped run. With `gather`, the lines kept for the error floor alone may
/// join the dropped run around them; they are shown after its marker, in their order. A run of only the frames of a
/// traceback printed again says so instead of giving a census.
pub(super) fn render(
    recs: &[Rec<'_>],
    flags: &[u8],
    selection: &Selection,
    gather: bool,
    ctx: &Ctx,
    tally: &mut Tally,
    trailing_newline: bool,
) -> String {
    let mut out = String::new();
    // With only a few lines, each may show more of itself (a single 1 MB line keeps a 2 KB head).
    let head_keep = if recs.len() <= 3 {
        FEW_LINES_HEAD
    } else {
        LINE_HEAD
    };
    let keep = &selection.keep[..];
    let repeated = &selection.repeated[..];
    let why = |j: usize| selection.why.get(j).copied().unwrap_or(0);
    // A Rust backtrace's hidden frames gather the floor's lines among them (`std::panicking::…`) in any output.
    let gathered =
        |j: usize| (gather || why(j) != 0) && selection.floor_only.get(j).copied().unwrap_or(false);
    // Bytes of colour codes left out of the kept lines.
    let mut colours = 0;
    let mut i = 0;
    while i < recs.len() {
        if keep[i] {
            colours += push_kept(&mut out, recs, flags, i, head_keep, ctx, tally);
            i += 1;
            continue;
        }
        // The dropped run, through gathered lines that have dropped lines after them.
        let mut end = i;
        let mut j = i;
        while j < recs.len() && (!keep[j] || gathered(j)) {
            j += 1;
            if !keep[j - 1] {
                end = j;
            }
        }
        // The census names the dropped lines' first words, not their colour codes.
        let plain: Vec<Option<String>> = (i..end)
            .map(|k| (!keep[k]).then(|| strip_colours(recs[k].text)).flatten())
            .collect();
        let mut census = Census::default();
        let mut dropped = 0;
        let mut held = Vec::new();
        for k in i..end {
            if keep[k] {
                held.push(k);
            } else {
                let text = plain[k - i].as_deref().unwrap_or(recs[k].text);
                census.add(text, recs[k].count);
                if flags[k] & (ERROR | FLOOR) == ERROR {
                    if let Some(key) = super::warning_key(text) {
                        census.add_warning(key, recs[k].count);
                    }
                }
                dropped += recs[k].count;
            }
        }
        tally.add(Unit::Lines, dropped);
        out.push_str(&ctx.marker(dropped, Unit::Lines));
        let dropped_lines = || (i..end).filter(|&k| !keep[k]);
        if dropped_lines().all(|k| why(k) == regions::SHADOW) {
            out.push_str(SHADOW);
        } else if dropped_lines().all(|k| why(k) != 0)
            && dropped_lines().any(|k| why(k) == regions::rust_backtrace::RUNTIME)
        {
            let crates: Vec<&str> = dropped_lines()
                .filter_map(|k| regions::rust_backtrace::crate_of_line(recs[k].text))
                .collect();
            out.push_str(&regions::rust_backtrace::note(&crates));
        } else if (i..end).all(|k| keep[k] || repeated.get(k).copied().unwrap_or(false)) {
            let code = (i..end).all(|k| keep[k] || regions::is_code_frame_line(recs[k].text));
            let note = dropped_lines().any(|k| regions::notes::is_note(recs[k].text))
                && dropped_lines().all(|k| {
                    regions::notes::is_note(recs[k].text)
                        || regions::is_code_frame_line(recs[k].text)
                        || recs[k].text.starts_with(' ')
                });
            out.push_str(if note {
                REPEATED_NOTE
            } else if code {
                REPEATED_CODE_FRAME
            } else {
                REPEATED_FRAMES
            });
        } else {
            // A section that went whole (`---- Captured stdout call ----` and what the test printed) says which.
            if let Some(title) = dropped_lines()
                .next()
                .and_then(|k| regions::section_title(recs[k].text))
            {
                out.push_str(&format!(" ({title})"));
            }
            out.push_str(&census.render());
        }
        out.push('\n');
        for k in held {
            colours += push_kept(&mut out, recs, flags, k, head_keep, ctx, tally);
        }
        i = end;
    }
    // Collapsing repeats alone hides nothing, but the result must still name its original so that the exact
    // text (with every repeat) can be expanded: one marker counts the collapsed copies.
    let collapsed: usize = recs.iter().map(|r| r.count - 1).sum();
    if collapsed > 0 && !out.contains(crate::ctxzip::marker::MARKER_PREFIX) {
        tally.add(Unit::Lines, collapsed);
        out.push_str(&ctx.marker(collapsed, Unit::Lines));
        out.push_str(" (repeats collapsed)\n");
    }
    // Nothing else left out, but the colours: the result still names its original, whose exact bytes expand.
    if colours > 0 && !out.contains(crate::ctxzip::marker::MARKER_PREFIX) {
        tally.add(Unit::Chars, colours);
        out.push_str(&ctx.marker(colours, Unit::Chars));
        out.push_str(COLOURS);
        out.push('\n');
    }
    if !trailing_newline {
        out.pop();
    }
    out
}

/// One kept line as shown: error and keep lines byte-identical (except a keep hit in a huge data line, which
/// keeps a window around the hit), other lines without their colour codes, long lines shortened, repeats counted.
/// Returns the bytes of colour codes left out.
fn push_kept(
    out: &mut String,
    recs: &[Rec<'_>],
    flags: &[u8],
    i: usize,
    head_keep: usize,
    ctx: &Ctx,
    tally: &mut Tally,
) -> usize {
    let r = &recs[i];
    let protected = flags[i] != 0 && r.text.len() <= MAX_ERROR_LINE_BYTES;
    // The floor and keep-pattern hits stay the exact line, colours and all.
    let plain = if flags[i] & (FLOOR | KEEP) == 0 {
        strip_colours(r.text)
    } else {
        None
    };
    let text = plain.as_deref().unwrap_or(r.text);
    let colours = r.text.len() - text.len();
    if protected || text.len() <= LONG_LINE {
        out.push_str(text);
    } else {
        out.push_str(&shorten_to(text, head_keep, ctx, tally));
    }
    if r.count > 1 && flags[i] & FLOOR != 0 {
        // An error line stays the exact line: its repeat count goes on a line of its own.
        out.push_str(&format!("\n(the line above ×{})", r.count));
    } else if r.count > 1 && !text.trim().is_empty() {
        // Blank lines in a row stay one blank line: ` (×2)` alone on a line says nothing a reader needs, and
        // costs more than the blank lines did.
        out.push_str(&format!(" (×{})", r.count));
    }
    out.push('\n');
    colours
}

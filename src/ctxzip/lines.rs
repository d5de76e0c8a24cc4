//! Line selection: the engine under the log and plain-lines compressors (listings, prose, build output).
//!
//! In the request path a line-shaped tool output keeps its head and tail, every error line (verbatim), keep-
//! pattern hits and the lines most relevant to the pinned query; logs also keep a little context around
//! errors. Consecutive identical lines collapse to `line (×37)`. Each run of dropped lines becomes one marker
//! line with a census of what it held. Everything is linear in the input: one split, one classification pass,
//! one render.

use rustc_hash::FxHashMap as FastMap;

use super::regions;
use super::relevance::{Hits, MAX_ERROR_LINE_BYTES, is_error_line, is_floor_line, selective_terms};
use super::summary::Census;
use super::truncate::{LONG_LINE, shorten_to};
use super::{Ctx, Tally, Unit};

/// How much of each category a compressor keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    pub head: usize,
    pub tail: usize,
    /// Context lines kept before an error line.
    pub before: usize,
    /// Context lines kept after an error line (stopping at a blank line).
    pub after: usize,
    /// Context lines kept in total, so a log full of errors does not keep everything as context.
    pub max_context: usize,
    /// Query-relevant lines kept (best scores first).
    pub max_relevant: usize,
    /// Which error regions are kept whole.
    pub regions: Regions,
    /// Keep lines with error and warning words beyond the floor (`warning:`, `cannot`, `timed out`), with their
    /// context. Off where the output's own structure says what failed (an XML test report's failure elements):
    /// there only the floor's lines stay, as exact lines.
    pub error_words: bool,
    /// Lines kept only for their error words, with dropped lines on both sides, are shown together after one
    /// marker instead of each between two markers (a marker line costs about as much as the line); their order
    /// stays. Only where a line's text says what it is: listings, XML test reports (whose floor lines are suite
    /// and test elements carrying their own names and counts) and terminal redraws ([`is_redraw`]).
    pub gather_floor: bool,
}

/// Error regions a compressor keeps whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Regions {
    None,
    /// Tracebacks, test-failure blocks, summary lines ([`regions::mark`]): for outputs that report a failure,
    /// and logs, where what went wrong is the point of reading them.
    Runs,
    /// The failure elements of an XML test report with the test they belong to ([`super::testxml::mark`]).
    TestReport,
}

/// Plain lines: listings (`ls -laR`, `find`, `dpkg -l`, `pip list`), prose, key-value dumps.
pub(crate) const PLAIN: Params = Params {
    head: 24,
    tail: 12,
    before: 0,
    after: 0,
    max_context: 0,
    max_relevant: 20,
    regions: Regions::None,
    error_words: true,
    gather_floor: false,
};

/// A listing ([`is_listing`]: `find`, `git ls-files`, `ls -R`, `pip list`, `ls -la`): its head and tail are samples
/// in sort order, not the start and end of a story, so fewer of them stay than of [`PLAIN`] text (the marker's census
/// says what the rest holds), and the lines kept for the error floor (`errors.py`, `test_failures.ts`) are gathered
/// after one marker ([`Params::gather_floor`]).
pub(crate) const PATHS: Params = Params {
    head: 12,
    tail: 6,
    gather_floor: true,
    ..PLAIN
};

/// The model's notes on its way to a tool call ([`super::Options::notes`]): the first lines (what it saw) and the
/// last (what it does next); no relevance picks, since notes are full of the task's words.
pub(crate) const NOTES: Params = Params {
    head: 6,
    tail: 8,
    before: 0,
    after: 0,
    max_context: 0,
    max_relevant: 0,
    regions: Regions::None,
    error_words: true,
    gather_floor: false,
};

/// Visible head of a shortened long line.
const LINE_HEAD: usize = 200;
/// Visible head of a shortened line when the text has at most three lines.
const FEW_LINES_HEAD: usize = 2000;
/// An error line seen this often is already visible as the exact line; later copies may go into a gap.
const MAX_COPIES_OF_ERROR: u8 = 1;
/// A gap of at most this many bytes is cheaper to show than to replace by a marker line (which, with its
/// hash and note, is about 45 bytes).
const CHEAP_GAP: usize = 100;

pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let p = if is_listing(text) { &PATHS } else { &PLAIN };
    compress_with(text, ctx, p, tally)
}

/// Whether `text` is a listing: at least 20 non-empty lines in the first 300, and 9 in 10 of them entries — a
/// single word (`src/app/errors.py`, `README.md`, `./tests:`) or a row of the table most lines are rows of (the
/// same number of columns, 2 to 12: `pip list`, `ls -la`, `docker ps`). An entry names itself; a sentence of
/// prose has as many words as it needs, so prose is no table; markup lines are no entries. A bare name under an
/// `ls -R` header loses its header once the lines around it are dropped anyway, and the marker is where to look
/// either way.
pub(crate) fn is_listing(text: &str) -> bool {
    let mut lines = 0usize;
    let mut words = 0usize;
    let mut columns = [0usize; 13];
    for line in text.split('\n').take(300) {
        let t = line.trim_end_matches('\r');
        let fields = t.split_whitespace().count();
        if fields == 0 {
            continue;
        }
        lines += 1;
        if t.trim_start().starts_with('<') {
            // Markup (`<dict>`, `<key>path</key>`): an element's place in the tree is what it means.
            continue;
        }
        if fields == 1 {
            words += 1;
        } else if let Some(c) = columns.get_mut(fields) {
            *c += 1;
        }
    }
    let rows = columns.iter().copied().max().unwrap_or(0);
    lines >= 20 && (words + rows) * 10 >= lines * 9
}

/// A run of identical consecutive lines.
struct Rec<'a> {
    text: &'a str,
    count: usize,
}

/// A whole-word error line ([`is_error_line`]): kept with its context.
const ERROR: u8 = 1;
/// A keep-pattern hit.
const KEEP: u8 = 2;
/// The error floor ([`is_floor_line`]): kept as the exact line, without context.
const FLOOR: u8 = 4;

/// Selects and renders; `None` when nothing could be dropped or shortened.
pub(crate) fn compress_with(
    text: &str,
    ctx: &Ctx,
    p: &Params,
    tally: &mut Tally,
) -> Option<String> {
    let redraw;
    let p = if !p.gather_floor && is_redraw(text) {
        redraw = Params {
            gather_floor: true,
            ..*p
        };
        &redraw
    } else {
        p
    };
    let (body, trailing_newline) = match text.strip_suffix('\n') {
        Some(b) => (b, true),
        None => (text, false),
    };
    let recs = collapse(body);
    let n = recs.len();
    if n == 0 {
        return None;
    }
    let mut flags = vec![0u8; n];
    let mut relevant: Vec<(u32, usize)> = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        if is_error_line(r.text) {
            flags[i] |= ERROR;
        }
        if is_floor_line(r.text) {
            flags[i] |= FLOOR;
        }
        if !ctx.matcher.is_empty() {
            let Hits { keep, query } = ctx.matcher.scan(r.text.as_bytes());
            if keep {
                flags[i] |= KEEP;
            }
            if query != 0 {
                relevant.push((query, i));
            }
        }
    }
    // The query's picks (best first), less those picked only by terms that mark most of the text.
    if p.regions == Regions::TestReport {
        relevant.retain(|r| super::testxml::pickable(recs[r.1].text));
    }
    let mask = selective_terms(relevant.iter().map(|r| r.0), n);
    relevant.sort_unstable_by(|a, b| b.0.count_ones().cmp(&a.0.count_ones()).then(a.1.cmp(&b.1)));
    relevant.truncate(p.max_relevant);
    relevant.retain(|r| r.0 & mask != 0);
    let (keep, floor_only) = select(&recs, &flags, &relevant, p);
    let gather = if p.gather_floor { &floor_only[..] } else { &[] };
    Some(render(
        &recs,
        &flags,
        &keep,
        gather,
        ctx,
        tally,
        trailing_newline,
    ))
    .filter(|out| out.len() < text.len())
}

fn collapse(body: &str) -> Vec<Rec<'_>> {
    let mut recs: Vec<Rec<'_>> = Vec::new();
    for line in body.split('\n') {
        match recs.last_mut() {
            Some(last) if last.text == line => last.count += 1,
            _ => recs.push(Rec {
                text: line,
                count: 1,
            }),
        }
    }
    recs
}

/// The lines to keep, and which of them are kept for the error floor alone (not head, tail, region, keep-pattern,
/// relevant or context lines).
fn select(
    recs: &[Rec<'_>],
    flags: &[u8],
    relevant: &[(u32, usize)],
    p: &Params,
) -> (Vec<bool>, Vec<bool>) {
    let n = recs.len();
    let mut keep = vec![false; n];
    keep.iter_mut().take(p.head).for_each(|k| *k = true);
    keep.iter_mut()
        .skip(n.saturating_sub(p.tail))
        .for_each(|k| *k = true);
    match p.regions {
        Regions::None => {}
        Regions::Runs => {
            regions::mark(&recs.iter().map(|r| r.text).collect::<Vec<_>>(), &mut keep);
        }
        Regions::TestReport => {
            super::testxml::mark(&recs.iter().map(|r| r.text).collect::<Vec<_>>(), &mut keep);
        }
    }
    let mut seen: FastMap<&str, u8> = FastMap::default();
    let mut context_left = p.max_context;
    let mut other = keep.clone();
    for i in 0..n {
        if flags[i] & KEEP != 0 {
            keep[i] = true;
            other[i] = true;
        }
        if flags[i] & (ERROR | FLOOR) == 0 || (!p.error_words && flags[i] & FLOOR == 0) {
            continue;
        }
        let copies = seen.entry(recs[i].text).or_insert(0);
        if *copies >= MAX_COPIES_OF_ERROR {
            continue;
        }
        *copies += 1;
        keep[i] = true;
        if flags[i] & ERROR == 0 || p.before + p.after == 0 || !p.error_words {
            continue;
        }
        let before = mark_context(
            &mut keep,
            recs,
            (i.saturating_sub(p.before)..i).rev(),
            &mut context_left,
        );
        let after = mark_context(
            &mut keep,
            recs,
            (i + 1)..(i + 1 + p.after).min(n),
            &mut context_left,
        );
        // An error line with context stays with it; one whose context ended at once stands alone.
        other[i] = before || after;
    }
    for &(_, i) in relevant.iter() {
        keep[i] = true;
        other[i] = true;
    }
    let floor_only: Vec<bool> = (0..n).map(|i| keep[i] && !other[i]).collect();
    // Lines the render may gather behind a marker do not end a gap.
    let open = |keep: &[bool], i: usize| !keep[i] || (p.gather_floor && floor_only[i]);
    // A few short dropped lines cost less shown than replaced by a marker line.
    let mut i = 0;
    while i < n {
        if !open(&keep, i) {
            i += 1;
            continue;
        }
        let start = i;
        let mut bytes = 0;
        while i < n && open(&keep, i) {
            if !keep[i] {
                bytes += recs[i].text.len() + 1;
            }
            i += 1;
        }
        let short = recs[start..i].iter().all(|r| r.text.len() <= LONG_LINE);
        if bytes <= CHEAP_GAP && short {
            keep[start..i].iter_mut().for_each(|k| *k = true);
        }
    }
    (keep, floor_only)
}

/// Keeps the lines at `indices` as context while the budget lasts. Context is short lines only, up to a
/// blank line: the location and notes of a diagnostic, not the next command line of a build. Whether the error
/// line has any context there.
fn mark_context(
    keep: &mut [bool],
    recs: &[Rec<'_>],
    indices: impl Iterator<Item = usize>,
    budget: &mut usize,
) -> bool {
    let mut any = false;
    for j in indices {
        let text = recs[j].text;
        if *budget == 0 || renders_blank(text) || text.len() > LONG_LINE {
            break;
        }
        any = true;
        if !keep[j] {
            keep[j] = true;
            *budget -= 1;
        }
    }
    any
}

/// Whether `text` was captured from a terminal that redraws its status in place (at least 10 cursor-up
/// sequences, `ESC[7A`: test runners' dot views, progress bars). Each frame repeats the status with new
/// counts, so a frame's status line says by itself where it stands, and the run's story is the sequence of those
/// lines: they are gathered after one marker ([`Params::gather_floor`]) instead of each between two.
pub(crate) fn is_redraw(text: &str) -> bool {
    let b = text.as_bytes();
    let mut found = 0;
    let mut from = 0;
    while let Some(at) = memchr::memchr(0x1b, &b[from..]) {
        let i = from + at;
        let digits = b[i + 1..]
            .iter()
            .skip(1)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if b.get(i + 1) == Some(&b'[') && digits > 0 && b.get(i + 2 + digits) == Some(&b'A') {
            found += 1;
            if found >= 10 {
                return true;
            }
        }
        from = i + 1;
    }
    false
}

/// Whether `line` shows nothing on a terminal: whitespace and ANSI escape sequences only (`ESC[0K`,
/// `ESC[?25h`, `ESC[7A`). Output captured from a TTY — spinners, progress bars, test runners that redraw their
/// status — separates its frames with such lines, so for the context of an error they are the blank line that
/// ends it; otherwise each redrawn frame would drag the next frame in as "context".
pub(crate) fn renders_blank(line: &str) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            0x1b if b.get(i + 1) == Some(&b'[') => {
                // A CSI sequence: parameters and intermediates, then one final byte in 0x40..=0x7e.
                i += 2;
                while i < b.len() && !(0x40..=0x7e).contains(&b[i]) {
                    i += 1;
                }
                i += 1;
            }
            0x1b => i += 2,
            c if c.is_ascii_whitespace() => i += 1,
            _ => return false,
        }
    }
    true
}

/// Renders kept lines and one marker per dropped run. `gather` (empty, or one flag per line): kept lines that may
/// join the dropped run around them; they are shown after its marker, in their order.
fn render(
    recs: &[Rec<'_>],
    flags: &[u8],
    keep: &[bool],
    gather: &[bool],
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
    let gathered = |j: usize| gather.get(j).copied().unwrap_or(false);
    let mut i = 0;
    while i < recs.len() {
        if keep[i] {
            push_kept(&mut out, recs, flags, i, head_keep, ctx, tally);
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
        let mut census = Census::default();
        let mut dropped = 0;
        let mut held = Vec::new();
        for k in i..end {
            if keep[k] {
                held.push(k);
            } else {
                census.add(recs[k].text, recs[k].count);
                dropped += recs[k].count;
            }
        }
        tally.add(Unit::Lines, dropped);
        out.push_str(&ctx.marker(dropped, Unit::Lines));
        out.push_str(&census.render());
        out.push('\n');
        for k in held {
            push_kept(&mut out, recs, flags, k, head_keep, ctx, tally);
        }
        i = end;
    }
    // Collapsing repeats alone hides nothing, but the result must still name its original so that the exact
    // text (with every repeat) can be expanded: one marker counts the collapsed copies.
    let collapsed: usize = recs.iter().map(|r| r.count - 1).sum();
    if collapsed > 0 && !out.contains(super::marker::MARKER_PREFIX) {
        tally.add(Unit::Lines, collapsed);
        out.push_str(&ctx.marker(collapsed, Unit::Lines));
        out.push_str(" (repeats collapsed)\n");
    }
    if !trailing_newline {
        out.pop();
    }
    out
}

/// One kept line as shown: error and keep lines byte-identical (except a keep hit in a huge data line, which
/// keeps a window around the hit), long lines shortened, repeats counted.
fn push_kept(
    out: &mut String,
    recs: &[Rec<'_>],
    flags: &[u8],
    i: usize,
    head_keep: usize,
    ctx: &Ctx,
    tally: &mut Tally,
) {
    let r = &recs[i];
    let protected = flags[i] != 0 && r.text.len() <= MAX_ERROR_LINE_BYTES;
    if protected || r.text.len() <= LONG_LINE {
        out.push_str(r.text);
    } else {
        out.push_str(&shorten_to(r.text, head_keep, ctx, tally));
    }
    if r.count > 1 && flags[i] & FLOOR != 0 {
        // An error line stays the exact line: its repeat count goes on a line of its own.
        out.push_str(&format!("\n(the line above ×{})", r.count));
    } else if r.count > 1 {
        out.push_str(&format!(" (×{})", r.count));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::super::{Options, find_markers};
    use super::*;

    fn ctx(query: &[&str], keep: &[&str]) -> Ctx {
        let opts = Options {
            query: query.iter().map(|s| s.to_string()).collect(),
            keep_patterns: keep.iter().map(|s| s.to_string()).collect(),
            compress_code: false,
            notes: false,
        };
        Ctx::new("0123456789ab".into(), &opts)
    }

    #[test]
    fn keeps_head_tail_errors_keep_and_relevant() {
        let mut text = String::new();
        for i in 0..1000 {
            text.push_str(&format!("-rw-r--r-- 1 root root {i} file{i}.py\n"));
        }
        text = text.replace("file500.py", "file500.py cannot open");
        text = text.replace("file600.py", "file600.py SPECIAL");
        text = text.replace("file700.py", "file700.py wanted_thing");
        let mut t = Tally::default();
        let out =
            compress(&text, &ctx(&["wanted_thing"], &["special"]), &mut t).unwrap_or_default();
        assert!(out.contains("file0.py\n") && out.contains("file999.py\n"));
        assert!(out.contains("-rw-r--r-- 1 root root 500 file500.py cannot open\n"));
        assert!(out.contains("file600.py SPECIAL") && out.contains("file700.py wanted_thing"));
        assert!(out.contains("(.py "), "{out}");
        assert!(out.ends_with('\n'));
        assert!(!find_markers(&out).is_empty());
        assert!(out.len() * 10 < text.len());
    }

    #[test]
    fn terminal_control_lines_are_blank() {
        assert!(renders_blank(""));
        assert!(renders_blank("  \t"));
        assert!(renders_blank("\x1b[0K"));
        assert!(renders_blank("\x1b[0K\x1b[?25h\x1b[?25l\x1b[7A\x1b[0K"));
        assert!(!renders_blank("\x1b[0K 3 tests\x1b[0K"));
        assert!(!renders_blank("[0K"), "no escape byte: printable text");
    }

    #[test]
    fn error_context_stops_at_a_terminal_redraw() {
        // A test runner redrawing its status line: each frame is a few lines between control-only lines.
        let mut text = String::new();
        for i in 0..60 {
            text.push_str(&format!(
                "\x1b[0K\x1b[?25h\x1b[7A\x1b[0K\n   pkg/good {}\x1b[0K\n   pkg/other ok\x1b[0K\n {i} tests, 1 failure\n\x1b[0K\x1b[?25h\x1b[7A\x1b[0K\n   pkg/good {}\x1b[0K\n",
                ".".repeat(i),
                ".".repeat(i)
            ));
        }
        let out = compress_with(&text, &ctx(&[], &[]), &LOG_LIKE, &mut Tally::default())
            .unwrap_or_default();
        assert!(out.contains(" 59 tests, 1 failure\n"));
        assert!(
            !out.contains(&format!("   pkg/good {}\x1b[0K\n", ".".repeat(30))),
            "the next frame is not the failure's context"
        );
    }

    #[test]
    fn a_terminal_redraw_gathers_its_status_lines() {
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!(
                "\x1b[0K\x1b[?25h\x1b[?25l\x1b[7A\x1b[0K\n   pkg/good {}\x1b[0K\n   pkg/other ok\x1b[0K\n\x1b[0K\n {i} tests, 1 failure\n",
                ".".repeat(i)
            ));
        }
        assert!(is_redraw(&text));
        assert!(!is_redraw("\x1b[31mred\x1b[0m\n".repeat(20).as_str()));
        let gathered = compress_with(&text, &ctx(&[], &[]), &LOG_LIKE, &mut Tally::default())
            .unwrap_or_default();
        for i in 0..40 {
            assert!(gathered.contains(&format!("\n {i} tests, 1 failure\n")));
        }
        assert!(find_markers(&gathered).len() <= 2, "{gathered}");
    }

    /// Error context as a log keeps it (lines after the error up to a blank line).
    const LOG_LIKE: Params = Params {
        head: 2,
        tail: 2,
        before: 0,
        after: 6,
        max_context: 300,
        max_relevant: 0,
        regions: Regions::None,
        error_words: true,
        gather_floor: false,
    };

    #[test]
    fn a_listing_gathers_its_error_named_paths_after_one_marker() {
        let mut text = String::new();
        for i in 0..600 {
            text.push_str(&format!("src/pkg{}/module_{i}.py\n", i / 50));
            if i % 50 == 25 {
                text.push_str(&format!("src/pkg{}/errors.py\n", i / 50));
            }
        }
        assert!(is_listing(&text));
        let out = compress(&text, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
        for p in 0..12 {
            assert!(out.contains(&format!("\nsrc/pkg{p}/errors.py\n")), "{out}");
        }
        // Head, one marker for everything between head and tail with the error-named paths after it, tail.
        assert_eq!(find_markers(&out).len(), 1, "{out}");
        let plain =
            compress_with(&text, &ctx(&[], &[]), &PLAIN, &mut Tally::default()).unwrap_or_default();
        assert!(find_markers(&plain).len() > 10);
        assert!(out.len() < plain.len());
        // Prose and logs are not listings: their lines keep their places.
        let prose: String = (0..40)
            .map(|i| format!("a line of prose{} with words\n", " and more".repeat(i % 5)))
            .collect();
        assert!(!is_listing(&prose));
        let pip: String = (0..40)
            .map(|i| format!("package-{i}    1.{i}.0\n"))
            .collect();
        assert!(is_listing(&format!(
            "Package    Version\n---------- -------\n{pip}"
        )));
        assert!(!is_listing(
            &"<dict>\n<key>path</key>\n</dict>\n".repeat(10)
        ));
        assert!(!is_listing("src/a.py\nsrc/b.py\n"));
    }

    #[test]
    fn a_query_term_on_every_line_picks_none_of_them() {
        // The searched word is on every line; `flaky` singles one line out.
        let mut text = String::new();
        for i in 0..400 {
            let extra = if i == 250 { " flaky" } else { "" };
            text.push_str(&format!("pkg/mod{i}.py: uses parser {i}{extra}\n"));
        }
        let out = compress_with(
            &text,
            &ctx(&["parser", "flaky"], &[]),
            &Params {
                head: 2,
                tail: 2,
                ..PLAIN
            },
            &mut Tally::default(),
        )
        .unwrap_or_default();
        assert!(out.contains("pkg/mod250.py: uses parser 250 flaky\n"));
        assert!(
            !out.contains("pkg/mod10.py"),
            "a line matching only the common term is not kept: {out}"
        );
        assert_eq!(find_markers(&out).len(), 2, "{out}");
    }

    #[test]
    fn repeats_collapse() {
        let text = format!("start\n{}end\n", "same line\n".repeat(500));
        let out = compress(&text, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
        assert_eq!(
            out,
            "start\nsame line (×500)\nend\n<<ctxzip:0123456789ab 499_lines_offloaded>> (repeats collapsed)\n"
        );
    }
}

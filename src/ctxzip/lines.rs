//! Line selection: the engine under the log and plain-lines compressors (listings, prose, build output).
//!
//! In the request path a line-shaped tool output keeps its head and tail, every error line (verbatim), keep-
//! pattern hits, the lines most relevant to the pinned query, a headed table's odd rows ([`outliers`]) and a
//! uniform output's odd lines ([`uniform`]); logs also keep a little context around errors. Consecutive identical
//! lines collapse to `line (×37)`. Each run of dropped lines becomes one marker line with a census of what it held.
//! Everything is linear in the input: one split, one classification pass, one render.

mod outliers;
mod render;
mod uniform;

use rustc_hash::FxHashMap as FastMap;
use rustc_hash::FxHashSet as FastSet;

use super::regions;
use super::relevance::{Hits, is_error_line, selective_terms};
use super::truncate::LONG_LINE;
use super::{Ctx, Tally};
use render::render;

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
    /// Within the head and the tail, a run of lines that all begin with the same word (`Requirement already
    /// satisfied`, `Compiling`, `Downloading`) keeps only its first and last few ([`thin_runs`]): chatter that
    /// says one thing many times. Not for listings, whose head is a sample in sort order.
    pub thin_runs: bool,
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
    thin_runs: true,
};

/// A listing ([`is_listing`]: `find`, `git ls-files`, `ls -R`, `pip list`, `ls -la`): its head and tail are samples
/// in sort order, not the start and end of a story, so fewer of them stay than of [`PLAIN`] text (the marker's census
/// says what the rest holds), and the lines kept for the error floor (`errors.py`, `test_failures.ts`) are gathered
/// after one marker ([`Params::gather_floor`]).
pub(crate) const PATHS: Params = Params {
    head: 12,
    tail: 6,
    gather_floor: true,
    thin_runs: false,
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
    thin_runs: false,
};

/// An error line seen this often is already visible as the exact line; later copies may go into a gap.
const MAX_COPIES_OF_ERROR: u8 = 1;
/// Lines kept for their error or warning words without being floor lines (`warning: unused variable`, `cannot
/// find`, `deprecated`) — each with its context — up to this many; later ones are left to the marker. A build or
/// linter that prints hundreds of warnings would otherwise be sent almost whole, while the first few dozen already
/// show what kinds of warnings there are. Every floor line (error, fail, exception…) still stays, however many.
const MAX_WARNING_LINES: usize = 32;
/// [`MAX_WARNING_LINES`] in a test run ([`super::verbatim::is_test_run_verdict`]: a runner's verdict says tests or
/// the build failed, or Cargo's says its tests passed): `cargo test` compiles first and prints every warning of the
/// crate above the tests, and the tests are what the run is read for.
const MAX_WARNING_LINES_IN_TEST_RUNS: usize = 4;
/// Warnings of one kind ([`warning_kind`]: the same message with other names and numbers, `unused parameter ‘x’
/// [-Wunused-parameter]`) kept, each with its context, before later ones of that kind are left to the marker: a
/// compiler that finds the same thing in forty places prints forty diagnostics, and the first few show what it is
/// and where it looks. Kinds differ, so a build's other kinds of warnings still get their place under
/// [`MAX_WARNING_LINES`].
const MAX_WARNINGS_OF_A_KIND: u8 = 3;
/// The first warning lines kept, among which the first of each kind keeps its context (the source snippet and notes
/// a compiler prints under each): those show what the warnings look like. Later ones, and the next warnings of a
/// kind already shown, keep their line, and a Rust diagnostic its `-->` location too, so each still says what and
/// where. A build's forty warnings would otherwise send forty snippets.
const MAX_WARNINGS_WITH_CONTEXT: usize = 8;
/// A gap of at most this many bytes is cheaper to show than to replace by a marker line (which, with its
/// hash and note, is about 45 bytes).
const CHEAP_GAP: usize = 100;

pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let p = if is_listing(text) || is_delimited_table(text) {
        &PATHS
    } else {
        &PLAIN
    };
    compress_with(text, ctx, p, tally)
}

/// Whether `text` is a table of records (`kubectl get`, `docker ps -a`, `ps aux`, CSV and TSV dumps): a
/// [`listing`](is_listing) that is not a log, or a [delimited](is_delimited_table) one. Each row stands on its
/// own, so a row with an error word (a `failed` status, a pod in `Error`) needs no neighbours as context: the
/// error floor keeps it, and the rows around it may go behind the marker like any others. `log_like` is how
/// many of the `lines` sampled lines read as log lines (timestamps, levels): a log whose lines happen to have
/// the same number of words is still a story told in order.
pub(crate) fn is_table(text: &str, lines: usize, log_like: usize) -> bool {
    lines >= 20 && (is_delimited_table(text) || log_like * 100 < lines * 15 && is_listing(text))
}

/// Whether `text` is delimiter-separated records: at least 20 non-empty lines in the first 300, and 9 in 10 of
/// them with the same number of commas (2 or more) or of tabs (1 or more) — a CSV or TSV dump, header included.
/// Quoted commas inside a field make a row differ; a few such rows stay under the tenth allowed.
pub(crate) fn is_delimited_table(text: &str) -> bool {
    const MAX: usize = 64;
    let mut lines = 0usize;
    let mut commas = [0usize; MAX + 1];
    let mut tabs = [0usize; MAX + 1];
    for line in text.split('\n').take(300) {
        let t = line.trim_end_matches('\r');
        if t.trim().is_empty() {
            continue;
        }
        lines += 1;
        if is_numbered(t) {
            // A numbered file view (`nl -ba`, `cat -n`, grep over one: `746:   746\t…`) is a source view,
            // whatever its tab says.
            continue;
        }
        // Leading tabs indent (a JVM stack frame, a Go frame's file line); they delimit no field.
        let (c, tb) = t.trim_start().bytes().fold((0usize, 0usize), |(c, tb), b| {
            (c + usize::from(b == b','), tb + usize::from(b == b'\t'))
        });
        if let Some(n) = commas.get_mut(c) {
            *n += 1;
        }
        if let Some(n) = tabs.get_mut(tb) {
            *n += 1;
        }
    }
    let rows = commas
        .iter()
        .skip(2)
        .chain(tabs.iter().skip(1))
        .copied()
        .max()
        .unwrap_or(0);
    lines >= 20 && rows * 10 >= lines * 9
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
        if super::regions::is_frame(t.trim_start()) {
            // A stack frame (`at org.junit.Assert.fail(Assert.java:89)`) has two words, as a row of a two-column
            // table has; a test run whose failures print hundreds of them is still a story told in order.
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

/// Whether the text before `line`'s first tab is a line number (digits, with the spaces, `:` and `-` of `nl`
/// and of grep's prefixes around it).
fn is_numbered(line: &str) -> bool {
    line.split_once('\t').is_some_and(|(before, _)| {
        before.bytes().any(|b| b.is_ascii_digit())
            && before
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b' ' | b':' | b'-'))
    })
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
/// The error floor ([`is_floor_line`](super::relevance::is_floor_line)): kept as the exact line, without context.
const FLOOR: u8 = 4;
/// A later entry of pytest's warnings summary ([`regions::warnings_summary_rest`]): the tail does not keep it.
const REPEATED_WARNING: u8 = 8;

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
        if is_error_line(r.text) && !regions::reports_pass(r.text) {
            flags[i] |= ERROR;
        }
        if super::detect::holds_floor(r.text) {
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
    // The lines as the region finders read them (collected once, for every finder).
    let texts: Vec<&str> = match p.regions {
        Regions::None => Vec::new(),
        Regions::Runs | Regions::TestReport => recs.iter().map(|r| r.text).collect(),
    };
    if p.regions == Regions::Runs {
        if let Some(rest) = regions::warnings_summary_rest(&texts) {
            for f in &mut flags[rest] {
                if *f & FLOOR == 0 {
                    *f &= !ERROR;
                    *f |= REPEATED_WARNING;
                }
            }
        }
    }
    // The query's picks (best first), less those picked only by terms that mark most of the text.
    if p.regions == Regions::TestReport {
        relevant.retain(|r| super::testxml::pickable(recs[r.1].text));
    }
    // Filtered before the cut: lines picked for a term on every line would otherwise take the places of the few a
    // selective term picks, and then be dropped themselves.
    let mask = selective_terms(relevant.iter().map(|r| r.0), n);
    relevant.retain(|r| r.0 & mask != 0);
    let score = |bits: u32| (bits & mask).count_ones();
    relevant.sort_unstable_by(|a, b| score(b.0).cmp(&score(a.0)).then(a.1.cmp(&b.1)));
    relevant.truncate(p.max_relevant);
    let selection = select(&recs, &texts, &flags, &relevant, p);
    Some(render(
        &recs,
        &flags,
        &selection,
        p.gather_floor,
        ctx,
        tally,
        trailing_newline,
    ))
    .filter(|out| out.len() < text.len())
}

/// One record per line, nothing collapsed: what the tests of the row finders ([`outliers`], [`uniform`]) feed them.
#[cfg(test)]
fn recs_of(text: &str) -> Vec<Rec<'_>> {
    text.split('\n')
        .map(|t| Rec { text: t, count: 1 })
        .collect()
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

/// What [`select`] chose, one flag per record.
struct Selection {
    keep: Vec<bool>,
    /// Kept for the error floor alone (not head, tail, region, keep-pattern, relevant or context lines).
    floor_only: Vec<bool>,
    /// The frames of a traceback printed again ([`regions::mark`]); empty unless the params find regions.
    repeated: Vec<bool>,
    /// Why a region's lines are left out, for the marker to say: a Rust backtrace's frames
    /// ([`regions::rust_backtrace::RUNTIME`], `SHOWN_ABOVE`), a sanitizer's shadow map ([`regions::SHADOW`]); 0 for
    /// every other line; empty unless the params find regions.
    why: Vec<u8>,
}

/// The lines to keep. `texts` are the records' lines, for the region finders.
fn select(
    recs: &[Rec<'_>],
    texts: &[&str],
    flags: &[u8],
    relevant: &[(u32, usize)],
    p: &Params,
) -> Selection {
    let n = recs.len();
    let mut keep = vec![false; n];
    // Lines no error line's context may keep: the frames of a traceback printed again ([`regions::mark`]).
    let mut repeated = vec![false; if p.regions == Regions::None { 0 } else { n }];
    let mut why = vec![0u8; repeated.len()];
    let tail: Vec<usize> = ends(recs, (n.saturating_sub(p.tail)..n).rev(), TAIL_BYTES).collect();
    // A long line the tail shows again is read there, the last copy: MSBuild lists every warning and error a second
    // time under `Build FAILED.`, and the head would show the first of them twice; when that list is as long as the
    // tail, the tail's first lines reach back into the same diagnostics printed during the build. One pass over the
    // tail, from its last line, gathers the long lines it shows and marks those it shows again further down — not a
    // table's rule (`├────┼────┤` between every two rows): that is the table's shape, not something said.
    let mut again: FastSet<&str> = FastSet::default();
    let shown_below: Vec<bool> = tail
        .iter()
        .map(|&i| {
            let text = recs[i].text;
            text.len() >= MIN_SHOWN_AGAIN
                && !again.insert(text)
                && text.bytes().any(|b| b.is_ascii_alphanumeric())
        })
        .collect();
    for i in ends(recs, 0..n.min(p.head), HEAD_BYTES) {
        keep[i] = !again.contains(recs[i].text);
    }
    // A failing run's last lines are its verdict and the summary above it; pytest prints its warnings summary just
    // before those, and its later entries, noise in the body, are noise in the tail too.
    for (&i, below) in tail.iter().zip(shown_below) {
        keep[i] = flags[i] & REPEATED_WARNING == 0 && !below;
    }
    if p.thin_runs {
        thin_runs(recs, &mut keep);
    }
    match p.regions {
        Regions::None => {}
        Regions::Runs => regions::mark(texts, &mut keep, &mut repeated, &mut why),
        Regions::TestReport => super::testxml::mark(texts, &mut keep, &mut repeated),
    }
    // A stack printed again says nothing new in the head or the tail either (a server's log that ends on the
    // tenth copy of one panic): its frames go behind the marker that says so, whatever kept them above.
    for (k, r) in keep.iter_mut().zip(&repeated) {
        *k &= !*r;
    }
    // A value a runtime printed (an HTTP client's error object: its request, socket and timers, member after
    // member) holds error words in its keys (`_hadError: false`, `error: [Function: onError]`): such a member line
    // stays, as the floor says, but its neighbours are other members, no context of it.
    let inspected = super::detect::reads_as_printout(
        texts
            .iter()
            .filter(|t| super::detect::is_inspected(t.trim()))
            .count(),
        n,
    );
    // Lines that name a test: an example of RSpec's outline named after an error (`raises KeyError`), a TAP
    // stream's heading (tape's `# throws an exception when depth exceeds the limit`). Such a line stays, as the
    // floor says, but its neighbours are other tests' names, no context of it.
    let mut examples = regions::numbered::outline_examples(texts);
    for (example, heading) in examples.iter_mut().zip(regions::tap_headings(texts)) {
        *example |= heading;
    }
    let mut seen: FastMap<&str, u8> = FastMap::default();
    let mut context_left = p.max_context;
    // A test run (or a failed build) is read for its tests: the compiler's warnings printed before them are
    // chatter there, and the first few show what kinds there are.
    let mut warnings = if texts
        .iter()
        .any(|t| super::verbatim::is_test_run_verdict(t))
    {
        WarningBudget::in_test_run()
    } else {
        WarningBudget::default()
    };
    let mut other = keep.clone();
    // A headed table's odd rows (`CrashLoopBackOff`, `0/1`, `Exited (137)`) stay like floor lines: gathered after
    // a marker in a listing, each in its place otherwise.
    for i in outliers::outlier_rows(recs) {
        keep[i] = true;
    }
    // So do the few lines of a uniform output unlike the rest (a `500` among health checks).
    for i in uniform::odd_lines(recs) {
        keep[i] = true;
    }
    // Error lines the head, the tail or a region shows already. A build tool that repeats its diagnostics in a
    // closing summary (MSBuild under `Build FAILED.`) shows each twice; the copy in the tail says it.
    let shown: FastSet<&str> = (0..n)
        .filter(|&i| keep[i] && flags[i] & (ERROR | FLOOR) != 0)
        .map(|i| recs[i].text)
        .collect();
    // Read once, and only when an error line's context is looked at.
    let mut chatter: Option<FastSet<&str>> = None;
    for i in 0..n {
        if flags[i] & KEEP != 0 {
            keep[i] = true;
            other[i] = true;
        }
        if flags[i] & (ERROR | FLOOR) == 0 || (!p.error_words && flags[i] & FLOOR == 0) {
            continue;
        }
        if !keep[i] && shown.contains(recs[i].text) {
            continue;
        }
        let example = examples.get(i).copied().unwrap_or(false);
        if example && flags[i] & FLOOR == 0 {
            // An example named after a warning (`logs a warning when …`) is no finding.
            continue;
        }
        let copies = seen.entry(recs[i].text).or_insert(0);
        if *copies >= MAX_COPIES_OF_ERROR {
            continue;
        }
        let mut alone = false;
        if flags[i] & FLOOR == 0 {
            match warnings.admit_shown(recs[i].text) {
                Admitted::No => continue,
                Admitted::WithContext => {}
                Admitted::Alone => alone = true,
            }
        }
        *copies += 1;
        keep[i] = true;
        if alone {
            if recs.get(i + 1).is_some_and(|r| is_rust_location(r.text)) {
                keep[i + 1] = true;
                other[i + 1] = true;
            }
            continue;
        }
        if flags[i] & ERROR == 0
            || p.before + p.after == 0
            || !p.error_words
            || (inspected && is_member_line(recs[i].text))
            || example
        {
            continue;
        }
        // The context before a log's record ends at the record above it: another event (`INFO -- :
        // Successfully authenticated` above each `ERROR -- : Failed to parse JSON body`).
        let stamped = super::detect::starts_with_timestamp(recs[i].text);
        let from = (i.saturating_sub(p.before)..i)
            .rev()
            .find(|&j| stamped && super::detect::starts_with_timestamp(recs[j].text))
            .map_or(i.saturating_sub(p.before), |j| j + 1);
        let before = mark_context(
            &mut keep,
            recs,
            &repeated,
            (from..i).rev(),
            &mut context_left,
        );
        // The context after an error line ends where the next error or warning line starts: that one is a
        // diagnostic of its own, kept or left to the marker by its own count and kind. It also ends at a log's
        // next timestamped record: what a compiler or a runtime prints under an error (its location, notes,
        // frames) carries no timestamp of its own, while the next record of a service's log is another event.
        // And at the tool's next progress line (cppcheck's `Checking src/b.c ...`, cargo's `Compiling b`): a line
        // that begins with a word many lines begin with, other than the error line's own, is the run's next step.
        let own = lead_word(recs[i].text);
        let chatter = chatter.get_or_insert_with(|| chatter_words(recs));
        let next = (i + 1..(i + 1 + p.after).min(n))
            .find(|&j| {
                flags[j] & (ERROR | FLOOR) != 0
                    || super::detect::starts_with_timestamp(recs[j].text)
                    || lead_word(recs[j].text)
                        .is_some_and(|w| Some(w) != own && chatter.contains(w))
            })
            .unwrap_or((i + 1 + p.after).min(n));
        let after = mark_context(&mut keep, recs, &repeated, (i + 1)..next, &mut context_left);
        // An error line with context stays with it; one whose context ended at once stands alone.
        other[i] = before || after;
    }
    for &(_, i) in relevant.iter() {
        keep[i] = true;
        other[i] = true;
    }
    // A finding kept under a file's header (ESLint's default output, stylelint, remark, RuboCop) says where it
    // is only with that header: `  87:20  error  Missing semicolon` alone names no file.
    for (i, header) in group_headers(recs).into_iter().enumerate() {
        if let Some(h) = header
            && keep[i]
            && flags[i] & (ERROR | FLOOR) != 0
        {
            keep[h] = true;
            other[h] = true;
            // The row stays under its header rather than being gathered after a marker.
            other[i] = true;
        }
    }
    // A `git log`'s subject or message line says which commit it belongs to only with that commit's
    // `commit <hash>` line, the name `git show` and `git revert` need.
    for (i, header) in commit_headers(recs).into_iter().enumerate() {
        if let Some(h) = header
            && keep[i]
            && !keep[h]
        {
            keep[h] = true;
            other[h] = true;
            other[i] = true;
        }
    }
    // A section banner over lines that all go (`---- Captured stdout call ----`) goes with them, into their marker.
    if p.regions == Regions::Runs {
        for i in regions::empty_sections(texts, &keep) {
            if flags[i] & (KEEP | FLOOR) == 0 {
                keep[i] = false;
            }
        }
    }
    let floor_only: Vec<bool> = (0..n).map(|i| keep[i] && !other[i]).collect();
    // Lines the render may gather behind a marker do not end a gap.
    // A region's hidden lines (a Rust backtrace's frames) gather the floor's lines among them whatever the params say.
    let open = |keep: &[bool], i: usize| {
        !keep[i] || (floor_only[i] && (p.gather_floor || why.get(i).is_some_and(|r| *r != 0)))
    };
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
    Selection {
        keep,
        floor_only,
        repeated,
        why,
    }
}

/// Shortest head line left to the tail when the tail shows it again: a shorter one (a banner, a rule, `ok`) costs
/// less than the marker line that would stand for it.
const MIN_SHOWN_AGAIN: usize = 80;

/// Bytes the head and the tail of an output may show, beyond their first [`MIN_END_LINES`] lines: they count lines
/// so that a log's last 30 lines say how it ended, and 30 rows of a query's 280-character results say it no better
/// than 12 (a kept long line counts as the head of it that is shown).
const HEAD_BYTES: usize = 2048;
const TAIL_BYTES: usize = 4096;
const MIN_END_LINES: usize = 5;

/// The lines of `order` (the head's, from the first; the tail's, from the last) that the head or tail keeps: all of
/// them, or as many as fit in `budget` bytes once [`MIN_END_LINES`] are in. A run of lines that begin with the same
/// word (`Requirement already satisfied: …`) is not cut by the budget: [`thin_runs`] shows its first and last lines,
/// and a run cut in two would show the last lines of each part between two markers.
fn ends<'r, 't: 'r>(
    recs: &'r [Rec<'t>],
    order: impl Iterator<Item = usize> + 'r,
    budget: usize,
) -> impl Iterator<Item = usize> + 'r {
    let mut used = 0;
    let mut last_word: Option<RunKey<'t>> = None;
    order.enumerate().map_while(move |(k, i)| {
        used += recs[i].text.len().min(render::LINE_HEAD) + 1;
        let word = run_key(recs[i].text);
        let in_run = word.is_some() && word == last_word;
        last_word = word;
        (k < MIN_END_LINES || used <= budget || in_run).then_some(i)
    })
}

/// rustc's location line under a diagnostic: `  --> src/main.rs:12:5` (`::: ` for a note's other file).
fn is_rust_location(line: &str) -> bool {
    let t = line.trim_start();
    t.len() < line.len() && (t.starts_with("--> ") || t.starts_with("::: "))
}

/// An indented `key: value` line (`_hadError: false,`, `'content-type': 'text/html',`, `[Symbol(kError)]: null`): a
/// member of a printed object, not a diagnostic.
fn is_member_line(line: &str) -> bool {
    let t = line.trim_start();
    if t.len() == line.len() {
        return false;
    }
    let Some((key, _)) = t.split_once(": ") else {
        return false;
    };
    let key = key.trim_matches(['\'', '"']);
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '-' | '[' | ']' | '(' | ')'))
}

/// A run of at least this many lines beginning with the same word is thinned; its first [`RUN_FIRST`] and last
/// [`RUN_LAST`] lines stay.
const MIN_RUN: usize = 8;
const RUN_FIRST: usize = 3;
const RUN_LAST: usize = 2;

/// What makes lines one run for [`thin_runs`] and [`ends`]: the word they begin with ([`lead_word`]), or, for lines
/// that begin with none, that each reports a test that passed ([`regions::reports_pass`]: pytest's
/// `tests/test_cli.py::test_help PASSED`, prove's `t/10_base.t ...... ok`, Mocha's `✓ adds a tag`) or is Go's
/// `=== RUN` line between two such verdicts (a failing test's lines are an error region, kept whatever run they
/// stand in).
#[derive(Clone, Copy, PartialEq, Eq)]
enum RunKey<'t> {
    Word(&'t str),
    Pass,
}

fn run_key(line: &str) -> Option<RunKey<'_>> {
    lead_word(line).map(RunKey::Word).or_else(|| {
        (regions::reports_pass(line) || regions::opens_go_test(line)).then_some(RunKey::Pass)
    })
}

/// Log levels: lines that begin with one each say something of their own (a program's debug trace), unlike
/// chatter.
const LEVEL_WORDS: [&str; 8] = [
    "trace", "debug", "info", "notice", "warn", "warning", "error", "fine",
];

/// The word a line begins with, for [`thin_runs`]: an unindented word of at least three letters (a trailing `:`
/// allowed) that is no log level. Indented lines (a traceback's frames, a block's body) and lines that begin with
/// a number, a path or punctuation have none, so they never form a run.
fn lead_word(line: &str) -> Option<&str> {
    let word = line.split_whitespace().next()?;
    let letters = word.strip_suffix(':').unwrap_or(word);
    (!line.starts_with(char::is_whitespace)
        && letters.len() >= 3
        && letters.bytes().all(|b| b.is_ascii_alphabetic())
        && !LEVEL_WORDS.iter().any(|l| letters.eq_ignore_ascii_case(l)))
    .then_some(word)
}

/// The words that begin many of an output's lines ([`lead_word`]; at least [`MIN_RUN`] lines and a tenth of them),
/// some of them in a row ([`CHATTER_RUN`]): a tool's progress lines, each the next step of the run (cppcheck's
/// `Checking a.c ...`, `Checking a.c: _WIN32...`). A word that begins many lines but never two in a row is a part
/// of each diagnostic (hlint's `Found:` and `Perhaps:` under each hint), no next step.
fn chatter_words<'t>(recs: &[Rec<'t>]) -> FastSet<&'t str> {
    // Per word: lines it begins, and its longest run of consecutive lines.
    let mut counts: FastMap<&str, (usize, usize)> = FastMap::default();
    let mut run: Option<(&str, usize)> = None;
    for r in recs {
        let word = lead_word(r.text);
        run = match (word, run) {
            (Some(w), Some((last, k))) if w == last => Some((w, k + 1)),
            (Some(w), _) => Some((w, 1)),
            (None, _) => None,
        };
        if let Some((w, k)) = run {
            let entry = counts.entry(w).or_insert((0, 0));
            entry.0 += 1;
            entry.1 = entry.1.max(k);
        }
    }
    let least = MIN_RUN.max(recs.len() / 10);
    counts
        .into_iter()
        .filter(|&(_, (lines, longest))| lines >= least && longest >= CHATTER_RUN)
        .map(|(w, _)| w)
        .collect()
}

/// Consecutive lines a word must begin somewhere for [`chatter_words`].
const CHATTER_RUN: usize = 3;

/// Unkeeps the middle of each run of [`MIN_RUN`] or more kept lines that begin with the same word. Error lines,
/// keep-pattern and query lines, and error regions are marked afterwards, so they stay whatever run they are in.
fn thin_runs(recs: &[Rec<'_>], keep: &mut [bool]) {
    let n = recs.len();
    let mut i = 0;
    while i < n {
        let Some(word) = run_key(recs[i].text).filter(|_| keep[i]) else {
            i += 1;
            continue;
        };
        let mut end = i + 1;
        while end < n && keep[end] && run_key(recs[end].text) == Some(word) {
            end += 1;
        }
        // The run may go on in lines the head or tail left out (a head cut at its line count inside forty
        // `=== RUN`/`--- PASS` lines): its first and last lines are then the whole run's, not the kept part's, so
        // the head does not show two lines from the middle of it between two markers.
        let continues = |j: usize| !keep[j] && run_key(recs[j].text) == Some(word);
        let mut first = i;
        while first > 0 && continues(first - 1) {
            first -= 1;
        }
        let mut last = end;
        while last < n && continues(last) {
            last += 1;
        }
        if last - first >= MIN_RUN {
            // The run's middle, as far as this kept part of it reaches.
            let (from, to) = (i.max(first + RUN_FIRST), end.min(last - RUN_LAST));
            if from < to {
                keep[from..to].fill(false);
            }
        }
        i = end;
    }
}

/// The header of the group each record stands in, in reports that list findings under the file they belong to:
/// a path alone on an unindented line (`src/app.js`, RuboCop's `== app/user.rb ==`), then the file's findings
/// indented under it. `None` for a record outside such a group (an unindented line that is no path ends one; a
/// blank line does not, ESLint separates files with one).
fn group_headers(recs: &[Rec<'_>]) -> Vec<Option<usize>> {
    let mut current = None;
    recs.iter()
        .enumerate()
        .map(|(i, r)| {
            let text = r.text.trim_end_matches('\r');
            if text.trim().is_empty() {
                return None;
            }
            if text.starts_with([' ', '\t']) {
                return current;
            }
            current = is_path_header(text).then_some(i);
            None
        })
        .collect()
}

/// Commits a `git log` must show before its lines are taken for records of commits.
const MIN_COMMITS: usize = 3;

/// For each line of a `git log` (full or `--stat` form), the `commit <hash>` line of the commit it belongs to;
/// all `None` when the output has fewer than [`MIN_COMMITS`] such lines.
fn commit_headers(recs: &[Rec<'_>]) -> Vec<Option<usize>> {
    let (mut current, mut commits) = (None, 0);
    let headers: Vec<Option<usize>> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if is_commit_line(r.text) {
                current = Some(i);
                commits += 1;
                return None;
            }
            current
        })
        .collect();
    if commits < MIN_COMMITS {
        return vec![None; recs.len()];
    }
    headers
}

/// `commit ` and a full SHA-1 or SHA-256 object name, then nothing or a decoration (`(HEAD -> main)`, `(from …)`).
fn is_commit_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("commit ") else {
        return false;
    };
    let hex = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
    let after = rest[hex..].trim_end_matches('\r');
    matches!(hex, 40 | 64) && (after.is_empty() || after.starts_with(" ("))
}

/// Whether an unindented line is a path alone (a group header of [`group_headers`]).
fn is_path_header(line: &str) -> bool {
    let t = line.trim_end();
    let t = t
        .strip_prefix("== ")
        .and_then(|t| t.strip_suffix(" =="))
        .unwrap_or(t);
    let extension = t.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.bytes().all(|b| b.is_ascii_alphanumeric())
            && ext.bytes().any(|b| b.is_ascii_alphabetic())
    });
    !t.is_empty()
        && t.len() <= LONG_LINE
        && !t.contains(char::is_whitespace)
        && !t.contains(['<', '>'])
        && (t.contains('/') || t.contains('\\') || extension)
}

/// The warning lines (an error or warning word, no floor word) one output may keep: [`MAX_WARNINGS_OF_A_KIND`] of
/// each kind, [`MAX_WARNING_LINES`] in all. The line compressor and the search compressor both ask it.
pub(crate) struct WarningBudget {
    left: usize,
    kinds: FastMap<u64, u8>,
    /// Warnings admitted so far.
    admitted: usize,
}

/// What [`WarningBudget::admit_shown`] lets a warning line keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admitted {
    No,
    WithContext,
    /// The line (and its location): a later warning of a kind already shown, or one past
    /// [`MAX_WARNINGS_WITH_CONTEXT`].
    Alone,
}

impl Default for WarningBudget {
    fn default() -> Self {
        Self {
            left: MAX_WARNING_LINES,
            kinds: FastMap::default(),
            admitted: 0,
        }
    }
}

impl WarningBudget {
    /// The budget of a test run's output: [`MAX_WARNING_LINES_IN_TEST_RUNS`].
    fn in_test_run() -> Self {
        Self {
            left: MAX_WARNING_LINES_IN_TEST_RUNS,
            ..Self::default()
        }
    }

    /// [`Self::admit`], and whether the line keeps its context.
    pub(crate) fn admit_shown(&mut self, line: &str) -> Admitted {
        let Some(of_kind) = self.admit_counted(line) else {
            return Admitted::No;
        };
        self.admitted += 1;
        if of_kind == 1 && self.admitted <= MAX_WARNINGS_WITH_CONTEXT {
            Admitted::WithContext
        } else {
            Admitted::Alone
        }
    }

    /// Whether the warning `line` may be kept, counting it if so.
    pub(crate) fn admit(&mut self, line: &str) -> bool {
        self.admit_counted(line).is_some()
    }

    /// [`Self::admit`], with how many warnings of the line's kind are kept now, this one included (its kind is
    /// hashed once).
    fn admit_counted(&mut self, line: &str) -> Option<u8> {
        if self.left == 0 {
            return None;
        }
        let of_kind = self.kinds.entry(warning_kind(line)).or_insert(0);
        if *of_kind >= MAX_WARNINGS_OF_A_KIND {
            return None;
        }
        *of_kind += 1;
        self.left -= 1;
        Some(*of_kind)
    }
}

/// What kind of warning a line reports, as a hash of [`kind_text`]: `src/a.c:12:3: warning: unused parameter
/// ‘argc’ [-Wunused-parameter]` and `src/b.c:90:7: warning: unused parameter ‘pApi’ [-Wunused-parameter]` are one
/// kind; a line without an error or warning word is its own kind, names and numbers aside.
fn warning_kind(line: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let from = super::relevance::find_error_word(line.as_bytes(), 0).map_or(0, |(start, _)| start);
    let mut h = rustc_hash::FxHasher::default();
    // The warning word and the message's first words.
    leading_words(&kind_text(line, from), 1 + KIND_WORDS).hash(&mut h);
    h.finish()
}

/// Words of a warning's message that make its kind. A message goes on to name what it is about, and not always in
/// quotes: Sphinx's `WARNING: py:obj reference target not found: get_value [ref.obj]` for each of 200 names is one
/// kind, as gcc's `comparison of integer expressions of different signedness: ‘int’ and ‘size_t’` is.
const KIND_WORDS: usize = 5;

/// The first `n` words of `text` and, when more follow, its last word if it is a bracketed tag (gcc's
/// `[-Wsign-compare]`, Sphinx's `[ref.obj]`), which names the kind too: `comparison of integer expressions of …
/// [-Wsign-compare]`.
fn leading_words(text: &str, n: usize) -> String {
    let mut words = text.split(' ');
    let mut out: Vec<&str> = words.by_ref().take(n).collect();
    let rest: Vec<&str> = words.collect();
    let tag = rest
        .last()
        .filter(|w| w.len() > 2 && w.starts_with('[') && w.ends_with(']'));
    if rest.len() > usize::from(tag.is_some()) {
        out.push("…");
    }
    out.extend(tag);
    out.join(" ")
}

/// A warning line from its first error or warning word on (at `from`; what comes before is where: a path, a line number, a
/// log prefix), without the names, places and numbers in it — quoted spans (`` `x` ``, `‘x’`, `'x'`, `"x"`), words
/// with a `/` or `\` (Maven's `[WARNING] C:\ws\src\Foo.java:[12,5] …` names its file after the level) and digits —
/// and with single spaces between its words.
fn kind_text(line: &str, from: usize) -> String {
    let mut out = String::new();
    let mut chars = line.get(from..).unwrap_or(line).chars();
    let mut prev_word = false;
    while let Some(c) = chars.next() {
        let close = match c {
            '`' => Some('`'),
            '‘' => Some('’'),
            '"' => Some('"'),
            '\'' if !prev_word => Some('\''),
            _ => None,
        };
        if let Some(close) = close {
            // The quoted name is skipped up to its closing quote (or the line's end).
            for q in chars.by_ref() {
                if q == close {
                    break;
                }
            }
            prev_word = false;
            continue;
        }
        prev_word = c.is_alphanumeric();
        if !c.is_ascii_digit() {
            out.push(c);
        }
    }
    let mut words = String::with_capacity(out.len());
    for word in out.split_whitespace().filter(|w| !w.contains(['/', '\\'])) {
        if !words.is_empty() {
            words.push(' ');
        }
        words.push_str(word);
    }
    words
}

/// What a marker's census calls a dropped warning (`this statement may fall through [-Wimplicit-fallthrough=]`):
/// its [`kind_text`] after the warning word, for a line whose first error word is `warning` (not `cannot`,
/// `invalid`, `timeout`: a help text's option lines hold those); runs of spaces shortened, at most
/// [`MAX_WARNING_KEY`] characters.
fn warning_key(line: &str) -> Option<String> {
    let (start, end) = super::relevance::find_error_word(line.as_bytes(), 0)?;
    let word = line.get(start..end)?;
    if !word.to_ascii_lowercase().starts_with("warn") {
        return None;
    }
    let kind = kind_text(line, start);
    let message = kind
        .get(word.len()..)?
        .trim_start_matches([':', ']', ')', ',', '-', ' ']);
    let mut key = leading_words(message, KIND_WORDS);
    if key.is_empty() {
        return None;
    }
    if let Some((cut, _)) = key.char_indices().nth(MAX_WARNING_KEY) {
        key.truncate(cut);
        key.push('…');
    }
    Some(key)
}

/// Longest warning kind a census names.
const MAX_WARNING_KEY: usize = 64;

/// Keeps the lines at `indices` as context while the budget lasts. Context is short lines only, up to a
/// blank line: the location and notes of a diagnostic, not the next command line of a build, nor the frames of a
/// traceback already shown (`repeated`, one flag per record or none). Whether the error line has any context there.
fn mark_context(
    keep: &mut [bool],
    recs: &[Rec<'_>],
    repeated: &[bool],
    indices: impl Iterator<Item = usize>,
    budget: &mut usize,
) -> bool {
    let mut any = false;
    for j in indices {
        let text = recs[j].text;
        let shown = repeated.get(j).copied().unwrap_or(false);
        // A passing test's verdict (`--- PASS: TestX/case`, `test_a.py::test_b PASSED`) is the next test's news, not
        // this error's context: a table test's failing parent is followed by each case's verdict. Nor is Go's
        // `=== RUN   TestY` line, which opens another test (a failing test's own is kept with its region), nor the
        // banner of the next failing test (`____ test_y ____`): pytest's short tracebacks have no blank line to end
        // an error's context before the next failure's block.
        if *budget == 0
            || shown
            || renders_blank(text)
            || text.len() > LONG_LINE
            || regions::reports_pass(text)
            || regions::opens_go_test(text)
            || regions::opens_test_block(text)
        {
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

/// `line` without its colour and erase sequences (`ESC[0;31m`, `ESC[1m`, `ESC[0m`, `ESC[K`), or `None` when it
/// has none. A Jupyter traceback or a test run forced into colour spends about half its tokens on them, and they
/// show nothing a reader needs; other sequences (cursor moves, which tell a redrawn status) stay.
pub(crate) fn strip_colours(line: &str) -> Option<String> {
    let b = line.as_bytes();
    memchr::memchr(0x1b, b)?;
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = memchr::memchr(0x1b, &b[from..]) {
        let i = from + at;
        from = i + 1;
        if b.get(i + 1) != Some(&b'[') {
            continue;
        }
        let params = b[i + 2..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == b';')
            .count();
        let end = i + 2 + params;
        if matches!(b.get(end), Some(b'm' | b'K')) {
            out.push_str(&line[copied..i]);
            copied = end + 1;
            from = end + 1;
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&line[copied..]);
    Some(out)
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

#[cfg(test)]
#[path = "lines_tests.rs"]
mod tests;

//! Error regions: the parts of a failing run a reader needs whole.
//!
//! The seed kept any output that reported a failure verbatim, because losing part of an error is the worst thing
//! compression can do. Keeping every error *region* whole keeps that promise without paying for megabytes of
//! passing tests: a Python traceback from its `Traceback` line to the exception, a pytest failure block's
//! header, failing source lines (`>`), explanation lines (`E `) and locations, JVM/JS stack frames under an
//! exception (and, in a unittest failure block, the assertion message after it up to the block's closing rule:
//! the diff of what was expected and what came), a Go panic's goroutine and the distinct stacks of a goroutine dump
//! ([`goroutines`]), a failing Go test's output above its `--- FAIL:` line ([`gotest`]), a Rust backtrace's own frames ([`rust_backtrace`]), RSpec's, Mocha's and Jasmine's numbered failure blocks ([`numbered`]), a sanitizer's report
//! through its summary ([`sanitizer`]), a Valgrind report's stack ([`valgrind`]), test-runner section and summary lines. A compiler's note printed again
//! under a later diagnostic is shown once ([`notes`]). Everything else —
//! progress dots, `PASSED` lines, install and collection chatter — may go behind a marker; the error floor and the
//! head and tail of the run are kept by the line engine around this.
//!
//! A traceback printed again with the same frames (a retry loop, a logger that reports each failed attempt) says
//! nothing new but its exception line: the first copy is kept whole, a later one keeps its header and exception
//! line, and its frames are left to the line engine, whose error floor still shows each error line once. The same
//! holds for a JVM/JS frame run identical to an earlier one, for the copies of a recursion's cycle between its
//! first and last ([`cycles`]), and for the runs of frames a stack shares with one shown above it while its own
//! frames differ: the library frames around each test of a run with several failures ([`shared`]).

use std::collections::HashSet;

use super::detect::{is_log_like, search_prefix};

mod cycles;
mod goroutines;
mod gotest;
pub(crate) mod notes;
pub(crate) mod numbered;
pub(crate) mod rust_backtrace;
mod sanitizer;
pub(crate) mod shared;
mod valgrind;

/// Whether `line` is Go's `=== RUN`, `=== CONT` or `=== PAUSE` line for a test.
pub(crate) fn opens_go_test(line: &str) -> bool {
    gotest::any_run_line(line).is_some()
}

/// Why a sanitizer's shadow map is left out (see [`sanitizer::shadow_end`]): a tag distinct from the Rust
/// backtrace's.
pub(crate) const SHADOW: u8 = 4;
/// A pytest frame shorter than this (its location line and one more) is shown again rather than pointed back to.
const MIN_PYTEST_FRAME: usize = 3;
/// A traceback longer than this keeps its first and last frames (the deepest frames and the exception last).
const MAX_TRACEBACK: usize = 160;
const TRACEBACK_HEAD: usize = 40;
/// Stack frames (`at …`) kept under one exception line; `... N more` style tails are short anyway.
const MAX_FRAMES: usize = 40;
/// A run of more short pytest entries than this (`path:line: in func` and its one source line, what `--tb=auto`
/// prints between the test's own frame and the failing one) keeps only its first and last entries.
const MAX_SHORT_ENTRIES: usize = 5;
const SHORT_ENTRIES_HEAD: usize = 1;
const SHORT_ENTRIES_TAIL: usize = 3;
/// The message after a unittest failure's exception line (`Lists differ: …`, then the element-by-element diff)
/// kept up to this many lines: its first `MESSAGE_HEAD` and the rest from its end. A diff of two huge values
/// can run to thousands of lines; its head shows where they first differ.
const MAX_MESSAGE: usize = 80;
const MESSAGE_HEAD: usize = 60;
/// The lines after an exception line outside a unittest block (a message of several lines) kept up to this
/// many, its first `MORE_MESSAGE_HEAD` and the rest from its end: without a rule to close it, what follows the
/// message may be the next command's output, which needs no keeping.
const MAX_MORE_MESSAGE: usize = 30;
const MORE_MESSAGE_HEAD: usize = 20;

/// Marks the lines of every error region in `lines` as kept, and as `repeated` the frames of a traceback printed
/// again: no other line's context reaches into them (a `retrying…` warning above would otherwise keep them).
///
/// `why` says why a region's lines left out are hidden, for their marker to say: a Rust backtrace's frames
/// ([`rust_backtrace::RUNTIME`], [`rust_backtrace::SHOWN_ABOVE`]), whose marker names their crates and gathers the
/// error floor's lines among them after it, or a sanitizer's shadow map ([`SHADOW`]).
pub(crate) fn mark(lines: &[&str], keep: &mut [bool], repeated: &mut [bool], why: &mut [u8]) {
    let n = lines.len().min(keep.len()).min(repeated.len());
    let mut in_pytest_block = false;
    let mut in_unittest_block = false;
    // The frame runs kept so far, by content: a run printed again is not kept again.
    let mut frames_seen: HashSet<&[&str]> = HashSet::new();
    // Single frames shown so far: a stack that shares some with one above shows only the others.
    let mut shown = shared::Shown::default();
    // Where each Go test's output last started (`=== RUN`/`=== CONT`), for its `--- FAIL:` verdict.
    let mut go_tests_started: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::new();
    // The Go tests that passed, read once a failing one needs its span (see [`gotest::span_lines`]).
    let mut go_tests_passed = None;
    // Go's goroutine blocks kept so far, and their stacks.
    let mut goroutines_kept = 0;
    let mut stacks_seen: HashSet<String> = HashSet::new();
    // Inside a list of numbered failures (RSpec, Mocha, Jasmine), and the lines its blocks may still keep.
    let mut in_numbered = false;
    let mut numbered_left = numbered::MAX_LINES;
    // Code frames kept so far (the failing line and its caret): one printed again says nothing new.
    let mut code_frames_seen: HashSet<(&str, Option<&str>)> = HashSet::new();
    // The Rust backtrace frames shown so far.
    let mut rust_shown = HashSet::new();
    // pytest's long-format frames shown so far (a frame's source lines through its `path:line:` location), and
    // where the current block's next frame starts.
    let mut pytest_frames: HashSet<&[&str]> = HashSet::new();
    let mut pytest_frame_start: Option<usize> = None;
    // A compiler's notes shown so far (the note line and its snippet): a note printed again is not kept again.
    let mut notes_seen: HashSet<&[&str]> = HashSet::new();
    // Valgrind's stacks kept so far.
    let mut valgrind_stacks = 0;
    let mut i = 0;
    while i < n {
        let line = lines[i].trim_end_matches('\r');
        let t = line.trim_start();
        if rust_backtrace::opens(line) {
            let (frames, end) = rust_backtrace::frames(&lines[..n], i);
            keep[i] = true;
            let marks = rust_backtrace::Marks {
                keep: &mut keep[..n],
                repeated: &mut repeated[..n],
                rust: &mut *why,
            };
            rust_backtrace::mark(lines, &frames, &mut rust_shown, marks);
            i = end.max(i + 1);
            continue;
        }
        if sanitizer::opens_report(line) {
            // A sanitizer's report through its summary: the faulting access, the stacks that freed and allocated
            // the memory (or the racing thread's), each after a blank line.
            let end = sanitizer::report_end(&lines[..n], i);
            keep_stack(lines, keep, repeated, i, end, MAX_TRACEBACK, TRACEBACK_HEAD);
            // The stack that allocated or freed the memory reaches the access's callers too: shown once.
            for run in sanitizer::frame_runs(&lines[..n], i, end) {
                shown.collapse(lines, run, shared::Frames::Numbered, keep, repeated);
            }
            if let Some(shadow) = sanitizer::shadow_end(&lines[..n], end) {
                // Not kept as the run's end, nor as the context of the `ABORTING` line after it.
                for j in end..shadow.min(why.len()) {
                    (keep[j], repeated[j], why[j]) = (false, true, SHADOW);
                }
            }
            i = end.max(i + 1);
            continue;
        }
        if valgrind::is_frame(line) {
            // A Valgrind report's stack, and the line above it that names the fault (`Invalid read of size 8`) or
            // the block (`Address 0x… is 0 bytes after a block of size 40 alloc'd`).
            let end = valgrind::frames_end(&lines[..n], i);
            if valgrind_stacks < valgrind::MAX_REPORTS {
                valgrind_stacks += 1;
                if i > 0 {
                    keep[i - 1] = true;
                }
                let after = valgrind::after_end(&lines[..n], end);
                keep[end..after].iter_mut().for_each(|k| *k = true);
                if frames_seen.insert(&lines[i..end]) {
                    keep_stack(lines, keep, repeated, i, end, MAX_FRAMES, MAX_FRAMES / 2);
                    shown.collapse(lines, i..end, shared::Frames::Lines, keep, repeated);
                } else {
                    repeated[i..end].iter_mut().for_each(|r| *r = true);
                }
            }
            i = end.max(i + 1);
            continue;
        }
        if let Some(end) = notes::note_end(&lines[..n], i) {
            if !notes_seen.insert(&lines[i..end]) {
                keep[i..end].iter_mut().for_each(|k| *k = false);
                repeated[i..end].iter_mut().for_each(|r| *r = true);
            }
            i = end;
            continue;
        }
        if numbered::is_heading(t) {
            keep[i] = true;
            in_numbered = true;
            i += 1;
            continue;
        }
        if in_numbered && numbered::is_header(line) || numbered::is_jest_header(line) {
            let end = numbered::block_end(&lines[..n], i);
            let take = (end - i).min(numbered::MAX_BLOCK).min(numbered_left);
            keep[i..i + take].iter_mut().for_each(|k| *k = true);
            numbered_left -= take;
            forget_code_frames_seen(lines, i..i + take, &mut code_frames_seen, keep, repeated);
            // The backtrace under each example (RSpec's `# ./lib/…:48:in …` lines, Mocha's `at …`): the frames
            // it shares with an example above — the runner's, the helpers' — are shown once.
            let mut j = i;
            while j < i + take {
                let end = frames_end(lines, j, i + take);
                if end > j {
                    shown.collapse(lines, j..end, shared::Frames::Lines, keep, repeated);
                }
                j = end.max(j + 1);
            }
            i = end.max(i + 1);
            continue;
        }
        if in_numbered && !line.is_empty() && !line.starts_with([' ', '\t']) {
            in_numbered = false;
        }
        if goroutines::is_header(line) {
            let end = goroutines::block_end(&lines[..n], i);
            let fresh = stacks_seen.insert(goroutines::stack_key(&lines[i + 1..end]));
            let message = goroutines::message_start(lines, i);
            // A dump opens with the goroutine that failed; a log of a service that crashes again and again, or
            // `go test ./...` with several panicking packages, prints one dump per crash.
            let failed = goroutines_kept == 0 || message.is_some() || goroutines::is_running(line);
            if failed && fresh {
                // The goroutine that failed, with its panic's message above it.
                let from = message.unwrap_or(i);
                keep[from..i].iter_mut().for_each(|k| *k = true);
                keep_stack(lines, keep, repeated, i, end, MAX_TRACEBACK, TRACEBACK_HEAD);
                goroutines_kept = 1;
            } else if !fresh {
                // The same stack as a block above (a pool's parked workers): header, frames and the blank line
                // after them go behind the marker.
                let through = if lines.get(end).is_some_and(|l| l.trim().is_empty()) {
                    (end + 1).min(n)
                } else {
                    end
                };
                repeated[i..through].iter_mut().for_each(|r| *r = true);
            } else if goroutines_kept <= goroutines::MAX_OTHERS {
                // A parked goroutine: where it waits, the program's own frames, who started it.
                for k in goroutines::telling_lines(&lines[i..end]) {
                    if let Some(flag) = keep.get_mut(i + k) {
                        *flag = true;
                    }
                }
                goroutines_kept += 1;
            }
            i = end.max(i + 1);
            continue;
        }
        if let Some(end) = tap_failure_end(&lines[..n], i) {
            // A TAP failure (`not ok 3 defaults to a depth of 5`) and its diagnostics: tape's and `node --test`'s
            // YAML block (operator, expected, actual, where), prove's `#   Failed test` lines.
            keep_tap_failure(lines, keep, i, end);
            i = end;
            continue;
        }
        if opens_traceback(line) {
            let (end, raised) = traceback_end(lines, i);
            let (end, raised) = (end.min(n), raised && end <= n);
            let frames = &lines[i + 1..if raised { end - 1 } else { end }];
            if frames.is_empty() || frames_seen.insert(frames) {
                keep_stack(lines, keep, repeated, i, end, MAX_TRACEBACK, TRACEBACK_HEAD);
                let frames_end = i + 1 + frames.len();
                shown.collapse(
                    lines,
                    i + 1..frames_end,
                    shared::Frames::Python,
                    keep,
                    repeated,
                );
            } else {
                // The same frames as a traceback above: what this one adds is its exception line.
                keep[i] = true;
                if raised {
                    keep[end - 1] = true;
                }
                repeated[i + 1..i + 1 + frames.len()]
                    .iter_mut()
                    .for_each(|r| *r = true);
            }
            i = end;
            if raised && !in_unittest_block {
                // A message of several lines (pydantic's `ValidationError` lists each field and its error on the
                // lines after the exception line, Django's `ImproperlyConfigured` adds a hint) is part of the
                // exception: it runs until a blank line or whatever starts something else.
                let close = (i..n).find(|&j| !continues_message(lines, j)).unwrap_or(n);
                keep_span(keep, i, close, MAX_MORE_MESSAGE, MORE_MESSAGE_HEAD);
                i = close;
            }
            if in_unittest_block {
                // unittest prints the assertion's message after the exception line, blank lines and all, until
                // the rule that closes the failure block: the diff a reader fixes the test from. A chained
                // exception (`During handling of the above exception…`) brings its own traceback, a region again.
                let close = (i..n)
                    .find(|&j| is_rule(lines[j]) || opens_traceback(lines[j]))
                    .unwrap_or(n);
                keep_span(keep, i, close, MAX_MESSAGE, MESSAGE_HEAD);
                in_unittest_block = close < n && opens_traceback(lines[close]);
                i = close;
            }
            continue;
        }
        if is_rule(line) && line.starts_with('=') {
            // `====` opens each failure block (`FAIL: …`, a `----` rule, the traceback) and the run's end.
            in_unittest_block = lines
                .get(i + 1)
                .is_some_and(|next| is_unittest_failure(next.trim_end_matches('\r')));
        }
        if let Some(name) = gotest::started_test(line) {
            go_tests_started.insert(name, i);
        } else if let Some(&run) = gotest::failed_test(line).and_then(|n| go_tests_started.get(n)) {
            // A failing Go test's own lines above its verdict: its messages, a testify diff, its subtests.
            let passed = go_tests_passed.get_or_insert_with(|| gotest::passed_tests(&lines[..n]));
            let span = gotest::span_lines(&lines[..n], run, i + 1, passed);
            keep_lines(keep, &span, gotest::MAX_LINES, gotest::HEAD);
        }
        if is_code_frame_pointer(t) {
            // The failing line of a code frame (Jest, Vitest, Babel: `> 41 |   expect(total).toBe(4);`) and the
            // caret under it: which line failed, as pytest's `>` line says. The same frame again (Jest's open
            // handles, a `test.each` failing at one `expect` for every row) is not kept again: the frames under it
            // say where it was reached from.
            let caret = caret_under(lines, i, n);
            let frame_end = i + 1 + usize::from(caret.is_some());
            let flags = if code_frames_seen.insert((t, caret)) {
                keep.get_mut(i..frame_end)
            } else {
                repeated.get_mut(i..frame_end)
            };
            flags.into_iter().flatten().for_each(|f| *f = true);
        }
        if is_banner(line) {
            keep[i] = true;
            in_pytest_block = line.starts_with("___");
            pytest_frame_start = in_pytest_block.then_some(i + 1);
        } else if is_summary(t) {
            keep[i] = true;
        } else if in_pytest_block && short_entry_len(&lines[..n], i).is_some() {
            // The frames between the test and the failure: pluggy, runner and library calls. The first says
            // what the test called, the last lead to the failing line; the ones between go behind a marker.
            let mut entries = Vec::new();
            let mut j = i;
            while let Some(len) = short_entry_len(&lines[..n], j) {
                entries.push(j..j + len);
                j += len;
            }
            if !frames_seen.insert(&lines[i..j]) {
                // The same entries as a block above (a collection error reported once per worker): shown once.
                keep[i..j].iter_mut().for_each(|k| *k = false);
                repeated[i..j].iter_mut().for_each(|r| *r = true);
                i = j;
                continue;
            }
            let few = entries.len() <= MAX_SHORT_ENTRIES;
            for (k, entry) in entries.iter().enumerate() {
                if few || k < SHORT_ENTRIES_HEAD || k >= entries.len() - SHORT_ENTRIES_TAIL {
                    keep[entry.clone()].iter_mut().for_each(|k| *k = true);
                }
            }
            // Library frames every failure passes through (the helper each test calls, the function that
            // raises) were shown under the first failure: later ones show only the frames they do not share.
            shown.collapse(lines, i..j, shared::Frames::Entries, keep, repeated);
            i = j;
            continue;
        } else if in_pytest_block && is_pytest_detail(line) {
            keep[i] = true;
            if line.starts_with('>') && i > 0 {
                keep[i - 1] = true;
            }
            if let Some(from) = pytest_frame_start.filter(|_| search_prefix(line).is_some()) {
                // A frame ends at its location line. The same frame under an earlier failure (the assertion helper
                // every test of a run fails in) is shown once: later, its source lines go behind one marker line.
                // What opens a frame is not compared: the `_ _ _` rule and the values of its arguments
                // (`expected = '…'`), which differ from test to test, stay where they are.
                let start = (from..i)
                    .find(|&j| {
                        let l = lines[j].trim_end_matches('\r');
                        !(l.trim().is_empty() || l.starts_with("_ _") || is_frame_argument(l))
                    })
                    .unwrap_or(i);
                let frame = &lines[start..=i];
                if frame.len() >= MIN_PYTEST_FRAME && !pytest_frames.insert(frame) {
                    keep[start..=i].iter_mut().for_each(|k| *k = false);
                    repeated[start..=i].iter_mut().for_each(|r| *r = true);
                }
                pytest_frame_start = Some(i + 1);
            }
        }
        if is_frame(t) && i > 0 && !is_frame(lines[i - 1].trim_start()) {
            // Frames under an exception line: keep a bounded run of them with the line that opened them.
            let start = i;
            let end = frames_end(lines, i, n);
            // Jest prints where each `console.log` was called under a blank line: that blank line opens no
            // exception, and kept it would split the marker of a run of such blocks into one per block.
            if !lines[start - 1].trim().is_empty() {
                keep[start - 1] = true;
            }
            if frames_seen.insert(&lines[start..end]) {
                keep_stack(
                    lines,
                    keep,
                    repeated,
                    start,
                    end,
                    MAX_FRAMES,
                    MAX_FRAMES / 2,
                );
                shown.collapse(lines, start..end, shared::Frames::Lines, keep, repeated);
            } else {
                repeated[start..end].iter_mut().for_each(|r| *r = true);
            }
            i = end;
            continue;
        }
        i += 1;
    }
}

/// The lines of pytest's `warnings summary` section after its first entry: the same deprecation, printed again
/// for each test or module that triggered it. They are noise a reader needs once — the first entry shows what
/// kind of warning it is, the run's verdict line counts them all — so they are not kept for their warning words
/// (the floor still keeps any line with an error word). `None` when `lines` has no such section or it holds one
/// entry. The section ends at the next banner or at pytest's `-- Docs:` line. An output cut short in its middle
/// (an agent's runner keeps a long output's head and tail) may have lost the header: the section is then the run
/// of warning entries ([`is_warning_entry`]) just above that `-- Docs:` line.
pub(crate) fn warnings_summary_rest(lines: &[&str]) -> Option<std::ops::Range<usize>> {
    let (body, end) = match lines
        .iter()
        .position(|l| is_banner(l) && l.contains(" warnings summary "))
    {
        Some(header) => {
            let body = header + 1;
            let end = lines[body..]
                .iter()
                .position(|l| is_banner(l) || l.starts_with("-- Docs:"))
                .map_or(lines.len(), |k| body + k);
            (body, end)
        }
        None => headless_warnings_summary(lines)?,
    };
    // Entries are separated by empty lines (a warning's own text may hold a line of spaces); the first one (and
    // the empty lines before it) stays as it is.
    let mut i = body;
    while i < end && is_empty(lines[i]) {
        i += 1;
    }
    while i < end && !is_empty(lines[i]) {
        i += 1;
    }
    let rest = i;
    while i < end && is_empty(lines[i]) {
        i += 1;
    }
    (i < end).then_some(rest..end)
}

/// A line with nothing on it (a line of spaces is not one: it belongs to a message that has it).
fn is_empty(line: &str) -> bool {
    line.trim_end_matches('\r').is_empty()
}

/// Where the entries of a warnings summary whose header is gone stand: the blank-line-separated entries
/// ([`is_warning_entry`]) that run up to pytest's `-- Docs: …warnings…` line, the first of them at least one
/// line below the cut.
fn headless_warnings_summary(lines: &[&str]) -> Option<(usize, usize)> {
    let end = lines
        .iter()
        .rposition(|l| l.starts_with("-- Docs: ") && l.contains("warnings"))?;
    let mut body = end;
    loop {
        // The entry that ends at `body` (past the empty lines above it) starts after the empty line above it.
        let mut last = body;
        while last > 0 && is_empty(lines[last - 1]) {
            last -= 1;
        }
        let mut first = last;
        while first > 0 && !is_empty(lines[first - 1]) {
            first -= 1;
        }
        if first == last || first == 0 || !is_warning_entry(&lines[first..last]) {
            break;
        }
        body = first;
    }
    (body < end).then_some((body, end))
}

/// An entry of pytest's warnings summary: the tests or the module that triggered it, unindented
/// (`tests/test_x.py::test_y`, `tests/test_x.py: 11 warnings`), then the warning, indented, its first line naming
/// its class (`  /src/app.py:12: DeprecationWarning: …`).
fn is_warning_entry(entry: &[&str]) -> bool {
    let names = entry.iter().take_while(|l| !l.starts_with(' ')).count();
    let named = |l: &&str| l.contains("::") || l.ends_with(" warnings") || l.ends_with(" warning");
    names > 0
        && entry[..names].iter().all(named)
        && entry.get(names).is_some_and(|l| l.contains("Warning"))
}

/// One past the last line of the traceback starting at `start`, and whether that line is its exception: the
/// first unindented line after the frames (`ValueError: …`). A traceback cut off before it ends on a frame.
fn traceback_end(lines: &[&str], start: usize) -> (usize, bool) {
    let mut j = start + 1;
    while j < lines.len() {
        let l = lines[j].trim_end_matches('\r');
        if l.is_empty() || l.starts_with(' ') || l.starts_with('\t') {
            j += 1;
            continue;
        }
        return (j + 1, true);
    }
    (j, false)
}

/// Whether line `j`, after an exception line or a line of its message, continues that message: an indented
/// line (pydantic's error under each field, a hint), or an unindented one an indented line follows (the field's
/// name above its error). An unindented line on its own — the next command's output — is not the message's,
/// nor is anything [`ends_message`] names.
fn continues_message(lines: &[&str], j: usize) -> bool {
    let Some(line) = lines.get(j).map(|l| l.trim_end_matches('\r')) else {
        return false;
    };
    let indented = |l: &str| l.starts_with([' ', '\t']) && !l.trim().is_empty();
    !ends_message(line)
        && (indented(line)
            || lines
                .get(j + 1)
                .is_some_and(|next| indented(next.trim_end_matches('\r'))))
}

/// Whether `line` ends the message of an exception that printed more than one line: a blank line, another
/// traceback or a chained exception's `During handling…`/`The above exception…` line, a section banner or rule,
/// a log line (timestamp, level), a shell's trace (`+ git checkout`) or prompt, or the markup an agent harness
/// wraps an output in (`</output>`).
fn ends_message(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty()
        || opens_traceback(line)
        || t.starts_with("During handling of the above exception")
        || t.starts_with("The above exception was the direct cause")
        || is_banner(line)
        || is_rule(line)
        || line.starts_with("+ ")
        || line.starts_with("$ ")
        || line.starts_with('<')
        || is_log_like(line)
}

/// The first line of a Python traceback.
fn opens_traceback(line: &str) -> bool {
    line.trim_start()
        .starts_with("Traceback (most recent call last)")
}

/// Whether `t` is a TAP result opening with `word` (`ok `, `not ok `) and its number: `ok 12 - name`, `not ok 3`.
pub(crate) fn tap_number(t: &str, word: &str) -> bool {
    t.strip_prefix(word).is_some_and(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && matches!(rest.as_bytes().get(digits), None | Some(b' '))
    })
}

/// The headings of a TAP stream (`# parse()`, tape's `# throws an exception when depth exceeds the limit`,
/// `node --test`'s `# Subtest: …`): a test's or a group's name, which an error word in it does not make an error.
/// A text is a TAP stream when three or more of its lines are results (`ok 3`, `not ok 4`). One flag per line;
/// all `false` for any other output.
pub(crate) fn tap_headings(lines: &[&str]) -> Vec<bool> {
    let results = lines
        .iter()
        .filter(|l| {
            let t = l.trim();
            tap_number(t, "ok ") || tap_number(t, "not ok ")
        })
        .take(3)
        .count();
    lines
        .iter()
        .map(|l| results >= 3 && l.trim_start().starts_with("# "))
        .collect()
}

/// A TAP failure's lines kept at most (its result line, then the first lines of its diagnostics).
const MAX_TAP_FAILURE: usize = 60;

/// Lines of a TAP failure's `stack` kept: the error and the test's own frame (the runner's frames follow).
const TAP_STACK_LINES: usize = 2;
/// Lines of its `expected` and `actual` dumps kept when they are long: the `error` above them shows the
/// difference already (`node --test` prints both values again, one line per element).
const TAP_VALUE_LINES: usize = 8;

/// Keeps the TAP failure `lines[start..end]` ([`tap_failure_end`]): its result line, and of its YAML block every
/// key with its value, a `stack` only its first lines and a long `expected` or `actual` only its first lines; at
/// most [`MAX_TAP_FAILURE`] lines in all.
fn keep_tap_failure(lines: &[&str], keep: &mut [bool], start: usize, end: usize) {
    let end = end.min(lines.len()).min(keep.len());
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    // The block's keys are indented like its first line after `---` (tape indents them deeper than the `---`).
    let key_indent = lines
        .get(start + 1)
        .filter(|l| l.trim() == "---")
        .and_then(|_| lines.get(start + 2))
        .map(|l| indent_of(l));
    let mut budget = MAX_TAP_FAILURE;
    let (mut limit, mut nested) = (usize::MAX, 0);
    for j in start..end {
        let line = lines[j].trim_end_matches('\r');
        let at_key = j == start || key_indent.is_none_or(|k| indent_of(line) <= k);
        if at_key {
            let key = line.trim().split(':').next().unwrap_or("");
            limit = match key {
                "stack" => TAP_STACK_LINES,
                "expected" | "actual" => TAP_VALUE_LINES,
                _ => usize::MAX,
            };
            nested = 0;
        } else {
            nested += 1;
            if nested > limit {
                continue;
            }
        }
        if budget == 0 {
            break;
        }
        keep[j] = true;
        budget -= 1;
    }
}

/// One past the last line of the TAP failure whose result line (`not ok 3 name`) is `lines[i]`: its YAML block
/// (an indented `---` through the `...` that closes it) or the `#` diagnostics right under it. `None` when
/// `lines[i]` is no failing result.
fn tap_failure_end(lines: &[&str], i: usize) -> Option<usize> {
    if !tap_number(lines.get(i)?.trim(), "not ok ") {
        return None;
    }
    let next = |j: usize| lines.get(j).map(|l| l.trim_end_matches('\r'));
    if next(i + 1).is_some_and(|l| l.trim() == "---") {
        let indent_of = |l: &str| l.len() - l.trim_start().len();
        let indent = next(i + 1).map_or(0, indent_of);
        // The block ends at its `...`; a block cut off (a truncated output) ends where a line is indented less
        // than its `---`: the next result or heading.
        let end = (i + 2..lines.len())
            .find_map(|j| {
                let l = next(j)?;
                if l.trim() == "..." && indent_of(l) == indent {
                    Some(j + 1)
                } else if !l.trim().is_empty() && indent_of(l) < indent {
                    Some(j)
                } else {
                    None
                }
            })
            .unwrap_or(lines.len());
        return Some(end);
    }
    let diagnostics = (i + 1..lines.len())
        .find(|&j| !next(j).is_some_and(|l| l.trim_start().starts_with('#')))
        .unwrap_or(lines.len());
    Some(diagnostics)
}

/// Keeps `start..end`, or its first `head` and last `cap - head` lines when longer than `cap`.
fn keep_span(keep: &mut [bool], start: usize, end: usize, cap: usize, head: usize) {
    let end = end.min(keep.len());
    if end <= start {
        return;
    }
    if end - start <= cap {
        keep[start..end].iter_mut().for_each(|k| *k = true);
        return;
    }
    keep[start..start + head].iter_mut().for_each(|k| *k = true);
    keep[end - (cap - head)..end]
        .iter_mut()
        .for_each(|k| *k = true);
}

/// [`keep_span`] for a stack: the copies of a recursion's cycle between its first and last ([`cycles::middles`])
/// are not kept, even by the output's head, and no error line's context reaches into them, as for the frames of a
/// traceback printed again; the cap then applies to the lines left, so the frames that entered the recursion and
/// the deepest ones both stay.
fn keep_stack(
    lines: &[&str],
    keep: &mut [bool],
    repeated: &mut [bool],
    start: usize,
    end: usize,
    cap: usize,
    head: usize,
) {
    let end = end.min(keep.len()).min(repeated.len()).min(lines.len());
    if end <= start {
        return;
    }
    let middles = cycles::middles(&lines[start..end]);
    if middles.is_empty() {
        keep_span(keep, start, end, cap, head);
        return;
    }
    let mut rest = Vec::with_capacity(end - start);
    let mut next = start;
    for m in &middles {
        let (from, to) = (start + m.start, start + m.end);
        rest.extend(next..from);
        keep[from..to].iter_mut().for_each(|k| *k = false);
        repeated[from..to].iter_mut().for_each(|r| *r = true);
        next = to;
    }
    rest.extend(next..end);
    keep_lines(keep, &rest, cap, head);
}

/// [`keep_span`] for lines that are not one range (a stack without its cycle's middle copies, a Go test's span
/// without its passing subtests): keeps `lines`, or their first `head` and last `cap - head` when more than `cap`.
fn keep_lines(keep: &mut [bool], lines: &[usize], cap: usize, head: usize) {
    let (first, last) = if lines.len() <= cap {
        (lines, &lines[..0])
    } else {
        (&lines[..head], &lines[lines.len() - (cap - head)..])
    };
    for &k in first.iter().chain(last) {
        if let Some(flag) = keep.get_mut(k) {
            *flag = true;
        }
    }
}

/// Test-runner section lines: `____ test_x ____`, `==== FAILURES ====`, `---- Captured stdout ----`,
/// `---- tests::x stdout ----`.
fn is_banner(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 8
        && t.len() < 300
        && ["___", "===", "---"].iter().any(|f| {
            t.starts_with(f)
                && t.ends_with(f)
                && t.trim_matches(|c| c == '_' || c == '=' || c == '-')
                    .trim()
                    .len()
                    > 1
        })
}

/// The title of a section banner (`Captured stdout call` of `---- Captured stdout call ----`), for the marker that
/// takes the section's place to say what it was.
pub(crate) fn section_title(line: &str) -> Option<&str> {
    (line.trim_start().starts_with("---") && is_banner(line))
        .then(|| line.trim().trim_matches('-').trim())
}

/// The banners of sections whose every line `keep` leaves out: `---- Captured stdout call ----` over output
/// that goes behind a marker. Alone, such a banner says only what the marker's census can say; it goes with it.
pub(crate) fn empty_sections(lines: &[&str], keep: &[bool]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if section_title(line).is_none() {
            continue;
        }
        let end = (i + 1..lines.len())
            .find(|&j| is_banner(lines[j]))
            .unwrap_or(lines.len());
        if end > i + 1 && (i + 1..end).all(|j| !keep.get(j).copied().unwrap_or(true)) {
            out.push(i);
        }
    }
    out
}

/// A banner that opens another test's block (`____ test_y ____`), not one that opens what a failing test printed
/// (`---- Captured stdout call ----`, Cargo's `---- tests::x stdout ----`), which belongs to the failure above it,
/// nor a `====` line, which may be the first line of that captured output (a test that runs pytest).
pub(crate) fn opens_test_block(line: &str) -> bool {
    line.trim_start().starts_with("___") && is_banner(line)
}

/// A line of only `=` or only `-`, as unittest draws around each failure block and above its verdict.
fn is_rule(line: &str) -> bool {
    let t = line.trim_end_matches('\r');
    t.len() >= 20 && (t.bytes().all(|b| b == b'=') || t.bytes().all(|b| b == b'-'))
}

/// The header of a unittest failure block: `FAIL: test_x (module.Class)` or `ERROR: …`.
fn is_unittest_failure(line: &str) -> bool {
    line.strip_prefix("FAIL: ")
        .or_else(|| line.strip_prefix("ERROR: "))
        .is_some_and(|rest| rest.contains(" (") || rest.starts_with("test"))
}

/// Verdict lines of common test runners and builds.
fn is_summary(t: &str) -> bool {
    const STARTS: [&str; 12] = [
        "Ran ",
        "test result:",
        "Tests:",
        "Test Suites:",
        "Tests run:",
        "●",
        "FAILED",
        "BUILD ",
        "short test summary",
        "failures:",
        "Summary of failures",
        "ERRORS",
    ];
    STARTS.iter().any(|s| t.starts_with(s))
}

/// Lines of a pytest failure block worth keeping: `E   …` explanations, `>` failing source, `path:line:` locations.
fn is_pytest_detail(line: &str) -> bool {
    line.starts_with("E ") || line == "E" || line.starts_with('>') || search_prefix(line).is_some()
}

/// A frame's argument as pytest's long format shows it above the frame's source: `expected = 'spam'`, unindented.
fn is_frame_argument(line: &str) -> bool {
    line.split_once(" = ").is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The length of a short pytest traceback entry at `i` (`None` when none starts there): a `path:line: in func`
/// location, one indented source line, and the caret lines Python 3.11 and later print under the part of it that
/// failed (`           ^^^^^^^^^^`).
fn short_entry_len(lines: &[&str], i: usize) -> Option<usize> {
    let line = lines.get(i)?.trim_end_matches('\r');
    let path = search_prefix(line)?;
    let after_path = line.get(path.len() + 1..)?;
    let in_func = after_path
        .split_once(':')
        .is_some_and(|(digits, rest)| !digits.is_empty() && rest.starts_with(" in "));
    let source = lines.get(i + 1)?;
    if !in_func || !source.starts_with("    ") || search_prefix(source.trim_start()).is_some() {
        return None;
    }
    let carets = lines[i + 2..]
        .iter()
        .take_while(|l| l.starts_with("    ") && marks_carets(l.trim(), false))
        .count();
    Some(2 + carets)
}

/// Whether `t` (a line, trimmed) only marks a span of the line above: at least one `^`, with `~` for the rest of a
/// range and spaces between ranges (Python's carets, Clang's), and with `gutter` the `|` GCC and Babel print before
/// them.
pub(crate) fn marks_carets(t: &str, gutter: bool) -> bool {
    t.contains('^')
        && t.bytes()
            .all(|b| matches!(b, b'^' | b'~' | b' ') || (gutter && b == b'|'))
}

/// The line a code frame points at: `> 41 |   expect(total).toBe(4);` (Babel's format, which Jest and Vitest print
/// under a failing assertion), the line number between `>` and `|`.
fn is_code_frame_pointer(t: &str) -> bool {
    t.strip_prefix("> ")
        .map(str::trim_start)
        .and_then(|rest| rest.split_once(" |"))
        .is_some_and(|(number, _)| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
}

/// The caret line under a code frame's failing line: `|   ^` (only `|`, spaces and carets or tildes).
fn is_caret_line(t: &str) -> bool {
    t.starts_with('|') && marks_carets(t, true)
}

/// In a failure block kept whole (`block`), a code frame already shown above — its context lines, the failing
/// line and the caret — is taken out again: `test.each` rows failing at one `expect`, or Jest's open handles, print
/// the same frame in every block, and the block's own lines (its values, its `at` lines) say what differs.
fn forget_code_frames_seen<'a>(
    lines: &[&'a str],
    block: std::ops::Range<usize>,
    seen: &mut HashSet<(&'a str, Option<&'a str>)>,
    keep: &mut [bool],
    repeated: &mut [bool],
) {
    for p in block.clone() {
        let t = lines[p].trim_end_matches('\r').trim_start();
        if !is_code_frame_pointer(t) {
            continue;
        }
        let caret = caret_under(lines, p, block.end);
        if seen.insert((t, caret)) {
            continue;
        }
        let start = (block.start..p)
            .rev()
            .take_while(|&j| is_code_source_line(lines[j]))
            .last()
            .unwrap_or(p);
        let after = p + 1 + usize::from(caret.is_some());
        let end = (after..block.end)
            .find(|&j| !is_code_source_line(lines[j]))
            .unwrap_or(block.end);
        for j in start..end {
            if let (Some(k), Some(r)) = (keep.get_mut(j), repeated.get_mut(j)) {
                *k = false;
                *r = true;
            }
        }
    }
}

/// The caret line under a code frame's failing line at `p` (`         |      ^`), when one stands before `end`.
fn caret_under<'a>(lines: &[&'a str], p: usize, end: usize) -> Option<&'a str> {
    lines
        .get(p + 1)
        .filter(|next| p + 1 < end && is_caret_line(next.trim()))
        .copied()
}

/// A source line of a code frame around its failing line: `      40 |   const cart = makeCart();`.
fn is_code_source_line(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && t[digits..].trim_start().starts_with('|')
}

/// Any line of a code frame: a source line, the failing line (`> 41 | …`) or the caret under it.
pub(crate) fn is_code_frame_line(line: &str) -> bool {
    let t = line.trim_end_matches('\r').trim_start();
    is_code_source_line(t) || is_code_frame_pointer(t) || is_caret_line(t.trim_end())
}

/// One past the run of frame lines ([`is_frame`]) that starts at `from`, looking no further than `to`; `from`
/// itself when no frame stands there.
fn frames_end(lines: &[&str], from: usize, to: usize) -> usize {
    let to = to.min(lines.len());
    (from..to)
        .find(|&j| !is_frame(lines[j].trim_start()))
        .unwrap_or(to.max(from))
}

/// Whether `line` reports a test that passed: Mocha's and Jest's `✓ rejects a failed job`, pytest's
/// `test_a.py::test_fail_fast PASSED`, Go's `--- PASS:`, unittest's and Cargo's `test_fail (…) ... ok`, a TAP
/// result (tape, node-tap, `node --test`, `prove`: `ok 280 throws on invalid option: null`). An error word
/// in such a line is the test's name: the line stays (the floor keeps it), but it brings no neighbours as context —
/// they are more passing tests.
pub(crate) fn reports_pass(line: &str) -> bool {
    let t = line.trim_end_matches('\r').trim();
    t.starts_with("✓ ")
        || t.starts_with("✔ ")
        || t.starts_with("√ ")
        || t.starts_with("--- PASS: ")
        || t.ends_with(" ... ok")
        || t.ends_with(" PASSED")
        || tap_number(t, "ok ")
        || t.split_once(" PASSED ").is_some_and(|(_, progress)| {
            progress.trim_start().starts_with('[') && progress.ends_with("%]")
        })
        || prove_file_passed(t)
        || dart_progress(t)
        || playwright_progress(t)
        || tasty_passed(line.trim_end_matches('\r'))
}

/// tasty's (Haskell's test runner) line for a test that passed, indented under its group and padded to the
/// longest name: `      reports errors for bad input:            OK (0.02s)`. A failing one says `FAIL` and prints
/// its reason under it.
fn tasty_passed(line: &str) -> bool {
    let t = line.trim();
    let indented = line.len() - line.trim_start().len() >= 2;
    let verdict = t.strip_suffix("OK").or_else(|| {
        let (head, time) = t.rsplit_once(" (")?;
        let secs = time.strip_suffix("s)")?.trim_end_matches('m');
        (!secs.is_empty() && secs.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
            .then_some(head)
            .and_then(|h| h.strip_suffix("OK"))
    });
    indented
        && verdict.is_some_and(|name| {
            name.ends_with(' ') && name.trim_end().ends_with(':') && name.trim_end().len() > 1
        })
}

/// Playwright's line reporter, one line per test as it starts: `[12/39] [chromium] › e2e/auth.spec.ts:55:3 ›
/// Auth Flows › login shows an error` (the project in brackets, or `›` between location and title). A test that
/// fails gets its own numbered block under it (`  1) [chromium] › …`) with the error, so the progress line itself
/// reports nothing gone wrong. Ninja's `[12/200] Building CXX object …` names no test's `file:line:col`.
fn playwright_progress(t: &str) -> bool {
    let Some((count, rest)) = t.strip_prefix('[').and_then(|r| r.split_once("] ")) else {
        return false;
    };
    let Some((done, total)) = count.split_once('/') else {
        return false;
    };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    // The test's place, `file:line:col`, as the reporter names every test.
    let located = |r: &str| {
        r.split_whitespace().any(|word| {
            let mut parts = word.rsplitn(3, ':');
            let (col, line, file) = (parts.next(), parts.next(), parts.next());
            col.is_some_and(digits)
                && line.is_some_and(digits)
                && file.is_some_and(|f| !f.is_empty())
        })
    };
    digits(done)
        && digits(total)
        && located(rest)
        && (rest.contains(" › ")
            || rest
                .strip_prefix('[')
                .and_then(|r| r.split_once("] "))
                .is_some_and(|(project, _)| !project.is_empty() && !project.contains(' ')))
}

/// A line of Dart's and Flutter's compact test reporter that no test failed on: `00:03 +72: path: imports remote
/// GIF icons`, the clock, the passes so far (`+72`, then skips `~2` and failures `-1`) and the test it reached. The
/// line of a test that failed ends `[E]`, and the last line says `Some tests failed.`: those are no passes.
fn dart_progress(t: &str) -> bool {
    let Some((clock, rest)) = t.split_once(" +") else {
        return false;
    };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let clock_ok = clock
        .split_once(':')
        .is_some_and(|(minutes, seconds)| digits(minutes) && digits(seconds));
    let passes = rest.bytes().take_while(u8::is_ascii_digit).count();
    clock_ok
        && passes > 0
        && rest.contains(": ")
        && !t.ends_with("[E]")
        && !t.ends_with("Some tests failed.")
}

/// prove's line for a test file that passed: `t/10_base.t .............. ok`, with `--timer` a clock before it and
/// the time it took after (`[12:21:06] t/10_base.t ...... ok       75 ms ( 0.00 usr … CPU)`).
fn prove_file_passed(t: &str) -> bool {
    let t = match t.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((clock, rest)) if clock.bytes().all(|b| b.is_ascii_digit() || b == b':') => rest,
        _ => t,
    };
    t.split_once(" ..").is_some_and(|(file, rest)| {
        !file.contains(' ')
            && rest
                .trim_start_matches('.')
                .strip_prefix(" ok")
                .is_some_and(|after| after.is_empty() || after.starts_with(' '))
    })
}

/// A JVM, JS, .NET or Ruby stack frame (`t` trimmed at its start).
pub(crate) fn is_frame(t: &str) -> bool {
    (t.starts_with("at ") && (t.contains('(') || t.contains(':')))
        || (t.starts_with("... ") && t.ends_with(" more"))
        || is_ruby_frame(t)
        || is_php_frame(t)
}

/// A frame of PHP's `Stack trace:` (what an uncaught exception prints, in the error log and in Laravel's
/// `[stacktrace]`): `#0 /app/src/Container.php(719): Container->build('App\\Kernel')`, `#1 [internal function]: f()`,
/// and the last, `#7 {main}`.
pub(crate) fn is_php_frame(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('#') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Some(call) = rest[digits..].strip_prefix(' ').filter(|_| digits > 0) else {
        return false;
    };
    call == "{main}"
        || call.starts_with("[internal function]: ")
        || call.split_once("): ").is_some_and(|(place, _)| {
            place.rsplit_once('(').is_some_and(|(path, line)| {
                !path.is_empty()
                    && !path.contains(' ')
                    && !line.is_empty()
                    && line.bytes().all(|b| b.is_ascii_digit())
            })
        })
        // PHP's error log cuts a long trace inside a frame; what is left still opens as one.
        || call
            .split_once(".php(")
            .is_some_and(|(path, _)| !path.is_empty() && !path.contains(' '))
}

/// A Ruby backtrace frame as RSpec prints it under a failure (`# ./lib/cart.rb:48:in `total'`) or Ruby under an
/// uncaught exception (`from /app/lib/cart.rb:48:in 'Cart#total'`): a `path:line:in` location after `# ` or
/// `from `. RSpec's `#` would otherwise read as a comment, and a run of its failures as source code.
pub(crate) fn is_ruby_frame(t: &str) -> bool {
    let Some(rest) = t.strip_prefix("# ").or_else(|| t.strip_prefix("from ")) else {
        return false;
    };
    search_prefix(rest).is_some_and(|path| {
        rest[path.len() + 1..]
            .split_once(':')
            .is_some_and(|(_, after)| after.starts_with("in ") || after.starts_with("in`"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(text: &str) -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let mut keep = vec![false; lines.len()];
        let mut repeated = vec![false; lines.len()];
        mark(&lines, &mut keep, &mut repeated, &mut vec![0; lines.len()]);
        lines
            .iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(l, _)| l.to_string())
            .collect()
    }

    /// pytest's long format: every failing test calls the same assertion helper, whose frame is printed under each
    /// failure with the test's own argument values above it. The helper's source is shown under the first failure;
    /// under the later ones it goes behind a marker, while the test's own frame stays.
    #[test]
    fn a_pytest_frame_shown_under_an_earlier_failure_is_not_kept_again() {
        let block = |name: &str, value: &str| {
            format!(
                "______ {name} ______\n\n    def {name}():\n        result = render('{value}')\n>       assert_equal('x', result)\n\ntests/test_out.py:24: \n_ _ _ _ _ _ _ _ _ _\n\nexpected = 'x'\nresult = '{value}'\n\n    def assert_equal(expected, result):\n        print(\"Got: %r\" % result)\n>       assert expected == result\nE       AssertionError\n\ntests/common.py:9: AssertionError\n"
            )
        };
        let text = format!(
            "==== FAILURES ====\n{}{}==== 2 failed in 0.1s ====\n",
            block("test_a", "aa"),
            block("test_b", "bb")
        );
        let lines: Vec<&str> = text.lines().collect();
        let mut keep = vec![false; lines.len()];
        let mut repeated = vec![false; lines.len()];
        mark(&lines, &mut keep, &mut repeated, &mut vec![0; lines.len()]);
        let at = |needle: &str, nth: usize| {
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains(needle))
                .nth(nth)
                .map_or(usize::MAX, |(i, _)| i)
        };
        // The helper under the first failure: its failing line and location kept.
        assert!(keep[at(">       assert expected == result", 0)]);
        assert!(keep[at("tests/common.py:9:", 0)]);
        // Under the second: the same source lines go, as frames shown above.
        for needle in [
            "def assert_equal",
            ">       assert expected == result",
            "tests/common.py:9:",
        ] {
            let i = at(needle, 1);
            assert!(!keep[i] && repeated[i], "{needle}");
        }
        // The test's own frame and its argument values are not the helper's: they stay out of the run.
        assert!(keep[at(">       assert_equal('x', result)", 1)]);
        assert!(!repeated[at("result = 'bb'", 0)]);
    }

    #[test]
    fn ruby_frames_and_passing_test_lines_are_told_apart() {
        assert!(is_frame("# ./lib/graders/grader.rb:48:in `compute_points'"));
        assert!(is_frame("from /app/lib/cart.rb:12:in 'Cart#total'"));
        assert!(!is_frame("# ./lib/graders/grader.rb is the grader"));
        assert!(!is_frame("# see lib/cart.rb:12 for why"));
        assert!(is_frame(
            "#0 /srv/app/vendor/laravel/Container.php(719): ReflectionClass->__construct('App\\\\Kernel')"
        ));
        assert!(is_frame(
            "#1 [internal function]: App\\Jobs\\Sync->handle()"
        ));
        assert!(is_frame("#7 {main}"));
        assert!(is_frame(
            "#4 /srv/app/vendor/Container.php(246): Illuminate\\Foundation\\App in /srv/app/x.php"
        ));
        assert!(!is_frame("#1 item (2): see notes"));
        assert!(!is_frame("#12 is the issue (see #3): fixed"));
        assert!(!is_frame("## 2. Usage"));
        for pass in [
            "      ✓ a failed job should be removable",
            "      ✔ fails over to the replica (12ms)",
            "tests/test_a.py::test_fail_fast PASSED                  [ 50%]",
            "tests/test_a.py::test_fail_fast PASSED",
            "--- PASS: TestFailover (0.00s)",
            "test_error_page (app.tests.ViewTests) ... ok",
            "test store::tests::fails_when_full ... ok",
            "ok 280 throws on invalid option: null",
            "ok 12 - rejects a failed job # SKIP",
            "00:03 +72: test/services/icons_test.dart: imports remote GIF icons",
            "00:03 +82 -1: test/api_test.dart: extractErrorMessage reads error key",
            "01:12 +5 ~1: loading test/widget_test.dart",
            "00:00 +0: loading test/widget_test.dart",
            "[8/39] [chromium] › e2e/auth.spec.ts:55:3 › Auth Flows › login with invalid credentials shows error",
            "[3/3] tests/a.spec.ts:4:9 › Login › fails over to the replica",
            "      does not report errors for simple value usage:       OK",
            "        collectSymbolsAndTypes surfaces parse errors:        OK (0.02s)",
        ] {
            assert!(reports_pass(pass), "{pass}");
        }
        for other in [
            "      1) a failed job should be removable",
            "tests/test_a.py::test_fail_fast FAILED                  [ 50%]",
            "--- FAIL: TestFailover (0.00s)",
            "test store::tests::fails_when_full ... FAILED",
            "PASSED: the error was logged",
            "not ok 3 throws on invalid option",
            "ok so the error is here",
            "ok 3rd attempt failed",
            "00:03 +72 -1: test/services/icons_test.dart: imports remote GIF icons [E]",
            "00:05 +111 -1: Some tests failed.",
            "12:00 + a note: noon",
            "[12/200] Building CXX object src/CMakeFiles/app.dir/error.cpp.o",
            "[1/2] [sic] the failure",
            "      reports syntax errors:                               FAIL",
            "Status: OK",
        ] {
            assert!(!reports_pass(other), "{other}");
        }
    }

    #[test]
    fn a_traceback_is_kept_whole_through_its_exception() {
        let text = "running\nTraceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    main()\n  File \"a.py\", line 2, in main\n    x = {}['k']\nKeyError: 'k'\nnext command\n";
        assert_eq!(
            kept(text),
            vec![
                "Traceback (most recent call last):",
                "  File \"a.py\", line 3, in <module>",
                "    main()",
                "  File \"a.py\", line 2, in main",
                "    x = {}['k']",
                "KeyError: 'k'"
            ]
        );
    }

    /// An exception whose message runs over several lines (pydantic lists each field and its error) keeps them
    /// all; the message ends at a blank line, a log line or the harness's markup.
    #[test]
    fn a_message_of_several_lines_is_kept_with_its_exception() {
        let tb = "Traceback (most recent call last):\n  File \"m.py\", line 9, in <module>\n    User(id=\"x\")\npydantic_core._pydantic_core.ValidationError: 2 validation errors for User\nid\n  Input should be a valid integer [type=int_parsing, input_value='x', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.5/v/int_parsing\nname\n  Field required [type=missing, input_value={'id': 'x'}, input_type=dict]\n";
        let message = [
            "id",
            "  Input should be a valid integer [type=int_parsing, input_value='x', input_type=str]",
            "    For further information visit https://errors.pydantic.dev/2.5/v/int_parsing",
            "name",
            "  Field required [type=missing, input_value={'id': 'x'}, input_type=dict]",
        ];
        for after in [
            "",
            "\nnext command\n",
            "2026-11-30 10:00:01 INFO retrying\n",
            "</output>\n",
        ] {
            let text = format!("starting\n{tb}{after}");
            let kept = kept(&text);
            for line in message {
                assert!(kept.iter().any(|k| k == line), "{line} missing: {kept:?}");
            }
            assert!(
                !kept.iter().any(|k| k == "starting"
                    || k.contains("next command")
                    || k.contains("retrying")
                    || k == "</output>"),
                "{kept:?}"
            );
        }
        // A long message keeps its head and its end.
        let long: String = (0..100)
            .map(|i| format!("  field_{i}: value is not valid\n"))
            .collect();
        let text = format!(
            "Traceback (most recent call last):\n  File \"m.py\", line 1, in <module>\nValueError: bad config\n{long}"
        );
        let kept = kept(&text);
        assert!(kept.iter().any(|k| k == "  field_0: value is not valid"));
        assert!(kept.iter().any(|k| k == "  field_99: value is not valid"));
        assert!(!kept.iter().any(|k| k == "  field_50: value is not valid"));
    }

    /// `kept`, and the lines marked as a repeated traceback's frames.
    fn kept_and_repeated(text: &str) -> (Vec<&str>, Vec<&str>) {
        let lines: Vec<&str> = text.lines().collect();
        let mut keep = vec![false; lines.len()];
        let mut repeated = vec![false; lines.len()];
        mark(&lines, &mut keep, &mut repeated, &mut vec![0; lines.len()]);
        let pick = |flags: &[bool]| {
            lines
                .iter()
                .zip(flags)
                .filter(|(_, f)| **f)
                .map(|(l, _)| *l)
                .collect::<Vec<_>>()
        };
        (pick(&keep), pick(&repeated))
    }

    const FRAMES: &str = "  File \"w.py\", line 8, in run\n    self.fetch()\n  File \"w.py\", line 12, in fetch\n    return get(url)\n";

    #[test]
    fn a_traceback_printed_again_keeps_its_header_and_exception_line() {
        let text = format!(
            "try 1\nTraceback (most recent call last):\n{FRAMES}OSError: timed out (1)\ntry 2\nTraceback (most recent call last):\n{FRAMES}OSError: timed out (2)\n"
        );
        let (kept, repeated) = kept_and_repeated(&text);
        assert_eq!(
            kept,
            [
                "Traceback (most recent call last):",
                "  File \"w.py\", line 8, in run",
                "    self.fetch()",
                "  File \"w.py\", line 12, in fetch",
                "    return get(url)",
                "OSError: timed out (1)",
                "Traceback (most recent call last):",
                "OSError: timed out (2)",
            ]
        );
        assert_eq!(repeated, FRAMES.lines().collect::<Vec<_>>());
    }

    /// A service that crashes again and again logs one goroutine dump per crash. Each crash's failing goroutine
    /// says where it failed, so one whose stack is new is kept whole, wherever it comes in the log; the parked
    /// goroutines of a later dump, shown in the first, are not shown again.
    #[test]
    fn every_crash_of_a_log_keeps_its_failing_goroutine() {
        // More parked goroutines than a dump's others that are kept.
        let parked: String = (0..=goroutines::MAX_OTHERS)
            .map(|g| format!("goroutine {} [select]:\nmain.pool.func1(0xc420018370)\n\t/src/pool.go:{} +0x26e\n\n", g + 5, 60 + g))
            .collect();
        let dump = |at: &str| {
            format!(
                "svc (13337) - 11:49 - panic - key not found\n\ngoroutine 1 [running]:\nlog.Recover(0x0)\n\t/src/log.go:597 +0xab\npanic(0x16b1d20, 0xc420163450)\n\t/go/src/runtime/panic.go:489 +0x2cf\nmain.main()\n\t/src/main.go:{at} +0xe55\n\n{parked}"
            )
        };
        let text = format!("{}{}{}", dump("143"), dump("143"), dump("147"));
        let (kept, repeated) = kept_and_repeated(&text);
        assert_eq!(
            kept.iter().filter(|l| l.contains("/src/main.go:")).count(),
            2,
            "{kept:?}"
        );
        assert!(kept.contains(&"\t/src/main.go:147 +0xe55"), "{kept:?}");
        assert_eq!(
            kept.iter()
                .filter(|l| l.contains("/src/pool.go:61"))
                .count(),
            1,
            "{kept:?}"
        );
        assert_eq!(
            repeated
                .iter()
                .filter(|l| l.contains("/src/pool.go:61"))
                .count(),
            2,
            "{repeated:?}"
        );
    }

    /// Jest shows where each `console.log` was called, under a blank line. A log call made again and again
    /// prints the same frames under each block: they are shown once, and the blank lines between the blocks go
    /// with them, so the blocks become one run behind one marker instead of one marker line each.
    #[test]
    fn frames_under_a_blank_line_keep_no_blank_line() {
        let block = "  console.log\n    SIMULATE TX KEYS: [ '_tx' ]\n\n      at MockProvider.<anonymous> (tests/read.test.ts:42:17)\n\n";
        let text = block.repeat(4);
        let (kept, repeated) = kept_and_repeated(&text);
        assert!(!kept.contains(&""), "{kept:?}");
        assert_eq!(
            kept,
            ["      at MockProvider.<anonymous> (tests/read.test.ts:42:17)"]
        );
        assert_eq!(repeated.len(), 3, "{repeated:?}");
    }

    #[test]
    fn a_traceback_with_one_other_frame_is_kept_whole() {
        let other = FRAMES.replace("line 12", "line 13");
        let text = format!(
            "Traceback (most recent call last):\n{FRAMES}OSError: a\nTraceback (most recent call last):\n{other}OSError: a\n"
        );
        let (kept, repeated) = kept_and_repeated(&text);
        assert_eq!(kept.len(), text.lines().count());
        assert!(repeated.is_empty());
        // Cut off before its exception line, a traceback is all frames: the same rule, nothing else kept.
        let cut = format!(
            "Traceback (most recent call last):\n{FRAMES}OSError: a\nTraceback (most recent call last):\n{FRAMES}"
        );
        let (kept, repeated) = kept_and_repeated(&cut);
        assert_eq!(kept.len(), 7, "{kept:?}");
        assert_eq!(repeated.len(), 4);
    }

    #[test]
    fn a_stack_printed_again_keeps_its_exception_line() {
        let frames = "\tat a.B.c(B.java:1)\n\tat a.B.d(B.java:2)\n\tat a.Main.main(Main.java:9)\n";
        let text =
            format!("java.io.IOException: one\n{frames}retry\njava.io.IOException: two\n{frames}");
        let (kept, repeated) = kept_and_repeated(&text);
        assert!(kept.contains(&"java.io.IOException: two"));
        assert_eq!(kept.len(), 5, "{kept:?}");
        assert_eq!(repeated, frames.lines().collect::<Vec<_>>());
    }

    #[test]
    fn a_php_stack_logged_again_is_shown_once() {
        // PHP's error log: the same uncaught exception on every request, each with its `Stack trace:`.
        let frames = "#0 /srv/vendor/Container.php(719): ReflectionClass->__construct('App\\\\Kernel')\n#1 /srv/vendor/Container.php(598): Container->build('App\\\\Kernel')\n#2 /srv/public/index.php(52): Container->make('App\\\\Kernel')\n#3 {main}\n";
        let fatal = "PHP Fatal error:  Uncaught ReflectionException: Class App\\Http\\Kernel does not exist";
        let text = format!(
            "[10-Apr-2017 02:24:18 UTC] {fatal}\nStack trace:\n{frames}[10-Apr-2017 02:24:56 UTC] {fatal}\nStack trace:\n{frames}"
        );
        let (kept, repeated) = kept_and_repeated(&text);
        assert_eq!(
            kept.iter().filter(|l| l.starts_with("#0 ")).count(),
            1,
            "{kept:?}"
        );
        assert_eq!(repeated, frames.lines().collect::<Vec<_>>());
    }

    #[test]
    fn a_unittest_failure_keeps_its_assertion_message_to_the_closing_rule() {
        let rule = "=".repeat(70);
        let dash = "-".repeat(70);
        let text = format!(
            "..F\n{rule}\nFAIL: test_order (app.tests.T)\n{dash}\nTraceback (most recent call last):\n  File \"t.py\", line 3, in test_order\n    self.assertEqual(a, b)\nAssertionError: Lists differ: [1, 2] != [2, 1]\n\nFirst differing element 0:\n1\n2\n\n- [1, 2]\n+ [2, 1]\n\n{dash}\nRan 3 tests in 0.1s\n\nplain output\n"
        );
        let (kept, _) = kept_and_repeated(&text);
        for want in ["First differing element 0:", "- [1, 2]", "+ [2, 1]"] {
            assert!(kept.contains(&want), "{want} not kept: {kept:?}");
        }
        assert!(!kept.contains(&"plain output"));
        // Outside a unittest block the traceback ends at its exception line.
        let script = "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\nValueError: x\n\nnext step\n";
        assert!(!kept_and_repeated(script).0.contains(&"next step"));
        // A chained exception in the block: each traceback is a region of its own, whole however long.
        let deep: String = (0..70)
            .map(|k| format!("  File \"lib.py\", line {k}, in f{k}\n    g{k}()\n"))
            .collect();
        let text = format!(
            "{rule}\nERROR: test_db (app.tests.T)\n{dash}\nTraceback (most recent call last):\n{deep}KeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n{deep}  File \"t.py\", line 9, in test_db\n    load()\nValueError: y\n\n{dash}\nRan 1 test\n"
        );
        let (kept, _) = kept_and_repeated(&text);
        for want in [
            "During handling of the above exception, another exception occurred:",
            "  File \"t.py\", line 9, in test_db",
            "ValueError: y",
            "  File \"lib.py\", line 35, in f35",
        ] {
            assert!(kept.contains(&want), "{want} not kept");
        }
        // A huge diff keeps its head and its end.
        let long: String = (0..500).map(|k| format!("- item {k}\n")).collect();
        let text = format!(
            "{rule}\nFAIL: test_big (app.tests.T)\n{dash}\nTraceback (most recent call last):\n  File \"t.py\", line 3, in test_big\n    check()\nAssertionError: differ\n{long}{dash}\n"
        );
        let (kept, _) = kept_and_repeated(&text);
        assert!(kept.contains(&"- item 0") && kept.contains(&"- item 499"));
        assert!(!kept.contains(&"- item 250"));
    }

    #[test]
    fn pytest_blocks_keep_headers_sources_explanations_and_locations() {
        let text = "tests/test_a.py ....F\n=================================== FAILURES ===================================\n_________________________________ test_parse __________________________________\n\n    def test_parse():\n        value = parse('1')\n>       assert value == 2\nE       assert 1 == 2\n\ntests/test_a.py:7: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_a.py::test_parse - assert 1 == 2\n========================= 1 failed, 4 passed in 0.12s =========================\n";
        let k = kept(text);
        for want in [
            "_________________________________ test_parse __________________________________",
            "        value = parse('1')",
            ">       assert value == 2",
            "E       assert 1 == 2",
            "tests/test_a.py:7: AssertionError",
            "FAILED tests/test_a.py::test_parse - assert 1 == 2",
            "========================= 1 failed, 4 passed in 0.12s =========================",
        ] {
            assert!(k.iter().any(|l| l == want), "{want} not kept: {k:?}");
        }
        assert!(!k.iter().any(|l| l == "    def test_parse():"));
    }

    /// pytest's `--tb=short` on Python 3.11: each entry has caret lines under its source, and every failing test
    /// goes through the same library frames to the one that raises.
    #[test]
    fn short_entries_shared_with_a_failure_above_are_shown_once() {
        let failure = |name: &str, line: u32| {
            format!(
                "______ Test.{name} ______\n[gw0] linux -- Python 3.11.7 /venv/bin/python\ntests/test_rd.py:{line}: in {name}\n    self.assertEqual(date(2021, 1, 28) + rd(months=1),\n                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nsrc/rd.py:405: in __radd__\n    return self.__add__(other)\n           ^^^^^^^^^^^^^^^^^^^\nsrc/rd.py:387: in __add__\n    ret = (other.replace(**repl)\n           ^^^^^^^^^^^^^^^^^^^^^\nE   ValueError: day is out of range for month\n"
            )
        };
        // Seven entries: more than a run keeps whole, so the first report hides its middle ones.
        let hooks: String = (0..5)
            .map(|k| format!("venv/pluggy/_hooks{k}.py:{k}3: in call_{k}\n    return self._hookexec(hook_{k})\n           ^^^^^^^^^^^^^^^^^^^^^^^\n"))
            .collect();
        let collect = format!(
            "______ ERROR collecting tests/test_iso.py ______\nvenv/pluggy/_caller.py:197: in __call__\n    return self._hookexec(\n{hooks}venv/_pytest/python.py:144: in pytest_generate_tests\n    metafunc.parametrize(*marker.args, **marker.kwargs)\nE   pytest.PytestRemovedIn10Warning: Passing a non-Collection iterable to parametrize is deprecated.\n"
        );
        let text = format!(
            "{collect}{collect}{}{}",
            failure("test_one", 12),
            failure("test_two", 40)
        );
        let (kept, repeated) = kept_and_repeated(&text);
        let count = |needle: &str| kept.iter().filter(|l| **l == needle).count();
        // Each test's own frame, with its carets, and each exception line stay.
        for own in [
            "tests/test_rd.py:12: in test_one",
            "tests/test_rd.py:40: in test_two",
        ] {
            assert_eq!(count(own), 1, "{own}: {kept:?}");
        }
        assert_eq!(
            count("E   ValueError: day is out of range for month"),
            2,
            "{kept:?}"
        );
        // The library frames both go through, and the collection error's whole stack, are shown once.
        for shared in [
            "src/rd.py:405: in __radd__",
            "    ret = (other.replace(**repl)",
            "           ^^^^^^^^^^^^^^^^^^^^^",
            "venv/pluggy/_caller.py:197: in __call__",
            "    metafunc.parametrize(*marker.args, **marker.kwargs)",
        ] {
            assert_eq!(count(shared), 1, "{shared}: {kept:?}");
            assert!(repeated.contains(&shared), "{shared}: {repeated:?}");
        }
        assert_eq!(
            count(
                "E   pytest.PytestRemovedIn10Warning: Passing a non-Collection iterable to parametrize is deprecated."
            ),
            2
        );
    }

    #[test]
    fn a_long_run_of_short_pytest_entries_keeps_its_first_and_last() {
        let mut text = String::from(
            "_______ test_draw _______\n\n>       fig.canvas.draw()\n\ntests/test_image.py:12: \n_ _ _ _ _ _ _ _\n",
        );
        for f in 0..12 {
            text.push_str(&format!(
                "lib/mod{f}.py:{f}0: in draw_{f}\n    return step_{f}(renderer)\n"
            ));
        }
        text.push_str("_ _ _ _ _ _ _ _\n\n    def last():\n>       raise ValueError('x')\nE       ValueError: x\n\nlib/last.py:3: ValueError\n");
        let k = kept(&text);
        for want in [
            "lib/mod0.py:00: in draw_0",
            "    return step_0(renderer)",
            "lib/mod9.py:90: in draw_9",
            "lib/mod11.py:110: in draw_11",
            "    return step_11(renderer)",
            ">       raise ValueError('x')",
            "E       ValueError: x",
            "lib/last.py:3: ValueError",
        ] {
            assert!(k.iter().any(|l| l == want), "{want} not kept: {k:?}");
        }
        assert!(!k.iter().any(|l| l.starts_with("lib/mod5.py")), "{k:?}");
        assert!(!k.iter().any(|l| l == "    return step_5(renderer)"));
        // A short run stays whole.
        let few: String = (0..3)
            .map(|f| format!("lib/m{f}.py:{f}: in f{f}\n    g{f}()\n"))
            .collect();
        let k = kept(&format!("_______ test_x _______\n{few}"));
        assert_eq!(k.len(), 7, "{k:?}");
    }

    #[test]
    fn a_code_frames_failing_line_and_its_caret_are_kept() {
        // Vitest's shape: no `●` block around the frame (a Jest block is kept whole).
        let text = " FAIL  src/cart.test.ts > Cart > total\nAssertionError: expected 5 to be 4\n\n      40 |   const cart = makeCart();\n    > 41 |   \
                    expect(cart.total).toBe(4);\n         |                      ^\n      42 | });\n";
        let k = kept(text);
        assert!(k.contains(&"    > 41 |   expect(cart.total).toBe(4);".to_string()));
        assert!(k.contains(&"         |                      ^".to_string()));
        assert!(!k.contains(&"      42 | });".to_string()));
        // pytest's failing line is not a code frame; a quoted reply is neither.
        assert!(!is_code_frame_pointer(">       assert x == 2"));
        assert!(!is_code_frame_pointer("> see | here"));
        assert!(is_code_frame_pointer("> 7 | x"));
    }

    #[test]
    fn a_code_frame_printed_again_is_kept_once() {
        let frame = "    > 273 |   server.listen({ port }, done);\n          |          ^\n";
        let mut text = String::from("Jest has detected the following 3 open handles:\n");
        for at in [59, 66, 235] {
            text.push_str(&format!(
                "\n  ●  TCPSERVERWRAP\n\n      272 | }};\n{frame}      274 | }});\n\n      at bind (test/sockets.test.ts:{at}:24)\n"
            ));
        }
        let k = kept(&text);
        let times = |l: &str| k.iter().filter(|x| *x == l).count();
        assert_eq!(
            times("    > 273 |   server.listen({ port }, done);"),
            1,
            "{k:?}"
        );
        assert_eq!(times("          |          ^"), 1, "{k:?}");
        // Another frame, or the same line with another caret, is a frame of its own.
        let last =
            "          |          ^\n      274 | });\n\n      at bind (test/sockets.test.ts:235";
        let other = text.replace(last, &last.replacen("^", " ^", 1));
        assert_eq!(kept(&other).iter().filter(|x| x.ends_with('^')).count(), 2);
    }

    #[test]
    fn stack_frames_stay_under_their_exception() {
        let mut text = String::from("start\njava.lang.IllegalStateException: boom\n");
        for i in 0..100 {
            text.push_str(&format!("\tat com.x.C{i}.run(C{i}.java:{i})\n"));
        }
        text.push_str("\t... 12 more\nend\n");
        let k = kept(&text);
        assert!(k.contains(&"java.lang.IllegalStateException: boom".to_string()));
        assert!(k.contains(&"\tat com.x.C0.run(C0.java:0)".to_string()));
        assert!(k.contains(&"\t... 12 more".to_string()));
        assert!(k.len() <= MAX_FRAMES + 1);
    }
}

//! A Rust panic's backtrace: the program's own frames, not the runtime's.
//!
//! With `RUST_BACKTRACE=1` a panic prints `stack backtrace:` and one numbered frame per call, each with an
//! `at path:line:col` line when debug info has it (anyhow's `Stack backtrace:` is the same list). Most of the frames
//! are not the program's: the panic machinery on top, and under the program's few frames the test harness or an
//! async runtime's scheduler — 50 frames of tokio for one `main.rs` frame is common. A reader needs the program's
//! frames, the call just above each (what it called that panicked: `unwrap_failed`, `assert_failed`) and the one
//! just below (who called it). Here the other frames, in runs of [`MIN_RUN`] or more, are marked to go behind one
//! marker line that names their crates (`(frames in tokio, std)`); the error floor still shows the lines among them
//! with an error word (`std::panicking::catch_unwind`), gathered after that marker. A later backtrace's frames
//! already shown above (several tests failing through the same helpers) become `(the same stack frames as above)`.
//! A frame is the runtime's when its location is in the toolchain's library (`/rustc/…`), a dependency's source
//! (`~/.cargo/registry/…`) or the C library, or, with no location, when its symbol is in `std`, `core`, `alloc` or
//! `test`, or has no path at all (a C library's `g_signal_emit`, `<unknown>`: a GUI toolkit's event loop calling
//! back into the program). Pure: line ranges in, flags out.

use std::collections::HashSet;
use std::ops::Range;

use crate::ctxzip::relevance::is_floor_line;

/// Fewer frames to hide in a row than this stay: the marker line costs about what two frames do.
const MIN_RUN: usize = 3;
/// Frames kept from the top of a backtrace in which no frame is the program's.
const HEAD_WITHOUT_OWN: usize = 4;
/// Crates named on a marker line.
pub(crate) const MAX_CRATES_NAMED: usize = 3;

/// The crates whose frames, without a location, are the runtime's.
const RUNTIME_CRATES: [&str; 5] = ["std", "core", "alloc", "test", "__rustc"];
/// Symbols of the runtime with no crate path (the unwinder's and the C library's entry points).
const RUNTIME_SYMBOLS: [&str; 10] = [
    "rust_begin_unwind",
    "__rust_try",
    "__rust_begin_short_backtrace",
    "__rust_end_short_backtrace",
    "start_thread",
    "clone",
    "clone3",
    "__libc_start_main",
    "__libc_start_call_main",
    "_start",
];
/// Parts of a location's path that place it outside the program: the toolchain's sources, a dependency's, the
/// C library's.
const RUNTIME_PATHS: [&str; 7] = [
    "/rustc/",
    "/.cargo/registry/",
    "/.cargo/git/",
    "/.rustup/",
    "/nptl/",
    "/sysdeps/",
    "/csu/",
];

/// Whether `line` opens a backtrace (`stack backtrace:`, anyhow's `Stack backtrace:`).
pub(crate) fn opens(line: &str) -> bool {
    let t = line.trim();
    t.eq_ignore_ascii_case("stack backtrace:")
}

/// One frame: its lines, and what the rules read of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    pub lines: Range<usize>,
    /// The frame without its number (and, with `RUST_BACKTRACE=full`, its address): the same call in two
    /// backtraces has the same symbol and location whatever its depth.
    pub symbol: &'a str,
    pub location: Option<&'a str>,
}

impl Frame<'_> {
    /// Whether the frame is the toolchain's, a dependency's or the C library's.
    pub(crate) fn is_runtime(&self) -> bool {
        if let Some(path) = self.location {
            return RUNTIME_PATHS.iter().any(|p| path.contains(p));
        }
        // No Rust item lacks a path: a symbol without one (`g_signal_emit`, `<unknown>`) is a foreign library's
        // frame, a GUI toolkit's or the C library's, that the program called into or was called back from.
        let krate = crate_of(self.symbol);
        RUNTIME_CRATES.contains(&krate)
            || RUNTIME_SYMBOLS.contains(&krate)
            || !self.symbol.contains("::")
    }
}

/// The first path segment of a symbol: `tokio` of `tokio::runtime::…`, `core` of `<core::panic::…>::call_once`.
fn crate_of(symbol: &str) -> &str {
    let s = symbol.trim_start_matches('<');
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// A numbered frame line's symbol: `tokio::…` of `  12: tokio::…`, and of `  0:     0x55d1c2 - tokio::…`.
fn numbered(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = t[digits..].strip_prefix(':')?;
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix("0x") {
        Some(addr) => {
            let hex = addr.bytes().take_while(u8::is_ascii_hexdigit).count();
            addr[hex..].trim_start().strip_prefix("- ")?.trim_start()
        }
        None => rest,
    };
    (!rest.is_empty()).then_some(rest)
}

/// A frame's location line's path and position (`/src/main.rs:32:8` of `      at /src/main.rs:32:8`).
fn location(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("at ")?;
    let rest = rest.trim_end();
    (!rest.is_empty() && !rest.contains(' ')).then_some(rest)
}

/// The frames after a backtrace's header at `header`, and the line after the last of them.
pub(crate) fn frames<'a>(lines: &[&'a str], header: usize) -> (Vec<Frame<'a>>, usize) {
    let mut frames: Vec<Frame<'a>> = Vec::new();
    let mut i = header + 1;
    while i < lines.len() {
        let line = lines[i].trim_end_matches('\r');
        if let Some(symbol) = numbered(line) {
            frames.push(Frame {
                lines: i..i + 1,
                symbol,
                location: None,
            });
        } else if let (Some(at), Some(last)) = (location(line), frames.last_mut()) {
            // A frame's first location names it (an inlined call adds a second `at` line under the first).
            last.location.get_or_insert(at);
            last.lines.end = i + 1;
        } else {
            break;
        }
        i += 1;
    }
    (frames, i)
}

/// A hidden frame's lines are the runtime's (`rust` flag).
pub(crate) const RUNTIME: u8 = 1;
/// A hidden frame's lines were shown in a backtrace above (`rust` flag).
pub(crate) const SHOWN_ABOVE: u8 = 2;
/// Fewer frames already shown above in a row than this stay.
const MIN_SHOWN_RUN: usize = 2;

/// The flags [`mark`] sets over a text's lines.
pub(crate) struct Marks<'m> {
    pub keep: &'m mut [bool],
    /// Lines no error line's context may bring back.
    pub repeated: &'m mut [bool],
    /// Why a hidden frame's lines are hidden: [`RUNTIME`] or [`SHOWN_ABOVE`].
    pub rust: &'m mut [u8],
}

/// Marks a backtrace's frames: the program's frames and their neighbours kept, runs of [`MIN_RUN`] other frames
/// hidden as the runtime's, runs of [`MIN_SHOWN_RUN`] frames `shown` in a backtrace above hidden as shown. Records
/// the frames left visible in `shown`.
pub(crate) fn mark<'a>(
    lines: &[&str],
    frames: &[Frame<'a>],
    shown: &mut HashSet<(&'a str, Option<&'a str>)>,
    m: Marks<'_>,
) {
    let n = frames.len();
    if n == 0 {
        return;
    }
    let own: Vec<bool> = frames.iter().map(|f| !f.is_runtime()).collect();
    let mut visible = vec![false; n];
    if own.contains(&true) {
        for i in (0..n).filter(|&i| own[i]) {
            visible[i.saturating_sub(1)..(i + 2).min(n)]
                .iter_mut()
                .for_each(|v| *v = true);
        }
    } else {
        visible[..HEAD_WITHOUT_OWN.min(n)]
            .iter_mut()
            .for_each(|v| *v = true);
    }
    let key = |f: &Frame<'a>| (f.symbol, f.location);
    let seen: Vec<bool> = frames.iter().map(|f| shown.contains(&key(f))).collect();
    let hidden: Vec<bool> = visible.iter().map(|v| !v).collect();
    let mut why = vec![0u8; n];
    // Runs of frames shown above first, then runs of the runtime's frames among the rest.
    for (flag, min, hides) in [
        (SHOWN_ABOVE, MIN_SHOWN_RUN, &seen),
        (RUNTIME, MIN_RUN, &hidden),
    ] {
        let mut i = 0;
        while i < n {
            if why[i] != 0 || !hides[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < n && why[i] == 0 && hides[i] {
                i += 1;
            }
            // The error floor shows a frame with an error word anyway (`core::panicking::panic_fmt`, a location in
            // `panicking.rs`): only the frames that would really go make a run worth its marker.
            let going = frames[start..i]
                .iter()
                .filter(|f| !holds_floor_line(lines, f))
                .count();
            if going >= min {
                why[start..i].iter_mut().for_each(|w| *w = flag);
            }
        }
    }
    for (f, w) in frames.iter().zip(&why) {
        for j in f.lines.clone() {
            if let (Some(k), Some(r), Some(x)) =
                (m.keep.get_mut(j), m.repeated.get_mut(j), m.rust.get_mut(j))
            {
                *k = *w == 0;
                *r = *w != 0;
                *x = *w;
            }
        }
        if *w == 0 {
            shown.insert(key(f));
        }
    }
}

fn holds_floor_line(lines: &[&str], f: &Frame<'_>) -> bool {
    lines
        .get(f.lines.clone())
        .is_some_and(|ls| ls.iter().any(|l| is_floor_line(l)))
}

/// The note on a marker line that hides runtime frames: their crates, the most frequent first
/// (`(frames in tokio, std and 2 other crates)`).
pub(crate) fn note(crates: &[&str]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for c in crates {
        match counts.iter_mut().find(|(k, _)| k == c) {
            Some((_, n)) => *n += 1,
            None => counts.push((c, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let named: Vec<&str> = counts
        .iter()
        .take(MAX_CRATES_NAMED)
        .map(|(c, _)| *c)
        .collect();
    let others = counts.len().saturating_sub(MAX_CRATES_NAMED);
    match others {
        0 => format!(" (frames in {})", named.join(", ")),
        1 => format!(" (frames in {} and 1 other crate)", named.join(", ")),
        n => format!(" (frames in {} and {n} other crates)", named.join(", ")),
    }
}

/// The crate of a hidden frame's first line, for [`note`]; `None` for a location line and for a symbol outside
/// any crate path (`__rust_try`, `start_thread`).
pub(crate) fn crate_of_line(line: &str) -> Option<&str> {
    let symbol = numbered(line.trim_end_matches('\r'))?;
    symbol.contains("::").then(|| crate_of(symbol))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STD: &str = "/rustc/5980761/library";
    const TOKIO: &str =
        "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src";

    /// A panic in a task: the panic machinery, the program's frame, then `depth` frames of tokio's scheduler.
    fn task_panic(depth: usize) -> String {
        let mut s = String::from(
            "thread 'tokio-rt-worker' panicked at src/main.rs:32:8:\nattempt to divide by zero\nstack backtrace:\n",
        );
        s.push_str(&format!(
            "   0: __rustc::rust_begin_unwind\n             at {STD}/std/src/panicking.rs:689:5\n"
        ));
        s.push_str(&format!(
            "   1: core::panicking::panic_fmt\n             at {STD}/core/src/panicking.rs:80:14\n"
        ));
        s.push_str("   2: asyncsvc::run_job::{{closure}}\n             at ./src/main.rs:32:8\n");
        for k in 0..depth {
            s.push_str(&format!(
                "  {}: tokio::runtime::scheduler::worker::step_{k}\n             at {TOKIO}/runtime/scheduler/worker.rs:{}:9\n",
                k + 3,
                100 + k
            ));
        }
        s.push_str("note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n");
        s
    }

    /// The index of the first of `lines` holding `needle` (past the end when none does).
    fn line_with(lines: &[&str], needle: &str) -> usize {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or(usize::MAX)
    }

    fn run(text: &str) -> (Vec<bool>, Vec<bool>, Vec<u8>) {
        let lines: Vec<&str> = text.lines().collect();
        let n = lines.len();
        let (mut keep, mut repeated, mut rust) = (vec![false; n], vec![false; n], vec![0u8; n]);
        let mut shown = HashSet::new();
        let mut i = 0;
        while i < n {
            if opens(lines[i]) {
                let (found, end) = frames(&lines, i);
                let marks = Marks {
                    keep: &mut keep,
                    repeated: &mut repeated,
                    rust: &mut rust,
                };
                mark(&lines, &found, &mut shown, marks);
                i = end;
            } else {
                i += 1;
            }
        }
        (keep, repeated, rust)
    }

    #[test]
    fn frames_are_numbered_lines_with_their_locations_up_to_the_first_other_line() {
        let text = task_panic(2);
        let lines: Vec<&str> = text.lines().collect();
        let (found, end) = frames(&lines, 2);
        assert_eq!(found.len(), 5);
        assert_eq!(found[2].symbol, "asyncsvc::run_job::{{closure}}");
        assert_eq!(found[2].location, Some("./src/main.rs:32:8"));
        assert_eq!(found[2].lines, 7..9);
        assert!(lines[end].starts_with("note:"));
        // `RUST_BACKTRACE=full` puts the frame's address before its symbol; a frame may have no location.
        let full = "stack backtrace:\n   0:     0x55d1c2a4b0a3 - std::backtrace_rs::trace::h7a5b\n                               at /rustc/abc/library/std/src/backtrace.rs:93:5\n   1:     0x55d1c2a4b0ff - __rust_try\nerror: test failed";
        let lines: Vec<&str> = full.lines().collect();
        let (found, end) = frames(&lines, 0);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].symbol, "std::backtrace_rs::trace::h7a5b");
        assert_eq!(found[1].symbol, "__rust_try");
        assert!(found[0].is_runtime() && found[1].is_runtime());
        assert_eq!(end, 4);
        assert!(!opens("the stack backtrace: below"));
        assert!(opens("Stack backtrace:"));
    }

    #[test]
    fn the_programs_frames_stay_and_a_run_of_the_runtimes_goes() {
        let text = task_panic(30);
        let lines: Vec<&str> = text.lines().collect();
        let (keep, repeated, rust) = run(&text);
        let at = |needle: &str| line_with(&lines, needle);
        // The program's frame, and its neighbours: the call that panicked and the task that polled it.
        for needle in [
            "asyncsvc::run_job",
            "./src/main.rs:32:8",
            "panic_fmt",
            "step_0\n",
        ] {
            let i = at(needle.trim_end());
            assert!(keep[i] && rust[i] == 0, "{needle}");
        }
        // The scheduler's frames below go, as the runtime's, without an error line's context reaching in.
        for k in 1..30 {
            let i = at(&format!("step_{k}"));
            assert!(!keep[i] && repeated[i] && rust[i] == RUNTIME, "step_{k}");
            assert_eq!(rust[i + 1], RUNTIME);
        }
        // A short run is not worth its marker.
        let (keep, _, rust) = run(&task_panic(3));
        assert!(rust.iter().all(|r| *r == 0));
        assert!(keep[3..13].iter().all(|k| *k));
    }

    #[test]
    fn a_c_librarys_frames_between_the_programs_go() {
        // A GUI toolkit's event loop (`RUST_BACKTRACE=full`: addresses, C symbols without paths or locations)
        // calling back into the program's handler.
        let mut text = String::from("stack backtrace:\n");
        text.push_str("   0:     0x5e9e8d4b52ca - gui::window::on_toggle::h5dce09980d899dcc\n                               at /src/gui/src/window.rs:644:20\n");
        for k in 1..12 {
            let symbol = if k % 3 == 0 {
                "g_signal_emit"
            } else {
                "<unknown>"
            };
            text.push_str(&format!("  {k}:     0x74af5a8be{k:03x} - {symbol}\n"));
        }
        text.push_str("  12:     0x5e9e8d4ac8e5 - gui::main::h5bf7058a76f6832a\n                               at /src/gui/src/main.rs:16:9\n");
        let lines: Vec<&str> = text.lines().collect();
        let (keep, _, rust) = run(&text);
        let at = |needle: &str| line_with(&lines, needle);
        for needle in [
            "on_toggle",
            "window.rs:644",
            "gui::main",
            "main.rs:16",
            "  1:  ",
            "  11:  ",
        ] {
            assert!(keep[at(needle)], "{needle}");
        }
        for k in 2..11 {
            let i = at(&format!("  {k}:  "));
            assert!(!keep[i] && rust[i] == RUNTIME, "frame {k}");
        }
    }

    #[test]
    fn frames_shown_in_a_backtrace_above_go_and_the_floor_keeps_its_own() {
        let text = format!(
            "{}\n{}",
            task_panic(3),
            task_panic(3).replace("run_job", "main")
        );
        let lines: Vec<&str> = text.lines().collect();
        let (keep, repeated, rust) = run(&text);
        let second = lines
            .iter()
            .rposition(|l| l.trim() == "stack backtrace:")
            .unwrap_or(0);
        let mine = lines
            .iter()
            .position(|l| l.contains("asyncsvc::main"))
            .unwrap_or(0);
        assert!(keep[mine] && keep[mine + 1]);
        // Every scheduler frame was shown under the first panic (a run of two is no marker's worth): under the
        // second they go as frames shown above.
        for k in 0..3 {
            let first = lines
                .iter()
                .position(|l| l.contains(&format!("step_{k}")))
                .unwrap_or(0);
            assert!(keep[first] && rust[first] == 0);
            let again = lines
                .iter()
                .rposition(|l| l.contains(&format!("step_{k}")))
                .unwrap_or(0);
            assert!(
                again > second && !keep[again] && repeated[again] && rust[again] == SHOWN_ABOVE
            );
        }
        // The panic machinery above is all floor lines (`panicking`): those frames are never worth a marker.
        for i in second + 1..second + 5 {
            assert!(keep[i] && rust[i] == 0, "{}", lines[i]);
        }
        // A frame hidden under the first panic was not shown: under the second it goes as the runtime's again.
        let text = format!(
            "{}\n{}",
            task_panic(10),
            task_panic(10).replace("run_job", "main")
        );
        let lines: Vec<&str> = text.lines().collect();
        let (keep, _, rust) = run(&text);
        let step_5 = lines
            .iter()
            .rposition(|l| l.contains("step_5"))
            .unwrap_or(0);
        assert!(!keep[step_5] && rust[step_5] == RUNTIME);
    }

    #[test]
    fn the_note_names_the_frames_crates_most_frequent_first() {
        assert_eq!(note(&["tokio", "std", "tokio"]), " (frames in tokio, std)");
        assert_eq!(
            note(&["tokio", "std", "core", "test", "hyper"]),
            " (frames in core, hyper, std and 2 other crates)"
        );
        assert_eq!(
            crate_of_line(
                "  12: <core::panic::AssertUnwindSafe<F> as core::ops::FnOnce<()>>::call_once"
            ),
            Some("core")
        );
        assert_eq!(crate_of_line("  10: __rust_try"), None);
        assert_eq!(crate_of_line("             at ./src/main.rs:3:1"), None);
    }
}

//! Error regions: the parts of a failing run a reader needs whole.
//!
//! The seed kept any output that reported a failure verbatim, because losing part of an error is the worst thing
//! compression can do. Keeping every error *region* whole keeps that promise without paying for megabytes of
//! passing tests: a Python traceback from its `Traceback` line to the exception, a pytest failure block's
//! header, failing source lines (`>`), explanation lines (`E `) and locations, JVM/JS stack frames under an
//! exception, test-runner section and summary lines. Everything else — progress dots, `PASSED` lines, install
//! and collection chatter — may go behind a marker; the error floor and the head and tail of the run are kept by
//! the line engine around this.

use super::detect::search_prefix;

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

/// Marks the lines of every error region in `lines` as kept.
pub(crate) fn mark(lines: &[&str], keep: &mut [bool]) {
    let n = lines.len().min(keep.len());
    let mut in_pytest_block = false;
    let mut i = 0;
    while i < n {
        let line = lines[i].trim_end_matches('\r');
        let t = line.trim_start();
        if t.starts_with("Traceback (most recent call last)") {
            let end = traceback_end(lines, i);
            keep_span(keep, i, end, MAX_TRACEBACK, TRACEBACK_HEAD);
            i = end;
            continue;
        }
        if is_banner(line) {
            keep[i] = true;
            in_pytest_block = line.starts_with("___");
        } else if is_summary(t) {
            keep[i] = true;
        } else if in_pytest_block && is_short_entry(lines, i) {
            // The frames between the test and the failure: pluggy, runner and library calls. The first says
            // what the test called, the last lead to the failing line; the ones between go behind a marker.
            let mut starts = Vec::new();
            let mut j = i;
            while j < n && is_short_entry(lines, j) {
                starts.push(j);
                j += 2;
            }
            let few = starts.len() <= MAX_SHORT_ENTRIES;
            for (k, &at) in starts.iter().enumerate() {
                if few || k < SHORT_ENTRIES_HEAD || k >= starts.len() - SHORT_ENTRIES_TAIL {
                    keep[at..(at + 2).min(n)].iter_mut().for_each(|k| *k = true);
                }
            }
            i = j;
            continue;
        } else if in_pytest_block && is_pytest_detail(line) {
            keep[i] = true;
            if line.starts_with('>') && i > 0 {
                keep[i - 1] = true;
            }
        }
        if is_frame(t) && i > 0 && !is_frame(lines[i - 1].trim_start()) {
            // Frames under an exception line: keep a bounded run of them with the line that opened them.
            let start = i;
            let mut end = i;
            while end < n && is_frame(lines[end].trim_start()) {
                end += 1;
            }
            keep[start - 1] = true;
            keep_span(keep, start, end, MAX_FRAMES, MAX_FRAMES / 2);
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
/// entry. The section ends at the next banner or at pytest's `-- Docs:` line.
pub(crate) fn warnings_summary_rest(lines: &[&str]) -> Option<std::ops::Range<usize>> {
    let header = lines
        .iter()
        .position(|l| is_banner(l) && l.contains(" warnings summary "))?;
    let body = header + 1;
    let end = lines[body..]
        .iter()
        .position(|l| is_banner(l) || l.starts_with("-- Docs:"))
        .map_or(lines.len(), |k| body + k);
    // Entries are separated by blank lines; the first one (and the blank lines before it) stays as it is.
    let mut i = body;
    while i < end && lines[i].trim().is_empty() {
        i += 1;
    }
    while i < end && !lines[i].trim().is_empty() {
        i += 1;
    }
    let rest = i;
    while i < end && lines[i].trim().is_empty() {
        i += 1;
    }
    (i < end).then_some(rest..end)
}

/// One past the exception line that ends the traceback starting at `start`.
fn traceback_end(lines: &[&str], start: usize) -> usize {
    let mut j = start + 1;
    while j < lines.len() {
        let l = lines[j].trim_end_matches('\r');
        if l.is_empty() || l.starts_with(' ') || l.starts_with('\t') {
            j += 1;
            continue;
        }
        // The first unindented line after the frames is the exception (`ValueError: …`).
        return j + 1;
    }
    j
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

/// A short pytest traceback entry at `i`: a `path:line: in func` location followed by one indented source line.
fn is_short_entry(lines: &[&str], i: usize) -> bool {
    let line = lines[i].trim_end_matches('\r');
    let Some(path) = search_prefix(line) else {
        return false;
    };
    let after_path = &line[path.len() + 1..];
    let in_func = after_path
        .split_once(':')
        .is_some_and(|(digits, rest)| !digits.is_empty() && rest.starts_with(" in "));
    in_func
        && lines.get(i + 1).is_some_and(|next| {
            next.starts_with("    ") && search_prefix(next.trim_start()).is_none()
        })
}

/// A JVM, JS or .NET stack frame.
fn is_frame(t: &str) -> bool {
    (t.starts_with("at ") && (t.contains('(') || t.contains(':')))
        || (t.starts_with("... ") && t.ends_with(" more"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(text: &str) -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let mut keep = vec![false; lines.len()];
        mark(&lines, &mut keep);
        lines
            .iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(l, _)| l.to_string())
            .collect()
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

//! Frames a stack shares with one shown above it.
//!
//! A test run with several failures prints a traceback for each, and most of each is the same: unittest's
//! `case.py` frames that call the test and the assertion helpers it fails in, JUnit's runner frames under every
//! failing test, Node's module loader under every error. Only a frame or two (the test's own line) differs. The
//! region finder keeps each traceback whole, so a run with ten failures showed those library frames ten times. A
//! reader needs each once: here the frames of a stack that were already shown, exactly, in a stack above become one
//! marker line like the frames of a traceback printed again (`(the same stack frames as above)`), and the frames
//! it does not share stay where they are. Pure: a set of the frames shown so far, a lookup per frame.

use std::collections::HashSet;
use std::ops::Range;

/// Fewer shared Python frames in a row than this stay: two frames (four lines) are what a marker line is worth.
const MIN_PYTHON_RUN: usize = 2;
/// Fewer shared JVM/JS frame lines in a row than this stay.
const MIN_LINE_RUN: usize = 3;

/// The frames shown so far in the output's stacks, each as its lines.
#[derive(Default)]
pub(crate) struct Shown<'a> {
    frames: HashSet<&'a [&'a str]>,
    /// One-line frames shown so far, each as a reader compares them: without its indentation, which RSpec deepens
    /// from its tenth failure on (`  10) …` indents its block one more), and a numbered frame without its number
    /// ([`Frames::Numbered`]): [`one_line_key`].
    one_line: HashSet<&'a str>,
}

/// How a stack's lines divide into frames.
#[derive(Clone, Copy)]
pub(crate) enum Frames {
    /// A Python traceback's: a `File "…", line N, in f` line and the source (and caret) lines indented under it.
    Python,
    /// pytest's short entries: a `path:line: in f` location and the lines indented under it (the source line,
    /// Python's carets).
    Entries,
    /// One line each (`at …` frames of the JVM, Node, .NET; Ruby's `# ./lib/x.rb:3:in …`), compared without
    /// their indentation.
    Lines,
    /// One line each, numbered from the top of its own stack (a sanitizer's `#3 0x55e1e1709881 in f file.c:847`):
    /// compared without the number, since the stack that allocated the memory reaches the same callers at other
    /// depths than the one that touched it.
    Numbered,
}

/// A one-line frame as it is compared with those shown above: a numbered one without its number ([`unnumbered`]),
/// any other without its indentation.
fn one_line_key(kind: Frames, line: &str) -> &str {
    match kind {
        Frames::Numbered => unnumbered(line),
        _ => line.trim(),
    }
}

/// A numbered frame without its number: `0x55e1e1709881 in f file.c:847` of `    #3 0x55e1e1709881 in f file.c:847`.
/// The line itself when it is no numbered frame.
fn unnumbered(line: &str) -> &str {
    after_frame_number(line).map_or(line, str::trim_start)
}

/// What follows a frame's `#N` (` 0x55e1e1709881 in f file.c:847` of `    #3 0x55e1e1709881 in f file.c:847`), `None`
/// for a line that does not open with one.
pub(crate) fn after_frame_number(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0).then(|| &rest[digits..])
}

impl<'a> Shown<'a> {
    /// Marks as `repeated` (and not kept) the runs of frames in `lines[range]` that a stack above showed, and
    /// records the frames of this stack that stay visible. Runs shorter than the kind's minimum stay.
    pub(crate) fn collapse(
        &mut self,
        lines: &'a [&'a str],
        range: Range<usize>,
        kind: Frames,
        keep: &mut [bool],
        repeated: &mut [bool],
    ) {
        let end = range
            .end
            .min(lines.len())
            .min(keep.len())
            .min(repeated.len());
        if range.start >= end {
            return;
        }
        let units = match kind {
            Frames::Python => python_frames(&lines[range.start..end]),
            Frames::Entries => entries(&lines[range.start..end]),
            Frames::Lines | Frames::Numbered => (0..end - range.start).map(|i| i..i + 1).collect(),
        };
        let min_run = match kind {
            Frames::Python | Frames::Entries => MIN_PYTHON_RUN,
            Frames::Lines | Frames::Numbered => MIN_LINE_RUN,
        };
        let at = |u: &Range<usize>| range.start + u.start..range.start + u.end;
        let known: Vec<bool> = units
            .iter()
            .map(|u| match kind {
                Frames::Numbered | Frames::Lines => self
                    .one_line
                    .contains(one_line_key(kind, lines[at(u).start])),
                Frames::Python | Frames::Entries => self.frames.contains(&lines[at(u)]),
            })
            .collect();
        let mut i = 0;
        while i < units.len() {
            if !known[i] {
                i += 1;
                continue;
            }
            let first = i;
            while i < units.len() && known[i] {
                i += 1;
            }
            if i - first >= min_run {
                let mut span = at(&units[first]).start..at(&units[i - 1]).end;
                // A stack's last frames take the blank line after them along, so that the marker line that
                // replaces them still says what they were.
                if span.end == end && lines.get(end).is_some_and(|l| l.trim().is_empty()) {
                    span.end = (end + 1).min(keep.len()).min(repeated.len());
                }
                keep[span.clone()].iter_mut().for_each(|k| *k = false);
                repeated[span].iter_mut().for_each(|r| *r = true);
            }
        }
        // Only what a reader sees can be pointed at as "above": a frame cut from a long stack's middle was not.
        for u in &units {
            let span = at(u);
            if span.clone().all(|k| keep[k]) {
                match kind {
                    Frames::Numbered | Frames::Lines => {
                        self.one_line.insert(one_line_key(kind, lines[span.start]));
                    }
                    Frames::Python | Frames::Entries => {
                        self.frames.insert(&lines[span]);
                    }
                }
            }
        }
    }
}

/// The frames of a Python traceback's frame lines, as ranges of `lines`: each from a `File "` line through the
/// lines indented deeper under it. Lines before the first such line, and anything else between frames (a
/// `[Previous line repeated N more times]` note), are frames of their own, which a stack above rarely shows.
fn python_frames(lines: &[&str]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        i += 1;
        if let Some(depth) = file_line_depth(lines[start]) {
            while i < lines.len() && file_line_depth(lines[i]).is_none() && indent(lines[i]) > depth
            {
                i += 1;
            }
        }
        out.push(start..i);
    }
    out
}

/// The entries of pytest's short traceback format, as ranges of `lines`: each from an unindented location line
/// through the indented lines under it.
fn entries(lines: &[&str]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        i += 1;
        while i < lines.len() && indent(lines[i]) > 0 {
            i += 1;
        }
        out.push(start..i);
    }
    out
}

/// The indentation of a traceback's `File "…", line N` line, `None` for any other line.
fn file_line_depth(line: &str) -> Option<usize> {
    let t = line.trim_start();
    (t.starts_with("File \"") && t.contains("\", line ")).then(|| indent(line))
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stacks: &[(&[&'static str], Frames)]) -> (Vec<bool>, Vec<bool>) {
        let lines: Vec<&'static str> = stacks.iter().flat_map(|(s, _)| s.iter().copied()).collect();
        let lines: &'static [&'static str] = Box::leak(lines.into_boxed_slice());
        let mut keep = vec![true; lines.len()];
        let mut repeated = vec![false; lines.len()];
        let mut shown = Shown::default();
        let mut at = 0;
        for (s, kind) in stacks {
            shown.collapse(lines, at..at + s.len(), *kind, &mut keep, &mut repeated);
            at += s.len();
        }
        (keep, repeated)
    }

    const FIRST: &[&str] = &[
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 60, in testPartExecutor",
        "    yield",
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 676, in run",
        "    self._callTestMethod(testMethod)",
        "  File \"/testbed/tests/test_a.py\", line 10, in test_one",
        "    self.assertEqual(a, b)",
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 912, in assertEqual",
        "    assertion_func(first, second, msg=msg)",
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 753, in fail",
        "    raise self.failureException(msg)",
    ];

    const SECOND: &[&str] = &[
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 60, in testPartExecutor",
        "    yield",
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 676, in run",
        "    self._callTestMethod(testMethod)",
        "  File \"/testbed/tests/test_a.py\", line 20, in test_two",
        "    self.assertEqual(c, d)",
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 912, in assertEqual",
        "    assertion_func(first, second, msg=msg)",
        "  File \"/usr/lib/python3.8/unittest/case.py\", line 753, in fail",
        "    raise self.failureException(msg)",
    ];

    #[test]
    fn a_second_traceback_keeps_only_the_frames_it_does_not_share() {
        let (keep, repeated) = run(&[(FIRST, Frames::Python), (SECOND, Frames::Python)]);
        assert!(
            keep[..10].iter().all(|k| *k),
            "the first traceback stays whole"
        );
        let second: Vec<bool> = keep[10..].to_vec();
        assert_eq!(
            second,
            [
                false, false, false, false, true, true, false, false, false, false
            ]
        );
        assert_eq!(
            repeated[10..],
            [true, true, true, true, false, false, true, true, true, true]
        );
    }

    #[test]
    fn one_shared_frame_alone_stays() {
        let third: &[&str] = &[
            "  File \"/testbed/tests/test_b.py\", line 5, in test_three",
            "    check()",
            "  File \"/usr/lib/python3.8/unittest/case.py\", line 753, in fail",
            "    raise self.failureException(msg)",
        ];
        let (keep, repeated) = run(&[(FIRST, Frames::Python), (third, Frames::Python)]);
        assert!(keep.iter().all(|k| *k));
        assert!(!repeated.iter().any(|r| *r));
    }

    /// A frame whose source line differs (another line of the same function) is another frame.
    #[test]
    fn a_frame_is_shared_only_with_its_source_lines() {
        let other: &[&str] = &[
            "  File \"/usr/lib/python3.8/unittest/case.py\", line 60, in testPartExecutor",
            "    yield",
            "  File \"/usr/lib/python3.8/unittest/case.py\", line 676, in run",
            "    self._callTestMethod(otherMethod)",
        ];
        let (keep, _) = run(&[(FIRST, Frames::Python), (other, Frames::Python)]);
        assert!(keep.iter().all(|k| *k));
    }

    /// Frames cut from the middle of a long stack were not shown, so a later copy of them is not "as above".
    #[test]
    fn frames_that_were_not_shown_are_not_pointed_at() {
        let lines: &'static [&'static str] = Box::leak(
            FIRST
                .iter()
                .chain(SECOND)
                .copied()
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let mut keep = vec![true; lines.len()];
        keep[..4].iter_mut().for_each(|k| *k = false);
        let mut repeated = vec![false; lines.len()];
        let mut shown = Shown::default();
        shown.collapse(lines, 0..10, Frames::Python, &mut keep, &mut repeated);
        shown.collapse(lines, 10..20, Frames::Python, &mut keep, &mut repeated);
        assert!(keep[10..14].iter().all(|k| *k), "{keep:?}");
        assert!(
            !keep[16] && !keep[19],
            "the assertion frames were shown: {keep:?}"
        );
    }

    #[test]
    fn jvm_frames_shared_with_a_stack_above_collapse_in_runs_of_three() {
        let first: &[&str] = &[
            "\tat org.junit.Assert.fail(Assert.java:88)",
            "\tat org.junit.Assert.assertEquals(Assert.java:645)",
            "\tat com.acme.FooTest.one(FooTest.java:12)",
            "\tat org.junit.runners.ParentRunner.runLeaf(ParentRunner.java:325)",
            "\tat org.junit.runners.ParentRunner.run(ParentRunner.java:363)",
            "\tat org.apache.maven.surefire.Runner.execute(Runner.java:52)",
        ];
        let second: &[&str] = &[
            "\tat org.junit.Assert.fail(Assert.java:88)",
            "\tat org.junit.Assert.assertEquals(Assert.java:645)",
            "\tat com.acme.FooTest.two(FooTest.java:30)",
            "\tat org.junit.runners.ParentRunner.runLeaf(ParentRunner.java:325)",
            "\tat org.junit.runners.ParentRunner.run(ParentRunner.java:363)",
            "\tat org.apache.maven.surefire.Runner.execute(Runner.java:52)",
        ];
        let (keep, repeated) = run(&[(first, Frames::Lines), (second, Frames::Lines)]);
        assert_eq!(keep[6..], [true, true, true, false, false, false]);
        assert_eq!(repeated[6..], [false, false, false, true, true, true]);
    }

    #[test]
    fn one_line_frames_are_compared_without_their_indentation() {
        // RSpec indents a failure's block one column deeper from its tenth failure on (`  10) …`).
        let ninth: &[&str] = &[
            "     # ./lib/hashie/dash.rb:222:in `fail_property_required_error!'",
            "     # ./lib/hashie/dash.rb:218:in `assert_property_required!'",
            "     # ./lib/hashie/dash.rb:132:in `[]='",
            "     # ./spec/hashie/dash_spec.rb:99:in `block (3 levels) in <top (required)>'",
        ];
        let tenth: &[&str] = &[
            "      # ./lib/hashie/dash.rb:222:in `fail_property_required_error!'",
            "      # ./lib/hashie/dash.rb:218:in `assert_property_required!'",
            "      # ./lib/hashie/dash.rb:132:in `[]='",
            "      # ./spec/hashie/dash_spec.rb:131:in `block (3 levels) in <top (required)>'",
        ];
        let (keep, repeated) = run(&[(ninth, Frames::Lines), (tenth, Frames::Lines)]);
        assert_eq!(keep[4..], [false, false, false, true]);
        assert_eq!(repeated[4..], [true, true, true, false]);
    }

    #[test]
    fn python_frames_take_their_indented_lines() {
        let lines = [
            "  File \"a.py\", line 3, in <module>",
            "    main()",
            "    ^^^^^^",
            "  File \"a.py\", line 2, in main",
            "    x = {}['k']",
            "  [Previous line repeated 996 more times]",
        ];
        assert_eq!(python_frames(&lines), vec![0..3, 3..5, 5..6]);
    }
}

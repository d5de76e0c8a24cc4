//! Recursion in a stack trace: the same frames, cycle after cycle.
//!
//! A `RecursionError` from two functions calling each other, a visitor and its children, or a JVM
//! `StackOverflowError` prints the frames of one cycle hundreds of times; Python folds only a frame repeated on its
//! own (`[Previous line repeated 996 more times]`), not a cycle of several. The region finder keeps a traceback whole
//! up to a cap, which for these means the same cycle again and again in a capped head and tail, with the frames that
//! entered the recursion cut. A reader needs each distinct frame once: the frames before the cycle (how it was
//! entered), its first copy, its last copy (where it stopped) and what follows. This finds the copies between, which
//! go behind a marker like the frames of a traceback printed again. Pure: one pass over the lines, a few equality
//! tests per line.

use std::ops::Range;

/// The longest cycle looked for, in lines: twelve Python frames of two lines each.
const MAX_PERIOD: usize = 24;
/// Copies a cycle needs before any is dropped: the first and the last stay, so at least one lies between.
const MIN_COPIES: usize = 3;
/// Fewer lines between the first and the last copy than this are not worth the marker line that replaces them.
const MIN_DROPPED: usize = 6;

/// The copies of each cycle in `lines` between its first and its last, as index ranges in order; empty when no
/// run of lines repeats at least [`MIN_COPIES`] times back to back.
pub(super) fn middles(lines: &[&str]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((period, end)) = cycle_at(lines, i) else {
            i += 1;
            continue;
        };
        // Start the first copy on a frame's first line (a Python frame's `File` line, not its source line), so the
        // copies kept read as whole frames.
        let start = i + frame_offset(&lines[i..i + period]);
        let copies = (end - start) / period;
        if copies >= MIN_COPIES {
            let last = start + (copies - 1) * period;
            if last - (start + period) >= MIN_DROPPED {
                out.push(start + period..last);
            }
        }
        i = end;
    }
    out
}

/// The smallest period of a run starting at `i` that repeats at least [`MIN_COPIES`] times, and where the run ends
/// (one past its last line that still follows the period).
fn cycle_at(lines: &[&str], i: usize) -> Option<(usize, usize)> {
    let n = lines.len();
    for period in 1..=MAX_PERIOD {
        let first_end = i + MIN_COPIES * period;
        if first_end > n {
            return None;
        }
        if (i + period..first_end).all(|k| lines[k] == lines[k - period]) {
            let mut end = first_end;
            while end < n && lines[end] == lines[end - period] {
                end += 1;
            }
            return Some((period, end));
        }
    }
    None
}

/// Where in one copy of a cycle a frame starts: the first of its least indented lines (a Python frame's `File`
/// line is indented less than its source line; JVM frames are all alike, so the copy starts where it was found).
fn frame_offset(copy: &[&str]) -> usize {
    let indent = |l: &str| l.len() - l.trim_start().len();
    copy.iter()
        .enumerate()
        .min_by_key(|(k, l)| (indent(l), *k))
        .map_or(0, |(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A traceback entered from `main`, then `cycles` times the two frames of `visit` and `visit_children`, then
    /// the deepest frame and the exception.
    fn mutual_recursion(cycles: usize) -> String {
        let mut text = String::from(
            "Traceback (most recent call last):\n  File \"/app/main.py\", line 10, in <module>\n    run()\n",
        );
        for _ in 0..cycles {
            text.push_str("  File \"/app/tree.py\", line 42, in visit\n    return self.visit_children(node)\n");
            text.push_str("  File \"/app/tree.py\", line 57, in visit_children\n    out.append(self.visit(child))\n");
        }
        text.push_str("  File \"/app/tree.py\", line 40, in visit\n    if node.kind is None:\n");
        text.push_str("RecursionError: maximum recursion depth exceeded\n");
        text
    }

    #[test]
    fn the_copies_between_the_first_and_the_last_are_found() {
        let text = mutual_recursion(50);
        let lines: Vec<&str> = text.lines().collect();
        let found = middles(&lines);
        // Lines 3.. hold 50 copies of 4 lines: the first (3..7) and the last (199..203) stay.
        assert_eq!(found, vec![7..199]);
        assert!(lines[7].trim_start().starts_with("File"));
        assert_eq!(lines[3..7], lines[195..199]);
        assert_eq!(lines[3..7], lines[199..203]);
    }

    #[test]
    fn a_copy_starts_on_a_frames_first_line() {
        // The entry frame's source line is the cycle's last line too, so the run could be read from it.
        let mut text =
            String::from("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n");
        text.push_str("    g()\n");
        for _ in 0..10 {
            text.push_str(
                "  File \"a.py\", line 5, in g\n    f()\n  File \"a.py\", line 2, in f\n    g()\n",
            );
        }
        text.push_str("RecursionError: maximum recursion depth exceeded\n");
        let lines: Vec<&str> = text.lines().collect();
        let found = middles(&lines);
        assert_eq!(found.len(), 1);
        let kept_before = &lines[..found[0].start];
        assert!(lines[found[0].start].trim_start().starts_with("File"));
        assert!(kept_before.last().is_some_and(|l| l.starts_with("    ")));
        assert!(lines[found[0].end].trim_start().starts_with("File"));
    }

    #[test]
    fn jvm_frames_of_a_stack_overflow_are_found() {
        let mut text = String::from("Exception in thread \"main\" java.lang.StackOverflowError\n");
        for _ in 0..300 {
            text.push_str("\tat com.acme.Parser.expr(Parser.java:88)\n\tat com.acme.Parser.term(Parser.java:120)\n");
            text.push_str("\tat com.acme.Parser.factor(Parser.java:140)\n");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(middles(&lines), vec![4..898]);
    }

    #[test]
    fn too_few_copies_or_too_few_lines_find_nothing() {
        // Two copies: nothing between them.
        assert!(middles(&mutual_recursion(2).lines().collect::<Vec<_>>()).is_empty());
        // Three copies of two lines: one copy between, shorter than a marker is worth.
        let short = "a\nb\na\nb\na\nb\nc";
        assert!(middles(&short.lines().collect::<Vec<_>>()).is_empty());
        // A traceback without recursion.
        let plain = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\n  File \"b.py\", \
                     line 2, in g\n    h()\nValueError: x";
        assert!(middles(&plain.lines().collect::<Vec<_>>()).is_empty());
        // A cycle longer than the longest looked for.
        let long: Vec<String> = (0..3)
            .flat_map(|_| (0..MAX_PERIOD + 1).map(|k| format!("line {k}")))
            .collect();
        assert!(middles(&long.iter().map(String::as_str).collect::<Vec<_>>()).is_empty());
    }

    #[test]
    fn a_partial_last_copy_stays_with_the_lines_after_the_run() {
        let text = mutual_recursion(20);
        let mut lines: Vec<&str> = text.lines().collect();
        // Cut the run mid-cycle: the deepest frames are the first half of a copy.
        lines.insert(
            lines.len() - 3,
            "  File \"/app/tree.py\", line 42, in visit",
        );
        let found = middles(&lines);
        assert_eq!(found, vec![7..79]);
        assert_eq!(lines[79..83], lines[3..7]);
    }
}

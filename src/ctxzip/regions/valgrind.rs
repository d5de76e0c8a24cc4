//! Valgrind's reports: Memcheck's `Invalid read of size 8`, `Conditional jump or move depends on uninitialised
//! value(s)`, a leak's `40 bytes in 1 blocks are definitely lost in loss record 3 of 9`, each over its stack.
//!
//! Every line Valgrind prints starts with `==PID==`, and a report's stack is `at 0x…: function (file.c:634)` then
//! `by 0x…: caller (file.c:555)` lines. No line of a report has an error word, so the error floor kept none of it:
//! the report went behind a marker unless it stood in the output's head or tail. Here the line that names the fault
//! and its stack are a region, and — since one bug in a loop is reported once per call site, each time over the
//! same callers — the frames a stack shares with one shown above go behind one marker line, as in other stacks.

/// Reports whose stacks are kept; a run with hundreds of leak records shows its first ones, and its summary says
/// how many there were.
pub(super) const MAX_REPORTS: usize = 24;

/// Whether `line` is a frame of a Valgrind stack: `==26857==    at 0x48615DB: lh_table_lookup (linkhash.c:634)` or
/// `==26857==    by 0x10921E: main (test_cast.c:43)`.
pub(super) fn is_frame(line: &str) -> bool {
    after_pid(line).is_some_and(|rest| {
        let t = rest.trim_start();
        (t.starts_with("at 0x") || t.starts_with("by 0x")) && t.contains(": ")
    })
}

/// What follows the `==PID==` that opens every line Valgrind (and a sanitizer) prints; `None` without one.
pub(super) fn after_pid(line: &str) -> Option<&str> {
    let (pid, rest) = line.trim_start().strip_prefix("==")?.split_once("==")?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
}

/// One past the run of frame lines that starts at `from`.
pub(super) fn frames_end(lines: &[&str], from: usize) -> usize {
    (from..lines.len())
        .find(|&j| !is_frame(lines[j].trim_end_matches('\r')))
        .unwrap_or(lines.len())
}

/// Lines after a stack that still belong to its report, kept with it: `Address 0x… is 8 bytes after a block of size
/// 40 alloc'd`, what the fault touched. At most this many, up to Valgrind's blank `==PID== ` line.
const MAX_AFTER: usize = 3;

/// One past the lines after the stack ending at `end` that belong to its report (see [`MAX_AFTER`]): Valgrind lines
/// with text, up to its blank line or the next stack.
pub(super) fn after_end(lines: &[&str], end: usize) -> usize {
    let mut j = end;
    while j < lines.len().min(end + MAX_AFTER) {
        let line = lines[j].trim_end_matches('\r');
        let text = after_pid(line).map(str::trim);
        match text {
            Some(t) if !t.is_empty() && !is_frame(line) => j += 1,
            _ => break,
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_told_by_their_pid_prefix() {
        assert!(is_frame(
            "==26857==    at 0x48615DB: lh_table_lookup_entry_w_hash (linkhash.c:634)"
        ));
        assert!(is_frame(
            "==23265==    by 0x10C451: parse_string (cJSON.c:840)"
        ));
        assert!(!is_frame("==26857== Invalid read of size 8"));
        assert!(!is_frame(
            "==26857==  Address 0x4aa4638 is 317,832 bytes inside an unallocated block"
        ));
        assert!(!is_frame("    at com.example.Cart.total(Cart.java:48)"));
        assert!(!is_frame("==x==    at 0x1: f (a.c:1)"));
        let lines = [
            "==1== Invalid read of size 8",
            "==1==    at 0x1: f (a.c:1)",
            "==1==    by 0x2: main (a.c:9)",
            "==1== ",
        ];
        assert_eq!(frames_end(&lines, 1), 3);
        assert_eq!(after_end(&lines, 3), 3);
        let lines = [
            "==1==    by 0x2: main (a.c:9)",
            "==1==  Address 0x0 is not stack'd, malloc'd or (recently) free'd",
            "==1== ",
        ];
        assert_eq!(after_end(&lines, 1), 2);
    }
}

//! Sanitizer reports: AddressSanitizer, LeakSanitizer, ThreadSanitizer, MemorySanitizer, UndefinedBehaviorSanitizer.
//!
//! A C, C++, Rust or Go binary built with `-fsanitize=…` reports a memory or threading fault as one block: the
//! `==4242==ERROR: AddressSanitizer: heap-use-after-free …` line, the faulting access's stack, then — split by blank
//! lines — the stack that freed the memory, the one that allocated it (a data race: the other thread's access and
//! where that thread was created), and a `SUMMARY:` line. Only the first line has an error word; its context stopped
//! at the first blank line, so the free and allocation stacks — what says why the access is wrong — went behind
//! the marker. Here the block from its first line through its `SUMMARY:` line is a region; the shadow-byte map
//! AddressSanitizer prints after the summary is not part of it.

/// How far a report's `SUMMARY:` line is looked for; a report cut off before it ends at its `ABORTING` line or here.
const MAX_REPORT: usize = 400;

/// Whether `line` opens a sanitizer's report: `==4242==ERROR: AddressSanitizer: …`, `WARNING: ThreadSanitizer: data
/// race (pid=7)`, `==7==WARNING: MemorySanitizer: use-of-uninitialized-value`.
pub(super) fn opens_report(line: &str) -> bool {
    let t = super::valgrind::after_pid(line).unwrap_or_else(|| line.trim_start());
    (t.starts_with("ERROR: ") || t.starts_with("WARNING: ")) && names_sanitizer(t)
}

/// One past the last line of the report opened at `start`: its `SUMMARY: …Sanitizer` line, else its `==N==ABORTING`
/// line, else [`MAX_REPORT`] lines on (or the end of the text).
pub(super) fn report_end(lines: &[&str], start: usize) -> usize {
    let limit = lines.len().min(start + MAX_REPORT);
    let find = |what: fn(&str) -> bool| (start + 1..limit).find(|&j| what(lines[j].trim()));
    find(|t| t.starts_with("SUMMARY: ") && names_sanitizer(t))
        .or_else(|| find(|t| t.starts_with("==") && t.ends_with("==ABORTING")))
        .map_or(limit, |j| j + 1)
}

/// The runs of numbered frames (`    #3 0x55e1e1709881 in yaml_parser_fetch_more_tokens src/scanner.c:847:14`) in
/// `lines[start..end]`: the report's stacks, whose callers the later ones share with the first.
pub(super) fn frame_runs(lines: &[&str], start: usize, end: usize) -> Vec<std::ops::Range<usize>> {
    let end = end.min(lines.len());
    let mut runs = Vec::new();
    let mut j = start;
    while j < end {
        if !is_numbered_frame(lines[j]) {
            j += 1;
            continue;
        }
        let from = j;
        while j < end && is_numbered_frame(lines[j]) {
            j += 1;
        }
        runs.push(from..j);
    }
    runs
}

fn is_numbered_frame(line: &str) -> bool {
    super::shared::after_frame_number(line).is_some_and(|rest| rest.starts_with(" 0x"))
}

/// One past AddressSanitizer's shadow-byte map and its legend, when they start at `start` (`Shadow bytes around the
/// buggy address:`). Every report prints the same legend, and the map's marked row says in bytes what the
/// `SUMMARY:` line above says in words, so neither is kept as the run's end: they go behind the marker.
pub(super) fn shadow_end(lines: &[&str], start: usize) -> Option<usize> {
    let first = lines.get(start)?.trim();
    if first != "Shadow bytes around the buggy address:" {
        return None;
    }
    let mut j = start + 1;
    while let Some(line) = lines.get(j) {
        let line = line.trim_end_matches('\r');
        let t = line.trim_start();
        if line.starts_with(' ') || t.starts_with("=>") || t.starts_with("Shadow byte legend") {
            j += 1;
        } else {
            break;
        }
    }
    Some(j)
}

/// Whether `t` names a sanitizer (`AddressSanitizer:`, `ThreadSanitizer:`, …) as a word followed by a colon.
fn names_sanitizer(t: &str) -> bool {
    t.split_whitespace().any(|w| {
        w.strip_suffix("Sanitizer:")
            .is_some_and(|name| !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphabetic()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASAN: &str = "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010\n\
        READ of size 4 at 0x602000000010 thread T0\n    #0 0x55d4c1 in ring_pop /src/ring.c:88:12\n\n\
        freed by thread T0 here:\n    #0 0x4f0c1d in free\n    #1 0x55d3f0 in ring_shrink /src/ring.c:61:5\n\n\
        SUMMARY: AddressSanitizer: heap-use-after-free /src/ring.c:88:12 in ring_pop\n\
        Shadow bytes around the buggy address:\n  0x0c047fff8000: fa fa fd fa\n==4242==ABORTING";

    #[test]
    fn reports_are_recognised() {
        assert!(opens_report(
            "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020"
        ));
        assert!(opens_report("WARNING: ThreadSanitizer: data race (pid=7)"));
        assert!(opens_report(
            "==7==WARNING: MemorySanitizer: use-of-uninitialized-value"
        ));
        assert!(opens_report(
            "==99==ERROR: LeakSanitizer: detected memory leaks"
        ));
        assert!(!opens_report(
            "ERROR: could not connect to the sanitizer service"
        ));
        assert!(!opens_report(
            "WARNING: the AddressSanitizer flag is deprecated"
        ));
    }

    #[test]
    fn the_shadow_map_and_its_legend_end_at_the_abort_line() {
        let lines = [
            "Shadow bytes around the buggy address:",
            "  0x0c047fff7fe0: 00 00 00 00",
            "=>0x0c047fff8030: fa fa[05]fa",
            "Shadow byte legend (one shadow byte represents 8 application bytes):",
            "  Addressable:           00",
            "  Heap left redzone:       fa",
            "==22803==ABORTING",
        ];
        assert_eq!(shadow_end(&lines, 0), Some(6));
        assert_eq!(shadow_end(&lines, 1), None);
        let stacks = [
            "READ of size 1 at 0x6020000001d5 thread T0",
            "    #0 0x55cf4b9be5c7 in strcmp cJSON.c:145",
            "    #1 0x55cf4b9cf686 in main misc_tests.c:705",
            "",
            "allocated by thread T0 here:",
            "    #0 0x7f372ecb89cf in __interceptor_malloc asan_malloc_linux.cpp:69",
        ];
        assert_eq!(frame_runs(&stacks, 0, stacks.len()), vec![1..3, 5..6]);
    }

    #[test]
    fn a_report_runs_through_its_summary_not_the_shadow_map() {
        let lines: Vec<&str> = ASAN.lines().collect();
        let end = report_end(&lines, 0);
        assert!(lines[end - 1].starts_with("SUMMARY: AddressSanitizer"));
        assert_eq!(lines[end], "Shadow bytes around the buggy address:");
        // Cut off before its summary: to its ABORTING line.
        let cut: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| !l.starts_with("SUMMARY"))
            .collect();
        assert_eq!(report_end(&cut, 0), cut.len());
    }
}

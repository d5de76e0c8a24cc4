//! A failing Go test's own output: what `go test -v` printed between `=== RUN   TestX` and `--- FAIL: TestX`.
//!
//! Go prints a test's `t.Errorf`/`t.Log` lines (`    codec_test.go:42: got 3, want 4`), testify's `Error Trace:` /
//! `Diff:` blocks and a subtest's lines above the test's verdict, and only the verdict has an error word. The error
//! line's context keeps the two lines above it; a test that printed a diff, or several messages, lost the rest to
//! the marker. Here the lines from the test's `=== RUN` line to its `--- FAIL:` line are a region, bounded: a
//! parent test's span holds all its subtests, passing ones too.

/// Lines kept of one failing test's output: its first [`HEAD`] and the rest from its end.
pub(super) const MAX_LINES: usize = 40;
pub(super) const HEAD: usize = 30;

/// The test a verdict line names: `--- FAIL: TestX/sub (0.00s)` (indented for a subtest) gives `TestX/sub`.
pub(super) fn failed_test(line: &str) -> Option<&str> {
    line.trim_start()
        .strip_prefix("--- FAIL: ")?
        .split_whitespace()
        .next()
}

/// The test whose output a line starts: `=== RUN   TestX`, or `=== CONT  TestX` where a parallel test resumes. The
/// region finder remembers the last such line of each test as it reads, so a verdict finds its test's start without
/// looking back.
pub(super) fn started_test(line: &str) -> Option<&str> {
    let t = line.trim();
    let rest = t
        .strip_prefix("=== RUN")
        .or_else(|| t.strip_prefix("=== CONT"))?;
    let name = rest.trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
}

/// The test a passing or skipped verdict names: `    --- PASS: TestX/sub (0.00s)` gives `TestX/sub`.
fn passed_test(line: &str) -> Option<&str> {
    let t = line.trim_start();
    t.strip_prefix("--- PASS: ")
        .or_else(|| t.strip_prefix("--- SKIP: "))?
        .split_whitespace()
        .next()
}

/// The test a `=== RUN`, `=== CONT` or `=== PAUSE` line names.
pub(super) fn any_run_line(line: &str) -> Option<&str> {
    let t = line.trim();
    let rest = t
        .strip_prefix("=== RUN")
        .or_else(|| t.strip_prefix("=== CONT"))
        .or_else(|| t.strip_prefix("=== PAUSE"))?;
    let name = rest.trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
}

/// The tests of the whole output that passed (or were skipped): their run and verdict lines inside a failing
/// parent's span say nothing about the failure.
pub(super) fn passed_tests<'a>(lines: &[&'a str]) -> std::collections::HashSet<&'a str> {
    lines.iter().filter_map(|l| passed_test(l)).collect()
}

/// The lines of a failing test's span (`start..end`) worth keeping: all but the run and verdict lines of the
/// subtests in it that passed (a table test's forty `=== RUN   TestX/case` and `--- PASS: TestX/case` lines around
/// its one failing case).
pub(super) fn span_lines(
    lines: &[&str],
    start: usize,
    end: usize,
    passed: &std::collections::HashSet<&str>,
) -> Vec<usize> {
    (start..end.min(lines.len()))
        .filter(|&j| {
            let line = lines[j].trim_end_matches('\r');
            passed_test(line).is_none() && !any_run_line(line).is_some_and(|n| passed.contains(n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_and_run_lines_name_their_tests() {
        assert_eq!(
            failed_test("    --- FAIL: TestB/empty (0.00s)"),
            Some("TestB/empty")
        );
        assert_eq!(failed_test("--- FAIL: TestB (0.00s)"), Some("TestB"));
        assert_eq!(failed_test("--- PASS: TestA (0.00s)"), None);
        assert_eq!(started_test("=== RUN   TestB/empty"), Some("TestB/empty"));
        assert_eq!(started_test("=== CONT  TestB"), Some("TestB"));
        assert_eq!(started_test("=== PAUSE TestB"), None);
        assert_eq!(started_test("=== RUN"), None);
    }

    #[test]
    fn a_failing_spans_passing_subtests_are_left_out() {
        let lines = [
            "=== RUN   TestDecodeTable",
            "=== RUN   TestDecodeTable/basic",
            "=== RUN   TestDecodeTable/struct",
            "    decode_test.go:2220: unexpected error: unsupported type: uint64",
            "=== RUN   TestDecodeTable/remainder",
            "--- FAIL: TestDecodeTable (0.00s)",
            "    --- PASS: TestDecodeTable/basic (0.00s)",
            "    --- FAIL: TestDecodeTable/struct (0.00s)",
            "    --- SKIP: TestDecodeTable/remainder (0.00s)",
        ];
        let passed = passed_tests(&lines);
        assert_eq!(
            span_lines(&lines, 0, lines.len(), &passed),
            vec![0, 2, 3, 5, 7]
        );
    }
}

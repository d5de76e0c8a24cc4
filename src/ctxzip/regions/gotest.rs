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
}

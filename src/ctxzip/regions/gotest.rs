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
/// How far above its verdict a test's `=== RUN` line is looked for.
const MAX_LOOKBACK: usize = 2000;

/// The test a verdict line names: `--- FAIL: TestX/sub (0.00s)` (indented for a subtest) gives `TestX/sub`.
pub(super) fn failed_test(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("--- FAIL: ")?;
    let name = rest.split_whitespace().next()?;
    (!name.is_empty()).then_some(name)
}

/// Where the output of the test that failed at `verdict` starts: its `=== RUN   name` line (or `=== CONT`, where
/// a parallel test resumed last), looked for up to [`MAX_LOOKBACK`] lines above.
pub(super) fn run_line(lines: &[&str], verdict: usize, name: &str) -> Option<usize> {
    let from = verdict.saturating_sub(MAX_LOOKBACK);
    (from..verdict).rev().find(|&i| {
        let t = lines[i].trim();
        ["=== RUN", "=== CONT"]
            .iter()
            .any(|p| t.strip_prefix(p).is_some_and(|rest| rest.trim() == name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_names_its_test_and_the_run_line_is_found_above() {
        let lines = [
            "=== RUN   TestA",
            "--- PASS: TestA (0.00s)",
            "=== RUN   TestB",
            "=== RUN   TestB/empty",
            "    b_test.go:9: got 3, want 4",
            "    --- FAIL: TestB/empty (0.00s)",
            "--- FAIL: TestB (0.00s)",
        ];
        assert_eq!(failed_test(lines[5]), Some("TestB/empty"));
        assert_eq!(run_line(&lines, 5, "TestB/empty"), Some(3));
        assert_eq!(failed_test(lines[6]), Some("TestB"));
        assert_eq!(run_line(&lines, 6, "TestB"), Some(2));
        assert_eq!(failed_test(lines[1]), None);
        assert_eq!(run_line(&lines, 6, "TestC"), None);
    }
}

//! Tool outputs that report a failure.
//!
//! Dropping part of an error the user is about to debug is the worst thing compression can do, so an output that
//! says its command failed — a non-zero exit code in the agent's output header (Codex's `Process exited with
//! code N`, mini-swe-agent's `<returncode>N</returncode>`), a Python traceback, a JSON result with a failing
//! `exit_code` — is compressed around its error regions only (`ctxzip::regions`), or left whole when the
//! operator asks for the old behaviour (`[compress] failures = "verbatim"`).

/// How far into an output the failure signs are looked for (headers come first).
const HEAD_BYTES: usize = 4096;

fn head(text: &str) -> &str {
    let mut end = text.len().min(HEAD_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The number after `label` (spaces, `:` or `"` skipped), if any.
fn code_after(text: &str, label: &str) -> Option<i64> {
    let at = text.find(label)? + label.len();
    let rest = text[at..].trim_start_matches([' ', ':', '"', '=']);
    let end = rest
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-')))
        .map(|(i, _)| i)
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Whether a tool output reports a failure.
pub fn looks_like_error_output(text: &str) -> bool {
    exited_with_failure(text)
        || text.contains("Traceback (most recent call last):")
        || reports_failed_tests(text)
}

/// Whether a test runner's own verdict says tests failed: what tells a failing run when the agent's harness prints
/// no exit code (a raw `go test -v`, a CI log, an editor's terminal). Each is a line the runner prints only on a
/// failure: Go's `--- FAIL: TestX` (a subtest's indented) and `FAIL\tpkg`, unittest's `FAILED (failures=2)`,
/// pytest's `FAILED path::test` summary entries, Cargo's `test result: FAILED`, Jest's `Tests:  2 failed, …`,
/// Mocha's `2 failing`, RSpec's `12 examples, 3 failures`, Maven's `Tests run: 14, Failures: 2` and `BUILD
/// FAILURE`, Gradle's `BUILD FAILED`.
pub fn reports_failed_tests(text: &str) -> bool {
    text.lines().any(is_failed_tests_verdict)
}

/// Whether `line` is a test runner's verdict that shows the output is a test run: one of
/// [`is_failed_tests_verdict`]'s, or Cargo's for tests that passed (`test result: ok.`).
pub(crate) fn is_test_run_verdict(line: &str) -> bool {
    is_failed_tests_verdict(line) || line.trim_start().starts_with("test result: ok.")
}

/// Whether `line` is one of the verdicts of [`reports_failed_tests`].
pub(crate) fn is_failed_tests_verdict(line: &str) -> bool {
    const PREFIXES: [&str; 7] = [
        "--- FAIL: ",
        "FAIL\t",
        "FAILED (failures=",
        "FAILED (errors=",
        "test result: FAILED",
        "BUILD FAILURE",
        "BUILD FAILED",
    ];
    let t = line.trim();
    let t = t
        .strip_prefix("[ERROR] ")
        .or_else(|| t.strip_prefix("[INFO] "))
        .unwrap_or(t);
    PREFIXES.iter().any(|p| t.starts_with(p))
        || t.starts_with("FAILED ") && t.contains("::")
        || t.starts_with("Tests:") && t.contains(" failed")
        || count_before(t, " failing") > 0 && t.ends_with(" failing")
        || t.contains(" examples, ") && count_before(t, " failure") > 0
        || t.starts_with("Tests run:")
            && (count_after(t, "Failures: ") > 0 || count_after(t, "Errors: ") > 0)
}

/// The number written just before `word` in `line` (`12 examples, 3 failures` → 3 for " failure"), 0 if none.
fn count_before(line: &str, word: &str) -> u64 {
    line.find(word)
        .map(|at| {
            let before = &line[..at];
            let digits = before.bytes().rev().take_while(u8::is_ascii_digit).count();
            before[at - digits..].parse().unwrap_or(0)
        })
        .unwrap_or(0)
}

/// The number written just after `label` in `line`, 0 if none.
fn count_after(line: &str, label: &str) -> u64 {
    line.find(label)
        .map(|at| {
            let rest = &line[at + label.len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..end].parse().unwrap_or(0)
        })
        .unwrap_or(0)
}

/// Whether the harness's header says the command exited non-zero (`Process exited with code 1`, `Exit code: 2`,
/// `"exit_code": 1`, `<returncode>1</returncode>`).
pub fn exited_with_failure(text: &str) -> bool {
    let h = head(text);
    let failing = |label: &str| code_after(h, label).is_some_and(|c| c != 0);
    failing("Process exited with code")
        || failing("Exit code")
        || failing("exit code")
        || failing("\"exit_code\"")
        || failing("<returncode>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_outputs_are_recognised() {
        assert!(looks_like_error_output(
            "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 101\nOutput:\nerror[E0308]"
        ));
        assert!(!looks_like_error_output(
            "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nok"
        ));
        assert!(looks_like_error_output("Exit code: 2\nWall time: 1s\n"));
        assert!(looks_like_error_output(
            "<returncode>1</returncode>\n<output>\nboom"
        ));
        assert!(!looks_like_error_output(
            "<returncode>0</returncode>\n<output>\nfine"
        ));
        assert!(looks_like_error_output(
            r#"{"output":"boom","metadata":{"exit_code":1}}"#
        ));
        assert!(!looks_like_error_output(
            r#"{"output":"ok","metadata":{"exit_code":0}}"#
        ));
        assert!(looks_like_error_output(
            "x\nTraceback (most recent call last):\n  File \"a.py\""
        ));
        assert!(!looks_like_error_output("plain listing\nsrc/main.rs\n"));
    }

    /// A runner's verdict tells a failing run where no harness prints an exit code; a passing verdict does not.
    #[test]
    fn test_runners_verdicts_of_failure_are_recognised() {
        for failing in [
            "=== RUN   TestA\n    a_test.go:9: got 3, want 4\n--- FAIL: TestA (0.00s)\nFAIL\n",
            "ok  \tpkg/a\t0.1s\nFAIL\tpkg/b\t0.2s\n",
            "    --- FAIL: TestA/sub (0.00s)\n",
            "Ran 12 tests in 0.3s\n\nFAILED (failures=2, skipped=1)\n",
            "FAILED (errors=1)\n",
            "FAILED tests/test_a.py::test_b - AssertionError: x\n",
            "test result: FAILED. 3 passed; 1 failed; 0 ignored\n",
            "Tests:       2 failed, 40 passed, 42 total\n",
            "  40 passing (2s)\n  2 failing\n",
            "Finished in 0.1 seconds\n12 examples, 3 failures\n",
            "[ERROR] Tests run: 14, Failures: 2, Errors: 0, Skipped: 0\n",
            "Tests run: 14, Failures: 0, Errors: 1, Skipped: 0\n",
            "[INFO] BUILD FAILURE\n",
            "BUILD FAILED in 3s\n",
        ] {
            assert!(looks_like_error_output(failing), "{failing}");
        }
        for passing in [
            "=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\nok  \tpkg/a\t0.1s\n",
            "Ran 12 tests in 0.3s\n\nOK\n",
            "test result: ok. 4 passed; 0 failed\n",
            "Tests:       42 passed, 42 total\n",
            "  42 passing (2s)\n",
            "12 examples, 0 failures\n",
            "[INFO] Tests run: 14, Failures: 0, Errors: 0, Skipped: 0\n[INFO] BUILD SUCCESS\n",
            "tests/test_a.py::test_fail_silently PASSED\n",
            "FAILED_LOGIN_ATTEMPTS = 3\n",
        ] {
            assert!(!looks_like_error_output(passing), "{passing}");
        }
    }
}

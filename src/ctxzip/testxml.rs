//! Test reports in XML: JUnit and its dialects (surefire, jest-junit, pytest `--junitxml`, PHPUnit), Visual
//! Studio TRX, NUnit and xUnit.net.
//!
//! In such a report the structure says what failed: a test element holding a `<failure>`, `<error>` or
//! `<ErrorInfo>` element. Those are kept whole, with the line that names the test; the rest — passing test
//! elements, properties, test definitions, captured output of passing tests — is the bulk and goes behind
//! markers. The error floor still holds: every short line with an error word (`failures="0"` attributes, test
//! names like `testFailFast`) stays as the exact line, but without the context a log's error line gets, and
//! lines with only a warning word (a checker's captured `warning, line 4` output of a passing test) are not
//! kept for it. Floor lines between dropped ones are gathered after one marker (each names its suite or test,
//! so a marker between every two of them says nothing more). The head is the declaration and the root element
//! (the run's totals), the tail its closing tags.

use super::lines::{Params, Regions, compress_with};
use super::{Ctx, Tally};

/// How much of a report stays besides its failures and the floor.
const REPORT: Params = Params {
    head: 3,
    tail: 3,
    before: 0,
    after: 0,
    max_context: 0,
    max_relevant: 20,
    regions: Regions::TestReport,
    error_words: false,
    gather_floor: true,
    thin_runs: false,
};

/// A failure element longer than this keeps its first and last lines (the message, the deepest frames).
const MAX_FAILURE: usize = 80;
const FAILURE_HEAD: usize = 50;
/// How far above a failure element the line naming its test may be (TRX puts `<Output>` in between).
const TEST_LOOKBACK: usize = 4;

pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    compress_with(text, ctx, &REPORT, tally)
}

/// Whether the query may pick `line` of a report. Not a `<property>` of a surefire report's `<properties>` block: the
/// JVM's system properties (paths, user and machine names, the workspace) come with every report and match a
/// task's words by accident (`work` in `c:\jenkins\workspace\…`); the task's words that matter name a test or
/// stand in a failure.
pub(crate) fn pickable(line: &str) -> bool {
    !line.trim_start().starts_with("<property ")
}

/// Whether `text` is an XML test report: it opens as XML (a declaration, or a report's root element) and one of
/// the report elements shows in its first 64 KB.
pub(crate) fn is_report(text: &str) -> bool {
    const ROOTS: [&str; 6] = [
        "<?xml",
        "<testsuites",
        "<testsuite",
        "<TestRun",
        "<assemblies",
        "<test-run",
    ];
    const ELEMENTS: [&str; 6] = [
        "<testsuite",
        "<testcase",
        "<UnitTestResult",
        "<test-case",
        "<assembly",
        "<TestRun",
    ];
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if !ROOTS.iter().any(|r| start.starts_with(r)) {
        return false;
    }
    let window = &start[..super::truncate::floor_boundary(start, 64 * 1024)];
    ELEMENTS.iter().any(|e| window.contains(e))
}

/// Marks every failure element in `lines` as kept, from the line naming its test through its closing tag. A
/// failure's stack frames that a failure above already showed (JUnit's runner and surefire's booter under every
/// failing test: forty lines of each stack) are marked `repeated` instead, in runs, as a log's shared frames are
/// ([`super::regions::shared`]): each failure keeps its message and its own frames.
pub(crate) fn mark<'a>(lines: &'a [&'a str], keep: &mut [bool], repeated: &mut [bool]) {
    let n = lines.len().min(keep.len()).min(repeated.len());
    let mut shown = super::regions::shared::Shown::default();
    let mut i = 0;
    while i < n {
        let t = lines[i].trim_start();
        let Some(close) = failure_close(t) else {
            i += 1;
            continue;
        };
        let mut start = i;
        for j in (i.saturating_sub(TEST_LOOKBACK)..i).rev() {
            if is_test_open(lines[j].trim_start()) {
                start = j;
                break;
            }
        }
        if start < i && did_not_fail(lines[start]) {
            // TRX gives a skipped test an `<ErrorInfo>` too (the reason it was skipped): not a failure.
            i += 1;
            continue;
        }
        // One past the line that closes the element (the same line when it closes there or is self-closing).
        let end = if t.trim_end().ends_with("/>") || t.contains(close) {
            i + 1
        } else {
            (i + 1..n)
                .find(|&j| lines[j].contains(close))
                .map_or(n, |j| j + 1)
        };
        keep[start..i].iter_mut().for_each(|k| *k = true);
        if end - i <= MAX_FAILURE {
            keep[i..end].iter_mut().for_each(|k| *k = true);
        } else {
            keep[i..i + FAILURE_HEAD].iter_mut().for_each(|k| *k = true);
            keep[end - (MAX_FAILURE - FAILURE_HEAD)..end]
                .iter_mut()
                .for_each(|k| *k = true);
        }
        // Between the element's opening and closing lines: its tags stay whatever the frames do.
        shown.collapse(
            lines,
            i + 1..end.saturating_sub(1),
            super::regions::shared::Frames::Lines,
            keep,
            repeated,
        );
        i = end.max(i + 1);
    }
}

/// The closing tag of the failure element `t` opens, if it opens one.
fn failure_close(t: &str) -> Option<&'static str> {
    const OPENS: [(&str, &str); 4] = [
        ("<failure", "</failure>"),
        ("<error", "</error>"),
        ("<ErrorInfo", "</ErrorInfo>"),
        ("<rerunFailure", "</rerunFailure>"),
    ];
    OPENS.iter().find_map(|(open, close)| {
        let rest = t.strip_prefix(open)?;
        // `<error` but not `<errors>` or `<errorCount>`: the tag name ends here.
        rest.starts_with([' ', '>', '/', '\t'])
            .then_some(*close)
            .or_else(|| rest.is_empty().then_some(*close))
    })
}

/// A test element whose `outcome` attribute says it did not fail (TRX: `NotExecuted`, `Passed`, `Inconclusive`).
fn did_not_fail(line: &str) -> bool {
    [
        "outcome=\"NotExecuted\"",
        "outcome=\"Passed\"",
        "outcome=\"Inconclusive\"",
    ]
    .iter()
    .any(|o| line.contains(o))
}

/// A line opening a test element (the one a failure belongs to).
fn is_test_open(t: &str) -> bool {
    ["<testcase", "<UnitTestResult", "<test-case", "<test "]
        .iter()
        .any(|p| t.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::super::{Options, compress as compress_text, keeps_floor};
    use super::*;

    /// A JUnit report: 300 passing tests in 30 suites, one failure with a stack trace, one test with an error
    /// word in its name, and a passing test whose captured output has warnings.
    fn junit() -> String {
        let mut t = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"301\" failures=\"1\">\n",
        );
        for s in 0..30 {
            t.push_str(&format!(
                "  <testsuite name=\"com.example.Suite{s}\" tests=\"10\" skipped=\"0\" time=\"1.5\">\n"
            ));
            for c in 0..10 {
                t.push_str(&format!(
                    "    <testcase name=\"parsesRecord{c}\" classname=\"com.example.Suite{s}\" time=\"0.01{c}\"/>\n"
                ));
            }
            if s == 7 {
                t.push_str("    <testcase name=\"rejectsEmptyInput\" classname=\"com.example.Suite7\" time=\"0.2\">\n");
                t.push_str("      <failure message=\"expected 1 but was 2\" type=\"java.lang.AssertionError\">java.lang.AssertionError: expected 1 but was 2\n");
                for f in 0..12 {
                    t.push_str(&format!(
                        "\tat com.example.Parser.step{f}(Parser.java:{f})\n"
                    ));
                }
                t.push_str("</failure>\n    </testcase>\n");
            }
            if s == 12 {
                t.push_str("    <testcase name=\"handlesErrorCallback\" classname=\"com.example.Suite12\" time=\"0.1\"/>\n");
                t.push_str("    <testcase name=\"lintsSample\" classname=\"com.example.Suite12\" time=\"0.1\">\n      <system-out>sample.php warning, line 4 - avoid shell comments\n</system-out>\n    </testcase>\n");
            }
            t.push_str("  </testsuite>\n");
        }
        t.push_str("</testsuites>\n");
        t
    }

    #[test]
    fn a_report_keeps_its_failures_whole_and_the_floor() {
        let text = junit();
        assert!(is_report(&text));
        let c = compress_text(&text, &Options::default());
        assert!(c.is_some());
        let Some(c) = c else { return };
        assert!(keeps_floor(&text, &c.text));
        for want in [
            "<testsuites tests=\"301\" failures=\"1\">",
            "    <testcase name=\"rejectsEmptyInput\" classname=\"com.example.Suite7\" time=\"0.2\">",
            "\tat com.example.Parser.step11(Parser.java:11)",
            "</failure>",
            "    <testcase name=\"handlesErrorCallback\" classname=\"com.example.Suite12\" time=\"0.1\"/>",
        ] {
            assert!(
                c.text.lines().any(|l| l == want),
                "{want} missing:\n{}",
                c.text
            );
        }
        assert!(
            !c.text.contains("avoid shell comments"),
            "a passing test's warnings are offloaded"
        );
        assert!(
            !c.text
                .contains("parsesRecord5\" classname=\"com.example.Suite20")
        );
        assert!(
            c.text.len() * 4 < text.len(),
            "{} of {}",
            c.text.len(),
            text.len()
        );
    }

    #[test]
    fn the_query_picks_tests_not_system_properties() {
        let mut text = String::from(
            "<?xml version=\"1.0\"?>\n<testsuite name=\"calc\" tests=\"40\">\n  <properties>\n",
        );
        // One property in 8 holds the query's word: few enough to be a selective term.
        for i in 0..80 {
            let dir = if i % 8 == 0 { "workspace" } else { "tools" };
            text.push_str(&format!(
                "    <property name=\"prop.{i}\" value=\"c:\\jenkins\\{dir}\\job{i}\"/>\n"
            ));
        }
        text.push_str("  </properties>\n");
        for i in 0..40 {
            text.push_str(&format!(
                "  <testcase name=\"adds{i}\" classname=\"Calc\" time=\"0.1\"/>\n"
            ));
        }
        text.push_str("  <testcase name=\"workspaceRoundTrip\" classname=\"Calc\" time=\"0.1\"/>\n</testsuite>\n");
        let opts = Options {
            query: vec!["workspace".into()],
            ..Options::default()
        };
        let c = compress_text(&text, &opts);
        assert!(c.is_some());
        let Some(c) = c else { return };
        assert!(c.text.contains("name=\"workspaceRoundTrip\""), "{}", c.text);
        assert!(!c.text.contains("prop.40"), "{}", c.text);
        assert!(
            pickable("  <testcase name=\"x\"/>")
                && !pickable("    <property name=\"a\" value=\"b\"/>")
        );
    }

    /// A surefire report with several failing tests: each failure keeps its message, its own frames and its
    /// `Caused by`, and the runner frames every one of them shares are shown once.
    #[test]
    fn failures_show_the_frames_they_share_with_one_above_once() {
        let runner: String = (0..30)
            .map(|f| {
                format!(
                    "\tat org.junit.runners.ParentRunner.step{f}(ParentRunner.java:{})\n",
                    100 + f
                )
            })
            .collect();
        let mut text = String::from(
            "<?xml version=\"1.0\"?>\n<testsuite name=\"LedgerTest\" tests=\"60\" failures=\"3\">\n",
        );
        for t in 0..60 {
            text.push_str(&format!(
                "  <testcase name=\"case{t}\" classname=\"org.example.LedgerTest\" time=\"0.001\">\n"
            ));
            if t % 20 == 7 {
                text.push_str(&format!(
                    "    <failure message=\"expected {t}\" type=\"java.lang.AssertionError\">java.lang.AssertionError: expected {t}\n\tat org.example.LedgerTest.case{t}(LedgerTest.java:{t})\n{runner}</failure>\n"
                ));
            }
            text.push_str("  </testcase>\n");
        }
        text.push_str("</testsuite>\n");
        let c = compress_text(&text, &Options::default());
        assert!(c.is_some(), "a report this size compresses");
        let out = c.map(|c| c.text).unwrap_or_default();
        let out = &out;
        for t in [7, 27, 47] {
            assert!(
                out.contains(&format!("java.lang.AssertionError: expected {t}\n\tat org.example.LedgerTest.case{t}(LedgerTest.java:{t})\n")),
                "{out}"
            );
        }
        // The first failure shows the runner's frames; the two after it point back to them.
        assert_eq!(out.matches("ParentRunner.step12(").count(), 1, "{out}");
        assert_eq!(
            out.matches("(the same stack frames as above)").count(),
            2,
            "{out}"
        );
        assert_eq!(out.matches("</failure>").count(), 3, "{out}");
        assert!(keeps_floor(&text, out));
    }

    #[test]
    fn only_reports_are_reports() {
        assert!(is_report(
            "\u{feff}<?xml version=\"1.0\"?>\n<TestRun id=\"1\">\n"
        ));
        assert!(is_report(
            "<testsuite name=\"a\">\n<testcase name=\"b\"/>\n</testsuite>"
        ));
        assert!(!is_report(
            "<?xml version=\"1.0\"?>\n<project><dependencies/></project>\n"
        ));
        assert!(!is_report("<html><body>testcase</body></html>"));
        assert!(!is_report("ran <testcase> in a log line\n"));
    }

    #[test]
    fn failure_elements_are_found_by_their_tag() {
        assert_eq!(failure_close("<failure message=\"x\">"), Some("</failure>"));
        assert_eq!(failure_close("<error type=\"E\"/>"), Some("</error>"));
        assert_eq!(failure_close("<ErrorInfo>"), Some("</ErrorInfo>"));
        assert_eq!(failure_close("<errors>3</errors>"), None);
        assert_eq!(failure_close("<errorCount>0</errorCount>"), None);
        let lines = [
            "<UnitTestResult testName=\"A\" outcome=\"Failed\">",
            "  <Output>",
            "    <ErrorInfo>",
            "      <Message>boom</Message>",
            "    </ErrorInfo>",
            "  </Output>",
            "</UnitTestResult>",
        ];
        let mut keep = vec![false; lines.len()];
        mark(&lines, &mut keep, &mut vec![false; lines.len()]);
        assert_eq!(keep, [true, true, true, true, true, false, false]);
        let skipped = lines.map(|l| l.replace("Failed", "NotExecuted"));
        let skipped: Vec<&str> = skipped.iter().map(String::as_str).collect();
        let mut keep = vec![false; lines.len()];
        mark(&skipped, &mut keep, &mut vec![false; lines.len()]);
        assert!(
            keep.iter().all(|k| !k),
            "a skipped test's reason is not a failure"
        );
    }
}

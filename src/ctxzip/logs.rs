//! Logs and build output (cargo, npm, pip, CI steps, service logs, tracebacks).
//!
//! In the request path a log keeps a short head (what ran) and a longer tail (how it ended), every error and
//! warning line verbatim with a little context — the line before and the lines after, up to a blank line,
//! which is where compilers put the location and the note — plus keep-pattern and query-relevant lines.
//! Repeated lines collapse and each dropped run becomes a marker with a census (e.g. `Compiling 150`).

use super::lines::{Params, Regions, compress_with};
use super::{Ctx, Tally};

/// For a 5,000-line log with a handful of errors this shows roughly 40–80 lines.
const LOG: Params = Params {
    head: 15,
    tail: 20,
    before: 1,
    after: 6,
    max_context: 300,
    max_relevant: 20,
    regions: Regions::Runs,
    error_words: true,
    gather_floor: false,
    thin_runs: true,
};

/// An output that reports a failure: the end of the run is where the verdict is, so more of it stays, and
/// diagnostics keep more of their context.
const FAILING: Params = Params {
    head: 10,
    tail: 30,
    before: 2,
    after: 8,
    max_context: 600,
    max_relevant: 20,
    regions: Regions::Runs,
    error_words: true,
    gather_floor: false,
    thin_runs: true,
};

pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    compress_with(text, ctx, &LOG, tally)
}

/// JSON Lines: a record is a line. Few head records (the run's start), the last records (its verdict), every error
/// event with the records around it (a failing test's output events surround its `fail` event).
const JSON_LINES: Params = Params {
    head: 3,
    tail: 6,
    before: 2,
    after: 2,
    max_context: 200,
    max_relevant: 10,
    regions: Regions::None,
    error_words: true,
    gather_floor: false,
    thin_runs: false,
};

pub(crate) fn compress_json_lines(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    compress_with(text, ctx, &JSON_LINES, tally)
}

/// Compresses a failing output around its error regions (whatever its detected line kind).
pub(crate) fn compress_failing(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    compress_with(text, ctx, &FAILING, tally)
}

#[cfg(test)]
mod tests {
    use super::super::Options;
    use super::*;

    #[test]
    fn error_context_is_kept() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!("   Compiling crate{i} v1.0.{i}\n"));
        }
        text.push_str("warning: unused variable: `timer`\n  --> src/lib.rs:3:9\n   |\n3  |     let timer = 1;\n\n");
        for i in 0..400 {
            text.push_str(&format!("   Compiling other{i} v1.0.{i}\n"));
        }
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(out.contains("   Compiling crate399 v1.0.399\nwarning: unused variable: `timer`\n  --> src/lib.rs:3:9\n"));
        assert!(out.contains("3  |     let timer = 1;\n"));
        assert!(out.contains("(Compiling "));
    }

    /// A service's log: an error record's context is what follows it without a timestamp (a traceback, a
    /// continued message), not the next records, which are other events.
    #[test]
    fn an_error_records_context_ends_at_the_next_timestamped_record() {
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!(
                "2026/12/04 23:16:{:02} [info] 14144#14144: *{i} client 127.0.0.1 closed keepalive connection\n",
                i % 60
            ));
            if i % 50 == 25 {
                text.push_str(&format!(
                    "2026/12/04 23:16:{:02} [error] 14144#14144: *{i} open() \"/srv/www/missing-{i}.css\" failed (2: No such file or directory)\n",
                    i % 60
                ));
                text.push_str("    while serving a static file\n");
            }
        }
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        for i in (25..300).step_by(50) {
            let error = format!(
                "[error] 14144#14144: *{i} open() \"/srv/www/missing-{i}.css\" failed (2: No such file or directory)\n    while serving a static file\n"
            );
            assert!(out.contains(&error), "{out}");
            // The record after it is not kept as its context.
            assert!(
                !out.contains(&format!("*{} client 127.0.0.1 closed", i + 1)),
                "{out}"
            );
        }
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// The head and tail of a run are counted in bytes too: 15 rows of a query's 280-character results are not kept
    /// for being first, ten are.
    #[test]
    fn the_head_and_tail_are_bounded_in_bytes_and_keep_runs_whole() {
        let row = |k: usize| {
            format!(
                "pkg{k}|{}\n",
                "libc6 (>= 2.34), libgcc-s1 (>= 3.0), ".repeat(7)
            )
        };
        let text: String = (0..80).map(row).collect();
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        let head = (0..15)
            .filter(|k| out.contains(&format!("pkg{k}|")))
            .count();
        assert!(
            (5..=11).contains(&head),
            "{head} of the first 15 rows kept: {out}"
        );
        assert!(out.contains("pkg0|") && out.contains("pkg79|"), "{out}");
    }

    /// `go test -v` on a table test: the failing parent's span holds every case's `=== RUN` line and its verdict
    /// lists every case's `--- PASS:`. The failing case, its message and the verdicts that failed stay; the passing
    /// cases' lines are neither part of the failure's region nor its context.
    /// RSpec's documentation format: the outline names every example, passing ones unmarked, so an example named
    /// after an error is an error line among examples. It stays; its neighbours, and examples named after a
    /// warning, go behind markers. The failing examples stay, and so do their blocks under `Failures:`.
    #[test]
    fn an_rspec_outlines_examples_are_no_context_of_one_named_after_an_error() {
        let mut text = String::from("\nHashie::Mash\n");
        for k in 0..40 {
            text.push_str(&format!("  returns the value of key {k}\n"));
            if k == 25 {
                text.push_str(
                    "  returns nil instead of raising an error for attribute-esque method calls\n",
                );
            }
            if k == 32 {
                text.push_str("  logs a warning when overriding built-in methods\n");
            }
        }
        text.push_str("  updating\n    #deep_update\n      clones before a #deep_merge (FAILED - 1)\n      converts values only once\n");
        for k in 0..30 {
            text.push_str(&format!("    merges the value of key {k}\n"));
        }
        text.push_str("\nFailures:\n\n  1) Hashie::Mash updating #deep_update clones before a #deep_merge\n     Failure/Error: expect(duped.details.email).to eq 'michael@asf.com'\n\n       expected: \"michael@asf.com\"\n            got: nil\n\n       (compared using ==)\n     # ./spec/hashie/mash_spec.rb:315:in `block (4 levels) in <top (required)>'\n\nFinished in 0.05 seconds (files took 0.2 seconds to load)\n72 examples, 1 failure\n\nFailed examples:\n\nrspec ./spec/hashie/mash_spec.rb:312 # Hashie::Mash updating #deep_update clones before a #deep_merge\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress_failing(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        for needle in [
            "  returns nil instead of raising an error for attribute-esque method calls\n",
            "      clones before a #deep_merge (FAILED - 1)\n",
            "            got: nil\n",
            "72 examples, 1 failure\n",
        ] {
            assert!(out.contains(needle), "{needle}: {out}");
        }
        for example in [
            "  returns the value of key 24\n",
            "  returns the value of key 26\n",
            "  logs a warning when overriding built-in methods\n",
        ] {
            assert!(!out.contains(example), "{example}: {out}");
        }
    }

    /// A failing test's captured output that goes behind a marker takes its banner along: the marker names the
    /// section (`(Captured stdout call)`) instead of a lone banner line above it.
    #[test]
    fn a_captured_section_that_goes_whole_takes_its_banner_along() {
        let mut text = String::from(
            "============================= test session starts ==============================\ncollected 240 items\n\n",
        );
        text.push_str(&".".repeat(60));
        text.push_str(
            "\n=================================== FAILURES ===================================\n",
        );
        for k in 0..40 {
            text.push_str(&format!(
                "_________________________________ test_table_{k} _________________________________\ntest/test_output.py:{}: in test_table_{k}\n    assert_equal(expected, result)\nE   AssertionError\n----------------------------- Captured stdout call -----------------------------\nExpected:\nname      age\n------  -----\nAlice      {k}\nBob        27\n\nGot:\nname      age\n------  -----\nAlice     {k}\nBob       27\n\n",
                100 + k
            ));
        }
        text.push_str("=========================== short test summary info ============================\nFAILED test/test_output.py::test_table_0 - AssertionError\n============================== 40 failed, 200 passed in 1.20s ==============================\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress_failing(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        let lines: Vec<&str> = out.lines().collect();
        assert!(out.contains(" (Captured stdout call)"), "{out}");
        for (a, b) in lines.iter().zip(lines.iter().skip(1)) {
            assert!(
                !(a.contains("Captured stdout call") && b.starts_with("<<ctxzip:")),
                "a banner alone above its marker: {out}"
            );
        }
        assert!(out.contains("E   AssertionError\n"), "{out}");
    }

    /// A TAP stream's passing results (tape, node-tap, `node --test`) whose names hold an error word (`ok 281
    /// throws an exception on invalid option`) stay for the floor, but bring no neighbours: those are more passing
    /// results. A failing result (`not ok 61`, no error word in it) stays with its YAML block, and so do prove's
    /// `#` diagnostics under one.
    #[test]
    fn a_tap_streams_passing_results_are_no_context_of_one_named_after_an_error() {
        let mut text = String::from("TAP version 13\n# parse()\n");
        for k in 1..=60 {
            text.push_str(&format!("ok {k} parses case {k}\n"));
            if k == 30 {
                text.push_str("ok 300 throws an exception on invalid option: null\n");
            }
            if k == 45 {
                // tape's headings, one per test (`grep -v '^ok '` leaves only them between failures).
                text.push_str("# parses nested arrays\n# throws an exception when depth exceeds the limit\n# parses sparse arrays\n");
            }
        }
        text.push_str("not ok 61 defaults to a depth of 5\n  ---\n    operator: deepEqual\n    expected: |-\n      { a: { b: 1 } }\n    actual: |-\n      { a: { b: 2 } }\n    at: Test.<anonymous> (test/parse.js:197:7)\n  ...\n");
        for k in 62..=120 {
            text.push_str(&format!("ok {k} stringifies case {k}\n"));
        }
        text.push_str("\n1..120\n# tests 120\n# pass  119\n# fail  1\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress_failing(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        for needle in [
            "ok 300 throws an exception on invalid option: null\n",
            "# throws an exception when depth exceeds the limit\n",
            "not ok 61 defaults to a depth of 5\n",
            "      { a: { b: 2 } }\n",
            "# fail  1\n",
        ] {
            assert!(out.contains(needle), "{needle}: {out}");
        }
        for neighbour in [
            "ok 29 parses case 29\n",
            "ok 31 parses case 31\n",
            "# parses nested arrays\n",
            "# parses sparse arrays\n",
        ] {
            assert!(!out.contains(neighbour), "{neighbour}: {out}");
        }
        // `node --test`'s block: the runner's frames under the test's own go, and so does the rest of a long dump
        // of the actual value (the error above it shows the difference).
        let frames: String = (0..12)
            .map(|k| format!("        Test.run{k} (node:internal/test_runner/test:{k}:25)\n"))
            .collect();
        let values: String = (0..20)
            .map(|k| format!("        {k}: '1.0.{k}'\n"))
            .collect();
        let node = format!(
            "{}    not ok 31 - sorts by precedence\n      ---\n      duration_ms: 2.3\n      error: |-\n        Expected values to be strictly deep-equal:\n        + '1.0.1'\n        - '1.0.0'\n      code: 'ERR_ASSERTION'\n      actual:\n{values}      stack: |-\n        TestContext.<anonymous> (test/compare.test.js:16:14)\n{frames}      ...\n{}",
            (1..=30)
                .map(|k| format!("    ok {k} - compares case {k}\n"))
                .collect::<String>(),
            (32..=70)
                .map(|k| format!("    ok {k} - compares case {k}\n"))
                .collect::<String>(),
        );
        let out = compress_failing(&node, &ctx, &mut Tally::default()).unwrap_or_default();
        for kept in [
            "        - '1.0.0'\n      code: 'ERR_ASSERTION'\n      actual:\n        0: '1.0.0'\n",
            "      stack: |-\n        TestContext.<anonymous> (test/compare.test.js:16:14)\n        Test.run0 (",
            "      ...\n",
        ] {
            assert!(out.contains(kept), "{kept}: {out}");
        }
        for dropped in ["        Test.run5 (", "        12: '1.0.12'\n"] {
            assert!(!out.contains(dropped), "{dropped}: {out}");
        }
        // A block cut off before its `...` ends at the next result: what follows is looked at as usual.
        let cut = format!(
            "{}not ok 31 - parses\n  ---\n  error: 'boom'\n{}",
            (1..=30)
                .map(|k| format!("ok {k} - case {k}\n"))
                .collect::<String>(),
            (32..=100)
                .map(|k| format!("ok {k} - case {k}\n"))
                .chain(std::iter::once(format!(
                    "Traceback (most recent call last):\n{}ValueError: late\n",
                    (1..=12)
                        .map(|k| format!("  File \"x.py\", line {k}, in f{k}\n    f{}()\n", k + 1))
                        .collect::<String>()
                )))
                .chain((101..=140).map(|k| format!("ok {k} - case {k}\n")))
                .collect::<String>(),
        );
        let out = compress_failing(&cut, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(
            out.contains("not ok 31 - parses\n  ---\n  error: 'boom'\n"),
            "{out}"
        );
        assert!(
            out.contains("  File \"x.py\", line 12, in f12\n    f13()\nValueError: late\n"),
            "{out}"
        );
        let prove = format!(
            "{}not ok 41 - rejects fail3.json\n#   at t/parse.t line 12.\n#          got: 'ok'\n#     expected: 'rejected'\n{}1..80\n",
            (1..=40)
                .map(|k| format!("ok {k} - parses pass{k}.json\n"))
                .collect::<String>(),
            (42..=80)
                .map(|k| format!("ok {k} - parses pass{k}.json\n"))
                .collect::<String>(),
        );
        let out = compress_failing(&prove, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(
            out.contains("not ok 41 - rejects fail3.json\n#   at t/parse.t line 12.\n#          got: 'ok'\n#     expected: 'rejected'\n"),
            "{out}"
        );
    }

    /// A logfmt log (Docker's, containerd's): each line is a record of its own, so an error record's context ends
    /// at the next one, as it does at a line that opens with a date.
    #[test]
    fn a_logfmt_records_context_ends_at_the_next_record() {
        let mut text = String::new();
        for k in 0..60 {
            text.push_str(&format!(
                "time=\"2026-12-05T07:44:43.0{k:02}Z\" level=info msg=\"loading plugin \\\"io.containerd.v1.p{k}\\\"...\" type=io.containerd.v1\n"
            ));
            if k == 30 {
                text.push_str("time=\"2026-12-05T07:44:43.031Z\" level=warning msg=\"failed to load plugin io.containerd.snapshotter.v1.devmapper\" error=\"devmapper not configured\"\n");
            }
        }
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(
            out.contains("failed to load plugin io.containerd.snapshotter.v1.devmapper"),
            "{out}"
        );
        for k in [31, 32, 33] {
            assert!(
                !out.contains(&format!("io.containerd.v1.p{k}\\")),
                "{k}: {out}"
            );
        }
    }

    /// pytest under xdist: a failing test's block opens with its banner and the worker that ran it.
    #[test]
    fn an_errors_context_ends_at_the_next_tests_banner() {
        let mut text = String::new();
        for k in 0..40 {
            text.push_str(&format!("tests/test_more.py::test_{k} PASSED\n"));
        }
        text.push_str(
            "=================================== FAILURES ===================================\n",
        );
        for (worker, name) in [
            "test_strict",
            "test_lenient",
            "test_2",
            "test_3",
            "test_4",
            "test_5",
        ]
        .iter()
        .enumerate()
        {
            text.push_str(&format!(
                "________________ ChunkedTests.{name} ________________\n[gw{worker}] linux -- Python 3.11.7 /work/venv/bin/python\n\nself = <tests.test_more.ChunkedTests testMethod={name}>\n\n    def {name}(self):\n>       self.assertEqual(list(chunked('ABCDE', 2)), ['AB', 'CD', 'E'])\nE       AssertionError: Lists differ for {name}\n\ntests/test_more.py:40: AssertionError\n"
            ));
        }
        text.push_str("=========================== short test summary info ============================\nFAILED tests/test_more.py::ChunkedTests::test_strict\n========================= 6 failed, 40 passed in 0.52s =========================\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress_failing(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        for needle in [
            "E       AssertionError: Lists differ for test_strict\n",
            "________________ ChunkedTests.test_lenient ________________\n",
            ">       self.assertEqual(list(chunked('ABCDE', 2)), ['AB', 'CD', 'E'])\n",
            "E       AssertionError: Lists differ for test_lenient\n",
        ] {
            assert!(out.contains(needle), "{needle}: {out}");
        }
        // The first test's worker line was only the context of the `FAILURES` banner (an error line).
        assert!(!out.contains("[gw0] linux"), "{out}");
    }

    #[test]
    fn a_table_tests_passing_cases_are_no_part_of_its_failure() {
        let mut text = String::from(
            "=== RUN   TestBasic\n--- PASS: TestBasic (0.00s)\n=== RUN   TestDecodeTable\n",
        );
        for k in 0..30 {
            text.push_str(&format!("=== RUN   TestDecodeTable/case_{k}\n"));
            if k == 7 {
                text.push_str("    mapstructure_test.go:2220: \"case 7\": unexpected error: 1 error(s) decoding:\n        \n        * VjsonUint64: unsupported type: uint64\n");
            }
        }
        text.push_str("--- FAIL: TestDecodeTable (0.00s)\n");
        for k in 0..30 {
            let verdict = if k == 7 { "FAIL" } else { "PASS" };
            text.push_str(&format!(
                "    --- {verdict}: TestDecodeTable/case_{k} (0.00s)\n"
            ));
        }
        for k in 0..40 {
            text.push_str(&format!(
                "=== RUN   TestWeak{k}\n--- PASS: TestWeak{k} (0.00s)\n"
            ));
        }
        text.push_str("FAIL\nexit status 1\nFAIL\tgithub.com/mitchellh/mapstructure\t0.012s\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        for needle in [
            "=== RUN   TestDecodeTable/case_7\n",
            "* VjsonUint64: unsupported type: uint64\n",
            "--- FAIL: TestDecodeTable (0.00s)\n",
            "    --- FAIL: TestDecodeTable/case_7 (0.00s)\n",
        ] {
            assert!(out.contains(needle), "{needle}: {out}");
        }
        for k in [12, 20, 29] {
            assert!(
                !out.contains(&format!("RUN   TestDecodeTable/case_{k}\n")),
                "{k}: {out}"
            );
            assert!(
                !out.contains(&format!("PASS: TestDecodeTable/case_{k} ")),
                "{k}: {out}"
            );
        }
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// AddressSanitizer's allocation stack reaches the faulting access's callers at other depths: they are shown once.
    /// The shadow-byte map and the legend every report prints after its summary are not kept as the run's end.
    #[test]
    fn a_sanitizers_shared_callers_and_shadow_legend_go_behind_markers() {
        let callers = [
            "yaml_parser_fetch_more_tokens src/scanner.c:847:14",
            "yaml_parser_parse_block_mapping_value src/parser.c:911:17",
            "yaml_parser_state_machine src/parser.c:270:20",
            "yaml_parser_parse src/parser.c:188:12",
            "main tests/run-parser.c:42:18",
        ];
        let mut text = String::from(
            "[1] Parsing 'long.yaml': =================================================================\n\
             ==2077==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x603000000088\n\
             WRITE of size 1 at 0x603000000088 thread T0\n    #0 0x55e1e176bdcb in yaml_parser_scan_flow_scalar src/scanner.c:3282:22\n",
        );
        for (k, c) in callers.iter().enumerate() {
            text.push_str(&format!("    #{} 0x55e1e17{k:05x} in {c}\n", k + 1));
        }
        text.push_str("\n0x603000000088 is located 0 bytes to the right of 24-byte region\nallocated by thread T0 here:\n");
        text.push_str("    #0 0x55e1e169a596 in __interceptor_realloc\n    #1 0x55e1e16d5759 in yaml_string_extend src/api.c:77:45\n");
        for (k, c) in callers.iter().enumerate() {
            text.push_str(&format!("    #{} 0x55e1e17{k:05x} in {c}\n", k + 2));
        }
        text.push_str("\nSUMMARY: AddressSanitizer: heap-buffer-overflow src/scanner.c:3282:22 in yaml_parser_scan_flow_scalar\n");
        text.push_str("Shadow bytes around the buggy address:\n");
        for k in 0..10 {
            text.push_str(&format!(
                "  0x0c067fff80{k}0: fa fa 00 00 00 fa fa fa 00 00 00 fa fa fa fd fd\n"
            ));
        }
        text.push_str("Shadow byte legend (one shadow byte represents 8 application bytes):\n");
        for name in [
            "Addressable",
            "Heap left redzone",
            "Freed heap region",
            "Stack left redzone",
            "Stack mid redzone",
            "Global redzone",
            "Poisoned by user",
            "Container overflow",
            "ASan internal",
        ] {
            text.push_str(&format!("  {name}:       fa\n"));
        }
        text.push_str("==2077==ABORTING\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert_eq!(
            out.matches("in main tests/run-parser.c:42:18").count(),
            1,
            "{out}"
        );
        assert!(out.contains("#1 0x55e1e16d5759 in yaml_string_extend src/api.c:77:45\n<<ctxzip:0123456789ab 6_lines_offloaded>> (the same stack frames as above)"), "{out}");
        assert!(
            !out.contains("Shadow byte legend") && !out.contains("redzone"),
            "{out}"
        );
        assert!(
            out.contains("(the sanitizer's shadow bytes and their legend)\n==2077==ABORTING"),
            "{out}"
        );
        assert!(
            out.contains("SUMMARY: AddressSanitizer") && out.ends_with("==2077==ABORTING\n"),
            "{out}"
        );
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// Valgrind reports one bug in a loop once per call site, over the same callers: each report's fault line, its
    /// own frames and the address it touched stay, and the callers a report above showed go behind one marker line.
    #[test]
    fn valgrind_reports_keep_their_fault_and_show_shared_callers_once() {
        let mut text = String::from(
            "==4242== Memcheck, a memory error detector\n==4242== Command: ./test_cast\n==4242== \n",
        );
        for k in 0..10 {
            text.push_str(&format!(
                "==4242== Invalid read of size 8\n==4242==    at 0x48615{k:02X}: lh_table_lookup (linkhash.c:{})\n",
                630 + k
            ));
            for (f, file) in [
                "json_object_add (json_object.c:555)",
                "json_tokener_parse_ex (json_tokener.c:1182)",
                "json_tokener_parse (json_tokener.c:216)",
                "main (test_cast.c:43)",
            ]
            .iter()
            .enumerate()
            {
                text.push_str(&format!("==4242==    by 0x4857C{f}E: {file}\n"));
            }
            text.push_str("==4242==  Address 0x4aa4638 is 8 bytes after a block of size 40 alloc'd\n==4242== \n");
        }
        for k in 0..30 {
            text.push_str(&format!("test_cast: case {k} parsed\n"));
        }
        text.push_str(
            "==4242== ERROR SUMMARY: 10 errors from 10 contexts (suppressed: 0 from 0)\n",
        );
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert_eq!(out.matches("Invalid read of size 8").count(), 10, "{out}");
        assert!(
            out.contains("at 0x4861509: lh_table_lookup (linkhash.c:639)\n"),
            "{out}"
        );
        assert_eq!(
            out.matches("by 0x4857C3E: main (test_cast.c:43)").count(),
            1,
            "{out}"
        );
        assert_eq!(
            out.matches("(the same stack frames as above)").count(),
            9,
            "{out}"
        );
        assert_eq!(
            out.matches("is 8 bytes after a block of size 40").count(),
            10,
            "{out}"
        );
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// A C++ error repeated at many call sites prints the same note under each: its first copy stays, later ones go
    /// behind a marker that says so, and every error line with its own source and caret stays.
    #[test]
    fn a_compilers_note_printed_again_is_shown_once() {
        let mut text = String::from("g++ -fPIC -Wall -c -o tinyxml2.o tinyxml2.cpp\n");
        for k in 0..12 {
            let line = 1100 + 10 * k;
            text.push_str(&format!(
                "tinyxml2.cpp: In member function \u{2018}virtual bool tinyxml2::XMLText::Equal{k}(const tinyxml2::XMLNode*) const\u{2019}:\n\
                 tinyxml2.cpp:{line}:55: error: passing \u{2018}const tinyxml2::XMLText\u{2019} as \u{2018}this\u{2019} argument discards qualifiers [-fpermissive]\n \
                 {line} |     return ( text && XMLUtil::StringEqual( text->Value(), Value{k}() ) );\n      \
                 |                                            ~~~~~~~~~~~^~\n\
                 tinyxml2.h:747:17: note:   in call to \u{2018}const char* tinyxml2::XMLNode::Value()\u{2019}\n  \
                 747 |     const char* Value();\n      \
                 |                 ^~~~~\n"
            ));
        }
        text.push_str("make: *** [<builtin>: tinyxml2.o] Error 1\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert_eq!(out.matches("note:   in call to").count(), 1, "{out}");
        assert_eq!(out.matches("(the same note as above)").count(), 11, "{out}");
        assert_eq!(out.matches(": error: passing").count(), 12, "{out}");
        assert!(
            out.contains(
                " 1210 |     return ( text && XMLUtil::StringEqual( text->Value(), Value11() ) );\n"
            ),
            "{out}"
        );
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// A Rust panic in an async task: the program's frame stays with the calls around it, the scheduler's fifty
    /// frames go behind one marker that names their crates, and the floor's `std::panicking` frames among them
    /// follow it.
    #[test]
    fn a_rust_backtrace_keeps_the_programs_frames_and_names_the_runtimes() {
        let std_lib = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library";
        let tokio = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src";
        let mut text = String::from(
            "2026-12-05T01:00:00Z  INFO starting job id=1\n\nthread 'tokio-rt-worker' panicked at src/main.rs:32:8:\nattempt to divide by zero\nstack backtrace:\n",
        );
        text.push_str(&format!("   0: __rustc::rust_begin_unwind\n             at {std_lib}/std/src/panicking.rs:689:5\n"));
        text.push_str(&format!("   1: core::panicking::panic_fmt\n             at {std_lib}/core/src/panicking.rs:80:14\n"));
        text.push_str("   2: asyncsvc::run_job::{{closure}}\n             at ./src/main.rs:32:8\n");
        for k in 3..50 {
            if k == 20 {
                text.push_str(&format!("  20: std::panicking::catch_unwind\n             at {std_lib}/std/src/panicking.rs:544:19\n"));
                continue;
            }
            text.push_str(&format!(
                "  {k}: tokio::runtime::task::harness::Harness<T,S>::poll_{k}\n             at {tokio}/runtime/task/harness.rs:{}:27\n",
                100 + k
            ));
        }
        text.push_str("note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n");
        for i in 0..5 {
            text.push_str(&format!("2026-12-05T01:00:{i:02}Z  INFO job ok id={i}\n"));
        }
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(
            out.contains(
                "   2: asyncsvc::run_job::{{closure}}\n             at ./src/main.rs:32:8\n"
            ),
            "{out}"
        );
        // The call above the program's frame and the one below it stay.
        assert!(out.contains("   1: core::panicking::panic_fmt\n"), "{out}");
        assert!(
            out.contains("  3: tokio::runtime::task::harness::Harness<T,S>::poll_3\n"),
            "{out}"
        );
        // The scheduler's frames go behind one marker naming their crate; the floor's frame among them follows it.
        assert!(!out.contains("poll_30"), "{out}");
        assert!(
            out.contains(
                "lines_offloaded>> (frames in tokio)\n  20: std::panicking::catch_unwind\n"
            ),
            "{out}"
        );
        assert_eq!(out.matches("(frames in ").count(), 1, "{out}");
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// An HTTP client's error printed by Node: the error and its frames, then the request, the socket and its timers
    /// member after member. Members with an error word in their key stay, as the floor says, but bring no
    /// neighbours: those are other members.
    #[test]
    fn a_printed_objects_members_with_error_words_keep_no_neighbours() {
        let mut text = String::from(
            "AxiosError: Request failed with status code 404\n    at settle (file:///app/node_modules/axios/lib/core/settle.js:19:12)\n    at async syncUser (file:///app/sync.mjs:6:20) {\n  isAxiosError: true,\n  request: <ref *1> ClientRequest {\n",
        );
        for i in 0..40 {
            text.push_str(&format!("    _field{i}: {i},\n    error: [Function: onError{i}],\n    _events{i}: [Object],\n    timeout{i}: 4000,\n    _idle{i}: [Function: onTimeout],\n    _readable{i}: true,\n"));
        }
        text.push_str("  },\n  status: 404\n}\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(
            out.contains("AxiosError: Request failed with status code 404\n"),
            "{out}"
        );
        for i in 0..40 {
            assert!(
                out.contains(&format!("    error: [Function: onError{i}],\n")),
                "{out}"
            );
        }
        // The members around the floor's line are not kept as its context.
        assert!(
            !out.contains("_field20:") && !out.contains("timeout20:"),
            "{out}"
        );
        assert!(super::super::keeps_floor(&text, &out));
        assert!(
            out.len() * 10 < text.len() * 6,
            "{} of {}",
            out.len(),
            text.len()
        );
    }
}

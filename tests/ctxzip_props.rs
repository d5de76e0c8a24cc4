//! Property tests of ctxzip over arbitrary strings, line-shaped texts and JSON values (compact and pretty):
//! compress never panics; a result is strictly shorter, carries only markers of `hash_of(original)`, no
//! partial marker, is deterministic, keeps every error line of a text verbatim, and stays valid JSON when the
//! input was JSON. The same holds for an output compressed in the context of an earlier one it partly repeats, for
//! configuration files that are mostly comments, and for TAP streams.

use std::collections::HashSet;

use ctxgate::ctxzip::repeats::{Earlier, Seen, find};
use ctxgate::ctxzip::{
    Kind, Options, compress, compress_in_context, contains_marker, find_markers, hash_of,
    is_floor_line, keeps_floor,
};
use proptest::prelude::*;
use serde_json::Value;

fn check(original: &str, opts: &Options) -> Result<(), TestCaseError> {
    let first = compress(original, opts);
    let again = compress(original, opts);
    prop_assert_eq!(&first, &again, "not deterministic");
    let Some(c) = first else {
        return Ok(());
    };
    prop_assert!(c.text.len() < original.len(), "not smaller");
    prop_assert!(
        !original.contains("<<ctxzip:"),
        "compressed a text that had a marker"
    );
    let hash = hash_of(original);
    prop_assert_eq!(&c.hash, &hash);
    let markers = find_markers(&c.text);
    prop_assert!(!markers.is_empty() && contains_marker(&c.text));
    prop_assert!(markers.iter().all(|(h, _)| *h == hash), "foreign marker");
    prop_assert_eq!(
        c.text.matches("<<ctxzip:").count(),
        markers.len(),
        "partial marker"
    );
    // JSON in, JSON out (a JSON body behind an HTTP head or a client's trace is JSON only between them).
    if matches!(c.kind, Kind::JsonArray | Kind::JsonObject)
        && serde_json::from_str::<serde::de::IgnoredAny>(original).is_ok()
    {
        prop_assert!(
            serde_json::from_str::<Value>(&c.text).is_ok(),
            "invalid JSON out"
        );
    }
    // The error floor, for every kind: each short line with an error word is a whole line of the result.
    let out: HashSet<&str> = c
        .text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    for line in original
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| is_floor_line(l))
    {
        prop_assert!(out.contains(line), "error line lost: {:?}", line);
    }
    prop_assert!(keeps_floor(original, &c.text));
    // Compressing again changes nothing: the result already names its original.
    prop_assert_eq!(compress(&c.text, opts), None);
    Ok(())
}

fn options() -> impl Strategy<Value = Options> {
    (
        prop::collection::vec("[a-z_]{3,8}", 0..3),
        prop::collection::vec("[a-zA-Z]{2,6}", 0..2),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(query, keep_patterns, compress_code, notes, viewed_source, fetched)| Options {
                query,
                keep_patterns,
                compress_code,
                notes,
                viewed_source,
                fetched,
            },
        )
}

/// Lines of the shapes the compressors look for, mixed with noise.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,40}",
        1 => "[A-Za-z0-9 .:/_-]{0,60}",
        1 => Just("error: could not compile `demo`".to_string()),
        1 => "(WARN|ERROR|INFO) [a-z ]{0,20}(timeout|failed|ok)?",
        2 => "[a-z_/]{1,12}\\.rs:[0-9]{1,4}:[ a-z(){};]{0,40}",
        1 => Just("@@ -1,3 +1,4 @@".to_string()),
        1 => "[+ -][a-z ]{0,30}",
        1 => Just("diff --git a/x.rs b/x.rs".to_string()),
        1 => "    (fn|def|let|return) [a-z(){}:;]{0,30}",
        1 => "\\PC{0,60}",
        1 => "[a-z]{300,2000}",
        1 => Just("<<ctxzip:abc".to_string()),
        1 => "[a-z_ ]{0,12}(error|Fail|EXCEPTION|fatal|panic|Traceback)[a-zA-Z_ .]{0,12}",
        1 => Just("Traceback (most recent call last):".to_string()),
        // Whole blocks, so that the same traceback, stack or unittest failure header comes again.
        1 => Just("Traceback (most recent call last):\n  File \"w.py\", line 8, in run\n    self.fetch()\n  File \"w.py\", line 12, in fetch\n    raise OSError(url)\nOSError: timed out".to_string()),
        1 => Just("java.io.IOException: reset\n\tat a.B.c(B.java:1)\n\tat a.B.fail(B.java:2)\n\t... 3 more".to_string()),
        1 => Just(format!("{}\nFAIL: test_x (app.tests.T)\n{}", "=".repeat(70), "-".repeat(70))),
        1 => Just("tests/test_a.py::test_fail_silently PASSED".to_string()),
        // The region finders' other shapes: a recursion's cycle, Go's goroutines, numbered failures, a sanitizer's
        // report, a code frame; and a failing exit, so that the regions apply.
        1 => (2usize..40).prop_map(|copies| format!(
            "Traceback (most recent call last):\n  File \"m.py\", line 3, in <module>\n    run()\n{}RecursionError: \
             maximum recursion depth exceeded",
            "  File \"t.py\", line 9, in visit\n    return walk(n)\n  File \"t.py\", line 14, in walk\n    visit(c)\n"
                .repeat(copies)
        )),
        1 => (0u32..50).prop_map(|n| format!(
            "=== RUN   TestA{n}\n    a_test.go:{n}: got {n}, want 1\n--- FAIL: TestA{n} (0.00s)"
        )),
        // Failures whose stacks share library frames around a frame of their own.
        1 => (0u32..50).prop_map(|n| format!(
            "Traceback (most recent call last):\n  File \"case.py\", line 60, in run\n    yield\n  File \"case.py\", line \
             67, in call\n    method()\n  File \"t.py\", line {n}, in test_{n}\n    check()\n  File \"case.py\", line 912, \
             in assertEqual\n    self.fail(msg)\n  File \"case.py\", line 753, in fail\n    raise self.failureException(msg)\n\
             AssertionError: {n} != 1"
        )),
        1 => (0u32..50).prop_map(|n| format!(
            "java.lang.AssertionError: case {n}\n\tat org.junit.Assert.fail(Assert.java:88)\n\tat org.junit.Assert.\
             assertTrue(Assert.java:41)\n\tat a.T.test{n}(T.java:{n})\n\tat org.junit.Runner.run(Runner.java:9)\n\tat \
             org.junit.Runner.runAll(Runner.java:20)\n\tat org.junit.Main.main(Main.java:3)"
        )),
        1 => Just("panic: boom\n\ngoroutine 1 [running]:\nmain.f(0x1)\n\t/a.go:3 +0x1\nmain.main()\n\t/a.go:9 +0x2".to_string()),
        1 => "goroutine [0-9]{1,3} \\[select\\]:\nmain.worker\\(0x[0-9a-f]{1,4}\\)\n\t/w.go:7 \\+0x1f",
        1 => Just("Failures:\n\n  1) Cart total\n     Failure/Error: expect(t).to eq(9)\n\n       expected: 9\n            got: 7\n".to_string()),
        1 => Just("==7==ERROR: AddressSanitizer: heap-use-after-free\n    #0 0x1 in f a.c:1\n\nfreed by thread T0 here:\n    \
                   #0 0x2 in free\n\nSUMMARY: AddressSanitizer: heap-use-after-free a.c:1 in f".to_string()),
        1 => Just("    > 41 |   expect(x).toBe(1);\n         |          ^".to_string()),
        1 => Just("Process exited with code 1".to_string()),
        // TAP: a pass named after an error, a failure with its YAML block (cut off before its `...` at times).
        1 => (0u32..500).prop_map(|n| format!("ok {n} throws an error on bad input")),
        1 => (0u32..500, any::<bool>()).prop_map(|(n, closed)| format!(
            "not ok {n} - parses\n  ---\n  error: 'boom'\n  expected: 1\n  stack: |-\n    f (a.js:1:1)\n    g (b.js:2:2)\n    h (c.js:3:3){}",
            if closed { "\n  ..." } else { "" }
        )),
        1 => "[\\[\\]{}\",:0-9a-z ]{0,40}",
        // Lines that begin with no word but each report a pass; a one-file grep's numbered hits; an Ansible run's
        // banners and results.
        1 => (0u32..60).prop_map(|n| format!("[12:21:{n:02}] t/{n:02}_case.t ......... ok       68 ms")),
        1 => (1u32..900).prop_map(|n| format!("{n}:    if (!emitter->indent) return {n};")),
        1 => "(PLAY|TASK) \\[[a-z ]{1,20}\\] \\*{10,40}",
        1 => (0u32..9).prop_map(|n| format!("ok: [web-{n}] => {{\"changed\": false, \"mode\": \"0755\"}}")),
        // A service's log of crashes, each with its goroutine dump; Jest's `console.log` frames under a blank line;
        // a build's diagnostics listed again under its verdict; Ruby's Logger records; Dart's reporter lines.
        1 => (140u32..150).prop_map(|n| format!(
            "svc - panic - key not found\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:{n} +0xe55\n"
        )),
        1 => Just("  console.log\n    SIMULATE TX KEYS: [ '_tx' ]\n\n      at MockProvider.<anonymous> (t.test.ts:42:17)\n".to_string()),
        1 => (0u32..30).prop_map(|n| format!("C:\\src\\App.cs({n},5): error CS0106: The modifier 'private' is not valid [C:\\src\\App.csproj]")),
        1 => Just("Build FAILED.".to_string()),
        1 => (0u32..60).prop_map(|n| format!("E, [2026-06-11T21:47:17.{n:06} #1] ERROR -- : Failed to parse JSON body")),
        1 => (0u32..60).prop_map(|n| format!("I, [2026-06-11T21:47:17.{n:06} #1]  INFO -- : Successfully authenticated")),
        1 => (0u32..200).prop_map(|n| format!("00:03 +{n}: test/icons_test.dart: fails over on error {n}")),
        1 => Just("test result: FAILED. 1 passed; 1 failed".to_string()),
    ]
}

/// Lines of a configuration file that is mostly comments, mixed with noise (about a quarter of the texts made of
/// them read as configuration files: the noise decides).
fn config_line() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "#[a-z ]{0,50}",
        4 => "#[a-z_]{2,12} = [a-z0-9']{1,10}",
        1 => "; [a-z ]{0,30}",
        2 => "[a-z_]{2,12} = [a-z0-9']{1,10}",
        1 => Just(String::new()),
        1 => "# [a-z ]{0,12}(error|fail|fatal|panic)[a-z ]{0,12}",
        1 => "\\[[a-z]{2,8}\\]",
        1 => "\\PC{0,30}",
    ]
}

fn text() -> impl Strategy<Value = String> {
    (prop::collection::vec(line(), 0..400), any::<bool>()).prop_map(|(lines, nl)| {
        let mut t = lines.join("\n");
        if nl {
            t.push('\n');
        }
        t
    })
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "\\PC{0,24}".prop_map(Value::String),
        prop_oneof![
            Just("failed"),
            Just("ok"),
            Just("connection refused by peer"),
            Just("timeout")
        ]
        .prop_map(|s| Value::String(s.to_string())),
        "([a-z ]{0,60}\n){5,40}".prop_map(Value::String),
        "[a-z0-9]{600,3000}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 600, 60, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..60).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,8}", inner), 0..40)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A flat record, the usual row of a JSON list answer.
fn row() -> impl Strategy<Value = Value> {
    prop::collection::vec(("[a-z_]{1,8}", json_leaf()), 1..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

/// An API answer's shape: a list of records made from one template with a few members changed per row, each
/// carrying some of a few shared objects (an author, a repository) that repeat across and within rows.
fn alike_records() -> impl Strategy<Value = Value> {
    let shared = prop::collection::vec(json_value(), 1..4);
    let template = prop::collection::vec(("[a-z_]{1,8}", json_leaf()), 4..16);
    let changes = prop::collection::vec(
        prop::collection::vec((0usize..16, json_leaf(), 0usize..4, "[a-z_]{1,8}"), 0..4),
        2..12,
    );
    (shared, template, changes).prop_map(|(shared, template, changes)| {
        let rows: Vec<Value> = changes
            .into_iter()
            .map(|row_changes| {
                let mut row: serde_json::Map<String, Value> = template.iter().cloned().collect();
                for (at, leaf, object, key) in row_changes {
                    if let Some((k, _)) = template.get(at % template.len()) {
                        row.insert(k.clone(), leaf);
                    }
                    row.insert(key, shared[object % shared.len()].clone());
                }
                Value::Object(row)
            })
            .collect();
        // The same rows as a list and as a map keyed by data (a registry's versions), small or large.
        let by_name: serde_json::Map<String, Value> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("1.{i}.0"), r.clone()))
            .collect();
        serde_json::json!({"total": rows.len(), "owner": shared[0].clone(), "items": rows, "versions": by_name})
    })
}

/// An HTTP response as a client printed it: the bare body (`curl -s`: JSON, lines, a page), `curl -i`'s head, or `curl -sv … 2>&1`'s trace (chatter, request and
/// response heads) and its closing line, which follows the body's last byte when that is no newline.
fn http_exchange() -> impl Strategy<Value = String> {
    let body = prop_oneof![
        json_value().prop_map(|v| serde_json::to_string(&v).unwrap_or_default()),
        json_value().prop_map(|v| serde_json::to_string_pretty(&v).unwrap_or_default()),
        text(),
        text().prop_map(|t| format!("<!DOCTYPE html>\n<html>\n<style>\n{t}\n</style>\n</html>\n")),
    ];
    let chatter = prop::collection::vec(
        prop_oneof![
            Just("{ [5 bytes data]".to_string()),
            Just("* TLSv1.3 (IN), TLS handshake, Finished (20):".to_string()),
            Just("* TLS session ticket failed to verify".to_string()),
            "\\* [A-Za-z0-9 .:/_-]{0,50}",
        ],
        0..60,
    );
    (body, chatter, 0..3u8, any::<bool>()).prop_map(|(body, chatter, form, closing)| {
        match form {
            0 => return body,
            1 => return format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{body}"),
            _ => {}
        }
        let mut t = String::from("*   Trying 127.0.0.1:8080...\n");
        for line in chatter {
            t.push_str(&line);
            t.push('\n');
        }
        t.push_str("> GET /v1/items HTTP/1.1\n> Host: localhost\n> \n< HTTP/1.1 200 OK\n< \n");
        t.push_str(&body);
        if closing {
            t.push_str("* Connection #0 to host localhost left intact\n");
        }
        t
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn http_exchanges(t in http_exchange(), opts in options()) {
        check(&t, &opts)?;
    }

    #[test]
    fn alike_records_and_repeated_objects(v in alike_records(), opts in options()) {
        let compact = serde_json::to_string(&v).unwrap_or_default();
        let pretty = serde_json::to_string_pretty(&v).unwrap_or_default();
        check(&compact, &opts)?;
        check(&pretty, &opts)?;
    }

    #[test]
    fn arbitrary_strings(s in any::<String>(), opts in options()) {
        check(&s, &opts)?;
    }

    #[test]
    fn arbitrary_unicode_text(s in "\\PC{0,4000}", opts in options()) {
        check(&s, &opts)?;
    }

    #[test]
    fn line_shaped_texts(t in text(), opts in options()) {
        check(&t, &opts)?;
    }

    #[test]
    fn commented_configurations(lines in prop::collection::vec(config_line(), 30..300), opts in options()) {
        check(&lines.join("\n"), &opts)?;
    }

    #[test]
    fn json_values(v in json_value(), opts in options()) {
        let compact = serde_json::to_string(&v).unwrap_or_default();
        let pretty = serde_json::to_string_pretty(&v).unwrap_or_default();
        check(&compact, &opts)?;
        check(&pretty, &opts)?;
    }

    #[test]
    fn outputs_that_repeat_earlier_ones(
        earlier in text(),
        cuts in prop::collection::vec((0usize..400, 0usize..60, prop::collection::vec(line(), 0..4)), 1..8),
        opts in options(),
        by_kind in any::<bool>(),
    ) {
        // The new output: slices of the earlier one with new lines between them.
        let lines: Vec<&str> = earlier.split('\n').collect();
        let mut new = Vec::new();
        for (from, len, fresh) in &cuts {
            let from = (*from).min(lines.len());
            let to = (from + len).min(lines.len());
            new.extend(lines[from..to].iter().map(|l| (*l).to_string()));
            new.extend(fresh.iter().cloned());
        }
        let new = new.join("\n");
        let seen = Seen::new(vec![Earlier { ordinal: 0, label: "call_1", text: &earlier }]);
        let repeats = find(&new, 1, &seen, &opts);
        let first = compress_in_context((&new, &hash_of(&new)), &opts, by_kind, repeats.as_ref().map(|r| (r, &seen)));
        let again = compress_in_context((&new, &hash_of(&new)), &opts, by_kind, repeats.as_ref().map(|r| (r, &seen)));
        prop_assert_eq!(&first, &again, "not deterministic");
        if let Some(c) = first {
            prop_assert!(c.text.len() < new.len(), "not smaller");
            let markers = find_markers(&c.text);
            prop_assert!(!markers.is_empty());
            prop_assert!(markers.iter().all(|(h, _)| *h == hash_of(&new)), "foreign marker");
            prop_assert_eq!(c.text.matches("<<ctxzip:").count(), markers.len(), "partial marker");
            prop_assert!(keeps_floor(&new, &c.text), "error line lost");
            prop_assert_eq!(compress(&c.text, &opts), None);
        }
    }

    #[test]
    fn json_rows_with_errors_survive(rows in prop::collection::vec(row(), 20..120), at in 0usize..20) {
        let error_row = serde_json::json!({"status": "failed", "message": "connection refused"});
        let mut rows = rows;
        rows.insert(at, error_row.clone());
        let text = serde_json::to_string_pretty(&Value::Array(rows)).unwrap_or_default();
        check(&text, &Options::default())?;
        if let Some(c) = compress(&text, &Options::default()) {
            let out: Value = serde_json::from_str(&c.text).unwrap_or_default();
            prop_assert!(out.as_array().is_some_and(|a| a.contains(&error_row)), "error row lost");
        }
    }
}

/// Inputs that would be quadratic or overflow a recursive parser in a naive implementation finish quickly.
#[test]
fn pathological_inputs_stay_linear() {
    let opts = Options {
        compress_code: true,
        query: vec!["needle".into()],
        keep_patterns: vec!["zz".into()],
        notes: false,
        viewed_source: false,
        fetched: false,
    };
    let unclosed = "pub fn f(x: u32) {\n    let y = x;\n".repeat(20_000);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_ok = format!("{}1{}", "[{\"a\":".repeat(60), "}]".repeat(60));
    let one_line = "error ".repeat(200_000);
    let same_errors = "error: boom\n".repeat(100_000);
    let distinct_errors: String = (0..50_000).map(|i| format!("error: boom {i}\n")).collect();
    let python = (0..3000)
        .map(|i| format!("{}def f{i}(x):\n", " ".repeat(i % 200)))
        .collect::<String>();
    for input in [
        unclosed,
        deep,
        deep_ok,
        one_line,
        same_errors,
        distinct_errors,
        python,
    ] {
        let c = compress(&input, &opts);
        assert!(c.as_ref().is_none_or(|c| c.text.len() < input.len()));
    }
}

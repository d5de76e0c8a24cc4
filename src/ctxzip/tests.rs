//! Unit tests for [`super`]: what the entry point does before and around the compressors — an exec header split
//! off, an HTTP response's head kept, a commit's patch taken for a diff, trivial inputs left alone, the agent's notes cut to a head and tail — and
//! that a big log keeps its errors and compresses the same way every time.

use super::envelope::{split, split_exec_header, split_http_head};
use super::*;

#[test]
fn exec_header_is_split_off() {
    let t = "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n[1,2]";
    assert_eq!(split_exec_header(t).1, "[1,2]");
    assert_eq!(split_exec_header("Output:\nx").1, "Output:\nx");
    assert_eq!(
        split_exec_header("hello\nOutput:\nx").1,
        "hello\nOutput:\nx"
    );
}

#[test]
fn a_web_page_fetched_with_its_headers_is_no_source_to_keep_verbatim() {
    let mut page = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n    <style>\n");
    for i in 0..150 {
        page.push_str(&format!(
            "        .card-{i} {{\n            margin: {i}px;\n            padding: 4px;\n        }}\n"
        ));
    }
    page.push_str("    </style>\n</head>\n<body>\n    <h1>Transfer money</h1>\n</body>\n</html>\n");
    assert_eq!(detect(&page), Kind::Code, "a page's CSS reads as source");
    let response =
        format!("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n{page}");
    let c = compress(&response, &Options::default());
    assert!(c.is_some(), "a fetched page went verbatim");
    let Some(c) = c else { return };
    assert!(c.text.starts_with(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<!DOCTYPE html>"
    ));
    assert!(c.text.contains("</html>"));
    assert!(c.text.len() * 4 < response.len());
    // The same page read from a file is source, and stays whole.
    assert!(compress(&page, &Options::default()).is_none());
}

#[test]
fn an_http_response_keeps_its_head_and_compresses_its_body() {
    let rows: Vec<String> = (0..300)
        .map(|i| format!("{{\"id\":{i},\"name\":\"item {i}\",\"state\":\"open\"}}"))
        .collect();
    let text = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: 42\r\n\r\n[{}]",
        rows.join(",")
    );
    assert_eq!(split_http_head(&text).0.lines().count(), 4);
    let c = compress(&text, &Options::default());
    assert!(c.is_some());
    let Some(c) = c else { return };
    assert_eq!(c.kind, Kind::JsonArray);
    assert!(c.text.starts_with(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: 42\r\n\r\n["
    ));
    let body = &c.text[split_http_head(&c.text).0.len()..];
    assert!(serde_json::from_str::<serde_json::Value>(body).is_ok());
    assert_eq!(split_http_head("no head"), ("", "no head"));
}

/// What `curl -sv URL 2>&1` prints around a body: the connection and TLS chatter, the request and response heads.
fn curl_trace(host: &str) -> String {
    let mut t = format!(
        "*   Trying 203.0.113.80:443...\n* Connected to {host} (203.0.113.80) port 443 (#0)\n"
    );
    t.push_str("* ALPN: offers h2,http/1.1\n} [5 bytes data]\n* TLSv1.3 (OUT), TLS handshake, Client hello (1):\n");
    for step in [
        "Server hello (2)",
        "Encrypted Extensions (8)",
        "Certificate (11)",
        "CERT verify (15)",
        "Finished (20)",
    ] {
        t.push_str(&format!(
            "{{ [122 bytes data]\n* TLSv1.3 (IN), TLS handshake, {step}:\n"
        ));
    }
    t.push_str(
        "* SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384\n* ALPN: server accepted h2\n",
    );
    t.push_str(&format!(
        "* Server certificate:\n*  subject: CN={host}\n*  SSL certificate verify ok.\n"
    ));
    t.push_str(&format!(
        "}} [5 bytes data]\n> GET /api/items HTTP/2\n> Host: {host}\n> accept: */*\n> \n"
    ));
    t.push_str("{ [5 bytes data]\n< HTTP/2 200 \n< content-type: application/json\n< \n{ [8086 bytes data]\n");
    t
}

#[test]
fn a_fetched_html_page_is_compressed_and_any_other_stays_verbatim() {
    // A page whose inline stylesheet and script read as source: what `curl -s URL` or a fetch tool returns.
    let mut page = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<title>Coverage</title>\n<style>\n",
    );
    for i in 0..120 {
        page.push_str(&format!(
            ".files-list__file_{i} {{\n  background: #cfc;\n  padding: {i}px;\n}}\n"
        ));
    }
    page.push_str("</style>\n</head>\n<body>\n<script>\n");
    for i in 0..80 {
        page.push_str(&format!(
            "function render{i}(node) {{\n  return node.children[{i}];\n}}\n"
        ));
    }
    page.push_str("</script>\n</body>\n</html>\n");
    assert_eq!(detect(&page), Kind::Code);
    let fetched = Options {
        fetched: true,
        ..Options::default()
    };
    let c = compress(&page, &fetched);
    assert!(c.is_some(), "a fetched page was left verbatim");
    let Some(c) = c else { return };
    assert_eq!(c.kind, Kind::Lines);
    assert!(c.text.len() < page.len() / 4, "{}", c.text);
    // The same text shown as a file (`cat index.html`, a read tool), or by a call that says neither, is source.
    let viewed = Options {
        viewed_source: true,
        ..Options::default()
    };
    assert!(compress(&page, &viewed).is_none());
    assert!(compress(&page, &Options::default()).is_none());
}

#[test]
fn a_verbose_trace_is_shortened_and_its_body_compressed_as_what_it_is() {
    let rows: Vec<String> = (0..300)
        .map(|i| format!("{{\"id\":{i},\"name\":\"item {i}\",\"state\":\"open\"}}"))
        .collect();
    let trace = curl_trace("api.example.com");
    // The body has no newline at its end, so curl's closing line follows its last byte.
    let closing = "* Connection #0 to host api.example.com left intact\n";
    let text = format!("{trace}[{}]{closing}", rows.join(","));
    let c = compress(&text, &Options::default());
    assert!(c.is_some(), "not compressed");
    let Some(c) = c else { return };
    assert_eq!(c.kind, Kind::JsonArray, "{}", c.text);
    // The request and response lines and the host stay; the handshake chatter goes behind markers.
    for kept in [
        "* Connected to api.example.com",
        "> GET /api/items HTTP/2",
        "< HTTP/2 200 ",
        "< content-type",
    ] {
        assert!(
            c.text.lines().any(|l| l.starts_with(kept)),
            "{kept}: {}",
            c.text
        );
    }
    assert!(
        !c.text.contains("TLS handshake") && !c.text.contains("bytes data"),
        "{}",
        c.text
    );
    // The body between the trace and the closing line is still one JSON document, shortened.
    let body_start = c.text.find("< \n").map(|at| at + 3).unwrap_or(0);
    let body_start = body_start + c.text[body_start..].find('[').unwrap_or(0);
    let body_end = c.text.len() - closing.len();
    assert!(c.text.ends_with(closing), "{}", c.text);
    let body = &c.text[body_start..body_end];
    assert!(
        serde_json::from_str::<serde_json::Value>(body).is_ok(),
        "{body}"
    );
    assert!(body.len() < rows.join(",").len() / 4, "{body}");
    // A body too small to shorten keeps the trace shortened around it.
    let small = format!("{trace}{{\"ok\": true}}\n");
    let c = compress(&small, &Options::default());
    assert!(c.is_some(), "small: not compressed");
    let Some(c) = c else { return };
    let expected_end = format!(
        "< \n<<ctxzip:{} 1_lines_offloaded>>\n{{\"ok\": true}}\n",
        c.hash
    );
    assert!(c.text.ends_with(&expected_end), "{}", c.text);
    assert!(c.text.contains("\n> GET /api/items HTTP/2\n"), "{}", c.text);
    assert!(c.text.len() < small.len() / 2, "{}", c.text);
}

#[test]
fn a_trace_keeps_its_error_lines_and_only_a_trace_with_an_answer_counts() {
    // An error word in the chatter stays, as the exact line.
    let trace = curl_trace("api.example.com").replace(
        "* ALPN: server accepted h2\n",
        "* ALPN: server accepted h2\n* TLS session ticket failed to verify, falling back\n",
    );
    let text = format!("{trace}{}", "{\"ok\": true}\n".repeat(200));
    let c = compress(&text, &Options::default());
    assert!(c.is_some(), "not compressed");
    let Some(c) = c else { return };
    assert!(keeps_floor(&text, &c.text), "{}", c.text);
    assert!(
        c.text
            .contains("\n* TLS session ticket failed to verify, falling back\n"),
        "{}",
        c.text
    );
    // Bullets and quotes that never show a response are no trace.
    let notes = "* first point\n> a quote\n* second point\n";
    assert_eq!(split(notes).head, "");
    let unanswered = curl_trace("h").replace("< HTTP/2 200 \n", "");
    assert_eq!(split(&unanswered).head, "");
}

/// `git show` and `git log -p`: the commit's header and message come first, then the patch, whose every
/// changed line stays (it used to be taken for plain lines, and most `+`/`-` lines went behind the marker).
#[test]
fn a_commit_with_its_patch_keeps_every_changed_line() {
    let mut text = String::from(
        "commit 3f2a9c1b7d5e8f0a1b2c3d4e5f60718293a4b5c6\nAuthor: Ada <ada@example.com>\nDate:   Mon Nov 30 10:00:00 2026 +0100\n\n    Fix retry handling in the sync client\n\n",
    );
    let mut changed = Vec::new();
    for f in 0..6 {
        text.push_str(&format!("diff --git a/src/c{f}.py b/src/c{f}.py\nindex 1a2b3c4..5d6e7f8 100644\n--- a/src/c{f}.py\n+++ b/src/c{f}.py\n"));
        for h in 0..3 {
            text.push_str(&format!(
                "@@ -{0},12 +{0},13 @@ def handler_{h}(self):\n",
                10 + h * 40
            ));
            for k in 0..5 {
                text.push_str(&format!("     before_{k} = self.step_{k}()\n"));
            }
            for line in [
                format!("-    limit = {f}{h}00"),
                format!("+    limit = {f}{h}50"),
                format!("+    self.retries_{f}_{h} = 0"),
            ] {
                text.push_str(&line);
                text.push('\n');
                changed.push(line);
            }
            for k in 0..5 {
                text.push_str(&format!("     after_{k} = self.done_{k}()\n"));
            }
        }
    }
    let c = compress(&text, &Options::default());
    assert!(c.is_some());
    let Some(c) = c else { return };
    assert_eq!(c.kind, Kind::Diff);
    assert!(
        c.text
            .starts_with("commit 3f2a9c1b7d5e8f0a1b2c3d4e5f60718293a4b5c6\n")
    );
    for line in &changed {
        assert!(
            c.text.lines().any(|l| l == line),
            "{line} missing:\n{}",
            c.text
        );
    }
    assert!(c.text.len() * 3 < text.len() * 2);
}

/// A failing command printed a run, whatever share of it is source: a pytest session shows each failing test's
/// whole function, and that output is compressed around its errors, not kept as a file view.
#[test]
fn a_failing_run_that_shows_source_is_not_a_file_view() {
    let mut run = String::from("<returncode>1</returncode>\n<output>\n");
    for i in 0..30 {
        run.push_str(&format!(
            "    def test_case_{i}(self):\n        \"\"\"Check case {i}.\"\"\"\n        value = compute({i})\n        assert value == {i}\n\n"
        ));
    }
    run.push_str("E       assert 3 == 4\n</output>\n");
    assert_eq!(
        detect(&run[run.find("<output>").unwrap_or(0)..]),
        Kind::Code
    );
    let c = compress(&run, &Options::default());
    assert!(c.is_some_and(|c| c.kind == Kind::Log));
    // The same text from a command that succeeded is a view of source: verbatim.
    assert!(
        compress(
            &run.replace("<returncode>1<", "<returncode>0<"),
            &Options::default()
        )
        .is_none()
    );
}

/// What a call showed of a source file stays verbatim, prose-like or not; a generated file it showed (a minified
/// bundle) is compressed as its text reads.
#[test]
fn a_viewed_source_file_stays_verbatim_unless_it_reads_as_generated() {
    let viewed = Options {
        viewed_source: true,
        ..Options::default()
    };
    let docstring_range = "    The parameter l1_ratio corresponds to alpha in the glmnet R package, while alpha\n    corresponds to the lambda parameter in glmnet.\n\n".repeat(80);
    assert!(compress(&docstring_range, &Options::default()).is_some());
    assert!(compress(&docstring_range, &viewed).is_none());
    let bundle = format!("!function(e){{{}}}();\n", "var a=e.b(1);".repeat(3000));
    assert!(compress(&bundle, &viewed).is_some());
}

#[test]
fn trivial_inputs_are_left_alone() {
    let o = Options::default();
    assert!(compress("", &o).is_none());
    assert!(compress("   \n  ", &o).is_none());
    assert!(compress("short", &o).is_none());
    let with_marker = format!(
        "{}\n{}",
        "line\n".repeat(500),
        marker("abcdefabcdef", "1_lines_offloaded")
    );
    assert!(compress(&with_marker, &o).is_none());
    assert_eq!(estimate_tokens("abcde"), 2);
    assert_eq!(Kind::JsonArray.as_str(), "json_array");
}

/// Reasoning of the kind an agent writes before a command: 30 lines, one of them about an error.
fn note() -> String {
    let mut t = String::from("THOUGHT: the listing shows the parser module.\n");
    for i in 0..30 {
        if i == 15 {
            t.push_str("So the TypeError comes from the alias handling.\n");
        }
        let opening = ["Then", "So", "Next,"][i % 3];
        t.push_str(&format!(
            "{opening} the docs builder calls the documenter for alias {i}.\n"
        ));
    }
    t.push_str("I will print the documenter used for each alias.");
    t
}

#[test]
fn notes_keep_a_short_head_and_tail_and_every_error_line() {
    let text = note();
    let notes = Options {
        notes: true,
        viewed_source: false,
        ..Options::default()
    };
    let c = compress(&text, &notes);
    assert!(c.is_some(), "a 30-line note has lines to spare");
    let Some(c) = c else { return };
    let lines: Vec<&str> = c.text.lines().collect();
    let original: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..6], original[..6], "the head");
    assert_eq!(
        lines[lines.len() - 8..],
        original[original.len() - 8..],
        "the tail"
    );
    assert!(lines.contains(&"So the TypeError comes from the alias handling."));
    assert!(
        !c.text.contains("alias 12."),
        "the reasoning in between is offloaded"
    );
    assert!(
        find_markers(&c.text)
            .iter()
            .all(|(h, _)| *h == hash_of(&text))
    );
    // Without `notes` the same prose gets the plain-lines selection, which keeps much more of it.
    let plain = compress(&text, &Options::default()).map_or(text.len(), |p| p.text.len());
    assert!(c.text.len() < plain, "{} < {plain}", c.text.len());
}

#[test]
fn notes_that_are_code_or_json_are_left_to_their_own_compressor() {
    let notes = Options {
        notes: true,
        viewed_source: false,
        ..Options::default()
    };
    let code = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n".repeat(40);
    assert_eq!(
        compress(&code, &notes),
        compress(&code, &Options::default())
    );
    let rows: Vec<String> = (0..200).map(|i| format!("{{\"id\":{i}}}")).collect();
    let json = format!("[{}]", rows.join(","));
    let c = compress(&json, &notes);
    assert_eq!(c.map(|c| c.kind), Some(Kind::JsonArray));
}

#[test]
fn big_log_keeps_errors_and_is_deterministic() {
    let mut log = String::new();
    for i in 0..5000 {
        log.push_str(&format!(
            "2024-01-01T00:00:{:02} INFO step {i} ok\n",
            i % 60
        ));
        if i == 2500 {
            log.push_str("2024-01-01T00:00:00 ERROR disk full on /dev/sda1\n");
        }
    }
    let o = Options::default();
    let c = compress(&log, &o);
    assert!(c.is_some());
    let Some(c) = c else { return };
    assert_eq!(c.kind, Kind::Log);
    assert!(c.text.contains("ERROR disk full on /dev/sda1\n"));
    assert!(c.text.len() * 10 < log.len());
    assert_eq!(compress(&log, &o), Some(c.clone()));
    assert!(
        find_markers(&c.text)
            .iter()
            .all(|(h, _)| *h == hash_of(&log))
    );
}

/// A pytest run whose warnings summary repeats one deprecation for every test that triggered it.
fn pytest_with_warnings(entries: usize) -> String {
    let mut t = String::from(
        "============================= test session starts ==============================\n\
         platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.3.0\n\
         collected 120 items\n\n\
         tests/test_app.py ........................................................ [ 48%]\n\
         tests/test_api.py ..............................................F......... [ 97%]\n\
         tests/test_cli.py ...                                                        [100%]\n\n\
         =================================== FAILURES ===================================\n\
         ________________________________ test_post_item ________________________________\n\n\
         \x20   def test_post_item():\n\
         >       assert post('/items').status == 201\n\
         E       assert 500 == 201\n\n\
         tests/test_api.py:48: AssertionError\n\
         =============================== warnings summary ===============================\n",
    );
    for i in 0..entries {
        t.push_str(&format!(
            "tests/test_app.py::test_case_{i}\n  /venv/lib/python3.11/site-packages/attr/_make.py:918: \
             DeprecationWarning: the `cmp` argument is deprecated, use `eq` and `order` instead.\n    \
             warnings.warn(_CMP_DEPRECATION, DeprecationWarning, stacklevel=2)\n\n"
        ));
        if i == entries / 2 {
            t.push_str("tests/test_api.py::test_post_item\n  ResourceWarning: unclosed socket: connection failed\n\n");
        }
    }
    t.push_str(
        "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html\n\
         =========================== short test summary info ============================\n\
         FAILED tests/test_api.py::test_post_item - assert 500 == 201\n\
         ============ 1 failed, 119 passed, 41 warnings in 3.20s ============\n",
    );
    t
}

#[test]
fn a_warnings_summary_keeps_its_first_entry_and_every_floor_line() {
    let text = pytest_with_warnings(40);
    let c = compress(&text, &Options::default());
    assert!(c.is_some());
    let Some(c) = c else { return };
    // The first entry shows what kind of warning it is; the others repeat it.
    assert!(
        c.text.contains("tests/test_app.py::test_case_0\n"),
        "{}",
        c.text
    );
    assert!(
        c.text
            .matches("DeprecationWarning: the `cmp` argument")
            .count()
            < 10,
        "{}",
        c.text
    );
    // The floor, the failure and the verdict stay.
    assert!(
        c.text
            .contains("\n  ResourceWarning: unclosed socket: connection failed\n")
    );
    assert!(c.text.contains("\nE       assert 500 == 201\n"));
    assert!(
        c.text
            .contains("\nFAILED tests/test_api.py::test_post_item - assert 500 == 201\n")
    );
    assert!(
        c.text
            .contains("1 failed, 119 passed, 41 warnings in 3.20s")
    );
    assert!(keeps_floor(&text, &c.text));
    assert!(
        c.text.len() * 3 < text.len(),
        "{} of {}",
        c.text.len(),
        text.len()
    );
    // A summary of one entry is that entry; a run without a summary has none.
    let banner = "=============================== warnings summary ===============================";
    let one = [
        banner,
        "a.py::t",
        "  DeprecationWarning: x",
        "",
        "-- Docs: https://docs.pytest.org",
    ];
    assert_eq!(regions::warnings_summary_rest(&one), None);
    let two = [
        banner,
        "a.py::t",
        "  DeprecationWarning: x",
        "",
        "b.py::t",
        "  DeprecationWarning: x",
        "",
        "-- Docs: y",
    ];
    assert_eq!(regions::warnings_summary_rest(&two), Some(3..7));
    assert_eq!(
        regions::warnings_summary_rest(&["ok", "== 1 passed in 0.1s =="]),
        None
    );
    let lines: Vec<&str> = text.split('\n').collect();
    let rest = regions::warnings_summary_rest(&lines);
    assert!(
        rest.as_ref()
            .is_some_and(|r| lines[r.start].is_empty() && lines[r.end].starts_with("-- Docs:"))
    );
}

/// The entries of a warnings summary in `text` (a run of [`pytest_with_warnings`]) that name a `test_case_` test.
fn case_entries(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("tests/test_app.py::test_case_"))
        .count()
}

#[test]
fn a_warnings_summary_in_the_last_lines_keeps_its_first_entry_only() {
    // Six entries: the summary, the short summary and the verdict are all among the run's last 30 lines.
    let text = pytest_with_warnings(6);
    let c = compress(&text, &Options::default());
    assert!(c.is_some(), "{text}");
    let Some(c) = c else { return };
    assert_eq!(case_entries(&c.text), 1, "{}", c.text);
    assert!(
        c.text.contains(
            "tests/test_app.py::test_case_0
"
        ),
        "{}",
        c.text
    );
    assert!(c.text.contains(
        "
FAILED tests/test_api.py::test_post_item"
    ));
    assert!(
        c.text
            .contains("1 failed, 119 passed, 41 warnings in 3.20s")
    );
    assert!(keeps_floor(&text, &c.text));
}

#[test]
fn a_warnings_summary_whose_header_was_cut_away_is_still_read_as_one() {
    // An agent's runner kept the head and the tail of a long run: the summary's header is in the cut part. A
    // warning's own text may hold a line of spaces; only an empty line parts entries.
    let full = pytest_with_warnings(12);
    let at = full.find("tests/test_app.py::test_case_3\n");
    assert!(at.is_some(), "{full}");
    let Some(at) = at else { return };
    let text = format!(
        "<output_head>\n{}</output_head>\n<elided_chars>\n9000 characters elided\n</elided_chars>\n<output_tail>\n  \
         (the end of an entry)\n\ntests/test_app.py: 3 warnings\n  /app/models.py:7: FutureWarning: a long \
         message\n  \n  on several lines\n\n{}</output_tail>\n",
        &full[..300],
        &full[at..]
    );
    let lines: Vec<&str> = text.split('\n').collect();
    let rest = regions::warnings_summary_rest(&lines);
    let first_entry = lines
        .iter()
        .position(|l| *l == "tests/test_app.py: 3 warnings");
    // The rest starts after the first whole entry (its line of spaces included) and runs up to `-- Docs:`.
    assert!(
        rest.as_ref().zip(first_entry).is_some_and(|(r, first)| {
            r.start > first + 3 && lines[r.end].starts_with("-- Docs:")
        }),
        "{rest:?} {first_entry:?}"
    );
    let c = compress(&text, &Options::default());
    assert!(c.is_some(), "{text}");
    let Some(c) = c else { return };
    assert!(case_entries(&c.text) <= 1, "{}", c.text);
    assert!(
        c.text
            .contains("\nFAILED tests/test_api.py::test_post_item")
    );
    assert!(keeps_floor(&text, &c.text));
    // Without the docs line that closes a summary, entries are not read as one.
    let no_docs: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.starts_with("-- Docs:"))
        .collect();
    assert_eq!(regions::warnings_summary_rest(&no_docs), None);
}

#[test]
fn a_stack_printed_again_in_the_last_lines_is_not_shown_again() {
    // A server's log: each request panics the same way, and the log ends on another copy of that stack.
    let stack = |goroutine: usize| {
        format!(
            "goroutine {goroutine} [running]:\nnet/http.(*conn).serve.func1(0xc42012e{goroutine:03x})\n\t/usr/local/go/src/net/http/server.go:1491 +0x12a\npanic(0x2fbca0, 0xc42000c0e0)\n\t/usr/local/go/src/runtime/panic.go:458 +0x243\nmain.makeHandler.func1(0x4c12e0, 0xc42011a{goroutine:03x})\n\t/srv/log_generator.go:45 +0xb2\nnet/http.HandlerFunc.ServeHTTP(0xc420114070)\n\t/usr/local/go/src/net/http/server.go:1726 +0x44\ncreated by net/http.(*Server).Serve\n\t/usr/local/go/src/net/http/server.go:2293 +0x44d\n"
        )
    };
    let mut text = String::new();
    for k in 0..8 {
        text.push_str(&format!(
            "2016/09/21 09:53:{k:02} http: panic serving [::1]:{}: runtime error: index out of range\n",
            56452 + k
        ));
        text.push_str(&stack(18 + k));
        for r in 0..6 {
            text.push_str(&format!(
                "2016/09/21 09:53:{k:02} GET /items/{r} 200 in 3ms\n"
            ));
        }
    }
    text.push_str(
        "2016/09/21 09:54:00 http: panic serving [::1]:56499: runtime error: index out of range\n",
    );
    text.push_str(&stack(99));
    let c = compress(&text, &Options::default());
    assert!(c.is_some(), "{text}");
    let Some(c) = c else { return };
    // The first copy whole, the last one's frames behind a marker though they are the log's last lines.
    assert_eq!(
        c.text.matches("/srv/log_generator.go:45").count(),
        1,
        "{}",
        c.text
    );
    assert!(c.text.contains("[::1]:56499: runtime error"), "{}", c.text);
    assert!(keeps_floor(&text, &c.text));
}

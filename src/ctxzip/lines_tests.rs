//! Unit tests for [`super`]: what a line selection keeps (head, tail, error lines with their context, keep-pattern
//! hits, relevant lines), terminal redraws and listings gathered after one marker, and repeats collapsed.

use super::super::logs::compress_failing;
use super::super::{Options, find_markers};
use super::*;

fn ctx(query: &[&str], keep: &[&str]) -> Ctx {
    let opts = Options {
        query: query.iter().map(|s| s.to_string()).collect(),
        keep_patterns: keep.iter().map(|s| s.to_string()).collect(),
        compress_code: false,
        notes: false,
        viewed_source: false,
        fetched: false,
    };
    Ctx::new("0123456789ab".into(), &opts)
}

#[test]
fn keeps_head_tail_errors_keep_and_relevant() {
    let mut text = String::new();
    for i in 0..1000 {
        text.push_str(&format!("-rw-r--r-- 1 root root {i} file{i}.py\n"));
    }
    text = text.replace("file500.py", "file500.py cannot open");
    text = text.replace("file600.py", "file600.py SPECIAL");
    text = text.replace("file700.py", "file700.py wanted_thing");
    let mut t = Tally::default();
    let out = compress(&text, &ctx(&["wanted_thing"], &["special"]), &mut t).unwrap_or_default();
    assert!(out.contains("file0.py\n") && out.contains("file999.py\n"));
    assert!(out.contains("-rw-r--r-- 1 root root 500 file500.py cannot open\n"));
    assert!(out.contains("file600.py SPECIAL") && out.contains("file700.py wanted_thing"));
    assert!(out.contains("(.py "), "{out}");
    assert!(out.ends_with('\n'));
    assert!(!find_markers(&out).is_empty());
    assert!(out.len() * 10 < text.len());
}

#[test]
fn terminal_control_lines_are_blank() {
    assert!(renders_blank(""));
    assert!(renders_blank("  \t"));
    assert!(renders_blank("\x1b[0K"));
    assert!(renders_blank("\x1b[0K\x1b[?25h\x1b[?25l\x1b[7A\x1b[0K"));
    assert!(!renders_blank("\x1b[0K 3 tests\x1b[0K"));
    assert!(!renders_blank("[0K"), "no escape byte: printable text");
}

#[test]
fn colour_codes_are_told_from_other_sequences() {
    assert_eq!(
        strip_colours("\x1b[0;32m-> 2646\x1b[0;31m  return x\x1b[0m\x1b[K").as_deref(),
        Some("-> 2646  return x")
    );
    // A cursor move tells a redrawn status: it stays.
    assert_eq!(
        strip_colours("\x1b[7A\x1b[1mok\x1b[0m").as_deref(),
        Some("\x1b[7Aok")
    );
    assert_eq!(strip_colours("\x1b[7A plain"), None);
    assert_eq!(strip_colours("no escapes"), None);
    // An escape at the very end, or a sequence cut short, is copied as it is.
    assert_eq!(strip_colours("x\x1b[0;3").as_deref(), None);
    assert_eq!(strip_colours("x\x1b").as_deref(), None);
}

#[test]
fn a_coloured_traceback_keeps_its_error_lines_exact_and_drops_the_other_colours() {
    let red = |s: &str| format!("\x1b[0;31m{s}\x1b[0m");
    let green = |s: &str| format!("\x1b[0;32m{s}\x1b[0m");
    let mut text = format!(
        "{}                 Traceback (most recent call last)\n",
        red("KeyError")
    );
    for k in 0..6 {
        text.push_str(&format!(
            "{} in {}\n{}     {}\n\n",
            green(&format!("/srv/app/pandas/core/frame_{k}.py")),
            green(&format!("get_loc_{k}")),
            green(&format!("-> {}", 2640 + k)),
            green("return self._engine.get_loc(key)"),
        ));
    }
    text.push_str(&format!("{}: 'math_score'\n", red("KeyError")));
    let mut tally = Tally::default();
    let out = compress_failing(&text, &ctx(&[], &[]), &mut tally).unwrap_or_default();
    let first = text.lines().next().unwrap_or_default();
    let last = text.lines().last().unwrap_or_default();
    assert!(out.lines().any(|l| l == first), "{out}");
    assert!(out.lines().any(|l| l == last), "{out}");
    assert!(
        out.contains("/srv/app/pandas/core/frame_3.py in get_loc_3\n"),
        "{out}"
    );
    assert!(!out.contains("\x1b[0;32m"), "{out}");
    assert!(
        out.contains("_chars_offloaded>> (terminal colour codes)"),
        "{out}"
    );
    assert!(out.len() + 150 < text.len(), "{out}");
}

#[test]
fn error_context_stops_at_a_terminal_redraw() {
    // A test runner redrawing its status line: each frame is a few lines between control-only lines.
    let mut text = String::new();
    for i in 0..60 {
        text.push_str(&format!(
            "\x1b[0K\x1b[?25h\x1b[7A\x1b[0K\n   pkg/good {}\x1b[0K\n   pkg/other ok\x1b[0K\n {i} tests, 1 failure\n\x1b[0K\x1b[?25h\x1b[7A\x1b[0K\n   pkg/good {}\x1b[0K\n",
            ".".repeat(i),
            ".".repeat(i)
        ));
    }
    let out =
        compress_with(&text, &ctx(&[], &[]), &LOG_LIKE, &mut Tally::default()).unwrap_or_default();
    assert!(out.contains(" 59 tests, 1 failure\n"));
    assert!(
        !out.contains(&format!("   pkg/good {}\x1b[0K\n", ".".repeat(30))),
        "the next frame is not the failure's context"
    );
}

#[test]
fn a_terminal_redraw_gathers_its_status_lines() {
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "\x1b[0K\x1b[?25h\x1b[?25l\x1b[7A\x1b[0K\n   pkg/good {}\x1b[0K\n   pkg/other ok\x1b[0K\n\x1b[0K\n {i} tests, 1 failure\n",
            ".".repeat(i)
        ));
    }
    assert!(is_redraw(&text));
    assert!(!is_redraw("\x1b[31mred\x1b[0m\n".repeat(20).as_str()));
    let gathered =
        compress_with(&text, &ctx(&[], &[]), &LOG_LIKE, &mut Tally::default()).unwrap_or_default();
    for i in 0..40 {
        assert!(gathered.contains(&format!("\n {i} tests, 1 failure\n")));
    }
    assert!(find_markers(&gathered).len() <= 2, "{gathered}");
}

/// Error context as a log keeps it (lines after the error up to a blank line).
const LOG_LIKE: Params = Params {
    head: 2,
    tail: 2,
    before: 0,
    after: 6,
    max_context: 300,
    max_relevant: 0,
    regions: Regions::None,
    error_words: true,
    gather_floor: false,
    thin_runs: false,
};

#[test]
fn a_listing_gathers_its_error_named_paths_after_one_marker() {
    let mut text = String::new();
    for i in 0..600 {
        text.push_str(&format!("src/pkg{}/module_{i}.py\n", i / 50));
        if i % 50 == 25 {
            text.push_str(&format!("src/pkg{}/errors.py\n", i / 50));
        }
    }
    assert!(is_listing(&text));
    let out = compress(&text, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
    for p in 0..12 {
        assert!(out.contains(&format!("\nsrc/pkg{p}/errors.py\n")), "{out}");
    }
    // Head, one marker for everything between head and tail with the error-named paths after it, tail.
    assert_eq!(find_markers(&out).len(), 1, "{out}");
    let plain =
        compress_with(&text, &ctx(&[], &[]), &PLAIN, &mut Tally::default()).unwrap_or_default();
    assert!(find_markers(&plain).len() > 10);
    assert!(out.len() < plain.len());
    // Prose and logs are not listings: their lines keep their places.
    let prose: String = (0..40)
        .map(|i| format!("a line of prose{} with words\n", " and more".repeat(i % 5)))
        .collect();
    assert!(!is_listing(&prose));
    let pip: String = (0..40)
        .map(|i| format!("package-{i}    1.{i}.0\n"))
        .collect();
    assert!(is_listing(&format!(
        "Package    Version\n---------- -------\n{pip}"
    )));
    assert!(!is_listing(
        &"<dict>\n<key>path</key>\n</dict>\n".repeat(10)
    ));
    assert!(!is_listing("src/a.py\nsrc/b.py\n"));
}

/// A table's rows stand on their own: a row kept for an error word brings no neighbours, and the rows kept for
/// the floor are shown together after one marker, in their order.
#[test]
fn a_table_keeps_its_error_rows_without_neighbours() {
    let mut csv = String::from("id,created_at,customer,amount,status\n");
    for i in 0..300 {
        let status = if i % 10 == 7 { "failed" } else { "paid" };
        csv.push_str(&format!(
            "{},2026-11-{:02}T10:00:00Z,customer{i},{}.25,{status}\n",
            1000 + i,
            1 + i % 28,
            i * 7
        ));
    }
    assert!(is_delimited_table(&csv));
    let out = compress(&csv, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
    let failed: Vec<&str> = csv.lines().filter(|l| l.ends_with(",failed")).collect();
    for row in &failed {
        assert!(out.lines().any(|l| l == *row), "{row} missing:\n{out}");
    }
    // The header and the head rows, then one marker with the failed rows after it, then the tail.
    assert!(out.starts_with("id,created_at,customer,amount,status\n"));
    assert_eq!(find_markers(&out).len(), 1, "{out}");
    let shown = out.lines().count();
    assert!(shown < PATHS.head + PATHS.tail + failed.len() + 3, "{out}");
    assert!(out.len() * 3 < csv.len());
}

/// A finding kept under a file's header (ESLint's default output) keeps that header: the row alone names no
/// file, and the marker before it may hold the file's other findings or other files.
#[test]
fn a_finding_kept_under_a_file_header_keeps_the_header() {
    let mut text = String::new();
    let mut errors = Vec::new();
    for f in 0..80 {
        let path = format!("/home/user/app/src/module{f}/view{f}.js");
        text.push_str(&format!("{path}\n"));
        for r in 0..6 {
            if f % 9 == 4 && r == 3 {
                let row = format!("  {}:{f}  error  Missing semicolon  semi", 10 + r);
                errors.push((path.clone(), row.clone()));
                text.push_str(&format!("{row}\n"));
            } else {
                text.push_str(&format!(
                    "  {}:{}  warning  Unexpected console statement  no-console\n",
                    10 + r,
                    f
                ));
            }
        }
        text.push('\n');
    }
    text.push_str("\u{2716} 480 problems (9 errors, 471 warnings)\n");
    let out = compress(&text, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
    let lines: Vec<&str> = out.lines().collect();
    for (path, row) in &errors {
        let at = lines.iter().position(|l| l == row);
        assert!(at.is_some(), "{row} missing:\n{out}");
        let at = at.unwrap_or_default();
        let header = lines[..at]
            .iter()
            .rev()
            .find(|l| !l.starts_with(' ') && !l.is_empty() && find_markers(l).is_empty());
        assert_eq!(header, Some(&path.as_str()), "{row}:\n{out}");
    }
    assert!(out.len() * 2 < text.len());
    assert!(is_path_header("src/app.js"));
    assert!(is_path_header("== app/models/user.rb =="));
    assert!(is_path_header("README.md"));
    for not in [
        "</testsuite>",
        "   Compiling foo v1",
        "----------",
        "v1.2.3",
        "done.",
    ] {
        assert!(!is_path_header(not), "{not}");
    }
}

/// `text` compressed as plain lines (2 head, 2 tail) for the query `parser flaky`.
fn with_parser_and_flaky_query(text: &str) -> String {
    compress_with(
        text,
        &ctx(&["parser", "flaky"], &[]),
        &Params {
            head: 2,
            tail: 2,
            ..PLAIN
        },
        &mut Tally::default(),
    )
    .unwrap_or_default()
}

#[test]
fn a_line_only_a_selective_term_picks_is_kept_however_many_lines_a_common_term_hits_before_it() {
    // `parser` on every third line marks the text; `flaky`, alone on a line near the end, singles it out.
    let mut text = String::new();
    for i in 0..400 {
        let line = match i {
            350 => format!("pkg/mod{i}.py: flaky on retry\n"),
            i if i % 3 == 0 => format!("pkg/mod{i}.py: uses parser {i}\n"),
            _ => format!("pkg/mod{i}.py: loads {i}\n"),
        };
        text.push_str(&line);
    }
    let out = with_parser_and_flaky_query(&text);
    assert!(out.contains("pkg/mod350.py: flaky on retry\n"), "{out}");
    assert!(!out.contains("uses parser 30\n"), "{out}");
}

#[test]
fn a_query_term_on_every_line_picks_none_of_them() {
    // The searched word is on every line; `flaky` singles one line out.
    let mut text = String::new();
    for i in 0..400 {
        let extra = if i == 250 { " flaky" } else { "" };
        text.push_str(&format!("pkg/mod{i}.py: uses parser {i}{extra}\n"));
    }
    let out = with_parser_and_flaky_query(&text);
    assert!(out.contains("pkg/mod250.py: uses parser 250 flaky\n"));
    assert!(
        !out.contains("pkg/mod10.py"),
        "a line matching only the common term is not kept: {out}"
    );
    assert_eq!(find_markers(&out).len(), 2, "{out}");
}

#[test]
fn repeats_collapse() {
    let text = format!("start\n{}end\n", "same line\n".repeat(500));
    let out = compress(&text, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
    assert_eq!(
        out,
        "start\nsame line (×500)\nend\n<<ctxzip:0123456789ab 499_lines_offloaded>> (repeats collapsed)\n"
    );
}

/// A build that prints hundreds of warnings shows the first few dozen with their context; every floor line (an
/// error word) stays however late and however many.
#[test]
fn a_flood_of_warnings_keeps_the_first_ones_and_every_floor_line() {
    let mut text = String::new();
    for i in 0..300 {
        text.push_str(&format!("   Compiling unit_{i} v0.1.0\n"));
        // Each warning of its own kind ([`warning_kind`]): a name in letters, not in the digits a kind ignores.
        text.push_str(&format!("warning: unused {}: `v{i}`\n", letters(i)));
        text.push_str(&format!("  --> src/unit_{i}.rs:{i}:9\n\n"));
        if i % 60 == 59 {
            text.push_str(&format!("error[E0308]: mismatched types in unit_{i}\n\n"));
        }
    }
    let out =
        compress_with(&text, &ctx(&[], &[]), &LOG_LIKE, &mut Tally::default()).unwrap_or_default();
    let shown = out.matches("warning: unused ").count();
    assert_eq!(shown, MAX_WARNING_LINES, "{out}");
    for i in 0..MAX_WARNING_LINES {
        assert!(
            out.contains(&format!(
                "warning: unused {}: `v{i}`\n  --> src/unit_{i}.rs:{i}:9\n",
                letters(i)
            )),
            "{out}"
        );
    }
    for i in (59..300).step_by(60) {
        assert!(
            out.contains(&format!("\nerror[E0308]: mismatched types in unit_{i}\n")),
            "{out}"
        );
    }
    assert!(super::super::keeps_floor(&text, &out));
    assert!(
        out.len() * 4 < text.len(),
        "{} of {}",
        out.len(),
        text.len()
    );
    // Under the limit nothing changes: each warning keeps its place and its context.
    let few: String = (0..20)
        .map(|i| {
            format!(
                "{}warning: slow step {}\n  took {i} s\n\n",
                format!("step {i}: fetching the inputs of this step from the cache\n").repeat(3),
                letters(i)
            )
        })
        .collect();
    let out =
        compress_with(&few, &ctx(&[], &[]), &LOG_LIKE, &mut Tally::default()).unwrap_or_default();
    for i in 0..20 {
        assert!(
            out.contains(&format!(
                "warning: slow step {}\n  took {i} s\n",
                letters(i)
            )),
            "{out}"
        );
    }
}

/// `i` in lowercase letters (`a`, `b`, …, `ba`): a name that makes each warning a kind of its own, where digits
/// would not ([`warning_kind`] ignores them).
fn letters(mut i: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'a' + (i % 26) as u8);
        i /= 26;
        if i == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// A compiler that reports one thing in many places (gcc's `-Wimplicit-fallthrough` forty times) shows the first
/// few of each kind, the first with its code and caret; the others go to the marker, and a later warning of another
/// kind still gets its place.
#[test]
fn warnings_of_one_kind_keep_the_first_few_and_other_kinds_their_place() {
    // The head (what ran) comes first, so that no warning is kept for being in it.
    let mut text: String = (0..20)
        .map(|i| format!("cc -c src/pre{i}.c -o pre{i}.o\n"))
        .collect();
    text.push_str("cc -c src/big.c -o big.o -Wall -Wextra\n");
    for i in 0..40 {
        text.push_str(&format!(
            "src/big.c: In function \u{2018}step{i}\u{2019}:\nsrc/big.c:{}:9: warning: this statement may fall through [-Wimplicit-fallthrough=]\n {} |   case {i}: v += {i};\n      |         ^~~~\n",
            100 + i * 7,
            100 + i * 7
        ));
    }
    text.push_str("src/big.c:900:12: warning: unused parameter \u{2018}argc\u{2019} [-Wunused-parameter]\n 900 | int main(int argc, char **argv)\n     |            ^~~~\n");
    for i in 0..60 {
        text.push_str(&format!("cc -c src/part{i}.c -o part{i}.o\n"));
    }
    text.push_str("ar cr libbig.a big.o\n");
    let out =
        compress_with(&text, &ctx(&[], &[]), &LOG_LIKE, &mut Tally::default()).unwrap_or_default();
    let shown = out
        .lines()
        .filter(|l| l.starts_with("src/big.c:") && l.contains("may fall through"))
        .count();
    assert_eq!(shown, usize::from(MAX_WARNINGS_OF_A_KIND), "{out}");
    for i in 0..usize::from(MAX_WARNINGS_OF_A_KIND) {
        let line = 100 + i * 7;
        let warning = format!(
            "src/big.c:{line}:9: warning: this statement may fall through [-Wimplicit-fallthrough=]\n"
        );
        let snippet = format!("{warning} {line} |   case {i}: v += {i};\n      |         ^~~~\n");
        assert!(out.contains(&warning), "{out}");
        // The first of the kind shows what it looks like; the next ones say where (a snippet between two kept lines
        // may still show, cheaper than a marker line, but not the last one's, before the marker).
        if i == 0 || i + 1 == usize::from(MAX_WARNINGS_OF_A_KIND) {
            assert_eq!(out.contains(&snippet), i == 0, "{i}: {out}");
        }
    }
    assert!(
        out.contains("src/big.c:900:12: warning: unused parameter \u{2018}argc\u{2019} [-Wunused-parameter]\n 900 | int main(int argc, char **argv)\n"),
        "{out}"
    );
    assert!(
        out.len() * 2 < text.len(),
        "{} of {}",
        out.len(),
        text.len()
    );
    // The marker says what it holds: the warnings it hides, by kind.
    assert!(
        out.lines().any(|l| l.starts_with("<<ctxzip:")
            && l.contains(" (warnings: ")
            && l.contains(" × this statement may fall through [-Wimplicit-fallthrough=]")),
        "{out}"
    );
}

#[test]
fn a_census_names_a_warning_by_its_message() {
    assert_eq!(
        warning_key(
            "src/a.c:12:3: warning: unused parameter \u{2018}argc\u{2019} [-Wunused-parameter]"
        )
        .as_deref(),
        Some("unused parameter [-Wunused-parameter]")
    );
    // Maven names the file after the level: the place is left out.
    assert_eq!(
        warning_key(
            "[WARNING] C:\\ws\\src\\Foo.java:[12,5] [deprecation] Util in app has been deprecated"
        )
        .as_deref(),
        Some("[deprecation] Util in app has …")
    );
    // Only warnings are counted so: a help text's `invalid` or a log's `cannot` is no warning.
    assert_eq!(
        warning_key("  -Wformat   Warn about invalid format strings"),
        None
    );
    assert_eq!(warning_key("cannot open file"), None);
}

#[test]
fn a_warnings_kind_is_its_message_without_place_names_or_numbers() {
    let kind = |l: &str| warning_kind(l);
    assert_eq!(
        kind("src/a.c:12:3: warning: unused parameter \u{2018}argc\u{2019} [-Wunused-parameter]"),
        kind("lib/b.c:900:17: warning: unused parameter \u{2018}pApi\u{2019} [-Wunused-parameter]")
    );
    assert_eq!(
        kind("warning: unused variable: `timer`"),
        kind("warning: unused variable: `v12`")
    );
    assert_eq!(
        kind("  12:5  warning  'x' is defined but never used  no-unused-vars"),
        kind("  40:17  warning  'longName' is defined but never used  no-unused-vars")
    );
    // Another message, another kind; an apostrophe inside a word opens no quote.
    assert_ne!(
        kind("src/a.c:12:3: warning: unused parameter \u{2018}argc\u{2019} [-Wunused-parameter]"),
        kind("src/a.c:12:3: warning: this statement may fall through [-Wimplicit-fallthrough=]")
    );
    assert_ne!(
        kind("warning: can't stat 'a'"),
        kind("warning: can't open 'a'")
    );
    // A message names what it is about without quotes too: its first words and its closing tag make the kind.
    assert_eq!(
        kind("docs/a.rst:9: WARNING: py:obj reference target not found: get_value [ref.obj]"),
        kind("CHANGELOG.rst:17: WARNING: py:obj reference target not found: Pluck [ref.obj]")
    );
    assert_ne!(
        kind("docs/a.rst:9: WARNING: py:obj reference target not found: get_value [ref.obj]"),
        kind("docs/a.rst:9: WARNING: py:obj reference target not found: get_value [ref.func]")
    );
    assert_eq!(
        warning_key(
            "CHANGELOG.rst:17: WARNING: py:obj reference target not found: Pluck [ref.obj]"
        )
        .as_deref(),
        Some("py:obj reference target not found: … [ref.obj]")
    );
}

#[test]
fn a_traceback_printed_again_shows_its_exception_and_points_back_for_its_frames() {
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!("INFO fetching batch {i}\nWARN retrying request {i}\nTraceback (most recent call last):\n"));
        for f in 0..5 {
            text.push_str(&format!(
                "  File \"/app/w{f}.py\", line {f}0, in step{f}\n    return step{}(x)\n",
                f + 1
            ));
        }
        text.push_str(&format!("ConnectionError: attempt {i} timed out\n"));
    }
    let mut t = Tally::default();
    let out = super::super::logs::compress(&text, &ctx(&[], &[]), &mut t).unwrap_or_default();
    // The first copy stays whole, every exception line stays, later frames are one marker line each (but the
    // run's tail, kept as it is).
    assert!(out.contains("WARN retrying request 0\nTraceback (most recent call last):\n  File \"/app/w0.py\", line 00, in step0\n    return step1(x)\n"));
    for i in 0..20 {
        assert!(
            out.contains(&format!("ConnectionError: attempt {i} timed out\n")),
            "{out}"
        );
    }
    assert!(out.contains("WARN retrying request 1\nTraceback (most recent call last):\n<<ctxzip:0123456789ab 10_lines_offloaded>> (the same stack frames as above)\nConnectionError: attempt 1 timed out\n"), "{out}");
    assert!(
        out.matches("(the same stack frames as above)").count() >= 17,
        "{out}"
    );
    assert!(out.matches("  File \"/app/w0.py\"").count() <= 2, "{out}");
    assert!(
        out.len() * 3 < text.len() * 2,
        "{} of {}",
        out.len(),
        text.len()
    );
}

#[test]
fn a_run_of_lines_saying_one_thing_keeps_its_first_and_last_few() {
    // `pip install` chatter: short enough that the head and the tail would keep every line.
    let mut text =
        String::from("Obtaining file:///testbed\n  Preparing metadata (setup.py): started\n");
    for i in 0..23 {
        let extra = if i == 11 { " (failed to stat)" } else { "" };
        text.push_str(&format!(
            "Requirement already satisfied: package-{i}>=1.0 in /opt/conda/lib/python3.9/site-packages (1.{i}){extra}\n"
        ));
    }
    text.push_str("Installing collected packages: Sphinx\n  Running setup.py develop for Sphinx\nSuccessfully installed Sphinx\n");
    let out =
        compress_with(&text, &ctx(&[], &[]), &PLAIN, &mut Tally::default()).unwrap_or_default();
    for kept in [
        "package-0>=",
        "package-1>=",
        "package-2>=",
        "package-21>=",
        "package-22>=",
        "Obtaining",
        "Successfully installed",
    ] {
        assert!(out.contains(kept), "{kept}: {out}");
    }
    // The error floor stays inside a thinned run.
    assert!(out.contains(
        "package-11>=1.0 in /opt/conda/lib/python3.9/site-packages (1.11) (failed to stat)\n"
    ));
    for dropped in ["package-3>=", "package-10>=", "package-20>="] {
        assert!(!out.contains(dropped), "{dropped}: {out}");
    }
    assert_eq!(find_markers(&out).len(), 2, "{out}");
    // Seven lines are no run; indented lines, numbers and listings never form one.
    let short: String = (0..7)
        .map(|i| format!("Compiling crate{i} v0.1.{i}\n"))
        .collect();
    assert!(compress_with(&short, &ctx(&[], &[]), &PLAIN, &mut Tally::default()).is_none());
    for line in [
        "  File \"a.py\", line 3, in f",
        "200 OK",
        "src/app.py",
        "-rw-r--r-- 1 root",
        "x: 1",
        "DEBUG: join table=t1",
        "INFO starting",
    ] {
        assert_eq!(lead_word(line), None, "{line}");
    }
    assert_eq!(lead_word("Compiling serde v1.0"), Some("Compiling"));
    assert_eq!(lead_word("Downloading: 10%"), Some("Downloading:"));
}

#[test]
fn a_run_of_passing_tests_keeps_its_first_and_last_few() {
    // prove --timer: each test file's line begins with a clock, so no word makes the run; that each passed does.
    let mut text = String::from("# PERL_TEXT_CSV: undef\n");
    for i in 0..30 {
        text.push_str(&format!(
            "[12:21:{i:02}] t/{i:02}_case.t ......... ok       68 ms ( 0.00 usr  0.00 sys +  0.07 cusr  0.00 csys =  0.07 CPU)\n"
        ));
    }
    text.push_str("[12:21:44]\nAll tests successful.\nFiles=30, Tests=5237, 19 wallclock secs\nResult: PASS\n");
    let out = super::super::logs::compress(&text, &ctx(&[], &[]), &mut Tally::default())
        .unwrap_or_default();
    for kept in [
        "t/00_case.t",
        "t/02_case.t",
        "t/28_case.t",
        "t/29_case.t",
        "Result: PASS",
    ] {
        assert!(out.contains(kept), "{kept}: {out}");
    }
    for dropped in ["t/03_case.t", "t/15_case.t", "t/27_case.t"] {
        assert!(!out.contains(dropped), "{dropped}: {out}");
    }
    // pytest -v, whose lines begin with a path.
    let mut text =
        String::from("============ test session starts ============\ncollected 30 items\n\n");
    for i in 0..30 {
        text.push_str(&format!(
            "tests/test_format.py::test_case_{i} PASSED {:>24}\n",
            format!("[{:3}%]", (i + 1) * 100 / 30)
        ));
    }
    text.push_str("\n============ 30 passed in 0.41s ============\n");
    let out = super::super::logs::compress(&text, &ctx(&[], &[]), &mut Tally::default())
        .unwrap_or_default();
    assert!(
        out.contains("test_case_0 PASSED") && out.contains("test_case_29 PASSED"),
        "{out}"
    );
    assert!(!out.contains("test_case_14 PASSED"), "{out}");
}

/// `go test -v` of a passing package: forty `=== RUN` / `--- PASS:` pairs, one run. The head is cut by its line
/// count inside the run and the tail starts inside it, so the run's first and last lines are the whole run's: one
/// marker stands for its middle, not two around two lines of it.
#[test]
fn a_run_that_goes_on_past_the_head_keeps_only_its_own_first_and_last_lines() {
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "=== RUN   TestCase{i:02}\n--- PASS: TestCase{i:02} (0.00s)\n"
        ));
    }
    text.push_str("PASS\nok  \texample.com/pkg\t0.012s\n");
    let out = super::super::logs::compress(&text, &ctx(&[], &[]), &mut Tally::default())
        .unwrap_or_default();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("=== RUN   TestCase00"),
        "{out}"
    );
    assert_eq!(find_markers(&out).len(), 1, "{out}");
    for kept in [
        "--- PASS: TestCase00 ",
        "--- PASS: TestCase39 ",
        "PASS",
        "ok  ",
    ] {
        assert!(out.contains(kept), "{kept}: {out}");
    }
    // Nothing from the run's middle: the head's last lines and the tail's first are inside it.
    for dropped in [
        "TestCase02",
        "TestCase10",
        "TestCase11",
        "TestCase30",
        "TestCase37",
    ] {
        assert!(!out.contains(dropped), "{dropped}: {out}");
    }
    assert!(lines.len() <= 9, "{out}");
}

/// cppcheck checks each file under each configuration, one `Checking …` line each: the lines after an error are
/// the next configuration's, not the error's context. A word that begins every diagnostic's own lines but never two
/// in a row (hlint's `Found:` / `Perhaps:`) is the diagnostic's.
#[test]
fn a_tools_next_progress_line_ends_an_errors_context() {
    let mut text = String::new();
    for f in 0..30 {
        text.push_str(&format!("Checking src/m{f}.c ...\n"));
        for cfg in ["_MSC_VER", "_WIN32", "__GNUC__"] {
            text.push_str(&format!("Checking src/m{f}.c: {cfg}...\n"));
            if f == 14 && cfg == "_WIN32" {
                text.push_str(&format!(
                    "src/m{f}.c:102:13: error: Memory leak: root [memleak]\n            root = clean;\n            ^\n"
                ));
            }
        }
        text.push_str(&format!(
            "{}/30 files checked {}% done\n",
            f + 1,
            (f + 1) * 100 / 30
        ));
    }
    let out = super::super::logs::compress(&text, &ctx(&[], &[]), &mut Tally::default())
        .unwrap_or_default();
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("Memory leak"))
        .unwrap_or(0);
    assert!(at > 0, "{out}");
    // The diagnostic's code and caret stay; the next `Checking` line is behind the marker.
    assert_eq!(
        lines.get(at + 1).copied(),
        Some("            root = clean;"),
        "{out}"
    );
    assert_eq!(lines.get(at + 2).copied(), Some("            ^"), "{out}");
    assert!(!out.contains("Checking src/m14.c: __GNUC__..."), "{out}");
    assert!(
        lines
            .get(at + 3)
            .is_some_and(|l| l.starts_with("<<ctxzip:")),
        "{out}"
    );

    let progress: Vec<Rec<'_>> = text.lines().map(|t| Rec { text: t, count: 1 }).collect();
    assert!(chatter_words(&progress).contains("Checking"));
    // hlint: each hint's `Found:` and `Perhaps:` lines are many, but never two in a row.
    let mut hints = String::new();
    for k in 0..16 {
        hints.push_str(&format!(
            "src/M{k}.hs:{k}:5: Warning: Use f{k}\nFound:\n  (foo{k})\nPerhaps:\n  foo{k}\n\n"
        ));
    }
    let recs_of_hints: Vec<Rec<'_>> = hints.lines().map(|t| Rec { text: t, count: 1 }).collect();
    assert!(chatter_words(&recs_of_hints).is_empty());
}

#[test]
fn a_kept_line_of_a_git_log_keeps_its_commit_line() {
    let mut text = String::new();
    for i in 0..60 {
        let subject = if i == 37 {
            "parser: the tokenizer keeps trailing whitespace".to_string()
        } else {
            format!("docs: section {i} reworded")
        };
        text.push_str(&format!(
            "commit {i:040x}\nAuthor: Dev <dev@example.com>\nDate:   Mon Mar {} 10:00:00 2025 +0000\n\n    {subject}\n\n",
            1 + i % 28
        ));
    }
    // The subject is kept for the query alone (no context, unlike an error line).
    let out = compress(&text, &ctx(&["tokenizer"], &[]), &mut Tally::default()).unwrap_or_default();
    let lines: Vec<&str> = out.lines().collect();
    let subject = lines
        .iter()
        .position(|l| l.contains("the tokenizer keeps"))
        .unwrap_or(0);
    assert!(subject > 0, "{out}");
    // The commit line stands above its subject (its author and date too: three short lines cost less than the
    // marker that would stand for them).
    let header = format!("commit {:040x}", 37);
    let above = &lines[subject.saturating_sub(4)..subject];
    assert!(above.contains(&header.as_str()), "{out}");
    // Not a git log: a line that only starts like one changes nothing.
    assert!(!is_commit_line("commit 1234 is the one"));
    assert!(is_commit_line(&format!(
        "{header} (HEAD -> main, origin/main)"
    )));
}

/// The byte budget of a head or tail does not cut a run of lines that begin with one word: the run is thinned whole
/// (its first and last lines), not shown as the last lines of two parts between two markers.
#[test]
fn the_end_budget_does_not_cut_a_run() {
    let long = "x".repeat(190);
    let texts: Vec<String> = (0..30)
        .map(|k| {
            if k < 18 {
                format!("row{k}|{long}")
            } else {
                format!("Requirement already satisfied: dep{k} {long}")
            }
        })
        .collect();
    let recs: Vec<Rec<'_>> = texts.iter().map(|t| Rec { text: t, count: 1 }).collect();
    let tail: Vec<usize> = ends(&recs, (0..30).rev(), 1024).collect();
    // Five lines fit the budget; the run they start goes on to its first line, and no row after it is taken.
    assert_eq!(tail.len(), 12, "{tail:?}");
    assert_eq!(tail.last(), Some(&18));
    let head: Vec<usize> = ends(&recs, 0..30, 1024).collect();
    assert_eq!(head.len(), 5);
}

/// `cargo test` compiles first and prints the crate's warnings above the tests. The tests are what the run is read
/// for, failing or passing: fewer warnings stay than in a build with no tests, and a failure stays whole.
#[test]
fn a_test_run_keeps_fewer_of_its_compilers_warnings() {
    let mut build = String::from("   Compiling cqlite v0.1.0 (/src/cqlite)\n");
    let kinds = [
        "unused import",
        "struct is never constructed",
        "field is never read",
        "function is never used",
        "variable does not need to be mutable",
        "unused variable",
        "method is never used",
        "enum is never used",
        "constant is never used",
        "type alias is never used",
    ];
    for (k, kind) in kinds.iter().enumerate() {
        for n in 0..3 {
            build.push_str(&format!(
                "warning: {kind}: `item{k}_{n}`\n  --> src/m{k}.rs:{n}:5\n   |\n{n}  | let item{k}_{n} = {n};\n   |     ^^^^^^^^\n\n"
            ));
        }
    }
    let run = |verdict: &str| {
        format!(
            "{build}    Finished `test` profile [unoptimized + debuginfo] target(s) in 10.52s\n     Running unittests src/lib.rs\n\nrunning 2 tests\ntest tests::a ... ok\ntest tests::b ... {verdict}\n\ntest result: {verdict}. 1 passed; 0 failed\n"
        )
    };
    let warnings = |out: &str| out.lines().filter(|l| l.starts_with("warning: ")).count();
    let mut tally = Tally::default();
    // A build with no tests keeps every one of these warnings (`None`: nothing to leave out).
    let plain = format!(
        "{build}    Finished `dev` profile [unoptimized + debuginfo] target(s) in 10.52s\n"
    );
    let build_only =
        compress_failing(&plain, &ctx(&[], &[]), &mut tally).unwrap_or_else(|| plain.clone());
    let passing = compress_failing(&run("ok"), &ctx(&[], &[]), &mut tally).unwrap_or_default();
    let failing = compress_failing(&run("FAILED"), &ctx(&[], &[]), &mut tally).unwrap_or_default();
    assert!(failing.contains("test tests::b ... FAILED\n"), "{failing}");
    assert!(
        failing.contains("test result: FAILED. 1 passed; 0 failed\n"),
        "{failing}"
    );
    assert!(
        passing.contains("test result: ok. 1 passed; 0 failed\n"),
        "{passing}"
    );
    for out in [&failing, &passing] {
        // The first few show what kinds there are: four, and the three among the run's last lines.
        assert!(warnings(out) <= 7, "{out}");
        assert!(
            warnings(out) * 2 < warnings(&build_only),
            "{} of {}:\n{out}",
            warnings(out),
            warnings(&build_only)
        );
    }
}

/// A build's first warnings show their snippets, one of each kind; later ones (past the last lines of the run), and
/// the next ones of a kind already shown, keep their line and, for rustc, the `-->` location under it: each still
/// says what and where, without forty snippets.
#[test]
fn later_warnings_keep_their_line_and_location_not_their_snippet() {
    let kinds = [
        "unused import",
        "struct is never constructed",
        "field is never read",
        "function is never used",
        "method is never used",
        "constant is never used",
        "type alias is never used",
        "enum is never used",
        "variable does not need to be mutable",
        "unused variable",
        "value assigned is never read",
        "unreachable pattern",
        "unused doc comment",
        "unnecessary parentheses around function argument",
        "variant is never constructed",
        "trait is never used",
    ];
    let block = |kind: &str, k: usize, name: &str| {
        format!(
            "warning: {kind}: `{name}`\n  --> src/m{k}.rs:{k}:5\n   |\n{k}  | let {name} = compute_{k}();\n   |     \
             ^^^^^^^^\n   |\n   = note: `#[warn(lint_{k})]` on by default\n\n"
        )
    };
    let mut build = String::from("    Checking audion v0.1.0 (/src/audion)\n");
    for (k, kind) in kinds.iter().enumerate() {
        build.push_str(&block(kind, k, &format!("item{k}")));
        if k == 3 {
            // Two more of this kind, in other places (past the head of the output, which shows what it shows).
            build.push_str(&block(kind, 100, "again_a"));
            build.push_str(&block(kind, 101, "again_b"));
        }
    }
    build.push_str(
        "warning: `audion` (lib) generated 18 warnings\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.74s\n",
    );
    let mut tally = Tally::default();
    let out = super::super::logs::compress(&build, &ctx(&[], &[]), &mut tally).unwrap_or_default();
    // Of the first eight warnings, the first of each kind keeps its snippet: six kinds, since two of the eight repeat
    // a kind.
    for k in 0..6 {
        assert!(
            out.contains(&format!("let item{k} = compute_{k}();")),
            "{k}:\n{out}"
        );
    }
    // The next ones of a kind already shown, and the warnings past the eighth (the last four are among the run's
    // last lines), are listed with their locations only.
    let listed = [
        (100, "function is never used", "again_a"),
        (101, "function is never used", "again_b"),
    ]
    .into_iter()
    .map(|(k, kind, name)| (k, kind, name.to_string()))
    .chain(
        kinds
            .iter()
            .enumerate()
            .take(12)
            .skip(6)
            .map(|(k, kind)| (k, *kind, format!("item{k}"))),
    );
    for (k, kind, name) in listed {
        assert!(
            out.contains(&format!(
                "warning: {kind}: `{name}`\n  --> src/m{k}.rs:{k}:5\n"
            )),
            "{name}:\n{out}"
        );
        assert!(!out.contains(&format!("let {name} = ")), "{name}:\n{out}");
    }
    assert!(out.contains("generated 18 warnings"));
}

/// pylint reports every finding on one line, its severity in its code: the few `E` findings (an undefined variable)
/// among dozens of docstring and naming ones are what the report is read for, though no error word says so.
#[test]
fn a_pylint_reports_errors_stay_among_its_style_findings() {
    let style = [
        "C0116: Missing function or method docstring (missing-function-docstring)",
        "C0103: Variable name \"x\" doesn't conform to snake_case naming style (invalid-name)",
        "W0611: Unused import json (unused-import)",
        "R0913: Too many arguments (7/5) (too-many-arguments)",
        "C0301: Line too long (104/100) (line-too-long)",
        "W0102: Dangerous default value [] as argument (dangerous-default-value)",
        "R1705: Unnecessary \"else\" after \"return\" (no-else-return)",
    ];
    let mut report = String::from("************* Module app.core\n");
    for k in 0..200 {
        report.push_str(&format!(
            "app/core.py:{}:{}: {}\n",
            10 + k * 7,
            k % 13,
            style[k % style.len()]
        ));
        if k % 60 == 30 {
            report.push_str(&format!(
                "app/core.py:{}:11: E0602: Undefined variable 'session_{k}' (undefined-variable)\n",
                12 + k * 7
            ));
        }
    }
    report.push_str("\n-----------------------------------\nYour code has been rated at 4.12/10\n");
    let mut tally = Tally::default();
    let out = super::super::logs::compress(&report, &ctx(&[], &[]), &mut tally).unwrap_or_default();
    assert!(!out.is_empty());
    for k in [30, 90, 150] {
        assert!(
            out.contains(&format!(
                "\napp/core.py:{}:11: E0602: Undefined variable 'session_{k}' (undefined-variable)\n",
                12 + k * 7
            )),
            "{k}:\n{out}"
        );
    }
    assert!(out.len() * 2 < report.len(), "{out}");
}

/// An MSBuild run's output: `count` errors, listed again under `Build FAILED.`.
fn msbuild_failure(count: usize) -> (Vec<String>, String) {
    let errors: Vec<String> = (0..count)
        .map(|k| {
            format!(
                "C:\\src\\Web\\Controllers\\TailorController.cs({},5): error CS0106: The modifier 'private' is not valid for this item [C:\\src\\Web\\Web.csproj]",
                1600 + k * 17
            )
        })
        .collect();
    let mut text = String::from(
        "  Determining projects to restore...\n  All projects are up-to-date for restore.\n",
    );
    for e in &errors {
        text.push_str(e);
        text.push('\n');
    }
    text.push_str("\nBuild FAILED.\n\n");
    for e in &errors {
        text.push_str(e);
        text.push('\n');
    }
    text.push_str(&format!(
        "    0 Warning(s)\n    {count} Error(s)\n\nTime Elapsed 00:00:04.37\n"
    ));
    (errors, text)
}

/// MSBuild lists every error (and warning) a second time under `Build FAILED.`. The copies the tail shows are
/// read there: the error floor does not show them a first time too.
#[test]
fn diagnostics_a_build_repeats_in_its_summary_are_shown_once() {
    // More than the tail shows: it holds only the summary's copies.
    let (errors, text) = msbuild_failure(40);
    let mut tally = Tally::default();
    let out = compress_failing(&text, &ctx(&[], &[]), &mut tally).unwrap_or_default();
    for e in &errors {
        assert!(out.contains(e.as_str()), "{e}\n{out}");
    }
    // Each once, but for the two a kept error line of the summary takes along as its context.
    let shown = out.matches("error CS0106").count();
    assert!(shown <= errors.len() + 2, "{shown}\n{out}");
    assert!(
        out.contains("Build FAILED.\n") && out.contains("    40 Error(s)\n"),
        "{out}"
    );
}

/// With fewer errors the tail shows the whole summary, and the head the first errors again: the head leaves its
/// copies to the tail.
#[test]
fn head_lines_the_tail_shows_again_are_left_to_it() {
    let (errors, text) = msbuild_failure(16);
    let mut tally = Tally::default();
    let out = compress_failing(&text, &ctx(&[], &[]), &mut tally).unwrap_or_default();
    for e in &errors[..4] {
        assert_eq!(out.matches(e.as_str()).count(), 1, "{e}\n{out}");
    }
    assert!(
        out.starts_with("  Determining projects to restore...\n"),
        "{out}"
    );
}

/// With nine errors the tail reaches back past `Build FAILED.` into the errors printed during the build: those
/// copies are left to the summary's too. A table's rule line, the same between every two rows, stays each time.
#[test]
fn lines_the_tail_shows_again_further_down_are_left_to_that_copy() {
    let (errors, text) = msbuild_failure(9);
    let out = compress_failing(&text, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
    for e in &errors {
        assert_eq!(out.matches(e.as_str()).count(), 1, "{e}\n{out}");
    }
    assert!(out.contains("Build FAILED.\n"), "{out}");

    let rule = format!("├{}┼{}┤", "─".repeat(30), "─".repeat(60));
    let mut table = String::from("Vulnerabilities found: 6\n");
    for k in 0..6 {
        table.push_str(&format!(
            "│ CVE-2024-{k:04} │ {:58} │\n{rule}\n",
            format!("a package {k}")
        ));
    }
    for k in 0..40 {
        table.push_str(&format!("scanned package-{k}\n"));
    }
    let mut tail = String::new();
    for k in 0..6 {
        tail.push_str(&format!(
            "│ CVE-2025-{k:04} │ {:58} │\n{rule}\n",
            format!("another package {k}")
        ));
    }
    table.push_str(&tail);
    table.push_str("6 failed checks\n");
    let out = compress_failing(&table, &ctx(&[], &[]), &mut Tally::default()).unwrap_or_default();
    assert!(out.contains(&tail), "{out}");
}

/// In a log, the record above an error record is another event, no context of it: a client that logs
/// `Successfully authenticated` before each request keeps that line only where the head or tail shows it.
#[test]
fn the_record_above_a_logged_error_is_no_context_of_it() {
    let mut text = String::new();
    for k in 0..60 {
        text.push_str(&format!(
            "I, [2026-06-11T21:47:17.{k:06} #1]  INFO -- : Successfully authenticated, token expires in 3600 seconds\n    responds to method {k}\n"
        ));
        if k % 10 == 5 {
            text.push_str(&format!(
                "E, [2026-06-11T21:47:17.{k:06} #1] ERROR -- : Failed to parse JSON body: unexpected character at line {k}\n"
            ));
        }
    }
    let mut t = Tally::default();
    let out = compress_failing(&text, &ctx(&[], &[]), &mut t).unwrap_or_default();
    for k in [15, 25, 35] {
        let error =
            format!("ERROR -- : Failed to parse JSON body: unexpected character at line {k}\n");
        assert!(out.contains(&error), "{out}");
        let above = format!("I, [2026-06-11T21:47:17.{k:06} #1]  INFO");
        assert!(!out.contains(&above), "{above}\n{out}");
    }
}

/// Blank lines in a row that stay show as one blank line, not as a count alone on its line.
#[test]
fn kept_blank_lines_in_a_row_show_no_count() {
    let mut text = String::from(
        "ERROR: test_console (unittest.loader._FailedTest)\nAttributeError: no attribute\n\n\n",
    );
    for k in 0..200 {
        text.push_str(&format!("test_{k} (tests.T) ... ok\n"));
    }
    text.push_str("\n\nFAILED (errors=1)\n");
    let mut tally = Tally::default();
    let out = compress_failing(&text, &ctx(&[], &[]), &mut tally).unwrap_or_default();
    assert!(out.contains("AttributeError: no attribute\n\n"), "{out}");
    assert!(!out.contains("(×"), "{out}");
}

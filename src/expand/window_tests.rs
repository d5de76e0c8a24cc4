//! Unit tests for [`super`]: verbatim answers, windows and their hints, query mode, and no panics.

use proptest::prelude::*;

use super::*;

const H: &str = "abcdef123456";

fn args(offset: Option<usize>, limit: Option<usize>, query: Option<&str>) -> ExpandArgs {
    ExpandArgs {
        hash: H.into(),
        query: query.map(str::to_owned),
        offset,
        limit,
    }
}

/// The window's text and its status line (the last line, which always follows a `\n`).
fn split(out: &str) -> (&str, &str) {
    out.rfind("\n[ctxzip: ")
        .map_or((out, ""), |at| (&out[..at], &out[at + 1..]))
}

/// The `"offset":N` the status line asks for, if any.
fn next_offset(status: &str) -> Option<usize> {
    let rest = &status[status.find("\"offset\":")? + 9..];
    rest[..rest.find(|c: char| !c.is_ascii_digit())?]
        .parse()
        .ok()
}

/// Follows the status lines from offset 0 and glues the windows back together.
fn reassemble(original: &str, max: usize, limit: Option<usize>) -> Option<String> {
    let mut glued = String::new();
    let mut offset = 0;
    for _ in 0..=original.chars().count() + 1 {
        let out = render(original, &args(Some(offset), limit, None), max, H);
        let (body, status) = split(&out);
        glued.push_str(body);
        match next_offset(status) {
            Some(next) if next > offset => offset = next,
            Some(_) => return None,
            None => {
                return (status.contains("end of original") || status.contains("is empty"))
                    .then_some(glued);
            }
        }
    }
    None
}

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i:04} some text here\n"))
        .collect()
}

#[test]
fn small_originals_come_back_byte_for_byte() {
    for original in [
        "",
        "x",
        "a\r\nb\r\n",
        "  trailing  \n\n",
        "é🙂漢\u{0301}",
        "no newline at end",
    ] {
        assert_eq!(
            render(original, &args(None, None, None), DEFAULT_MAX_CHARS, H),
            original
        );
    }
    let exact = "ab\n".repeat(10);
    assert_eq!(render(&exact, &args(None, None, None), 30, H), exact);
    // Multi-byte characters count once: 10 characters in 40 bytes still fit 10.
    let wide = "🙂".repeat(10);
    assert_eq!(render(&wide, &args(None, None, None), 10, H), wide);
    let over = "ab\n".repeat(11);
    assert!(
        render(&over, &args(None, None, None), 30, H).contains("[ctxzip: showing chars 0-30 of 33")
    );
}

#[test]
fn first_window_and_its_next_line() {
    let original = numbered(100); // 100 lines of 25 characters
    let out = render(&original, &args(None, None, None), 1_000, H);
    let (body, status) = split(&out);
    assert_eq!(body.len(), 40 * 25, "ends at a line end");
    assert!(original.starts_with(body) && body.ends_with('\n'));
    let want = format!(
        "[ctxzip: showing chars 0-1000 of 2500 (lines 1-40 of 100); call context_expand with \
         {{\"hash\":\"{H}\",\"offset\":1000}} for more]"
    );
    assert_eq!(status, want);
    let last = render(&original, &args(Some(2_475), None, None), 1_000, H);
    assert_eq!(
        split(&last),
        (
            "line 0100 some text here\n",
            "[ctxzip: showing chars 2475-2500 of 2500 (lines 100-100 of 100); end of original]"
        )
    );
}

#[test]
fn the_limit_is_repeated_in_the_hint() {
    let out = render(&numbered(10), &args(Some(0), Some(100), None), 1_000, H);
    assert!(
        out.ends_with(&format!(
            "{{\"hash\":\"{H}\",\"offset\":100,\"limit\":100}} for more]"
        )),
        "{out}"
    );
    // limit above max_chars is capped by it; limit 0 counts as none.
    let capped = render(&numbered(100), &args(None, Some(1_000_000), None), 100, H);
    assert!(capped.contains("chars 0-100 of"));
    let zero = render(&numbered(2), &args(None, Some(0), None), 1_000, H);
    assert_eq!(zero, numbered(2));
}

#[test]
fn offsets_past_the_end() {
    let original = numbered(3);
    for offset in [75, 76, 1_000, usize::MAX] {
        let out = render(&original, &args(Some(offset), None, None), 1_000, H);
        assert!(
            out.starts_with(&format!("[ctxzip: offset {offset} is past the end")),
            "{out}"
        );
        assert!(
            out.contains("(75 chars, 3 lines)") && out.contains(&format!("{{\"hash\":\"{H}\"}}"))
        );
    }
    let empty = render("", &args(Some(0), None, None), 10, H);
    assert_eq!(empty, "\n[ctxzip: the original is empty]");
    assert!(render("", &args(Some(1), None, None), 10, H).contains("past the end"));
}

#[test]
fn offsets_snap_to_the_line_start_when_close() {
    let original = numbered(100);
    let out = render(&original, &args(Some(25 * 5 + 7), None, None), 1_000, H);
    assert!(split(&out).0.starts_with("line 0006 "), "{out}");
    assert!(split(&out).1.contains("showing chars 125-"));
    // In a long line, an offset far from the line start stays where it is.
    let long = format!("{}\n", "x".repeat(5_000));
    let mid = render(&long, &args(Some(3_000), None, None), 1_000, H);
    assert!(
        split(&mid).1.contains("showing chars 3000-4000 of 5001"),
        "{mid}"
    );
}

#[test]
fn windows_never_split_a_character() {
    let original: String = "é🙂漢a".repeat(500);
    for limit in [1, 2, 3, 7, 100] {
        let out = render(&original, &args(Some(5), Some(limit), None), 1_000, H);
        let (body, _) = split(&out);
        assert_eq!(body.chars().count(), limit);
        assert!(original.contains(body));
    }
}

#[test]
fn all_windows_reassemble_the_original() {
    let cases = [
        numbered(500),
        "🙂".repeat(3_001),
        format!("{}\n{}\n\n", "x".repeat(2_500), numbered(40)),
        "a\r\nb\r\n".repeat(400),
        "\n".repeat(777),
        format!("{}é", numbered(7)),
    ];
    for original in &cases {
        for (max, limit) in [
            (1_000, None),
            (100, None),
            (1_000, Some(37)),
            (5, None),
            (1, None),
        ] {
            let glued = reassemble(original, max, limit);
            assert_eq!(
                glued.as_deref(),
                Some(original.as_str()),
                "max {max} limit {limit:?}"
            );
        }
    }
}

fn log_text() -> String {
    let mut lines: Vec<String> = (1..=40).map(|i| format!("INFO request {i} ok")).collect();
    lines[9] = "ERROR PoolTimeout after 30s".into();
    lines[19] = "WARN pool timeout nearly reached".into();
    lines[29] = "ERROR ECONNRESET talking to db".into();
    lines.join("\n") + "\n"
}

#[test]
fn query_shows_numbered_matches_with_context() {
    let out = render(
        &log_text(),
        &args(None, None, Some("pooltimeout")),
        DEFAULT_MAX_CHARS,
        H,
    );
    let want = "[ctxzip: 1 of 40 lines match \"pooltimeout\"; showing matches 1-1 with 2 lines of \
                context; \"N:\" marks a matching line, \"N-\" a context line]\n\
                8- INFO request 8 ok\n9- INFO request 9 ok\n10: ERROR PoolTimeout after 30s\n\
                11- INFO request 11 ok\n12- INFO request 12 ok\n";
    assert_eq!(out, want);
}

#[test]
fn query_with_several_words_ranks_and_separates_groups() {
    let out = render(
        &log_text(),
        &args(None, None, Some("POOL timeout ECONNRESET")),
        DEFAULT_MAX_CHARS,
        H,
    );
    assert!(out.starts_with(
        "[ctxzip: 3 of 40 lines match \"POOL timeout ECONNRESET\", any word, lines matching"
    ));
    assert!(
        out.contains("10: ERROR PoolTimeout")
            && out.contains("20: WARN pool timeout")
            && out.contains("30: ERROR")
    );
    assert_eq!(out.matches("\n--\n").count(), 2);
    // Page size of one match: the line matching two words comes first, then in line order.
    let first = render(
        &log_text(),
        &args(None, Some(60), Some("pool timeout ECONNRESET")),
        DEFAULT_MAX_CHARS,
        H,
    );
    assert!(
        first.contains("10: ERROR PoolTimeout") && !first.contains("30: ERROR"),
        "{first}"
    );
    let hint = format!("{{\"hash\":\"{H}\",\"query\":\"pool timeout ECONNRESET\",\"offset\":");
    assert!(first.contains(&hint) && first.contains("2 more matching lines"));
}

#[test]
fn query_pages_reach_every_match() {
    let text: String = (0..300)
        .map(|i| format!("row {i} {}\n", if i % 3 == 0 { "hit" } else { "miss" }))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut offset = 0;
    for _ in 0..200 {
        let out = render(&text, &args(Some(offset), None, Some("HIT")), 500, H);
        seen.extend(
            out.lines()
                .filter(|l| l.contains(": row"))
                .map(str::to_owned),
        );
        match next_offset(out.lines().last().unwrap_or_default()) {
            Some(next) if out.contains("more matching lines") => offset = next,
            _ => break,
        }
    }
    assert_eq!(seen.len(), 100);
}

#[test]
fn query_phrase_no_match_and_skip_past() {
    let phrase = render(
        &log_text(),
        &args(None, None, Some("\"pool timeout\"")),
        DEFAULT_MAX_CHARS,
        H,
    );
    assert!(phrase.contains("1 of 40 lines") && phrase.contains("20: WARN"));
    let none = render(
        &log_text(),
        &args(None, None, Some("segfault")),
        DEFAULT_MAX_CHARS,
        H,
    );
    assert_eq!(
        none,
        format!(
            "[ctxzip: no line matches \"segfault\" in this original (40 lines, {} chars); call context_expand \
             with {{\"hash\":\"{H}\"}} and no query to read it]",
            log_text().len()
        )
    );
    let past = render(
        &log_text(),
        &args(Some(3), None, Some("error")),
        DEFAULT_MAX_CHARS,
        H,
    );
    assert!(past.contains("2 lines match \"error\"; offset 3 skips past all of them"));
}

#[test]
fn query_cuts_long_lines() {
    let text = format!(
        "{}NEEDLE{}\nshort\n",
        "a".repeat(10_000),
        "b".repeat(10_000)
    );
    let out = render(
        &text,
        &args(None, None, Some("needle")),
        DEFAULT_MAX_CHARS,
        H,
    );
    assert!(
        out.contains("NEEDLE") && out.contains("line cut: 20006 chars") && out.contains("offset 0")
    );
    assert!(out.len() < 3_000);
    // The short line is shown as context of the first match, so it is not offered again on a next page.
    let small = render(
        &text,
        &args(None, Some(300), Some("needle short")),
        DEFAULT_MAX_CHARS,
        H,
    );
    assert!(
        small.contains("\n2: short\n") && !small.contains("more matching"),
        "{small}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn render_never_panics(
        text in "(?s).{0,300}",
        offset in prop::option::of(prop_oneof![0usize..400, Just(usize::MAX), any::<usize>()]),
        limit in prop::option::of(prop_oneof![0usize..50, Just(usize::MAX), any::<usize>()]),
        max in prop_oneof![0usize..60, Just(usize::MAX)],
        query in prop::option::of("(?s).{0,12}"),
    ) {
        let out = render(&text, &args(offset, limit, query.as_deref()), max, "h\"ash");
        prop_assert!(query.is_some() || !out.is_empty() || text.is_empty());
    }

    #[test]
    fn windows_reassemble_any_text(text in "(?s)[a-c\n\r é🙂]{0,200}", max in 1usize..40) {
        prop_assert_eq!(reassemble(&text, max, None), Some(text.clone()));
    }
}

//! Unit tests for [`super`]: token extraction, counting per distinct hash, threshold, bounds and serde.

use super::*;

#[test]
fn tokens_that_look_like_identifiers() {
    let text = "ERROR HttpClient: PoolTimeout after 30s (ECONNRESET, OOM) in tokio::sync at a.b.c; \
                max_retries=3 getUser HTTPServer E2BIG. Error: the timeout was hit at 12:30:45 v1.2.3 \
                1.2.3 deadbeef1234 abcdef123456 42 context_expand 12_lines_offloaded <<ctxzip:abc>> \
                httpclient POOLTIMEOUT naïveCamel";
    let want = [
        "HttpClient",
        "PoolTimeout",
        "ECONNRESET",
        "OOM",
        "tokio::sync",
        "a.b.c",
        "max_retries",
        "getUser",
        "HTTPServer",
        "E2BIG",
        // Version numbers are not domain words (see `version_numbers_are_not_candidates`).
        // Non-ASCII letters split tokens: "naïveCamel" yields "veCamel".
        "veCamel",
    ];
    assert_eq!(candidate_tokens(text), want);
}

#[test]
fn tokens_skip_blobs_and_are_bounded_and_deterministic() {
    let long = format!("Aa{}", "b".repeat(70));
    assert!(candidate_tokens(&long).is_empty());
    assert!(candidate_tokens("plain lowercase words only, 123 456.78 0x1f").is_empty());
    let many: String = (0..500).map(|i| format!("Name{i}Thing ")).collect();
    let tokens = candidate_tokens(&many);
    assert_eq!(tokens.len(), 200);
    assert_eq!(tokens.first().map(String::as_str), Some("Name0Thing"));
    assert_eq!(candidate_tokens(&many), tokens);
}

const LOG: &str = "pool exhausted: PoolTimeout in HttpClient (ECONNRESET)";

#[test]
fn counts_distinct_hashes_and_crosses_once() {
    let mut book = SuggestionBook::new();
    assert!(
        book.record("aaaaaaaaaaaa", "exec_command", LOG, 10, 3)
            .is_empty()
    );
    // The same original again, even paged differently, is not a new expansion.
    assert!(
        book.record("AAAAAAAAAAAA", "exec_command", LOG, 11, 3)
            .is_empty()
    );
    assert!(
        book.record("aaaaaaaaaaaa", "exec_command", "PoolTimeout", 12, 3)
            .is_empty()
    );
    assert!(
        book.record("bbbbbbbbbbbb", "read_file", LOG, 13, 3)
            .is_empty()
    );
    let crossed = book.record("cccccccccccc", "exec_command", LOG, 14, 3);
    assert_eq!(crossed, ["PoolTimeout", "HttpClient", "ECONNRESET"]);
    assert!(
        book.record("dddddddddddd", "exec_command", LOG, 15, 3)
            .is_empty(),
        "crosses only once"
    );
    let top = book.suggestions();
    assert_eq!(top.len(), 3);
    let first = &top[0];
    assert_eq!(
        (first.expansions, first.last_seen, first.suggested),
        (4, 15, true)
    );
    assert_eq!(first.tools, ["exec_command", "read_file"]);
}

#[test]
fn identity_is_case_insensitive_and_keeps_first_casing() {
    let mut book = SuggestionBook::new();
    book.record("aaaaaaaaaaaa", "t", "PoolTimeout", 1, 2);
    let crossed = book.record("bbbbbbbbbbbb", "t", "POOLTIMEOUT pooltimeout_x", 2, 2);
    assert_eq!(crossed, ["PoolTimeout"]);
    let all = book.all();
    assert_eq!(all.len(), 2);
    assert_eq!(
        (all[0].pattern.as_str(), all[0].expansions),
        ("PoolTimeout", 2)
    );
    assert_eq!(
        (all[1].pattern.as_str(), all[1].suggested),
        ("pooltimeout_x", false)
    );
}

#[test]
fn suggestions_sorted_by_expansions() {
    let mut book = SuggestionBook::new();
    for (i, h) in ["111111111111", "222222222222", "333333333333"]
        .iter()
        .enumerate()
    {
        let text = if i == 0 {
            "AlphaOne BetaTwo"
        } else {
            "BetaTwo"
        };
        book.record(h, "t", text, i as u64, 1);
    }
    let names: Vec<String> = book.suggestions().into_iter().map(|s| s.pattern).collect();
    assert_eq!(names, ["BetaTwo", "AlphaOne"]);
    // Threshold 0 behaves as 1: the first expansion suggests.
    assert_eq!(
        SuggestionBook::new().record("h", "t", "GammaThree", 0, 0),
        ["GammaThree"]
    );
}

#[test]
fn known_patterns_are_skipped() {
    let mut book = SuggestionBook::new();
    book.record("aaaaaaaaaaaa", "t", "PoolTimeout HttpClient", 1, 1);
    book.set_known_patterns(&["timeout".to_owned(), "  ".to_owned()]);
    let crossed = book.record("bbbbbbbbbbbb", "t", "ConnTimeout ECONNRESET", 2, 1);
    assert_eq!(crossed, ["ECONNRESET"]);
    let names: Vec<String> = book.suggestions().into_iter().map(|s| s.pattern).collect();
    assert_eq!(
        names,
        ["ECONNRESET", "HttpClient"],
        "PoolTimeout is configured now"
    );
}

#[test]
fn size_is_bounded_least_recently_seen_first() {
    let mut book = SuggestionBook::new();
    book.record("000000000000", "t", "KeepMe", 0, 1);
    for i in 0..MAX_PATTERNS + 50 {
        book.record(
            &format!("{i:012}"),
            "t",
            &format!("Pattern{i}X"),
            1 + i as u64,
            5,
        );
    }
    assert_eq!(book.len(), MAX_PATTERNS);
    let all = book.all();
    assert!(
        all.iter().any(|s| s.pattern == "KeepMe"),
        "suggested ones go last"
    );
    assert!(!all.iter().any(|s| s.pattern == "Pattern0X"));
    assert!(
        all.iter()
            .any(|s| s.pattern == format!("Pattern{}X", MAX_PATTERNS + 49))
    );
}

#[test]
fn per_pattern_hash_memory_is_bounded() {
    let mut book = SuggestionBook::new();
    for i in 0..40 {
        book.record(&format!("{i:012}"), "t", "SameName", i, 100);
    }
    assert_eq!(book.all()[0].expansions, 40);
    let json = serde_json::to_string(&book).unwrap_or_default();
    assert_eq!(json.matches("\"0000000000").count(), MAX_HASHES);
}

#[test]
fn serde_round_trip() {
    let mut book = SuggestionBook::new();
    book.record("aaaaaaaaaaaa", "exec_command", LOG, 7, 1);
    book.set_known_patterns(&["nothing".to_owned()]);
    let json = serde_json::to_string(&book).unwrap_or_default();
    assert!(
        json.starts_with(
            "{\"version\":1,\"patterns\":[{\"pattern\":\"ECONNRESET\",\"expansions\":1,"
        )
    );
    let back: Option<SuggestionBook> = serde_json::from_str(&json).ok();
    assert_eq!(back.as_ref().map(SuggestionBook::all), Some(book.all()));
    // The same hash is remembered across a reload.
    let mut back = back.unwrap_or_default();
    assert!(back.record("aaaaaaaaaaaa", "t", LOG, 8, 1).is_empty());
    assert_eq!(back.all()[0].expansions, 1);
}

#[test]
fn deserialization_is_version_tolerant() {
    let old = r#"{"patterns":[
        {"pattern":"PoolTimeout","expansions":"4","tools":"exec","suggested":"true",
         "last_seen":"2024-05-01T10:00:00Z","future_field":{"x":1}},
        {"pattern":"pooltimeout","expansions":9},
        {"expansions":3},
        {"pattern":"HttpClient","expansions":-2,"last_seen":12.0,"hashes":["aaaaaaaaaaaa", 5]}
    ],"version":7,"other":true}"#;
    let book: SuggestionBook = serde_json::from_str(old).unwrap_or_default();
    let all = book.all();
    assert_eq!(all.len(), 2);
    let want = PatternStat {
        pattern: "PoolTimeout".into(),
        expansions: 4,
        tools: vec!["exec".into()],
        suggested: true,
        last_seen: 0,
    };
    assert_eq!(all[0], want);
    assert_eq!((all[1].expansions, all[1].last_seen), (0, 12));
    let stat: Option<PatternStat> = serde_json::from_str("{}").ok();
    assert_eq!(stat, Some(PatternStat::default()));
    let empty: Option<SuggestionBook> = serde_json::from_str("{}").ok();
    assert_eq!(empty.map(|b| b.len()), Some(0));
}

#[test]
fn version_numbers_are_not_candidates() {
    let tokens = candidate_tokens("Compiling tokio v1.40.0 and a1.22.333 with PoolTimeout");
    assert!(
        !tokens
            .iter()
            .any(|t| t.starts_with("v1") || t.starts_with("a1")),
        "{tokens:?}"
    );
    assert!(tokens.iter().any(|t| t == "PoolTimeout"));
}

#[test]
fn counts_from_the_store_replace_the_books_own() {
    let mut book = SuggestionBook::new();
    book.record("h1", "shell", "PoolTimeoutError here", 10, 3);
    // The store says two replicas together saw it in three originals, and saw another identifier the book lost.
    book.apply_counts(
        &[
            ("pooltimeouterror".to_string(), 3),
            ("econnreset".to_string(), 1),
        ],
        3,
    );
    let suggested = book.suggestions();
    assert_eq!(suggested.len(), 1);
    assert_eq!(
        suggested[0].pattern, "PoolTimeoutError",
        "the book's casing"
    );
    assert_eq!(suggested[0].expansions, 3);
    assert_eq!(suggested[0].tools, ["shell"]);
    let all = book.all();
    assert!(
        all.iter()
            .any(|s| s.pattern == "econnreset" && s.expansions == 1 && !s.suggested)
    );
}

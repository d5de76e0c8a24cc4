//! Unit tests for [`super`]: argument parsing, hash spellings, lookup and the texts.

use super::*;

fn args(json: &str) -> Option<ExpandArgs> {
    ExpandArgs::parse(json).ok()
}

fn err(json: &str) -> Option<ArgsError> {
    ExpandArgs::parse(json).err()
}

#[test]
fn parse_full_arguments() {
    let got = args(r#"{"hash":"abcdef123456","query":"Pool timeout","offset":16000,"limit":4000}"#);
    let want = ExpandArgs {
        hash: "abcdef123456".into(),
        query: Some("Pool timeout".into()),
        offset: Some(16_000),
        limit: Some(4_000),
    };
    assert_eq!(got, Some(want));
}

#[test]
fn parse_is_tolerant() {
    let got =
        args(r#"{"hash":"abcdef123456","offset":"16000","limit":" 50 ","extra":[1],"query":null}"#);
    assert_eq!(got.as_ref().and_then(|a| a.offset), Some(16_000));
    assert_eq!(got.as_ref().and_then(|a| a.limit), Some(50));
    assert_eq!(got.as_ref().and_then(|a| a.query.clone()), None);
    let floats = args(r#"{"hash":"abcdef123456","offset":200.0,"limit":"1e3","query":"  "}"#);
    assert_eq!(floats.as_ref().and_then(|a| a.offset), Some(200));
    assert_eq!(floats.as_ref().and_then(|a| a.limit), Some(1_000));
    assert_eq!(floats.as_ref().and_then(|a| a.query.clone()), None);
    let empty_strings = args(r#"{"hash":"abcdef123456","offset":"","limit":null}"#);
    assert_eq!(
        empty_strings.map(|a| (a.offset, a.limit)),
        Some((None, None))
    );
    let huge = args(r#"{"hash":"abcdef123456","offset":1e300}"#);
    assert_eq!(huge.and_then(|a| a.offset), Some(usize::MAX));
}

#[test]
fn parse_double_encoded_and_bare_string() {
    let double = args(r#""{\"hash\":\"abcdef123456\",\"offset\":5}""#);
    assert_eq!(
        double.map(|a| (a.hash, a.offset)),
        Some(("abcdef123456".into(), Some(5)))
    );
    let bare = args(r#""<<ctxzip:abcdef123456 3_lines_offloaded>>""#);
    assert_eq!(
        bare.map(|a| a.hash),
        Some("<<ctxzip:abcdef123456 3_lines_offloaded>>".into())
    );
    let number = args(r#"{"hash":123456}"#);
    assert_eq!(number.map(|a| a.hash), Some("123456".into()));
}

#[test]
fn parse_errors() {
    assert_eq!(err(r#"{"query":"x"}"#), Some(ArgsError::MissingHash));
    assert_eq!(err(r#"{"hash":"  "}"#), Some(ArgsError::MissingHash));
    assert_eq!(err(r#"{"hash":null}"#), Some(ArgsError::MissingHash));
    assert_eq!(err(""), Some(ArgsError::MissingHash));
    assert_eq!(err("[1,2]"), Some(ArgsError::NotObject));
    assert!(matches!(err("{hash:"), Some(ArgsError::NotJson(_))));
    assert!(matches!(
        err(r#"{"hash":["a"]}"#),
        Some(ArgsError::BadField { field: "hash", .. })
    ));
    assert!(matches!(
        err(r#"{"hash":"abcdef","query":{}}"#),
        Some(ArgsError::BadField { field: "query", .. })
    ));
    assert!(matches!(
        err(r#"{"hash":"abcdef","limit":true}"#),
        Some(ArgsError::BadField { field: "limit", .. })
    ));
    assert!(matches!(
        err(r#"{"hash":"abcdef","limit":"ten"}"#),
        Some(ArgsError::BadField { field: "limit", .. })
    ));
    assert!(matches!(
        err(r#"{"hash":"abcdef","offset":1.5}"#),
        Some(ArgsError::BadField {
            field: "offset",
            ..
        })
    ));
}

#[test]
fn negative_numbers_have_a_clear_message() {
    for json in [
        r#"{"hash":"abcdef","offset":-5}"#,
        r#"{"hash":"abcdef","offset":"-5"}"#,
    ] {
        let e = err(json);
        assert!(
            matches!(
                e,
                Some(ArgsError::BadField {
                    field: "offset",
                    ..
                })
            ),
            "{json}"
        );
        let message = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("must be 0 or more, got -5"), "{message}");
    }
}

#[test]
fn every_spelling_normalizes_to_the_same_hash() {
    let spellings = [
        "abcdef123456",
        "ABCDEF123456",
        "<<ctxzip:ABCDEF123456 12_lines_offloaded>>",
        "<<ctxzip:abcdef123456 12_lines_offloaded>>",
        "<<ctxzip:abcdef123456>>",
        "abcdef123456 12_lines_offloaded",
        "ctxzip:abcdef123456",
        "CTXZIP:AbCdEf123456",
        "  \"abcdef123456\"  ",
        "'<<ctxzip:abcdef123456 3_items_offloaded>>'",
        "`abcdef123456`",
        "\n\tabcdef123456\n",
        "hash=abcdef123456",
        "the marker <<ctxzip:abcdef123456 40_lines_offloaded>> above",
        "abcdef123456ffff0000111122223333444455556666777788889999aaaabbbb",
        "decade abcdef123456",
    ];
    for spelling in spellings {
        assert_eq!(
            normalize(spelling).as_deref(),
            Some("abcdef123456"),
            "{spelling:?}"
        );
    }
}

#[test]
fn prefixes_normalize_and_short_ones_are_rejected() {
    assert_eq!(normalize("ABCDEF").as_deref(), Some("abcdef"));
    assert_eq!(normalize("<<ctxzip:abcdef12").as_deref(), Some("abcdef12"));
    assert_eq!(normalize("abcde"), None);
    assert_eq!(normalize("<<ctxzip:abc12 3_lines_offloaded>>"), None);
    assert_eq!(normalize(""), None);
    assert_eq!(normalize("   "), None);
    assert_eq!(normalize("<<ctxzip:HASH NOTE>>"), None);
    assert_eq!(normalize("no hash here"), None);
    assert_eq!(normalize("ééé 🙂"), None);
    // A hex run glued to other letters is still found as a last resort.
    assert_eq!(normalize("xxabcdef12yy").as_deref(), Some("abcdef12"));
}

#[test]
fn lookup_plan_by_length() {
    assert_eq!(
        lookup_plan("abcdef123456"),
        Lookup::Exact("abcdef123456".into())
    );
    assert_eq!(
        lookup_plan("ABCDEF1234567890"),
        Lookup::Exact("abcdef123456".into())
    );
    assert_eq!(lookup_plan("abcdef"), Lookup::Prefix("abcdef".into()));
    assert_eq!(
        lookup_plan("abcdef12345"),
        Lookup::Prefix("abcdef12345".into())
    );
}

#[test]
fn choose_unique_ambiguous_missing() {
    let store = vec![
        "abcdef111111".to_owned(),
        "abcdef222222".to_owned(),
        "123456abcdef".to_owned(),
    ];
    assert_eq!(
        choose("abcdef1", &store),
        Resolution::Unique("abcdef111111".into())
    );
    assert_eq!(
        choose("ABCDEF", &store),
        Resolution::Ambiguous(vec!["abcdef111111".into(), "abcdef222222".into()])
    );
    assert_eq!(choose("fedcba", &store), Resolution::Missing);
    assert_eq!(choose("abcdef", &[]), Resolution::Missing);
    // The store's answer is filtered again and deduplicated.
    let sloppy = vec![
        "abcdef111111".to_owned(),
        "ABCDEF111111".to_owned(),
        "999999999999".to_owned(),
    ];
    assert_eq!(
        choose("abcdef", &sloppy),
        Resolution::Unique("abcdef111111".into())
    );
    // Too short a prefix is never resolved, even with one candidate.
    assert_eq!(choose("abcde", &store[..1]), Resolution::Missing);
}

#[test]
fn texts_tell_what_to_do() {
    let miss = miss_text("<<ctxzip:abcdef123456 3_lines_offloaded>>");
    assert!(miss.contains("abcdef123456") && miss.contains("expired") && miss.contains("Re-run"));
    let many: Vec<String> = (0..15).map(|i| format!("abcdef{i:06}")).collect();
    let amb = ambiguous_text("abcdef", &many);
    assert!(
        amb.contains("15 stored originals")
            && amb.contains("abcdef000009")
            && amb.contains("5 more")
    );
    assert!(!amb.contains("abcdef000010"));
    let bad = bad_args_text(&ArgsError::MissingHash);
    assert!(bad.contains("\"hash\"") && bad.contains("invalid arguments"));
    let invalid = invalid_hash_text("nothing");
    assert!(invalid.contains("\"nothing\"") && invalid.contains("at least 6"));
    let long = miss_text(&"x".repeat(10_000));
    assert!(long.len() < 400);
}

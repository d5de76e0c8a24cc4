//! Unit and property tests for [`super`]: the splitter against the serde_json scan it replaced (kept here as the
//! oracle), on generated bodies, on the same bodies damaged, on the block-boundary cases written out, and with
//! known items taken. Stage 1's masks are tested beside it (`split/blocks_tests.rs`).

use super::*;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------------------------
// The oracle: the serde_json scan `RequestBody::parse` used before this module ([`oracle`]).

#[path = "split_oracle.rs"]
mod oracle;

use oracle::oracle;

// ---------------------------------------------------------------------------------------------------------------
// Both sides brought to one shape.

/// What a scan made of a body: members (the input's span left out: the oracle does not know it) and the input.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    NotAnObject,
    BadInput,
    /// Never the split's verdict (the body view judges repeated members): an oracle never agrees with it.
    RepeatedMember,
    Split {
        members: Vec<(String, Option<Range<usize>>)>,
        input: Option<(usize, SplitInput)>,
    },
}

fn splitter(body: &[u8]) -> Outcome {
    outcome(split(body))
}

/// A split's result in the tests' shape (the oracle's).
fn outcome(split: Result<Split, BodyError>) -> Outcome {
    match split {
        Err(BodyError::NotAnObject(_)) => Outcome::NotAnObject,
        Err(BodyError::BadInput) => Outcome::BadInput,
        Err(BodyError::RepeatedMember(_)) => Outcome::RepeatedMember,
        Ok(s) => {
            let input_at = s.input.as_ref().map(|(at, _)| *at);
            let members = s
                .members
                .into_iter()
                .enumerate()
                .map(|(i, (k, span))| (k, (Some(i) != input_at).then_some(span)))
                .collect();
            Outcome::Split {
                members,
                input: s.input,
            }
        }
    }
}

/// The splitter and the oracle agree on `body`; returns the outcome.
#[track_caller]
fn agree(body: &[u8]) -> Outcome {
    let expected = oracle(body);
    let got = splitter(body);
    assert_eq!(
        got,
        expected,
        "splitter and serde scan disagree on {:?}",
        String::from_utf8_lossy(body)
    );
    got
}

fn check(body: &[u8]) -> Result<Outcome, TestCaseError> {
    let expected = oracle(body);
    let got = splitter(body);
    prop_assert_eq!(
        &got,
        &expected,
        "splitter and serde scan disagree on {:?}",
        String::from_utf8_lossy(body)
    );
    Ok(got)
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-written cases, block boundaries first.

fn is_split(o: &Outcome) -> bool {
    matches!(o, Outcome::Split { .. })
}

/// `{"a":"` + `fill` x's + `middle` + `"}`: the string's content starts at byte 6.
fn string_body(fill: usize, middle: &str) -> Vec<u8> {
    format!("{{\"a\":\"{}{middle}\"}}", "x".repeat(fill)).into_bytes()
}

#[test]
fn empty_and_tiny_bodies() {
    assert_eq!(agree(b""), Outcome::NotAnObject);
    assert_eq!(agree(b"   \n"), Outcome::NotAnObject);
    assert_eq!(
        agree(b"{}"),
        Outcome::Split {
            members: vec![],
            input: None
        }
    );
    assert!(is_split(&agree(b" \t{ }\r\n")));
    assert_eq!(agree(b"{"), Outcome::NotAnObject);
    assert_eq!(agree(b"}"), Outcome::NotAnObject);
    assert_eq!(agree(b"[]"), Outcome::NotAnObject);
    assert_eq!(agree(b"{}{}"), Outcome::NotAnObject);
    assert_eq!(agree(b"{} x"), Outcome::NotAnObject);
    assert_eq!(agree(b"\"{}\""), Outcome::NotAnObject);
    let small = agree(br#"{"input":[1, {"a":[]} ,"s"],"n":-0.5e+3}"#);
    assert_eq!(
        small,
        Outcome::Split {
            members: vec![("input".into(), None), ("n".into(), Some(32..39))],
            input: Some((0, SplitInput::Items(vec![10..11, 13..21, 23..26]))),
        }
    );
}

#[test]
fn bodies_of_exactly_one_and_two_blocks() {
    for len in [63, 64, 65, 127, 128, 129] {
        // `{"a":"` (6) + fill + `"}` (2) = len
        let body = string_body(len - 8, "");
        assert_eq!(body.len(), len);
        assert!(is_split(&agree(&body)), "len {len}");
        assert_eq!(agree(&body[..len - 1]), Outcome::NotAnObject);
    }
}

#[test]
fn a_backslash_run_across_a_block_boundary() {
    // Runs of 1..=6 backslashes, placed so that the run starts at every offset around byte 64.
    for run in 1..=6 {
        for start in 56..=66 {
            for after in ["\"", "n", "\"x"] {
                let middle = format!("{}{after}", "\\".repeat(run));
                let body = string_body(start - 6, &middle);
                let outcome = agree(&body);
                // An even run is complete, so a quote after it closes the string early (and the closing quote
                // that follows is garbage); an odd run escapes what follows it.
                let valid = run % 2 == 1 || after == "n";
                assert_eq!(
                    is_split(&outcome),
                    valid,
                    "run {run} at {start} then {after}"
                );
            }
        }
    }
}

#[test]
fn an_escaped_quote_as_the_first_byte_of_a_block() {
    // The backslash is byte 63, its quote byte 64: the string goes on to the real closing quote.
    let body = string_body(57, "\\\"tail");
    assert_eq!(body.get(63..65), Some(&b"\\\""[..]));
    assert_eq!(
        agree(&body),
        Outcome::Split {
            members: vec![("a".into(), Some(5..body.len() - 1))],
            input: None
        }
    );
    // The same with the quote itself unescaped at byte 64 closing the string early: the `tail` is garbage.
    let body = string_body(58, "\"tail");
    assert_eq!(body.get(64), Some(&b'"'));
    assert_eq!(agree(&body), Outcome::NotAnObject);
}

#[test]
fn a_string_over_many_blocks() {
    let text: String = (0..300)
        .map(|i| format!("line {i}: \\\"q\\\" \\u00e9 é\\n"))
        .collect();
    let body = format!(r#"{{"model":"m", "input" : "{text}", "x":[1,2]}}"#);
    let outcome = agree(body.as_bytes());
    let text = match &outcome {
        Outcome::Split {
            input: Some((1, SplitInput::Text(t))),
            ..
        } => t.as_str(),
        _ => "",
    };
    assert!(
        text.starts_with("line 0: \"q\" é é\nline 1: "),
        "{outcome:?}"
    );
}

#[test]
fn every_prefix_of_a_body_with_every_kind_of_token() {
    let body = concat!(
        " {\"model\":\"gpt\" ,\"inp\\u0075t\":[ {\"type\":\"message\",\"content\":\"a\\\\\\\"b\\n\\ud800\\/\"},",
        "\n\t[1.5e-3, -0, 0.25, 12E+2, true,false,null,\"\\\\\"], {}, [], \"x\\\"\" ], \"input\": 5,",
        " \"t\\u00e9\": {\"nested\": [[[{\"deep\": \"é中😀\"}]]]}, \"n\": -12.5 }\r\n"
    );
    assert!(is_split(&agree(body.as_bytes())));
    for end in 0..body.len() {
        agree(&body.as_bytes()[..end]);
    }
    // And shifted against the block boundaries.
    for pad in 1..64 {
        let shifted = format!("{}{body}", " ".repeat(pad));
        assert!(is_split(&agree(shifted.as_bytes())));
    }
}

#[test]
fn what_the_oracle_refuses_and_accepts_at_the_edges() {
    let cases: &[&[u8]] = &[
        br#"{"input":5}"#,
        br#"{"input":1e400}"#,
        br#"{"input":true}"#,
        br#"{"input":{"a":"\ud800"}}"#,
        br#"{"input":{"\ud800":1}}"#,
        b"{\"input\":{\"a\":\"\xff\"}}",
        b"{\"input\":{\"\xff\":1}}",
        b"{\"input\":{\"a\":1},\"b\":\"\xff\"}",
        br#"{"input":"\ud800"}"#,
        br#"{"input":["\ud800"], "\ud800x": 1}"#,
        br#"{"\ud800":1}"#,
        br#"{"a":"\ud800\udc00 \uDBFF\uDFFF \udc00"}"#,
        br#"{"a":1e400, "b": 123456789012345678901234567890}"#,
        br#"{"input":[1e400]}"#,
        br#"{"input":5, "x": }"#,
        br#"{"input":[1,]}"#,
        br#"{"a":[1,]}"#,
        br#"{"a":{"b":1,}}"#,
        br#"{"a":01}"#,
        br#"{"a":1.}"#,
        br#"{"a":.5}"#,
        br#"{"a":-}"#,
        br#"{"a":1e}"#,
        br#"{"a":tru}"#,
        br#"{"a":truex}"#,
        br#"{"a":"\x"}"#,
        br#"{"a":"\u12"}"#,
        br#"{"a":"\u12g4"}"#,
        b"{\"a\":\"\x01\"}",
        b"{\"a\":\"\x7f\"}",
        b"{\"a\":\x01}",
        b"{\"a\":1\x0b}",
        b"{\"a\":\"\\\t\"}",
        b"{\"a\":\"\xc3\"}",
        b"{\"a\":\"\xc3\xa9\"}",
        b"\xef\xbb\xbf{}",
        br#"{"a":1 "b":2}"#,
        br#"{"a" 1}"#,
        br#"{1:1}"#,
        br#"{"a":1}}"#,
        br#"{"a":[}"#,
        br#"{"a":{]}"#,
        br#"{"a":1\}"#,
    ];
    for case in cases {
        agree(case);
    }
    // A depth no recursive parser would survive, in a member and in an input item.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(is_split(&agree(
        format!(r#"{{"a":{deep},"input":[{deep}]}}"#).as_bytes()
    )));
    let deep = format!("{}1{}", "{\"k\":".repeat(5000), "}".repeat(5000));
    assert!(is_split(&agree(
        format!(r#"{{"input":[{deep}]}}"#).as_bytes()
    )));
}

// ---------------------------------------------------------------------------------------------------------------
// Generated bodies ([`bodies`]), valid and damaged.

#[path = "split_bodies.rs"]
pub(crate) mod bodies;

use bodies::{apply, body, damage};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    /// Valid bodies (shifted against the block boundaries by leading whitespace): same members, spans, input.
    #[test]
    fn generated_bodies_split_as_serde_scans_them(body in body(), shift in 0usize..64) {
        let shifted = format!("{}{body}", " ".repeat(shift));
        check(shifted.as_bytes())?;
    }

    /// The same bodies damaged one to three times: the same verdict, and the same spans when both accept.
    #[test]
    fn damaged_bodies_split_as_serde_scans_them(
        body in body(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        let mut bytes = body.into_bytes();
        for d in &damages {
            apply(&mut bytes, d);
        }
        check(&bytes)?;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Known items ([`split_known`]): the same result as the full split, on the bodies they came from and on others.

/// The known list of `body`'s first items, through the last one ending in `}` at or before the one `pick` picks
/// (the last with `None`).
fn known_of(body: &[u8], pick: Option<prop::sample::Index>) -> Option<Arc<KnownItems>> {
    let spans = match split(body).ok()?.input? {
        (_, SplitInput::Items(spans)) if !spans.is_empty() => spans,
        _ => return None,
    };
    let upto = pick.map_or(spans.len() - 1, |p| p.index(spans.len()));
    let last = (0..=upto)
        .rev()
        .find(|j| body.get(spans[*j].end - 1) == Some(&b'}'))?;
    let spans = &spans[..=last];
    let start = spans[0].start;
    let mut digests = crate::responses::known::PrefixDigests::default();
    digests.extend(&body[start..], spans.iter().map(|s| s.end - start));
    KnownItems::new(body, spans, &digests.digests).map(Arc::new)
}

/// What a split made of a body, with whether known items were taken.
fn splitter_known(body: &[u8], known: &[Arc<KnownItems>]) -> (Outcome, bool) {
    let split = split_known(body, known);
    let verified = matches!(
        split,
        Ok(Split {
            verified: Some(_),
            ..
        })
    );
    let outcome = outcome(split);
    (outcome, verified)
}

#[test]
fn known_items_are_taken_and_the_walk_resumes_after_them() {
    let first = br#"{"input":[{"a":"x\ny"},{"b":[1,2]}]}"#;
    let known: Vec<Arc<KnownItems>> = known_of(first, None).into_iter().collect();
    assert_eq!(known.iter().map(|k| k.items()).collect::<Vec<_>>(), [2]);
    // The next turn: other members, one more item, damage after the known items.
    let next = br#"{"model":"m","input":[{"a":"x\ny"},{"b":[1,2]} , {"c":"\u00e9"}],"z":true}"#;
    let (outcome, verified) = splitter_known(next, &known);
    assert!(verified);
    assert_eq!(outcome, splitter(next));
    assert!(is_split(&outcome));
    let broken = br#"{"model":"m","input":[{"a":"x\ny"},{"b":[1,2]},{"c":"\x"}]}"#;
    assert_eq!(splitter_known(broken, &known).0, Outcome::NotAnObject);
    // The known items where they are not the first items, or changed: not taken.
    let elsewhere = br#"{"input":[0,{"a":"x\ny"},{"b":[1,2]}]}"#;
    assert_eq!(
        splitter_known(elsewhere, &known),
        (splitter(elsewhere), false)
    );
    let changed = br#"{"input":[{"a":"x\nz"},{"b":[1,2]}]}"#;
    assert_eq!(splitter_known(changed, &known), (splitter(changed), false));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A body split with its own first items known (shifted against the block boundaries): the same members,
    /// spans and input as without, and the known items taken.
    #[test]
    fn a_body_splits_the_same_with_its_first_items_known(
        body in body(),
        shift in 0usize..64,
        pick in any::<prop::sample::Index>(),
    ) {
        let Some(known) = known_of(body.as_bytes(), Some(pick)) else {
            return Ok(());
        };
        let shifted = format!("{}{body}", " ".repeat(shift));
        let (outcome, verified) = splitter_known(shifted.as_bytes(), &[known]);
        prop_assert_eq!(outcome, splitter(shifted.as_bytes()));
        prop_assert!(verified);
    }

    /// The same bodies damaged, split with the undamaged body's first items known: the same verdict as without,
    /// and the same spans when both accept.
    #[test]
    fn a_damaged_body_splits_the_same_with_known_items(
        body in body(),
        pick in any::<prop::sample::Index>(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        let Some(known) = known_of(body.as_bytes(), Some(pick)) else {
            return Ok(());
        };
        let mut bytes = body.into_bytes();
        for d in &damages {
            apply(&mut bytes, d);
        }
        prop_assert_eq!(splitter_known(&bytes, &[known]).0, splitter(&bytes));
    }
}

#[test]
fn at_most_two_known_lists_are_hashed_for_a_body() {
    let text = |mid: char| {
        let pad = "x".repeat(40);
        format!(r#"{{"input":[{{"a":"{pad}{mid}{pad}"}},{{"b":2}}]}}"#)
    };
    let lists: Vec<Arc<KnownItems>> = ['p', 'q', 'r']
        .into_iter()
        .filter_map(|mid| known_of(text(mid).as_bytes(), None))
        .collect();
    assert_eq!(lists.len(), 3);
    let body = text('r');
    // The first two lists have the body's edges but not its bytes: each costs a hash, and then none is left.
    assert_eq!(
        splitter_known(body.as_bytes(), &lists),
        (splitter(body.as_bytes()), false)
    );
    let (outcome, verified) =
        splitter_known(body.as_bytes(), &[lists[0].clone(), lists[2].clone()]);
    assert_eq!((outcome, verified), (splitter(body.as_bytes()), true));
}

//! Skim against serde_json: on any valid JSON it finds the members and elements serde finds, with the same spans;
//! on anything else it never panics, and where serde still accepts it agrees.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use super::*;
use proptest::prelude::*;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::responses::split::tests::bodies;

/// serde's view of an object: each key decoded and where its value stands in `text`.
fn serde_members(text: &str) -> Option<Vec<(String, Range<usize>)>> {
    struct Members<'de>(Vec<(String, &'de RawValue)>);
    impl<'de> serde::Deserialize<'de> for Members<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Members<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Members<'de>, A::Error> {
                    let mut out = Vec::new();
                    while let Some(key) = map.next_key::<String>()? {
                        out.push((key, map.next_value::<&'de RawValue>()?));
                    }
                    Ok(Members(out))
                }
            }
            d.deserialize_map(V)
        }
    }
    let members: Members<'_> = serde_json::from_str(text).ok()?;
    let base = text.as_ptr() as usize;
    Some(
        members
            .0
            .into_iter()
            .map(|(k, raw)| {
                let start = raw.get().as_ptr() as usize - base;
                (k, start..start + raw.get().len())
            })
            .collect(),
    )
}

/// Skim's view of `text` as one object, or `None` where it cannot follow it (or something follows the object).
fn skim_members(text: &str) -> Option<Vec<(String, Range<usize>)>> {
    let b = text.as_bytes();
    let mut it = members(b, 0);
    let mut out = Vec::new();
    while let Some(member) = it.next() {
        let member = member?;
        out.push((decoded_key(&member), it.value()?));
    }
    only_ws_after(b, it.end()?).then_some(out)
}

fn decoded_key(m: &Member<'_>) -> String {
    let mut quoted = vec![b'"'];
    quoted.extend_from_slice(m.key);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).unwrap_or_else(|_| "<undecodable>".into())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn valid_objects_give_serdes_members(body in bodies::body()) {
        // A key holding a lone surrogate escape is valid JSON that serde will not decode to a `String`.
        let Some(want) = serde_members(&body) else { return Ok(()) };
        let got = skim_members(&body);
        prop_assert_eq!(got, Some(want.clone()));
        for (key, _) in &want {
            let b = body.as_bytes();
            let found = members(b, 0).flatten().any(|m| m.key_is(key));
            prop_assert!(found, "{key}");
        }
    }

    #[test]
    fn damaged_objects_never_panic_and_agree_where_serde_accepts(
        body in bodies::body(),
        damages in prop::collection::vec(bodies::damage(), 1..4),
    ) {
        let mut bytes = body.into_bytes();
        for d in &damages {
            bodies::apply(&mut bytes, d);
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let got = skim_members(&text);
        if let Some(want) = serde_members(&text) {
            prop_assert_eq!(got, Some(want));
        }
        let _ = elements(text.as_bytes(), 0);
    }

    #[test]
    fn valid_arrays_give_serdes_elements(text in bodies::value()) {
        let b = text.as_bytes();
        if b.first() == Some(&b'[') {
            let want: Vec<&RawValue> = serde_json::from_str(&text).unwrap();
            let base = text.as_ptr() as usize;
            let want: Vec<Range<usize>> = want
                .iter()
                .map(|r| {
                    let start = r.get().as_ptr() as usize - base;
                    start..start + r.get().len()
                })
                .collect();
            prop_assert_eq!(elements(b, 0), Some(want));
        }
        prop_assert_eq!(value_end(b, 0), Some(b.len()));
    }

    /// A member's span read knowing what it held before (a whole value: what a scan found then) is the span a scan
    /// finds now, whatever was known: the value itself or another value. (A prefix of a value, or a value with
    /// more after it, is not a whole value; they are here to show the test would see them wrong.)
    #[test]
    fn a_known_value_gives_the_span_a_scan_gives(
        value in bodies::value(),
        other in bodies::value(),
        cut in 0usize..64,
        pick in 0u8..4,
    ) {
        let text = format!("{{\"k\":{value},\"z\":1}}");
        let b = text.as_bytes();
        let known: Vec<u8> = match pick {
            0 => value.as_bytes().to_vec(),
            1 => other.as_bytes().to_vec(),
            2 => value.as_bytes()[..cut.min(value.len())].to_vec(),
            _ => format!("{value}]").into_bytes(),
        };
        let read = |known: Option<&[u8]>| {
            let mut members = members(b, 0);
            let mut slot = None;
            let first = members.next().flatten();
            prop_assert!(first.is_some());
            prop_assert!(once_span_known(&mut slot, &mut members, known).is_some());
            let rest: Vec<_> = members.map(|m| m.map(|m| decoded_key(&m))).collect();
            Ok((slot, rest))
        };
        let whole = value_end(&known, 0) == Some(known.len());
        if whole {
            prop_assert_eq!(read(Some(&known))?, read(None)?);
        }
    }

    /// Containers of any length, starting anywhere against the 64-byte blocks, with more after them.
    #[test]
    fn containers_end_where_serde_ends_them(text in bodies::value(), shift in 0usize..64, after in "[]}\\\" ,x]{0,8}") {
        let padded = format!("{}{text}{after}", " ".repeat(shift));
        let b = padded.as_bytes();
        if matches!(text.as_bytes().first(), Some(b'[' | b'{')) {
            prop_assert_eq!(value_end(b, shift), Some(shift + text.len()));
        }
    }
}

#[test]
fn strings_decode_borrowed_when_they_can() {
    let b = br#"["plain", "a\nb", "\u00e9", "bad\q", "tab	inside", 7]"#;
    let at = elements(b, 0).unwrap();
    assert!(matches!(
        string(b, at[0].clone()),
        Some(Cow::Borrowed("plain"))
    ));
    assert_eq!(string(b, at[1].clone()).as_deref(), Some("a\nb"));
    assert_eq!(string(b, at[2].clone()).as_deref(), Some("é"));
    assert_eq!(string(b, at[3].clone()), None);
    assert_eq!(string(b, at[4].clone()), None, "a raw tab is not JSON");
    assert_eq!(string(b, at[5].clone()), None);
}

#[test]
fn unsigned_reads_what_serde_reads_as_u64() {
    let b = br#"[7, 0, 07, -1, 1.0, 1e2, 18446744073709551615, 18446744073709551616, "7", nul]"#;
    let got: Vec<Option<u64>> = elements(b, 0)
        .unwrap()
        .into_iter()
        .map(|r| unsigned(b, r))
        .collect();
    assert_eq!(
        got,
        [
            Some(7),
            Some(0),
            None,
            None,
            None,
            None,
            Some(u64::MAX),
            None,
            None,
            None
        ]
    );
    for r in elements(b, 0).unwrap() {
        let text = std::str::from_utf8(&b[r.clone()]).unwrap();
        assert_eq!(
            unsigned(b, r),
            serde_json::from_str::<u64>(text).ok(),
            "{text}"
        );
    }
}

#[test]
fn keys_are_compared_decoded() {
    let b = br#"{"t\u006fols": 1, "tools ": 2, "": 3}"#;
    let m: Vec<Member<'_>> = members(b, 0).map(Option::unwrap).collect();
    assert_eq!(m.len(), 3);
    assert!(m[0].key_is("tools"));
    assert!(!m[1].key_is("tools"));
    assert!(m[2].key_is(""));
}

#[test]
fn what_it_cannot_follow_is_none() {
    for bad in [
        "[1]",
        "",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "{\"a\":1",
        "{\"a\":\"open}",
        "{\"a\":[1,2}",
        "{\"a\":[[1]}",
        "{\"a\":}",
        "{,}",
        "{\"a\":1 \"b\":2}",
    ] {
        let mut it = members(bad.as_bytes(), 0);
        let broken = it.by_ref().any(|m| m.is_none());
        assert!(broken || it.end().is_none(), "{bad}");
        assert!(skim_members(bad).is_none(), "{bad}");
        // Reported once, then the iteration is over.
        let mut again = members(bad.as_bytes(), 0);
        let n = again.by_ref().count();
        assert!(again.next().is_none() && n <= 3, "{bad}");
    }
    // Whitespace before the object is fine; the end is the byte after its brace.
    let mut it = members(b"  {\"a\": [1, {\"b\": \"}\"}]} ", 0);
    assert_eq!(it.by_ref().flatten().count(), 1);
    assert_eq!(it.end(), Some(24));
}

#[test]
fn skipped_values_are_not_validated_but_their_ends_are_found() {
    // Not JSON inside, but the brackets and strings close: the caller relays such a value as it came.
    let b = br#"{"a": [tru, 01, "x\q"], "b": 2}"#;
    let mut it = members(b, 0);
    it.next();
    assert_eq!(&b[it.value().unwrap()], br#"[tru, 01, "x\q"]"#);
    it.next();
    assert_eq!(unsigned(b, it.value().unwrap()), Some(2));
    // Brackets are counted, not matched: a close of the other kind still closes.
    let b = br#"{"a": [1, 2}, "b": {"c": ]}"#;
    let mut it = members(b, 0);
    it.next();
    assert_eq!(&b[it.value().unwrap()], br#"[1, 2}"#);
    it.next();
    assert_eq!(&b[it.value().unwrap()], br#"{"c": ]"#);
    // Any depth: nothing recurses.
    let deep = format!("{{\"d\": {}{}}}", "[".repeat(300), "]".repeat(300));
    assert_eq!(skim_members(&deep).unwrap()[0].1, 6..606);
}

#[test]
fn empty_containers_end_at_their_closing_bracket() {
    for (text, end) in [
        ("[]", Some(2)),
        ("{}", Some(2)),
        ("[ \n\t]", Some(5)),
        ("{\r\n}, 1", Some(4)),
        ("[ ], []", Some(3)),
        ("[ 1]", Some(4)),
        ("[{}]", Some(4)),
        ("[ ", None),
        ("[", None),
    ] {
        assert_eq!(value_end(text.as_bytes(), 0), end, "{text:?}");
    }
}

//! Unit tests for [`super`]: the request body view: byte-exact round trips and item rewrites.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use super::*;
use serde_json::json;

const BODY: &str = r#"{ "model" : "m",
  "input": [ {"type":"message", "role":"user","content":"hi"} ,
 {"type":"weird_future_item","x":  [1, 2.50, "é\u00e9"]},
 {"type":"function_call_output","call_id":"c1","output":"big"} ],
  "unknown_field": {"keep": true}, "stream":true }"#;

#[test]
fn unchanged_body_is_the_original_bytes() {
    let b = RequestBody::parse(Bytes::from_static(BODY.as_bytes())).unwrap();
    assert_eq!(b.to_bytes(), BODY.as_bytes());
    assert_eq!(b.items().unwrap().len(), 3);
    assert_eq!(b.get_str("model").as_deref(), Some("m"));
}

#[test]
fn rewriting_one_item_keeps_the_others_byte_for_byte() {
    let mut b = RequestBody::parse(Bytes::from_static(BODY.as_bytes())).unwrap();
    b.replace_item(
        2,
        json!({"type":"function_call_output","call_id":"c1","output":"small"}),
    );
    let out = String::from_utf8(b.to_bytes().to_vec()).unwrap();
    assert!(out.contains(r#"{"type":"message", "role":"user","content":"hi"}"#));
    assert!(out.contains(r#"{"type":"weird_future_item","x":  [1, 2.50, "é\u00e9"]}"#));
    assert!(out.contains(r#"{"keep": true}"#));
    assert!(out.starts_with(r#"{"model":"m","input":["#));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["input"][2]["output"], "small");
    assert_eq!(v["stream"], true);
}

#[test]
fn string_input_and_non_objects() {
    let b = RequestBody::parse(Bytes::from_static(br#"{"input":"hello","model":"m"}"#)).unwrap();
    assert!(matches!(b.input(), Some(Input::Text(t)) if t == "hello"));
    assert!(RequestBody::parse(Bytes::from_static(b"[1,2]")).is_err());
    assert!(RequestBody::parse(Bytes::from_static(b"not json")).is_err());
    assert!(RequestBody::parse(Bytes::from_static(br#"{"input":5}"#)).is_err());
    assert!(RequestBody::parse(Bytes::from_static(br#"{"input":[1,"#)).is_err());
}

#[test]
fn appending_a_tool_keeps_the_other_tools_bytes() {
    let mut b = RequestBody::parse(Bytes::from_static(
        br#"{"tools":[ {"type":"custom","name":"apply_patch","format":{"a":1.50}} ],"input":[]}"#,
    ))
    .unwrap();
    assert!(b.append_to_array("tools", &json!({"type":"function","name":"x"})));
    assert_eq!(
        b.to_bytes(),
        Bytes::from_static(br#"{"tools":[ {"type":"custom","name":"apply_patch","format":{"a":1.50}} ,{"type":"function","name":"x"}],"input":[]}"#)
    );
    let mut empty = RequestBody::parse(Bytes::from_static(br#"{"tools":[ ],"input":[]}"#)).unwrap();
    empty.append_to_array("tools", &json!(1));
    assert_eq!(
        empty.to_bytes(),
        Bytes::from_static(br#"{"tools":[ 1],"input":[]}"#)
    );
    let mut none = RequestBody::parse(Bytes::from_static(br#"{"input":[]}"#)).unwrap();
    none.append_to_array("tools", &json!(1));
    assert_eq!(
        none.to_bytes(),
        Bytes::from_static(br#"{"input":[],"tools":[1]}"#)
    );
    let mut bad = RequestBody::parse(Bytes::from_static(br#"{"tools":"x","input":[]}"#)).unwrap();
    assert!(!bad.append_to_array("tools", &json!(1)));
}

#[test]
fn a_body_that_names_a_member_twice_is_not_parsed() {
    for (body, key) in [
        (&br#"{"a":1,"a":2,"input":[{"x":1}]}"#[..], "a"),
        (
            br#"{"tools":[],"input":"hi","tools":[{"type":"function"}]}"#,
            "tools",
        ),
        (br#"{"input":[],"model":"m","input":[]}"#, "input"),
        (
            br#"{"instr\u0075ctions":"a","instructions":"b"}"#,
            "instructions",
        ),
        (br#"{"x":{"a":1,"a":2},"y":[{"b":1,"b":1}]}"#, ""),
    ] {
        let repeated = match RequestBody::parse(Bytes::copy_from_slice(body)) {
            Err(BodyError::RepeatedMember(k)) => Some(k),
            Ok(_) => None,
            Err(e) => Some(format!("another error: {e}")),
        };
        // Only top-level members count.
        assert_eq!(repeated.as_deref(), (!key.is_empty()).then_some(key));
    }
}

/// The body the members writer would produce for `b` (the path a rewritten input takes), for comparison.
fn written_out(b: &mut RequestBody) -> Bytes {
    b.input_changed = true;
    let out = b.to_bytes();
    b.input_changed = false;
    out
}

#[test]
fn adding_the_tool_splices_only_tools_and_instructions_into_the_clients_bytes() {
    // Odd whitespace, keys out of the usual order, unicode escapes (in keys and values).
    let body = "{ \"input\" :\n [ {\"role\":\"user\",\"content\":\"h\\u00e9 <<ctxzip:0123456789ab 3_lines>>\"} ] ,\n\
                \t\"tools\" : [ {\"type\":\"custom\",\"name\":\"a\\u00e9\",\"x\":1.50} ]  ,\"instr\\u0075ctions\":\"keep\",\n\
                \"model\":\"m\" }\n";
    let mut b = RequestBody::parse(Bytes::copy_from_slice(body.as_bytes())).unwrap();
    assert!(b.append_encoded_to_array("tools", br#"{"type":"function","name":"t"}"#));
    assert_eq!(b.get_str("instructions").as_deref(), Some("keep"));
    b.set("instructions", json!("Be \u{2028} brief\n\nD"));
    let out = b.to_bytes();
    let expected = "{ \"input\" :\n [ {\"role\":\"user\",\"content\":\"h\\u00e9 <<ctxzip:0123456789ab 3_lines>>\"} ] ,\n\
                    \t\"tools\" : [ {\"type\":\"custom\",\"name\":\"a\\u00e9\",\"x\":1.50} ,{\"type\":\"function\",\"name\":\"t\"}]  ,\"instr\\u0075ctions\":\"Be \u{2028} brief\\n\\nD\",\n\
                    \"model\":\"m\" }\n";
    assert_eq!(std::str::from_utf8(&out).unwrap(), expected);
    // `instr\u0075ctions` is the key `instructions`: the member read and replaced where it stands, as the members
    // writer replaces it. Both paths mean the same JSON.
    let spliced: Value = serde_json::from_slice(&out).unwrap();
    let written: Value = serde_json::from_slice(&written_out(&mut b)).unwrap();
    assert_eq!(spliced, written);
}

#[test]
fn members_a_stage_adds_go_before_the_closing_brace() {
    let mut b = RequestBody::parse(Bytes::from_static(
        b"{\"model\":\"m\",\"input\":[{\"x\":1}]  \n}  ",
    ))
    .unwrap();
    assert!(b.append_encoded_to_array("tools", b"{\"n\":1}"));
    b.set("instructions", json!("D"));
    assert_eq!(
        b.to_bytes(),
        Bytes::from_static(
            b"{\"model\":\"m\",\"input\":[{\"x\":1}]  \n,\"tools\":[{\"n\":1}],\"instructions\":\"D\"}  "
        )
    );
    let mut empty = RequestBody::parse(Bytes::from_static(b"{ }")).unwrap();
    empty.set("instructions", json!("D"));
    let out = empty.to_bytes();
    assert_eq!(out, Bytes::from_static(b"{ \"instructions\":\"D\"}"));
    assert_eq!(
        serde_json::from_slice::<Value>(&out).unwrap(),
        json!({"instructions": "D"})
    );
}

#[test]
fn a_string_input_and_unchanged_members_stay_as_sent() {
    let body = br#"{"input" : "hi \"there\"", "tools":[],"stream":true}"#;
    let mut b = RequestBody::parse(Bytes::from_static(body)).unwrap();
    b.set("stream", json!(false));
    assert_eq!(
        b.to_bytes(),
        Bytes::from_static(br#"{"input" : "hi \"there\"", "tools":[],"stream":false}"#)
    );
}

#[test]
fn a_rewritten_input_is_written_out_not_spliced() {
    let mut b = RequestBody::parse(Bytes::from_static(
        b"{ \"input\": [ {\"a\":1} ], \"model\" : \"m\" }",
    ))
    .unwrap();
    b.replace_item(0, json!({"a": 2}));
    assert_eq!(
        b.to_bytes(),
        Bytes::from_static(br#"{"input":[{"a":2}],"model":"m"}"#)
    );
}

#[test]
fn truncated_or_malformed_bodies_are_not_parsed() {
    let full =
        br#"{"input":[{"role":"user","content":"<<ctxzip:0123456789ab 3_lines>>"}],"tools":[]}"#;
    for cut in 1..full.len() {
        assert!(
            RequestBody::parse(Bytes::copy_from_slice(&full[..cut])).is_err(),
            "a body cut at {cut} must not parse (the handler forwards it unchanged)"
        );
    }
    assert!(RequestBody::parse(Bytes::from_static(br#"{"input":[],"tools":[]}}"#)).is_err());
}

#[test]
fn a_rewritten_item_is_measured_keyed_and_sent_as_the_same_bytes() {
    let mut b = RequestBody::parse(Bytes::from_static(BODY.as_bytes())).unwrap();
    let value = json!({"type":"function_call_output","call_id":"c1","output":"é \"quoted\" <<x>>"});
    b.replace_item(2, value.clone());
    let item = &b.items().unwrap()[2];
    let expected = serde_json::to_vec(&value).unwrap();
    assert_eq!(item.json_len(), expected.len());
    assert_eq!(item.content_key(), xxhash_rust::xxh3::xxh3_128(&expected));
    // Measured first, written after: the body carries exactly the bytes that were measured.
    let out = b.to_bytes();
    let at = out
        .windows(expected.len())
        .position(|w| w == expected.as_slice());
    assert!(at.is_some(), "{}", String::from_utf8_lossy(&out));
    assert_eq!(item.json_len(), expected.len(), "measured again, unchanged");
}

#[test]
fn a_form_kept_as_json_is_sent_as_those_bytes_and_parsed_only_when_asked() {
    let mut b = RequestBody::parse(Bytes::from_static(BODY.as_bytes())).unwrap();
    let value = json!({"type":"function_call_output","call_id":"c1","output":"<<ctxzip:0123456789ab 3_lines>>"});
    let encoded = Bytes::from(serde_json::to_vec(&value).unwrap());
    assert!(b.replace_item_encoded(2, encoded.clone()));
    assert!(!b.replace_item_encoded(99, encoded.clone()), "no such item");
    let item = &b.items().unwrap()[2];
    assert!(!item.is_raw());
    assert_eq!(item.json_len(), encoded.len());
    assert_eq!(item.content_key(), xxhash_rust::xxh3::xxh3_128(&encoded));
    assert!(b.input_contains(b"<<ctxzip:0123456789ab"));
    assert_eq!(item.value(), Some(&value), "parsed from the kept bytes");
    let out = b.to_bytes();
    let sent: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(sent["input"][2], value);
    assert!(
        out.windows(encoded.len()).any(|w| w == &encoded[..]),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn a_body_parsed_with_known_items_is_the_same_body_with_the_same_digests() {
    let pad = "line\\n".repeat(40);
    let item = |i: usize| {
        format!(r#"{{"type":"function_call_output","call_id":"c{i}","output":"{pad}{i}"}}"#)
    };
    let text = |n: usize| {
        let items: Vec<String> = (0..n).map(item).collect();
        format!(
            r#"{{"model":"m","input":[{}],"stream":true}}"#,
            items.join(",")
        )
    };
    let earlier = RequestBody::parse(Bytes::from(text(5))).unwrap();
    let known = std::sync::Arc::new(earlier.known_items().unwrap());
    let later = Bytes::from(text(8));
    let full = RequestBody::parse(later.clone()).unwrap();
    let fast = RequestBody::parse_known(later.clone(), std::slice::from_ref(&known)).unwrap();
    assert_eq!(fast.known_used(), Some(known.hash()));
    assert_eq!(full.known_used(), None);
    let raw = |b: &RequestBody| -> Vec<Vec<u8>> {
        b.items()
            .unwrap()
            .iter()
            .map(|i| i.raw_bytes().unwrap().to_vec())
            .collect()
    };
    assert_eq!(raw(&fast), raw(&full));
    for k in 0..=9 {
        assert_eq!(fast.head_digest(k), full.head_digest(k), "prefix {k}");
    }
    assert!(fast.head_digest(0).is_none() && fast.head_digest(9).is_none());
    assert_eq!(
        fast.head_digest(5),
        earlier.head_digest(5),
        "the same bytes, the same digest"
    );
    assert_eq!(fast.to_bytes(), later);
}

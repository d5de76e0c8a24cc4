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
fn duplicate_keys_survive_a_rewrite() {
    let mut b =
        RequestBody::parse(Bytes::from_static(br#"{"a":1,"a":2,"input":[{"x":1}]}"#)).unwrap();
    b.set("tools", json!([]));
    assert_eq!(
        b.to_bytes(),
        Bytes::from_static(br#"{"a":1,"a":2,"input":[{"x":1}],"tools":[]}"#)
    );
}

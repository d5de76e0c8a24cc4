//! The echo splice: only the echoed members change, calls are seen, odd answers are refused.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]
use super::*;
use crate::expand::tool::{EXPAND_TOOL, append_directive, tool_definition};
use serde_json::{Value, json};

/// An event's data with the echo taken out, as the light path frames it.
fn strip_echo(data: &[u8], echo: &ResponseEcho<'_>, tool: &str) -> Option<Vec<u8>> {
    apply(data, &echo_splices(data, echo, tool)?)
}

fn pretty_answer(output: Value) -> Vec<u8> {
    let tools = json!([{"type":"function","name":"shell"}, tool_definition()]);
    let answer = json!({"id":"resp_1","output":output,"instructions":append_directive(Some("be brief")),
        "tools":tools,"usage":{"input_tokens":3}});
    serde_json::to_vec_pretty(&answer).unwrap()
}

#[test]
fn only_the_echoed_members_change() {
    let bytes = pretty_answer(json!([{"type":"message","content":[]}]));
    let g = glance(&bytes, EXPAND_TOOL).unwrap();
    assert!(!g.expand_call);
    let out = client_view(&bytes, &g, EXPAND_TOOL).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["tools"], json!([{"type":"function","name":"shell"}]));
    assert_eq!(v["instructions"], "be brief");
    let text = String::from_utf8(out).unwrap();
    let before = String::from_utf8(bytes.clone()).unwrap();
    // Everything up to the instructions member and the usage after the tools stays as sent.
    let head = before.split("\"instructions\"").next().unwrap();
    assert!(text.starts_with(head));
    assert!(text.ends_with(before.split("\"usage\"").nth(1).unwrap()));
    assert!(!text.contains(EXPAND_TOOL));
}

#[test]
fn calls_are_seen_and_odd_bodies_are_refused() {
    let call = json!([{"type":"function_call","name":EXPAND_TOOL,"arguments":"{}"}]);
    assert!(
        glance(&pretty_answer(call), EXPAND_TOOL)
            .unwrap()
            .expand_call
    );
    assert!(glance(b"[1,2]", EXPAND_TOOL).is_none());
    assert!(glance(b"{\"output\":", EXPAND_TOOL).is_none());
    let odd = glance(br#"{"output":{"a":1},"tools":7}"#, EXPAND_TOOL).unwrap();
    assert!(!odd.expand_call);
    assert!(client_view(br#"{"output":{"a":1},"tools":7}"#, &odd, EXPAND_TOOL).is_none());
}

#[test]
fn the_tool_is_cut_wherever_it_stands() {
    let t = serde_json::to_string(&tool_definition()).unwrap();
    for (array, want) in [
        (format!("[{t}]"), "[]".to_string()),
        (
            format!("[ {t} , {{\"type\":\"x\"}} ]"),
            "[ {\"type\":\"x\"} ]".to_string(),
        ),
        (
            format!("[{{\"type\":\"x\"}},\n  {t}\n]"),
            "[{\"type\":\"x\"}\n]".to_string(),
        ),
        (format!("[{t},{t}]"), "[]".to_string()),
    ] {
        let out = strip_tool(array.as_bytes(), EXPAND_TOOL).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
    assert!(strip_tool(b"[{\"type\":\"x\"}]", EXPAND_TOOL).is_none());
}

#[test]
fn the_light_path_reads_and_strips_the_echo_in_one_pass() {
    /// The event's `response` read as the light path reads it (absent: `Some(None)`).
    fn response_of(data: &str) -> Option<Option<ResponseEcho<'_>>> {
        let b = data.as_bytes();
        let mut found = None;
        let mut members = skim::members(b, 0);
        while let Some(member) = members.next() {
            let member = member?;
            if member.key_is("response") {
                skim::once_object(&mut found, &mut members, member.start, ResponseEcho::read)?;
            }
        }
        Some(found.flatten())
    }
    let tools = json!([{"type":"function","name":"shell"}, tool_definition()]);
    let data = json!({"type":"response.created","sequence_number":0,
        "response":{"id":"r1","created_at":7,"tools":tools,"instructions":append_directive(Some("x"))}})
    .to_string();
    let echo = response_of(&data).unwrap().unwrap();
    assert_eq!(echo.id.as_deref(), Some("r1"));
    assert_eq!(&data[echo.created_at.clone().unwrap()], "7");
    let out = String::from_utf8(strip_echo(data.as_bytes(), &echo, EXPAND_TOOL).unwrap()).unwrap();
    assert_eq!(Some(out.clone()), strip_event(&data, EXPAND_TOOL));
    assert_eq!(
        out,
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"r1","created_at":7,"tools":[{"type":"function","name":"shell"}],"instructions":"x"}}"#
    );
    // Nothing echoed: nothing to change.
    let plain = r#"{"response":{"id":"r","tools":[],"instructions":null}}"#;
    let echo = response_of(plain).unwrap().unwrap();
    assert!(strip_echo(plain.as_bytes(), &echo, EXPAND_TOOL).is_none());
    // Anything odd is refused (the stream then takes the full path).
    for odd in [
        r#"{"response":["r",1]}"#,
        r#"{"response":{"id":"a","id":"b"}}"#,
        r#"{"response":{"tools":[],"tools":[]}}"#,
        r#"{"response":{"id":7}}"#,
        r#"{"response":{"id":"a""#,
    ] {
        assert!(response_of(odd).is_none(), "{odd}");
    }
    assert!(response_of(r#"{"response":null}"#).unwrap().is_none());
}

#[test]
fn the_echo_is_taken_out_of_an_event_that_is_not_utf8_and_its_other_bytes_stay() {
    let tools = json!([tool_definition()]);
    let text = json!({"type":"response.created","response":{"id":"r","model":"MODEL","tools":tools,
        "instructions":append_directive(None)}})
    .to_string();
    // The model's name holds a byte that is not UTF-8; the reader skips it unchecked.
    let bytes = text.replace("MODEL", "m\u{1}").into_bytes();
    let bytes: Vec<u8> = bytes
        .iter()
        .map(|&b| if b == 1 { 0xff } else { b })
        .collect();
    let at = memchr::memmem::find(&bytes, b"\"response\":").unwrap() + b"\"response\":".len();
    let (echo, _) = ResponseEcho::read(&bytes, at).unwrap();
    let out = strip_echo(&bytes, &echo, EXPAND_TOOL).unwrap();
    let expected = r#"{"type":"response.created","response":{"id":"r","model":"m?","tools":[],"instructions":null}}"#;
    let expected: Vec<u8> = expected
        .bytes()
        .map(|b| if b == b'?' { 0xff } else { b })
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn events_keep_their_other_bytes() {
    let tools = json!([tool_definition()]);
    let data = json!({"type":"response.created","sequence_number":0,
        "response":{"id":"r","tools":tools,"instructions":append_directive(None)}})
    .to_string();
    let out = strip_event(&data, EXPAND_TOOL).unwrap();
    assert_eq!(
        out,
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"r","tools":[],"instructions":null}}"#
    );
    assert!(strip_event(r#"{"type":"response.output_text.delta"}"#, EXPAND_TOOL).is_none());
    assert!(strip_event("[DONE]", EXPAND_TOOL).is_none());
}

/// The worker remembers the last echo it took out: the same echo again is not scanned, and an answer whose echo only
/// begins like it (a client that added a tool, longer instructions) is read afresh; each gets its own splice.
#[test]
fn an_echo_that_only_begins_like_the_last_one_is_read_afresh() {
    let answer = |tools: Value, instructions: &str| {
        let answer = json!({"id":"resp_1","output":[],"instructions":append_directive(Some(instructions)),
            "tools":tools,"usage":{"input_tokens":3}});
        serde_json::to_vec(&answer).unwrap()
    };
    let shell = json!({"type":"function","name":"shell"});
    let first = answer(json!([shell.clone(), tool_definition()]), "be brief");
    let second = answer(
        json!([shell.clone(), tool_definition(), {"type":"function","name":"grep"}]),
        "be brief, and cite",
    );
    for (bytes, tools, instructions) in [
        (&first, json!([shell.clone()]), "be brief"),
        (&first, json!([shell.clone()]), "be brief"),
        (
            &second,
            json!([shell.clone(), {"type":"function","name":"grep"}]),
            "be brief, and cite",
        ),
        (&first, json!([shell]), "be brief"),
    ] {
        let g = glance(bytes, EXPAND_TOOL).unwrap();
        let v: Value =
            serde_json::from_slice(&client_view(bytes, &g, EXPAND_TOOL).unwrap()).unwrap();
        assert_eq!(v["tools"], tools);
        assert_eq!(v["instructions"], instructions);
        assert_eq!(v["usage"], json!({"input_tokens":3}));
    }
}

/// An `allowed_tools` choice lists the expand tool for the model; the client gets its own list back, every other
/// byte as the upstream wrote it. Other choices are not read.
#[test]
fn an_allowed_list_is_given_back_without_the_tool() {
    let answer = |choice: Value| {
        let tools = json!([{"type":"function","name":"shell"}, tool_definition()]);
        serde_json::to_vec_pretty(&json!({"id":"resp_1","output":[],"tool_choice":choice,
            "tools":tools,"usage":{"input_tokens":3}}))
        .unwrap()
    };
    let sent =
        json!({"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"shell"}]});
    let mut offered = sent.clone();
    offered["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type":"function","name":EXPAND_TOOL}));
    let bytes = answer(offered);
    let g = glance(&bytes, EXPAND_TOOL).unwrap();
    let out = client_view(&bytes, &g, EXPAND_TOOL).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["tool_choice"], sent);
    assert_eq!(v["tools"], json!([{"type":"function","name":"shell"}]));
    let text = String::from_utf8(out).unwrap();
    let before = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.starts_with(before.split("\"tool_choice\"").next().unwrap()));
    // The same list in an SSE event's response, on the light path's splice.
    let data = format!(
        r#"{{"type":"response.created","sequence_number":0,"response":{}}}"#,
        String::from_utf8(bytes.clone()).unwrap()
    );
    let at = data.find("\"response\":").unwrap() + "\"response\":".len();
    let (echo, _) = ResponseEcho::read(data.as_bytes(), at).unwrap();
    let stripped = strip_echo(data.as_bytes(), &echo, EXPAND_TOOL).unwrap();
    let event: Value = serde_json::from_slice(&stripped).unwrap();
    assert_eq!(event["response"]["tool_choice"], sent);
    // A string choice, a named tool, a list without the tool: left as they are.
    for choice in [
        json!("auto"),
        json!({"type":"function","name":"shell"}),
        sent.clone(),
    ] {
        let bytes = answer(choice.clone());
        let g = glance(&bytes, EXPAND_TOOL).unwrap();
        let v: Value =
            serde_json::from_slice(&client_view(&bytes, &g, EXPAND_TOOL).unwrap()).unwrap();
        assert_eq!(v["tool_choice"], choice);
    }
}

//! The stream stitcher against realistic multi-round SSE bodies: what the client
//! sees must be one coherent response, whatever the chunking.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

#[path = "expand_stitch/fixtures.rs"]
mod fixtures;

use ctxgate::expand::merge;
use ctxgate::expand::stitch::{Stitcher, Terminal};
use fixtures::{
    It, Round, TOOL, body, bytewise, check_client, events, parse, run, stream, two_rounds, whole,
};
use proptest::prelude::*;
use serde_json::{Value, json};

#[test]
fn two_rounds_look_like_one_response() {
    let (r1, r2) = two_rounds();
    let (client, ends) = run(&[stream(&r1, None), stream(&r2, None)], whole);
    let text = String::from_utf8_lossy(&client);
    assert!(!text.contains(TOOL), "expand tool leaked: {text}");
    assert!(!text.contains("\"resp_2\""), "later response id leaked");
    assert!(!text.contains("ab12"), "expand arguments leaked");

    let events = parse(&client);
    let response = check_client(&events, "resp_1");
    let ids: Vec<&str> = response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["id"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(ids, ["rs_resp_1_0", "msg_resp_1_1", "msg_resp_2_0"]);
    let answer: Vec<u64> = events
        .iter()
        .filter(|e| e["item_id"] == "msg_resp_2_0")
        .filter_map(|e| e["output_index"].as_u64())
        .collect();
    assert!(
        !answer.is_empty() && answer.iter().all(|i| *i == 2),
        "{answer:?}"
    );
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(deltas, "Let me check ✓The answer is 42 — found it");

    let (u1, u2) = (r1.usage, r2.usage);
    assert_eq!(response["usage"]["input_tokens"], u1.0 + u2.0);
    assert_eq!(response["usage"]["output_tokens"], u1.1 + u2.1);
    assert_eq!(response["usage"]["total_tokens"], u1.0 + u1.1 + u2.0 + u2.1);
    assert_eq!(
        response["usage"]["input_tokens_details"]["cached_tokens"],
        u1.0 / 2 + u2.0 / 2
    );
    assert_eq!(
        response["usage"]["output_tokens_details"]["reasoning_tokens"],
        6
    );
    assert_eq!(response["status"], "completed");

    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0].terminal, Terminal::Completed);
    assert_eq!(ends[0].expand_calls.len(), 1);
    assert_eq!(ends[0].expand_calls[0].call_id, "call_resp_1_2");
    assert_eq!(
        ends[0].expand_calls[0].arguments,
        r#"{"hash":"ab12","query":"error"}"#
    );
    assert_eq!(
        ends[0].output.len(),
        3,
        "reasoning and expand call are replayed"
    );
    assert_eq!(ends[0].response_id.as_deref(), Some("resp_1"));
    assert_eq!(ends[1].response_id.as_deref(), Some("resp_2"));
    assert!(ends[1].expand_calls.is_empty());
    let next = merge::next_input(
        &[json!({"role": "user", "content": "q"})],
        &ends[0].output,
        TOOL,
        &[("call_resp_1_2".into(), "lines".into())],
    );
    assert_eq!(next.len(), 5);
}

#[test]
fn chunking_never_changes_the_client_stream() {
    let (r1, r2) = two_rounds();
    let bodies = [stream(&r1, None), stream(&r2, None)];
    let (reference, _) = run(&bodies, whole);
    assert_eq!(run(&bodies, bytewise).0, reference);
    // Byte-by-byte above covers every boundary; two-way cuts add whole-chunk tails.
    for cut in (0..=bodies[0].len()).step_by(7) {
        let split = |b: &[u8]| -> Vec<Vec<u8>> {
            let (x, y) = b.split_at(cut.min(b.len()));
            vec![x.to_vec(), y.to_vec()]
        };
        let parts: Vec<Vec<Vec<u8>>> = bodies.iter().map(|b| split(b)).collect();
        let mut st = Stitcher::new(TOOL);
        let mut client = Vec::new();
        for (n, round) in parts.iter().enumerate() {
            if n > 0 {
                st.begin_round();
            }
            round.iter().for_each(|p| client.extend(st.push(p)));
            st.end_round();
        }
        client.extend(st.finish());
        assert_eq!(client.concat(), reference, "cut at {cut}");
        // The driver's read-ahead gathers the first pieces into its one write: the same bytes.
        let mut st = Stitcher::new(TOOL);
        let mut gathered = bytes::BytesMut::new();
        parts[0].iter().for_each(|p| st.push_into(p, &mut gathered));
        let mut rest = Vec::new();
        for (n, round) in parts.iter().enumerate() {
            if n > 0 {
                st.begin_round();
                round.iter().for_each(|p| rest.extend(st.push(p)));
            }
            st.end_round();
        }
        rest.extend(st.finish());
        assert_eq!(
            [&gathered[..], &rest.concat()].concat(),
            reference,
            "gathered, cut at {cut}"
        );
    }
}

#[test]
fn mixed_round_hides_its_client_calls() {
    let r1 = Round::new(
        "resp_1",
        vec![
            It::Message("Checking"),
            It::Call("shell", r#"{"cmd":"ls /old"}"#),
            It::Call(TOOL, r#"{"hash":"ab12"}"#),
        ],
    );
    let r2 = Round::new("resp_2", vec![It::Call("shell", r#"{"cmd":"ls /new"}"#)]);
    let (client, ends) = run(&[stream(&r1, None), stream(&r2, None)], bytewise);
    let text = String::from_utf8_lossy(&client);
    assert!(
        !text.contains("/old") && !text.contains("fc_resp_1_1"),
        "round-1 shell call leaked"
    );
    assert!(text.contains("/new"));
    assert_eq!(ends[0].dropped_client_calls, 1);
    assert_eq!(
        ends[0].output.len(),
        3,
        "RoundEnd.output is the full output"
    );
    let next = merge::next_input(
        &[],
        &ends[0].output,
        TOOL,
        &[("call_resp_1_2".into(), "x".into())],
    );
    let kinds: Vec<&str> = next
        .iter()
        .map(|i| i["name"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        kinds,
        ["-", TOOL, "-"],
        "shell call dropped from the follow-up input"
    );
    let response = check_client(&parse(&client), "resp_1");
    let ids: Vec<&str> = response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["id"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(ids, ["msg_resp_1_0", "fc_resp_2_0"]);
}

#[test]
fn single_round_is_forwarded_byte_for_byte() {
    for items in [
        vec![It::Message("hello")],
        vec![
            It::Reasoning("hm"),
            It::Message("a"),
            It::Call("shell", "{}"),
        ],
    ] {
        let mut r = Round::new("resp_only", items);
        r.with_tool = false;
        let body = stream(&r, None);
        assert_eq!(run(std::slice::from_ref(&body), whole).0, body);
        assert_eq!(run(std::slice::from_ref(&body), bytewise).0, body);
        // With the injected tool echoed, only `tools` differs from upstream.
        r.with_tool = true;
        let (client, _) = run(&[stream(&r, None)], whole);
        let mut upstream = parse(&stream(&r, None));
        for e in &mut upstream {
            if let Some(Value::Array(tools)) =
                e.get_mut("response").and_then(|r| r.get_mut("tools"))
            {
                tools.retain(|t| t["name"] != TOOL);
            }
        }
        assert_eq!(parse(&client), upstream);
    }
}

#[test]
fn truncated_round_ends_without_inventing_events() {
    let (r1, r2) = two_rounds();
    for cut in [3, 12] {
        let body = stream(&r1, Some(cut));
        let mut st = Stitcher::new(TOOL);
        let mut client = st.push(&body[..body.len() - 5]).concat();
        client.extend(st.push(&body[body.len() - 5..]).concat());
        assert_eq!(st.end_round().terminal, Terminal::Missing);
        assert!(st.finish().is_empty());
        assert!(client.len() <= body.len());
    }
    // Cut in the second round: the first round's terminal is never shown either.
    let (client, ends) = run(&[stream(&r1, None), stream(&r2, Some(6))], whole);
    assert_eq!(ends[1].terminal, Terminal::Missing);
    let types: Vec<Value> = parse(&client)
        .into_iter()
        .map(|e| e["type"].clone())
        .collect();
    assert!(!types.contains(&json!("response.completed")));
}

#[test]
fn stopping_early_releases_held_calls() {
    let r1 = Round::new(
        "resp_1",
        vec![It::Call("shell", "{}"), It::Call(TOOL, "{}")],
    );
    let mut st = Stitcher::new(TOOL);
    let mut client = st.push(&stream(&r1, None));
    let end = st.end_round();
    assert_eq!((end.expand_calls.len(), end.dropped_client_calls), (1, 1));
    client.extend(st.finish());
    let response = check_client(&parse(&client.concat()), "resp_1");
    assert_eq!(response["output"].as_array().map(Vec::len), Some(1));
    assert_eq!(response["output"][0]["name"], "shell");
}

#[test]
fn odd_events_pass_through() {
    let r = Round::new("resp_1", vec![It::Call(TOOL, "{}")]);
    let mut st = Stitcher::new(TOOL);
    let mut client = st.push(&stream(&r, None));
    st.end_round();
    st.begin_round();
    let extra = b": ping\n\nevent: weird\ndata: {not json\n\n\
        event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_2\"}}\n\n\
        event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"message\":\"boom\",\"ref\":\"resp_2\"}\n\n\
        data: {\"type\":\"x.unknown\",\"sequence_number\":2}\n\n";
    client.extend(st.push(extra));
    assert_eq!(st.end_round().terminal, Terminal::Missing);
    let text = String::from_utf8_lossy(&client.concat()).into_owned();
    assert!(text.contains(": ping\n\nevent: weird\ndata: {not json\n\n"));
    assert!(text.contains("event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"message\":\"boom\",\"ref\":\"resp_1\"}\n\n"));
    assert!(text.ends_with("data: {\"type\":\"x.unknown\",\"sequence_number\":3}\n\n"));
    assert_eq!(text.matches("event: response.created").count(), 1);
}

#[test]
fn late_named_expand_call_is_still_hidden() {
    let (r1, r2) = two_rounds();
    // The expand call's name appears only in its `output_item.done` item.
    let ev = events(&r1).into_iter().map(|(kind, mut payload)| {
        if kind == "response.output_item.added" && payload["output_index"] == 2 {
            payload["item"]["name"] = json!("");
        }
        (kind, payload)
    });
    let (client, ends) = run(&[body(ev), stream(&r2, None)], bytewise);
    assert!(!String::from_utf8_lossy(&client).contains("ab12"));
    assert_eq!(ends[0].expand_calls.len(), 1);
    assert_eq!(
        ends[0].expand_calls[0].arguments,
        r#"{"hash":"ab12","query":"error"}"#
    );
    check_client(&parse(&client), "resp_1");
}

#[test]
fn final_kind_and_done_sentinel_come_from_the_last_round() {
    let (r1, mut r2) = two_rounds();
    r2.outcome = "incomplete";
    let done = b"data: [DONE]\n\n";
    let bodies = [
        [stream(&r1, None), done.to_vec()].concat(),
        [stream(&r2, None), done.to_vec()].concat(),
    ];
    let (client, _) = run(&bodies, whole);
    assert!(client.ends_with(done));
    let text = String::from_utf8_lossy(&client);
    assert_eq!(text.matches("[DONE]").count(), 1);
    let events = parse(&client[..client.len() - done.len()]);
    let response = check_client(&events, "resp_1");
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("response.incomplete"))
    );
    assert_eq!(response["status"], "incomplete");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_chunking_is_invisible(cuts in proptest::collection::vec(0usize..4000, 0..40)) {
        let (r1, r2) = two_rounds();
        let bodies = [stream(&r1, None), stream(&r2, None)];
        let (reference, _) = run(&bodies, whole);
        let chunker = |b: &[u8]| -> Vec<Vec<u8>> {
            let mut at: Vec<usize> = cuts.iter().map(|c| c % (b.len() + 1)).collect();
            at.extend([0, b.len()]);
            at.sort_unstable();
            at.windows(2).map(|w| b[w[0]..w[1]].to_vec()).collect()
        };
        let mut st = Stitcher::new(TOOL);
        let mut client = Vec::new();
        for (n, body) in bodies.iter().enumerate() {
            if n > 0 { st.begin_round(); }
            chunker(body).iter().for_each(|c| client.extend(st.push(c)));
            st.end_round();
        }
        client.extend(st.finish());
        prop_assert_eq!(client.concat(), reference);
    }

    #[test]
    fn garbage_never_panics(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16)) {
        let mut st = Stitcher::new(TOOL);
        for c in &chunks { st.push(c); }
        st.end_round();
        st.begin_round();
        let prefix = b"data: {\"type\":\"response.output_item.added\",\"output_index\":99999999999,\"item\":{}}\n\n";
        st.push(prefix);
        for c in &chunks { st.push(c); }
        st.end_round();
        st.finish();
    }
}

/// The upstream bytes up to (not including) the round's terminal event.
fn before_terminal(body: &[u8]) -> &[u8] {
    let text = std::str::from_utf8(body).unwrap();
    let at = text.find("event: response.completed").unwrap();
    &body[..at]
}

#[test]
fn client_calls_stream_at_once_when_no_expand_call_can_follow() {
    let r = Round::new(
        "resp_1",
        vec![
            It::Message("running it"),
            It::Call("shell", r#"{"cmd":"ls"}"#),
        ],
    );
    let body = stream(&r, None);
    let shown = |configure: &dyn Fn(&mut Stitcher)| {
        let mut st = Stitcher::new(TOOL);
        configure(&mut st);
        let early = st.push(before_terminal(&body)).concat();
        String::from_utf8(early).unwrap()
    };
    // The last round is not offered the tool; with parallel_tool_calls false a client call is the round's only
    // call. Either way the call's events reach the client before the round ends.
    for early in [
        shown(&|st| st.offer_expand(false)),
        shown(&|st| st.set_parallel_calls(false)),
    ] {
        assert!(
            early.contains("response.function_call_arguments.done"),
            "{early}"
        );
        assert!(early.contains(r#""name":"shell""#));
    }
    // While an expand call may still follow, the call is held until the round's end tells.
    let held = shown(&|_| {});
    assert!(!held.contains("function_call_arguments"), "{held}");
    // Shown early or released at the end, the client gets the same stream.
    let mut st = Stitcher::new(TOOL);
    st.offer_expand(false);
    let mut client = st.push(&body);
    let end = st.end_round();
    assert_eq!(end.shown_client_calls, 1);
    client.extend(st.finish());
    let mut reference = Stitcher::new(TOOL);
    let mut expected = reference.push(&body);
    reference.end_round();
    expected.extend(reference.finish());
    assert_eq!(parse(&client.concat()), parse(&expected.concat()));
}

#[test]
fn a_round_without_expand_call_reaches_the_client_as_it_came() {
    let r = Round::new(
        "resp_1",
        vec![It::Reasoning("think"), It::Message("hello ✓")],
    );
    let body = stream(&r, None);
    for chunker in [whole as fn(&[u8]) -> Vec<&[u8]>, bytewise] {
        let mut st = Stitcher::new(TOOL);
        let mut client: Vec<u8> = Vec::new();
        for chunk in chunker(&body) {
            client.extend(st.push(chunk).concat());
        }
        assert!(st.end_round().expand_calls.is_empty());
        client.extend(st.finish().concat());
        let (got, sent) = (split_events(&client), split_events(&body));
        assert_eq!(got.len(), sent.len());
        for (g, s) in got.iter().zip(&sent) {
            if s.contains("\"response\":") {
                // Only the echo of the injected tool is taken out of the response objects.
                assert!(!g.contains(TOOL) && s.contains(TOOL), "{g}");
            } else {
                assert_eq!(g, s, "every other event is forwarded byte for byte");
            }
        }
    }
}

fn split_events(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    text.split_inclusive("\n\n").map(str::to_owned).collect()
}

/// `response.created` and `response.in_progress` carry the same response object: the second gets the first's splice
/// without a second reading. Both must come out with the echo taken out — also when the events hold bytes that are
/// not UTF-8, which reach the client as they came, as in the events relayed untouched — and a response that differs
/// from the last one is read again.
#[test]
fn lifecycle_events_that_share_a_response_are_each_stripped() {
    let tools = serde_json::to_string(&json!([
        {"type":"function","name":"shell"},
        ctxgate::expand::tool::tool_definition(),
    ]))
    .unwrap();
    let response = |status: &str| {
        format!(
            r#"{{"id":"resp_1","created_at":7,"status":"{status}","tools":{tools},"output":[]}}"#
        )
    };
    let event = |kind: &str, seq: u64, response: &str, extra: &[u8]| {
        let mut e = format!("event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{seq},\"response\":{response},\"x\":\"")
            .into_bytes();
        e.extend_from_slice(extra);
        e.extend_from_slice(b"\"}\n\n");
        e
    };
    for extra in [&b"plain"[..], &b"not \xff utf-8"[..]] {
        let mut body = Vec::new();
        body.extend(event(
            "response.created",
            0,
            &response("in_progress"),
            extra,
        ));
        body.extend(event(
            "response.in_progress",
            1,
            &response("in_progress"),
            extra,
        ));
        body.extend(event("response.in_progress", 2, &response("queued"), extra));
        body.extend(event(
            "response.completed",
            3,
            &response("completed"),
            extra,
        ));
        let mut st = Stitcher::new(TOOL);
        let mut client = st.push(&body);
        assert_eq!(st.end_round().terminal, Terminal::Completed);
        client.extend(st.finish());
        let bytes = client.concat();
        // Every byte but the echo's as it came: one \xff per event when the upstream sent one.
        let odd = bytes.iter().filter(|&&b| b == 0xff).count();
        assert_eq!(odd, if extra == b"plain" { 0 } else { 4 });
        let text = String::from_utf8_lossy(&bytes).into_owned();
        assert!(!text.contains(TOOL), "{text}");
        let events = parse(text.as_bytes());
        assert_eq!(events.len(), 4, "{text}");
        for (e, status) in events
            .iter()
            .zip(["in_progress", "in_progress", "queued", "completed"])
        {
            assert_eq!(
                e["response"]["tools"],
                json!([{"type":"function","name":"shell"}])
            );
            assert_eq!(e["response"]["status"], status);
            let x = if extra == b"plain" {
                "plain"
            } else {
                "not \u{fffd} utf-8"
            };
            assert_eq!(e["x"], x);
        }
    }
}

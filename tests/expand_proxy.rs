//! `context_expand` answered inside the proxy: the client sees one response (or one coherent stream) as if the
//! model had never called a tool it does not know; the side endpoints serve the same originals per tenant.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
#[path = "expand_proxy/harness.rs"]
mod harness;

use common::*;
use harness::*;
use serde_json::{Value, json};

#[tokio::test]
async fn json_turn_with_an_expansion_returns_only_the_final_answer() {
    let (mock, proxy) = mock_and_proxy().await;
    let resp = post(&proxy, &conversation("mock-expand", false), "sk-a").await;
    assert_eq!(resp.status(), 200);
    let answer: Value = resp.json().await.unwrap();
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 2, "one expansion round");
    // Round 1 offered the tool and the directive; round 2 carries the original as the tool's output.
    let tools = sent[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[1]["name"], "context_expand");
    assert!(
        sent[0]["instructions"]
            .as_str()
            .unwrap()
            .contains("context_expand")
    );
    let round2 = sent[1]["input"].as_array().unwrap();
    let call = round2
        .iter()
        .find(|i| i["type"] == "function_call" && i["name"] == "context_expand")
        .unwrap();
    let output = round2
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == call["call_id"])
        .unwrap();
    let original = corpus("cargo_build_vv.log");
    let text = output["output"].as_str().unwrap();
    assert!(
        original.starts_with(text.split("\n[ctxzip: ").next().unwrap()),
        "a window of the original"
    );
    // The client's answer: no expand item, first round's id, usage summed over both rounds.
    let items = answer["output"].as_array().unwrap();
    assert!(items.iter().all(|i| i["name"] != "context_expand"));
    assert!(
        answer["output"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Expanded content:")
    );
    let rounds_input: u64 = sent.iter().map(|r| (r.to_string().len() / 4) as u64).sum();
    assert!(answer["usage"]["input_tokens"].as_u64().unwrap() >= rounds_input / 2);
    let leaked = answer.to_string();
    assert!(
        !leaked.contains("context_expand"),
        "the tool never reaches the client: {leaked}"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn an_unknown_hash_gets_the_miss_text_and_max_rounds_is_respected() {
    let (mock, proxy) = mock_and_proxy().await;
    let resp = post(&proxy, &conversation("mock-expand-unknown", false), "sk-a").await;
    assert_eq!(resp.status(), 200);
    let sent = turn_requests(&mock);
    let round2 = sent[1]["input"].to_string();
    assert!(
        round2.contains("expired") || round2.contains("never existed"),
        "{round2}"
    );
    mock.state.clear();

    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.expand.max_rounds = Some(2);
    let capped = start_proxy_with(opts).await;
    let resp = post(&capped, &conversation("mock-expand-loop", false), "sk-a").await;
    assert_eq!(resp.status(), 200);
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 3, "the first round and two expansion rounds");
    let offered = |r: &Value| {
        r["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "context_expand"))
    };
    assert!(offered(&sent[0]) && offered(&sent[1]));
    assert!(!offered(&sent[2]), "the last round is not offered the tool");
    let answer: Value = resp.json().await.unwrap();
    assert!(answer.to_string().find("context_expand").is_none());
    proxy.stop().await;
    capped.stop().await;
}

#[tokio::test]
async fn a_mixed_round_drops_the_client_call_and_the_model_reissues() {
    let (mock, proxy) = mock_and_proxy().await;
    let resp = post(&proxy, &conversation("mock-expand-mixed", false), "sk-a").await;
    let answer: Value = resp.json().await.unwrap();
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 2);
    let round2 = sent[1]["input"].as_array().unwrap();
    let new_calls: Vec<&Value> = round2
        .iter()
        .skip(3)
        .filter(|i| i["type"] == "function_call")
        .collect();
    assert_eq!(
        new_calls.len(),
        1,
        "only the expand call is carried into the follow-up"
    );
    assert_eq!(new_calls[0]["name"], "context_expand");
    assert!(
        answer["output"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["type"] == "message")
    );
    proxy.stop().await;
}

#[tokio::test]
async fn the_response_id_the_client_saw_is_mapped_to_the_last_real_round() {
    let (mock, proxy) = mock_and_proxy().await;
    let answer: Value = post(&proxy, &conversation("mock-expand", false), "sk-a")
        .await
        .json()
        .await
        .unwrap();
    let seen_id = answer["id"].as_str().unwrap().to_string();
    let real_ids: Vec<String> = {
        // Ask the mock what it answered in round 2: same request → same id (the mock is deterministic).
        let sent = turn_requests(&mock);
        let again: Value = client()
            .post(format!("{}/responses", mock_url(&mock)))
            .body(sent[1].to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        vec![again["id"].as_str().unwrap().to_string()]
    };
    assert_ne!(seen_id, real_ids[0]);
    mock.state.clear();
    let follow = json!({"model":"mock-ok","previous_response_id": seen_id, "input":[{"role":"user","content":"thanks"}]});
    let _ = post(&proxy, &follow, "sk-a").await.bytes().await;
    let sent = turn_requests(&mock);
    assert_eq!(sent[0]["previous_response_id"], real_ids[0]);
    proxy.stop().await;
}

#[tokio::test]
async fn injection_is_byte_identical_and_skipped_without_markers_or_with_tool_choice_none() {
    let (mock, proxy) = mock_and_proxy().await;
    let _ = post(&proxy, &conversation("mock-ok", false), "sk-a")
        .await
        .bytes()
        .await;
    let _ = post(&proxy, &conversation("mock-ok", false), "sk-a")
        .await
        .bytes()
        .await;
    let rec = mock.state.received();
    assert_eq!(
        rec[0].body, rec[1].body,
        "the same turn twice gives the same bytes"
    );
    let mut none = conversation("mock-ok", false);
    none["tool_choice"] = json!("none");
    let _ = post(&proxy, &none, "sk-a").await.bytes().await;
    let plain = json!({"model":"mock-ok","input":[{"role":"user","content":"hi"}],"tools":[]});
    let _ = post(&proxy, &plain, "sk-a").await.bytes().await;
    let sent = turn_requests(&mock);
    assert!(
        sent[2]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "context_expand")
    );
    assert_eq!(sent[3]["tools"], json!([]));
    proxy.stop().await;
}

/// A client that limits the model to a list of tools (`allowed_tools`) gets the expand tool added to the list the
/// upstream sees, so the model can follow a marker; the answer's echo gives the client its own list back, streamed
/// or not, expanded or not.
#[tokio::test]
async fn an_allowed_tools_list_lets_the_model_expand_and_comes_back_as_sent() {
    let (mock, proxy) = mock_and_proxy().await;
    let allowed = json!({"type": "allowed_tools", "mode": "auto",
                         "tools": [{"type": "function", "name": "shell"}]});
    // mock-expand calls the tool: its answer is the second round's, stitched.
    for (model, stream) in [
        ("mock-ok", false),
        ("mock-ok", true),
        ("mock-expand", false),
        ("mock-expand", true),
    ] {
        mock.state.clear();
        let mut body = conversation(model, stream);
        body["tool_choice"] = allowed.clone();
        let resp = post(&proxy, &body, "sk-a").await;
        assert_eq!(resp.status(), 200);
        let text = resp.text().await.unwrap();
        let echoed = if stream {
            let events = sse_events(&text);
            let (_, created) = events
                .iter()
                .find(|(kind, _)| kind == "response.created")
                .unwrap();
            let (_, done) = events.last().unwrap();
            assert_eq!(
                done["response"]["tool_choice"], allowed,
                "{model} completed"
            );
            created["response"]["tool_choice"].clone()
        } else {
            serde_json::from_str::<Value>(&text).unwrap()["tool_choice"].clone()
        };
        assert_eq!(echoed, allowed, "{model} stream: {stream}");
        assert!(!text.contains("context_expand"), "{model} stream: {stream}");
        let sent = turn_requests(&mock);
        let names: Vec<&str> = sent[0]["tool_choice"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["shell", "context_expand"],
            "{model} stream: {stream}"
        );
    }
    proxy.stop().await;
}

#[tokio::test]
async fn streamed_turn_with_an_expansion_is_one_coherent_stream() {
    let (mock, proxy) = mock_and_proxy().await;
    for model in ["mock-expand", "mock-expand-mixed"] {
        mock.state.clear();
        let resp = post(&proxy, &conversation(model, true), "sk-a").await;
        assert_eq!(resp.status(), 200);
        let text = resp.text().await.unwrap();
        assert!(
            !text.contains("context_expand"),
            "{model}: the tool never reaches the client"
        );
        let events = sse_events(&text);
        let kinds: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == "response.created").count(),
            1,
            "{model}"
        );
        assert_eq!(
            kinds
                .iter()
                .filter(|k| k.starts_with("response.completed"))
                .count(),
            1,
            "{model}"
        );
        assert_eq!(*kinds.last().unwrap(), "response.completed", "{model}");
        let seqs: Vec<i64> = events
            .iter()
            .map(|(_, v)| v["sequence_number"].as_i64().unwrap())
            .collect();
        assert_eq!(seqs, (0..seqs.len() as i64).collect::<Vec<_>>(), "{model}");
        let ids: std::collections::BTreeSet<String> = events
            .iter()
            .filter_map(|(_, v)| {
                v.get("response")
                    .and_then(|r| r["id"].as_str())
                    .map(String::from)
            })
            .collect();
        assert_eq!(ids.len(), 1, "{model}: one response id");
        let terminal = &events.last().unwrap().1["response"];
        let created = &events
            .iter()
            .find(|(e, _)| e == "response.created")
            .unwrap()
            .1["response"];
        assert_eq!(
            created["created_at"], terminal["created_at"],
            "{model}: one response, one creation time"
        );
        let added: Vec<&Value> = events
            .iter()
            .filter(|(e, _)| e == "response.output_item.added")
            .map(|(_, v)| &v["item"])
            .collect();
        assert_eq!(
            terminal["output"].as_array().unwrap().len(),
            added.len(),
            "{model}"
        );
        assert_eq!(turn_requests(&mock).len(), 2, "{model}");
    }
    proxy.stop().await;
}

/// `text` without its top-level members `names` (their key, value and one separating comma).
fn without_members(text: &str, names: &[&str]) -> String {
    let members: std::collections::BTreeMap<&str, &serde_json::value::RawValue> =
        serde_json::from_str(text).unwrap();
    let mut cuts: Vec<(usize, usize)> = names
        .iter()
        .filter_map(|n| members.get(n))
        .map(|raw| {
            let end = raw.get().as_ptr() as usize - text.as_ptr() as usize + raw.get().len();
            let key = text[..end - raw.get().len()].rfind('"').unwrap();
            let start = text[..key].rfind('"').unwrap();
            (start, end)
        })
        .collect();
    cuts.sort();
    let mut out = String::new();
    let mut at = 0;
    for (start, end) in cuts {
        out.push_str(&text[at..start]);
        at = end + usize::from(text[end..].starts_with(','));
    }
    out.push_str(&text[at..]);
    out
}

#[tokio::test]
async fn a_json_turn_without_expansion_is_the_upstreams_answer_but_for_the_echo() {
    let (mock, proxy) = mock_and_proxy().await;
    let client_body = conversation("mock-ok", false);
    let resp = post(&proxy, &client_body, "sk-a").await;
    assert_eq!(resp.status(), 200);
    let through = resp.text().await.unwrap();
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0]["tools"].to_string().contains("context_expand"),
        "the tool was offered"
    );
    // The mock is deterministic: the same request gives the same answer, here straight from it.
    let direct = client()
        .post(format!("{}/responses", mock_url(&mock)))
        .body(sent[0].to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_ne!(through, direct, "the echo is not the client's");
    let echo = ["tools", "instructions"];
    assert_eq!(
        without_members(&through, &echo),
        without_members(&direct, &echo)
    );
    let answer: Value = serde_json::from_str(&through).unwrap();
    assert_eq!(answer["tools"].as_array().unwrap().len(), 1);
    assert_eq!(answer["tools"][0]["name"], "shell");
    assert_eq!(answer["instructions"], Value::Null, "the client sent none");
    proxy.stop().await;
}

#[tokio::test]
async fn a_streamed_turn_offered_the_tool_reaches_the_client_event_by_event() {
    let (mock, proxy) = mock_and_proxy().await;
    let mut resp = post(&proxy, &conversation("mock-slow", true), "sk-a").await;
    assert_eq!(resp.status(), 200);
    // mock-slow spaces 200 deltas: the first bytes must arrive while the upstream is still writing.
    let mut early = String::new();
    while !early.contains("response.output_text.delta") {
        let chunk = resp.chunk().await.unwrap().expect("stream ended early");
        early.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(!early.contains("response.completed"), "{early}");
    assert!(!early.contains("context_expand"), "the echo is spliced out");
    let sent = turn_requests(&mock);
    assert!(
        sent[0]["tools"].to_string().contains("context_expand"),
        "the tool was offered"
    );
    drop(resp);
    proxy.stop().await;
}

#[tokio::test]
async fn a_follow_up_round_is_folded_like_a_first_round() {
    let (mock, proxy) = mock_and_proxy().await;
    let body = conversation("mock-expand", false);
    let send = |budget: usize| {
        let (url, body) = (proxy.v1("/responses"), body.to_string());
        async move {
            client()
                .post(url)
                .header("authorization", "Bearer sk-a")
                .header("x-ctxgate-budget", budget.to_string())
                .body(body)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
        }
    };
    let _ = send(10_000_000).await;
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 2);
    let first_round = sent[0]["input"].to_string().len() / 4;
    let follow_up = sent[1]["input"].to_string().len() / 4;
    assert!(
        follow_up > first_round + 2_000,
        "the expansion made the input grow"
    );
    mock.state.clear();
    // A budget the first round fits in and the follow-up (with its expansion) does not.
    let _ = send(first_round + 1_000).await;
    let compacts = mock
        .state
        .received()
        .iter()
        .filter(|r| r.path == "/v1/responses/compact")
        .count();
    assert_eq!(compacts, 1, "the follow-up round was folded");
    let sent = turn_requests(&mock);
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0]["input"].to_string().len() / 4,
        first_round,
        "round 1 unfolded"
    );
    let folded = sent[1]["input"].as_array().unwrap();
    assert_ne!(
        folded[0], sent[0]["input"][0],
        "the older part was replaced by the fold's output"
    );
    let last = folded.last().unwrap();
    assert_eq!(
        last["type"], "function_call_output",
        "the expansion is kept"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_turn_continuing_history_with_markers_is_offered_the_tool() {
    let (mock, proxy) = mock_and_proxy().await;
    for (stream, store) in [(false, true), (true, true), (false, false)] {
        mock.state.clear();
        let mut first = conversation("mock-ok", stream);
        first["store"] = json!(store);
        let text = post(&proxy, &first, "sk-a").await.text().await.unwrap();
        let id = if stream {
            sse_events(&text)[0].1["response"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        } else {
            serde_json::from_str::<Value>(&text).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        };
        // No expansion happened: the client saw the real id, and the next turn names it.
        let next = json!({"model":"mock-ok","stream":stream,"previous_response_id": id,
            "input":[{"role":"user","content":"and now?"}]});
        let _ = post(&proxy, &next, "sk-a").await.bytes().await;
        let sent = turn_requests(&mock);
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1]["previous_response_id"], id.as_str());
        let offered = sent[1]["tools"].to_string().contains("context_expand");
        // A response the upstream does not keep cannot be continued, so it is not remembered.
        assert_eq!(offered, store, "stream {stream}, store {store}");
    }
    proxy.stop().await;
}

#[tokio::test]
async fn the_tool_is_spliced_into_the_clients_bytes_and_nothing_else_changes() {
    let (mock, proxy) = mock_and_proxy().await;
    // Odd whitespace, an unusual member order, unicode escapes, a number spelled `1.50` and a member ctxgate does
    // not know: the upstream must get all of it as sent, with only the tool and the directive added.
    let body = "{ \"input\": [ {\"role\":\"user\",\"content\":\"caf\\u00e9 \\ud83d\\ude00\"} ,\n\
                {\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"ok\\n<<ctxzip:0123456789ab 12_lines_offloaded>>\"} ],\n\
                \t\"tools\" : [ {\"type\":\"function\",\"name\":\"shell\"} ] , \"model\" : \"mock-ok\", \"x_unknown\": {\"k\": 1.50} }\n";
    let resp = client()
        .post(proxy.v1("/responses"))
        .header("authorization", "Bearer sk-a")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(
        answer["tools"].as_array().unwrap().len(),
        1,
        "the echo is the client's"
    );
    assert_eq!(answer["tools"][0]["name"], "shell");
    let tool = std::str::from_utf8(ctxgate::expand::tool::tool_bytes()).unwrap();
    let directive = serde_json::to_string(ctxgate::expand::tool::DIRECTIVE).unwrap();
    let expected = body
        .replacen(
            "{\"type\":\"function\",\"name\":\"shell\"} ]",
            &format!("{{\"type\":\"function\",\"name\":\"shell\"}} ,{tool}]"),
            1,
        )
        .replacen(
            "{\"k\": 1.50} }",
            &format!("{{\"k\": 1.50}} ,\"instructions\":{directive}}}"),
            1,
        );
    assert_ne!(expected, body);
    let received = mock.state.received();
    let sent = received.iter().find(|r| r.path == "/v1/responses").unwrap();
    assert_eq!(std::str::from_utf8(&sent.body).unwrap(), expected);
    proxy.stop().await;
}

//! The fold's transform end to end against a scripted fake summarizer: when it calls the
//! upstream and with what, what it sends, what it stores and reuses.

mod support;

use ctxgate::fold::{
    DEFAULT_SUMMARY_PROMPT, FoldConfig, FoldInput, FoldMode, Outcome, PinRule, Plan, Rewrite,
    chain, plan, summary_item,
};
use serde_json::{Value, json};
use support::{
    Call, Fake, MODEL, NOW, bytes, compact_answer, config, empty_record, fold_ok, local_record,
    msg, summary_answer, transcript,
};

#[tokio::test]
async fn under_budget_is_untouched_and_asks_nothing() {
    let fake = Fake::default();
    let items = transcript(5);
    let result = fold_ok(&items, &[], None, &config(FoldMode::Auto), &fake).await;
    assert_eq!(result.report.outcome, Outcome::None);
    assert_eq!(result.rewrite, Rewrite::Unchanged);
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn compact_splices_the_endpoint_output_whole() {
    let fake = Fake::default().with_compact(compact_answer());
    let items = transcript(20);
    let result = fold_ok(&items, &[], None, &config(FoldMode::Compact), &fake).await;
    let output = compact_answer()
        .map(|r| r["output"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default();
    assert_eq!(
        fake.calls(),
        vec![Call::Compact {
            model: MODEL.into(),
            input: items[..16].to_vec()
        }]
    );
    assert_eq!(result.report.outcome, Outcome::Applied);
    assert_eq!((result.report.split, result.report.attempts), (16, 1));
    assert_eq!(result.report.mode_used, Some(FoldMode::Compact));
    assert_eq!(result.report.usage.total_tokens, 1700);
    assert_eq!(result.report.response_id.as_deref(), Some("cmp_1"));
    assert_eq!(result.report.output_types, vec!["message", "compaction"]);
    let expected: Vec<Value> = output.iter().chain(&items[16..]).cloned().collect();
    assert_eq!(result.rewrite.apply(&items), expected);
    assert!(result.report.tokens_after < result.report.tokens_before);
    let record = result.record.unwrap_or_else(empty_record);
    assert_eq!(
        (record.v, record.split, record.created_at_unix),
        (1, 16, NOW)
    );
    assert_eq!(record.prefix_hash, chain(&items)[16]);
    assert_eq!(record.output, output);
}

#[tokio::test]
async fn local_request_has_the_documented_shape() {
    let fake = Fake::default().with_respond(summary_answer("short summary"));
    let mut items = transcript(20);
    items.insert(
        3,
        json!({"type": "reasoning", "id": "rs_x", "encrypted_content": "SECRET", "summary": []}),
    );
    items.insert(5, json!({"type": "web_search_call", "id": "ws_1", "status": "completed", "x-unknown": {"k": [1, 2]}}));
    let cfg = FoldConfig {
        model: Some("gpt-mini".into()),
        reasoning_effort: Some("low".into()),
        ..config(FoldMode::Local)
    };
    let result = fold_ok(&items, &[], None, &cfg, &fake).await;
    assert_eq!(result.report.outcome, Outcome::Applied);
    let requests = fake.respond_requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    let mut keys: Vec<&String> = request
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    keys.sort();
    assert_eq!(
        keys,
        ["input", "max_output_tokens", "model", "reasoning", "store"]
    );
    assert_eq!(request["model"], "gpt-mini");
    assert_eq!(request["store"], false);
    assert_eq!(request["max_output_tokens"], 500); // min(1000 / 2, 8192)
    assert_eq!(request["reasoning"], json!({"effort": "low"}));
    let input = request["input"].as_array().cloned().unwrap_or_default();
    let split = result.report.split;
    let folded_without_reasoning: Vec<Value> = items[..split]
        .iter()
        .filter(|i| i["type"] != "reasoning")
        .cloned()
        .collect();
    assert_eq!(input[..input.len() - 1], folded_without_reasoning[..]);
    assert!(
        input.iter().any(|i| i["type"] == "web_search_call"),
        "unknown types are carried through"
    );
    assert_eq!(
        input.last(),
        Some(&json!({"type": "message", "role": "user", "content": DEFAULT_SUMMARY_PROMPT}))
    );
    let rewritten = result.rewrite.apply(&items);
    assert_eq!(rewritten[0], summary_item("short summary"));
    assert_eq!(rewritten[1..], items[split..]);
}

#[tokio::test]
async fn a_stored_fold_is_reused_without_a_call_whatever_the_clients_formatting() {
    let cfg = config(FoldMode::Local);
    let items = transcript(20);
    let record = local_record(&items, &cfg)
        .await
        .unwrap_or_else(empty_record);
    let first_turn = Rewrite::Replace {
        head: record.head(),
        split: record.split,
    }
    .apply(&items);

    // Next turn: one more item, and the client re-serialised every item with other key order.
    let mut next: Vec<Value> = transcript(21).iter().map(reorder_keys).collect();
    next[20] = msg("user", 20);
    let fake = Fake::default();
    let result = fold_ok(&next, std::slice::from_ref(&record), None, &cfg, &fake).await;
    assert!(fake.calls().is_empty());
    assert_eq!(result.report.outcome, Outcome::Reused);
    assert_eq!(
        result.report.prefix_hash.as_deref(),
        Some(record.prefix_hash.as_str())
    );
    assert_eq!(
        result.rewrite,
        Rewrite::Replace {
            head: record.head(),
            split: 16
        }
    );
    assert_eq!((result.record, result.failed), (None, None));
    // Prefix stability: this turn's request begins with the bytes of the last turn's head.
    let sent = bytes(&result.rewrite.apply(&next));
    assert_eq!(sent[0], bytes(&first_turn)[0]);
}

#[tokio::test]
async fn a_refold_folds_the_previous_output_with_the_new_items() {
    let cfg = config(FoldMode::Local);
    let record = local_record(&transcript(20), &cfg)
        .await
        .unwrap_or_else(empty_record);
    let items = transcript(30);
    let fake = Fake::default().with_respond(summary_answer("second summary"));
    let result = fold_ok(&items, std::slice::from_ref(&record), None, &cfg, &fake).await;
    assert_eq!(result.report.outcome, Outcome::Applied);
    assert_eq!(result.report.split, 26);
    let input = fake.respond_requests()[0]["input"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut expected = record.output.clone();
    expected.extend_from_slice(&items[16..26]);
    assert_eq!(input[..input.len() - 1], expected[..]);
    let new = result.record.unwrap_or_else(empty_record);
    assert_eq!(
        (new.split, new.prefix_hash.as_str()),
        (26, chain(&items)[26].as_str())
    );
    assert_eq!(new.output, vec![summary_item("second summary")]);
    // With both records stored, the longer one wins.
    let fake = Fake::default();
    let again = fold_ok(&items, &[record, new.clone()], None, &cfg, &fake).await;
    assert_eq!(
        (again.report.outcome, again.report.split),
        (Outcome::Reused, 26)
    );
}

#[tokio::test]
async fn pinned_items_follow_the_summary_and_are_still_folded() {
    let cfg = FoldConfig {
        pins: vec![PinRule::Role {
            role: "developer".into(),
        }],
        ..config(FoldMode::Local)
    };
    let items = transcript(20);
    let fake = Fake::default().with_respond(summary_answer("s1"));
    let result = fold_ok(&items, &[], None, &cfg, &fake).await;
    let input = fake.respond_requests()[0]["input"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        input[0], items[0],
        "the pinned item is sent to be folded too"
    );
    let rewritten = result.rewrite.apply(&items);
    assert_eq!(rewritten[..2], [summary_item("s1"), items[0].clone()]);
    assert_eq!(rewritten[2..], items[16..]);
    let record = result.record.unwrap_or_else(empty_record);
    assert_eq!(record.pinned, vec![items[0].clone()]);

    // A refold carries the pin once, after the new summary.
    let longer = transcript(30);
    let fake = Fake::default().with_respond(summary_answer("s2"));
    let refold = fold_ok(&longer, &[record], None, &cfg, &fake).await;
    let rewritten = refold.rewrite.apply(&longer);
    assert_eq!(rewritten[..2], [summary_item("s2"), longer[0].clone()]);
    assert_eq!(rewritten[2..], longer[26..]);
}

#[tokio::test]
async fn plan_names_the_pending_fold_for_single_flight() {
    let items = transcript(20);
    let cfg = config(FoldMode::Local);
    let input = FoldInput {
        items: &items,
        model: MODEL,
        records: &[],
        failed: None,
        config: &cfg,
        compact_supported: true,
        now_unix: NOW,
    };
    match plan(input) {
        Plan::Fold(pending) => {
            assert_eq!(
                (pending.split(), pending.prefix_hash()),
                (16, chain(&items)[16].as_str())
            );
            assert_eq!(pending.to_fold(), &items[..16]);
        }
        Plan::Done(result) => assert_eq!(
            result.report.outcome,
            Outcome::Applied,
            "expected a pending fold"
        ),
    }
}

#[tokio::test]
async fn the_same_input_twice_gives_byte_identical_items() {
    let items = transcript(30);
    let cfg = FoldConfig {
        pins: vec![PinRule::Text {
            contains: "turn 3:".into(),
        }],
        ..config(FoldMode::Local)
    };
    let mut sent = Vec::new();
    for _ in 0..2 {
        let fake = Fake::default().with_respond(summary_answer("same"));
        let result = fold_ok(&items, &[], None, &cfg, &fake).await;
        sent.push(bytes(&result.rewrite.apply(&items)).concat());
    }
    assert_eq!(sent[0], sent[1]);
}

fn reorder_keys(item: &Value) -> Value {
    let mut pairs: Vec<(String, Value)> = item
        .as_object()
        .map(|o| o.clone().into_iter().collect())
        .unwrap_or_default();
    pairs.reverse();
    Value::Object(pairs.into_iter().collect())
}

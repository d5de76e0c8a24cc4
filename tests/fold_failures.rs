//! How the fold fails: model failures asked twice then sent unfolded with a back-off,
//! back-off lifted by growth, auto's fallback to a local summary, the on-error policy for
//! upstream errors, and a prefix too small to be worth a fold.

mod support;

use ctxgate::fold::{
    CallError, FailedFold, FoldConfig, FoldMode, OnError, Outcome, Rewrite, chain, summary_item,
};
use serde_json::{Value, json};
use support::{
    Call, Fake, compact_answer, config, empty_failed, fold, fold_ok, msg, summary_answer,
    transcript,
};

fn failing_answers() -> Vec<(&'static str, Result<Value, CallError>)> {
    let huge = "word ".repeat(2000); // far larger than the folded part
    vec![
        (
            "summary_no_text",
            Ok(
                json!({"id": "r", "status": "completed", "output": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]}),
            ),
        ),
        (
            "summary_incomplete",
            Ok(
                json!({"id": "r", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}),
            ),
        ),
        ("summary_too_large", summary_answer(&huge)),
    ]
}

#[tokio::test]
async fn each_model_failure_is_asked_twice_then_fails_unfolded_with_a_back_off() {
    let items = transcript(20);
    for on_error in [OnError::SendUnfolded, OnError::Fail] {
        for (label, answer) in failing_answers() {
            let fake = Fake::default()
                .with_respond(answer.clone())
                .with_respond(answer);
            let cfg = FoldConfig {
                on_error,
                ..config(FoldMode::Local)
            };
            let result = fold(&items, &[], None, &cfg, true, &fake).await;
            assert!(
                result.is_ok(),
                "{label}: a model failure must not fail the turn"
            );
            let Ok(result) = result else { continue };
            assert_eq!(fake.calls().len(), 2, "{label}");
            assert_eq!(
                (result.report.outcome, result.report.attempts),
                (Outcome::Failed, 2),
                "{label}"
            );
            assert_eq!(result.report.error_kind, Some(label));
            assert_eq!(result.rewrite, Rewrite::Unchanged);
            assert_eq!(result.record, None);
            let expected = FailedFold {
                v: 1,
                split: 16,
                prefix_hash: chain(&items)[16].clone(),
                tokens_before: result.report.tokens_before,
            };
            assert_eq!(result.failed, Some(expected), "{label}");
        }
    }
}

#[tokio::test]
async fn a_backed_off_prefix_folds_again_after_growth() {
    let cfg = config(FoldMode::Local);
    let items = transcript(20);
    let fake = Fake::default()
        .with_respond(Ok(json!({"output": []})))
        .with_respond(Ok(json!({"output": []})));
    let failed = fold_ok(&items, &[], None, &cfg, &fake)
        .await
        .failed
        .unwrap_or_else(empty_failed);

    // Grown by fewer than keep_last short items (and far less than budget/4): backed off.
    let grown = |k: usize| -> Vec<Value> {
        let mut items = transcript(20);
        items.extend((0..k).map(|i| json!({"role": "user", "content": format!("ok {i}")})));
        items
    };
    for k in 0..4 {
        let fake = Fake::default();
        let result = fold_ok(&grown(k), &[], Some(&failed), &cfg, &fake).await;
        assert_eq!(result.report.outcome, Outcome::BackedOff, "k = {k}");
        assert_eq!(result.rewrite, Rewrite::Unchanged);
        assert!(fake.calls().is_empty());
    }
    // Grown by keep_last items: folds.
    let fake = Fake::default().with_respond(summary_answer("grown"));
    let result = fold_ok(&grown(4), &[], Some(&failed), &cfg, &fake).await;
    assert_eq!(
        (result.report.outcome, result.report.split),
        (Outcome::Applied, 20)
    );
    // Grown by a quarter of the budget in one large kept item: folds.
    let mut big = transcript(20);
    big.push(json!({"role": "user", "content": "x".repeat(1000)}));
    let fake = Fake::default().with_respond(summary_answer("grown"));
    assert_eq!(
        fold_ok(&big, &[], Some(&failed), &cfg, &fake)
            .await
            .report
            .outcome,
        Outcome::Applied
    );
    // Back-off disabled: folds at once.
    let off = FoldConfig {
        back_off: false,
        ..cfg.clone()
    };
    let fake = Fake::default().with_respond(summary_answer("again"));
    assert_eq!(
        fold_ok(&items, &[], Some(&failed), &off, &fake)
            .await
            .report
            .outcome,
        Outcome::Applied
    );
    // Another conversation sharing the anchor is not held back.
    let mut other = transcript(20);
    other[1] = msg("user", 99);
    let fake = Fake::default().with_respond(summary_answer("other"));
    assert_eq!(
        fold_ok(&other, &[], Some(&failed), &cfg, &fake)
            .await
            .report
            .outcome,
        Outcome::Applied
    );
}

#[tokio::test]
async fn auto_falls_back_to_local_on_unsupported_and_reports_it() {
    let items = transcript(20);
    let fake = Fake::default()
        .with_compact(Err(CallError::Unsupported { status: 404 }))
        .with_respond(summary_answer("local"));
    let result = fold_ok(&items, &[], None, &config(FoldMode::Auto), &fake).await;
    assert!(matches!(
        fake.calls()[..],
        [Call::Compact { .. }, Call::Respond(_)]
    ));
    assert_eq!(result.report.outcome, Outcome::Applied);
    assert!(result.report.compact_unsupported);
    assert_eq!(
        (result.report.mode_used, result.report.attempts),
        (Some(FoldMode::Local), 2)
    );
    assert_eq!(result.rewrite.apply(&items)[0], summary_item("local"));

    // Once the proxy knows, auto goes straight to local.
    let fake = Fake::default().with_respond(summary_answer("local"));
    let known = fold(&items, &[], None, &config(FoldMode::Auto), false, &fake).await;
    assert!(matches!(fake.calls()[..], [Call::Respond(_)]));
    assert_eq!(
        known.map(|r| r.report.compact_unsupported).ok(),
        Some(false)
    );
}

#[tokio::test]
async fn a_transport_error_fails_open_or_fails_the_turn_by_policy() {
    let items = transcript(20);
    let fake = Fake::default().with_respond(Err(CallError::Transport("connection reset".into())));
    let open = fold_ok(&items, &[], None, &config(FoldMode::Local), &fake).await;
    assert_eq!(
        (open.report.outcome, open.report.attempts),
        (Outcome::Failed, 1)
    );
    assert_eq!(open.report.error_kind, Some("transport"));
    assert_eq!(open.rewrite, Rewrite::Unchanged);
    assert_eq!(
        open.failed, None,
        "a transient error is asked again next turn"
    );

    let fake = Fake::default().with_respond(Err(CallError::Transport("connection reset".into())));
    let cfg = FoldConfig {
        on_error: OnError::Fail,
        ..config(FoldMode::Local)
    };
    let abort = fold(&items, &[], None, &cfg, true, &fake).await.err();
    assert_eq!(
        abort.as_ref().map(|a| a.error.clone()),
        Some(CallError::Transport("connection reset".into()).into())
    );
    assert_eq!(abort.map(|a| a.report.outcome), Some(Outcome::Failed));
}

#[tokio::test]
async fn a_small_prefix_under_min_fold_is_left_alone() {
    // Over budget because of the kept tail: the two folded items weigh less than min-fold.
    let mut items = vec![
        json!({"role": "user", "content": "hi"}),
        json!({"role": "assistant", "content": "hello"}),
    ];
    items.extend(
        (0..4).map(|i| json!({"role": "user", "content": format!("{i}{}", "y".repeat(1200))})),
    );
    let fake = Fake::default();
    let result = fold_ok(&items, &[], None, &config(FoldMode::Local), &fake).await;
    assert_eq!(
        (result.report.outcome, &result.rewrite),
        (Outcome::None, &Rewrite::Unchanged)
    );
    assert!(fake.calls().is_empty());
    // Compact's default min-fold is zero: it folds.
    let fake = Fake::default().with_compact(compact_answer());
    assert_eq!(
        fold_ok(&items, &[], None, &config(FoldMode::Compact), &fake)
            .await
            .report
            .outcome,
        Outcome::Applied
    );
}

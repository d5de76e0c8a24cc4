//! Where a transcript is cut: the items before the split are folded, the items from it on
//! are sent verbatim. Pure: a slice of items and `keep_last` in, an index out.
//!
//! The cut starts `keep_last` items from the end and then only ever moves back (folding
//! less), for two reasons:
//!
//! * **Tool exchanges stay whole.** An upstream rejects a `function_call_output` whose call
//!   it cannot see, and a call without its output. So when any kept item shares a link key
//!   (`call_id`, or an MCP approval's id) with an item before the cut, the cut moves back to
//!   the earliest such item. Parallel calls, outputs far down the tail and reasoning between
//!   a call and its output are all covered because the rule is re-applied until stable.
//! * **Reasoning stays with what it produced.** A `reasoning` item precedes the message or
//!   call the model produced after it, and an upstream may refuse that item without its
//!   reasoning. So reasoning items directly before the first kept item move into the kept
//!   part, whatever that item is (a call, an assistant message, or more reasoning). This is a
//!   generalisation of "keep the reasoning with its call": it costs at most a few reasoning
//!   items of folding and never breaks an item's pairing.

use std::collections::HashSet;

use serde_json::Value;

use super::item::{is_reasoning, link_key};

/// The index at which the kept tail starts: `items[..split]` is folded, `items[split..]` is
/// kept. At most `items.len() - keep_last` (0 when `keep_last` covers the transcript); it is
/// moved back so no tool exchange is cut and reasoning stays with the item after it.
pub fn split_point(items: &[Value], keep_last: usize) -> usize {
    let mut split = items.len().saturating_sub(keep_last);
    loop {
        let before = split;
        split = back_over_reasoning(items, split);
        split = back_to_partners(items, split);
        if split == before {
            return split;
        }
    }
}

/// Moves the cut back over the reasoning items directly before the first kept item.
fn back_over_reasoning(items: &[Value], mut split: usize) -> usize {
    if split >= items.len() {
        return split;
    }
    while split > 0 && items.get(split - 1).is_some_and(is_reasoning) {
        split -= 1;
    }
    split
}

/// Moves the cut back to the earliest folded item that shares a link key with a kept item.
fn back_to_partners(items: &[Value], split: usize) -> usize {
    let (folded, kept) = items.split_at(split.min(items.len()));
    let kept_keys: HashSet<&str> = kept.iter().filter_map(link_key).collect();
    if kept_keys.is_empty() {
        return split;
    }
    folded
        .iter()
        .position(|item| link_key(item).is_some_and(|key| kept_keys.contains(key)))
        .unwrap_or(split)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }
    fn call(id: &str) -> Value {
        json!({"type": "function_call", "call_id": id, "name": "exec", "arguments": "{}"})
    }
    fn output(id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": id, "output": "ok"})
    }
    fn reasoning() -> Value {
        json!({"type": "reasoning", "encrypted_content": "xyz", "summary": []})
    }

    #[test]
    fn plain_messages_keep_the_last_n() {
        let items: Vec<Value> = (0..10).map(|i| user(&i.to_string())).collect();
        assert_eq!(split_point(&items, 4), 6);
        assert_eq!(split_point(&items, 0), 10);
    }

    #[test]
    fn keep_last_larger_than_transcript_folds_nothing() {
        let items = vec![user("a"), user("b")];
        assert_eq!(split_point(&items, 4), 0);
        assert_eq!(split_point(&[], 4), 0);
    }

    #[test]
    fn output_in_tail_pulls_its_call_back_wherever_it_stands() {
        // call c1 at 2, its output at the very end: the whole exchange stays.
        let items = vec![
            user("0"),
            user("1"),
            call("c1"),
            user("3"),
            user("4"),
            user("5"),
            user("6"),
            output("c1"),
        ];
        assert_eq!(split_point(&items, 2), 2);
    }

    #[test]
    fn parallel_calls_move_back_to_the_first_call() {
        let items = vec![
            user("0"),
            user("1"),
            call("a"),
            call("b"),
            call("c"),
            output("a"),
            output("b"),
            output("c"),
        ];
        // keep 2 → tail holds outputs b, c → back to call b → tail holds output a → back to a.
        assert_eq!(split_point(&items, 2), 2);
    }

    #[test]
    fn reasoning_between_call_and_output_and_before_the_call_is_kept() {
        let items = vec![
            user("0"),
            user("1"),
            reasoning(),
            call("c1"),
            reasoning(),
            output("c1"),
            user("6"),
        ];
        // keep 2 → output c1 kept → back to its call at 3 → reasoning at 2 joins it.
        assert_eq!(split_point(&items, 2), 2);
    }

    #[test]
    fn reasoning_before_a_kept_message_stays_with_it() {
        let assistant = json!({"type": "message", "role": "assistant", "content": []});
        let items = vec![
            user("0"),
            user("1"),
            reasoning(),
            reasoning(),
            assistant,
            user("5"),
        ];
        assert_eq!(split_point(&items, 2), 2);
    }

    #[test]
    fn all_items_calls_without_outputs_split_plainly() {
        let items: Vec<Value> = (0..8).map(|i| call(&format!("c{i}"))).collect();
        assert_eq!(split_point(&items, 4), 4);
    }

    #[test]
    fn all_calls_with_outputs_at_the_end_fold_nothing() {
        let mut items: Vec<Value> = (0..6).map(|i| call(&format!("c{i}"))).collect();
        items.extend((0..6).map(|i| output(&format!("c{i}"))));
        assert_eq!(split_point(&items, 4), 0);
    }

    #[test]
    fn split_never_moves_forward_and_pairs_are_whole() {
        let items = vec![
            user("0"),
            call("a"),
            output("a"),
            reasoning(),
            call("b"),
            call("c"),
            output("c"),
            output("b"),
            user("8"),
        ];
        for keep in 0..=items.len() + 1 {
            let split = split_point(&items, keep);
            assert!(split <= items.len().saturating_sub(keep));
            let folded: HashSet<&str> = items[..split].iter().filter_map(link_key).collect();
            assert!(
                items[split..]
                    .iter()
                    .filter_map(link_key)
                    .all(|k| !folded.contains(k)),
                "keep {keep}"
            );
        }
    }
}

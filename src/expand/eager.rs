//! Whether a conversation is offered `context_expand` from its first turn, before any marker.
//!
//! By default the tool and directive come with a conversation's first marker. They change the request's head, so
//! the provider reads its cached prefix once more at full price, and the first markers must also save a share of
//! that prefix (`[compress] min_saved_prefix_percent`): a long session whose first large outputs come late may
//! never start compressing. With `[expand] eager_min_head_tokens` (1024 by default; 0 turns it off), a conversation
//! whose fixed head is at least that long carries the tool on every turn from its first. Its head then never
//! changes, and each output is compressed as soon as it pays for its own marker. The price is the tool on every
//! turn (about 190 tokens, cached after the first), which a long system prompt dwarfs and a short chat does not:
//! hence the size condition.
//!
//! The head is what every turn of a conversation repeats: `instructions`, `tools`, and the system, developer and
//! user messages before the model's first item. The decision is made from it alone, so it is the same on every
//! turn. A turn that continues with `previous_response_id` is not decided here: its input no longer starts with
//! that head, and the alias of the response it continues says whether the tool was offered
//! ([`crate::turn::expand::aliases`]).

use std::borrow::Cow;

use serde_json::Value;

use super::skim;
use crate::responses::{Input, Item, RequestBody};

/// The estimated tokens (bytes / 4, the compress stage's estimate) of the head every turn of this conversation
/// repeats.
pub fn head_tokens(body: &RequestBody) -> u64 {
    let members = body.member_len("instructions") + body.member_len("tools");
    let leading = match body.input() {
        Some(Input::Text(text)) => text.len(),
        Some(Input::Items(items)) => items
            .iter()
            .take_while(|item| is_head_message(item))
            .map(Item::json_len)
            .sum(),
        None => 0,
    };
    ((members + leading) / 4) as u64
}

/// Whether this turn is offered the tool for its head's size alone (`min_head_tokens` 0: never).
pub fn offered_from_head(body: &RequestBody, min_head_tokens: u64) -> bool {
    if min_head_tokens == 0 || body.get_str("previous_response_id").is_some() {
        return false;
    }
    // Only where the model picks its tools itself. With `none` it may call none; with `required` (or a list of
    // allowed tools, which may require a call too) and nothing to expand yet, the expand tool would be a decoy the
    // model may pick to satisfy the rule; a named tool leaves it uncallable. Such a turn gets the tool with its
    // first marker.
    match body.get("tool_choice") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "auto" => {}
        Some(_) => return false,
    }
    head_tokens(body) >= min_head_tokens
}

/// A system, developer or user message: what a conversation opens with, before the model's first item.
fn is_head_message(item: &Item) -> bool {
    let (kind, role) = match item.raw_bytes() {
        Some(raw) => type_and_role(raw),
        None => match item.value() {
            Some(v) => (
                v.get("type").and_then(Value::as_str).map(Cow::Borrowed),
                v.get("role").and_then(Value::as_str).map(Cow::Borrowed),
            ),
            None => (None, None),
        },
    };
    matches!(kind.as_deref(), None | Some("message"))
        && matches!(role.as_deref(), Some("system" | "developer" | "user"))
}

/// An item's `type` and `role`, read without parsing the rest (a system prompt may be tens of KB). Anything skim
/// cannot follow reads as neither, which ends the head.
fn type_and_role(raw: &[u8]) -> (Option<Cow<'_, str>>, Option<Cow<'_, str>>) {
    let (mut kind, mut role) = (None, None);
    let mut members = skim::members(raw, 0);
    loop {
        let member = match members.next() {
            None => return (kind, role),
            Some(None) => return (None, None),
            Some(Some(member)) => member,
        };
        let wanted = if member.key_is("type") {
            &mut kind
        } else if member.key_is("role") {
            &mut role
        } else {
            continue;
        };
        let Some(range) = members.value() else {
            return (None, None);
        };
        *wanted = skim::string(raw, range);
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]
mod tests {
    use bytes::Bytes;
    use serde_json::json;

    use super::*;

    fn body(v: Value) -> RequestBody {
        RequestBody::parse(Bytes::from(v.to_string())).unwrap()
    }

    const SYSTEM: &str = "You are a coding agent. Run one command at a time.";

    #[test]
    fn the_head_is_the_leading_messages_instructions_and_tools() {
        let first = json!({"model": "m", "input": [
            {"role": "system", "content": SYSTEM},
            {"type": "message", "role": "user", "content": "Fix the bug."},
        ]});
        let later = json!({"model": "m", "input": [
            {"role": "system", "content": SYSTEM},
            {"type": "message", "role": "user", "content": "Fix the bug."},
            {"type": "function_call", "call_id": "a", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "x".repeat(40_000)},
            {"role": "user", "content": "y".repeat(40_000)},
        ]});
        // Every turn of a conversation repeats the same head, whatever came after it.
        assert_eq!(head_tokens(&body(first.clone())), head_tokens(&body(later)));
        let head = head_tokens(&body(first));
        assert!((20..40).contains(&head), "{head}");
        let with_members = json!({"model": "m", "instructions": "z".repeat(4000),
            "tools": [{"type": "function", "name": "shell"}], "input": "Fix the bug."});
        assert!(head_tokens(&body(with_members)) > 1000);
        // A conversation that opens with the model's item has no head beyond its members.
        let reasoning_first = json!({"model": "m", "input": [
            {"type": "reasoning", "summary": []},
            {"role": "user", "content": "z".repeat(8000)},
        ]});
        assert_eq!(head_tokens(&body(reasoning_first)), 0);
    }

    #[test]
    fn only_a_head_as_long_as_the_setting_is_offered_the_tool() {
        let big = json!({"model": "m", "input": [
            {"role": "developer", "content": "d".repeat(8000)},
            {"role": "user", "content": "Fix the bug."},
        ]});
        assert!(offered_from_head(&body(big.clone()), 1024));
        assert!(!offered_from_head(&body(big.clone()), 4096));
        // 0 is off, whatever the head.
        assert!(!offered_from_head(&body(big.clone()), 0));
        // A turn that continues a stored response, or whose tools are chosen for the model, is not decided by its
        // head.
        let mut continued = big.clone();
        continued["previous_response_id"] = json!("resp_1");
        assert!(!offered_from_head(&body(continued), 1024));
        for choice in [
            json!("none"),
            json!("required"),
            json!({"type": "function", "name": "shell"}),
            json!({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "shell"}]}),
        ] {
            let mut chosen = big.clone();
            chosen["tool_choice"] = choice;
            assert!(!offered_from_head(&body(chosen), 1024));
        }
        let mut auto = big;
        auto["tool_choice"] = json!("auto");
        assert!(offered_from_head(&body(auto), 1024));
    }

    #[test]
    fn an_item_skim_cannot_read_ends_the_head() {
        let raw = br#"{"role": "user", "content": "unterminated"#;
        assert_eq!(type_and_role(raw), (None, None));
        let escaped = br#"{"ro\u006ce": "system", "type": "message"}"#;
        assert_eq!(
            type_and_role(escaped),
            (
                Some(Cow::Borrowed("message")),
                Some(Cow::Owned("system".into()))
            )
        );
    }
}

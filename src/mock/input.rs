//! Read-only views of a Responses API request body.
//!
//! Scenarios answer from what the request contains (last user text, tools,
//! expansion markers, tool outputs). The request is kept as loose JSON on purpose:
//! the mock must accept whatever shapes the proxy forwards, including ones it
//! rewrote, and never reject a request for a field it does not model.

use serde_json::Value;

/// The marker prefix ctxgate leaves where it compressed content away.
const MARKER_PREFIX: &str = "<<ctxzip:";
const MARKER_HASH_LEN: usize = 12;
/// Name of the tool ctxgate offers the model to undo compression (declared once, with the tool).
pub(crate) use crate::expand::tool::EXPAND_TOOL;

/// `input` as a list of items; a bare string input has no items.
pub(crate) fn items(req: &Value) -> &[Value] {
    req.get("input")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Number of input items, counting a bare string input as one message.
pub(crate) fn item_count(req: &Value) -> usize {
    match req.get("input") {
        Some(Value::String(_)) => 1,
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

fn item_type(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

/// An input message with role `user` (the `type` may be omitted in easy input).
pub(crate) fn is_user_message(item: &Value) -> bool {
    item.get("role").and_then(Value::as_str) == Some("user")
        && matches!(item_type(item), None | Some("message"))
}

/// Text of message content: either a string or a list of text parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Text of the last user message, or the whole input when it is a bare string.
pub(crate) fn last_user_text(req: &Value) -> String {
    if let Some(Value::String(s)) = req.get("input") {
        return s.clone();
    }
    items(req)
        .iter()
        .rev()
        .find(|item| is_user_message(item))
        .and_then(|item| item.get("content"))
        .map(content_text)
        .unwrap_or_default()
}

/// Declared tools of type `function`, in request order.
pub(crate) fn function_tools(req: &Value) -> Vec<&Value> {
    req.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter(|t| item_type(t) == Some("function"))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn has_function_tool(req: &Value, name: &str) -> bool {
    function_tools(req)
        .iter()
        .any(|t| t.get("name").and_then(Value::as_str) == Some(name))
}

/// The function tool named by a forcing `tool_choice`, if any.
pub(crate) fn forced_function(req: &Value) -> Option<&str> {
    let choice = req.get("tool_choice")?;
    (item_type(choice) == Some("function"))
        .then(|| choice.get("name").and_then(Value::as_str))
        .flatten()
}

/// First `<<ctxzip:HASH ...>>` marker anywhere in the input's strings.
pub(crate) fn find_marker(req: &Value) -> Option<String> {
    req.get("input").and_then(marker_in)
}

fn marker_in(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => marker_in_str(s),
        Value::Array(a) => a.iter().find_map(marker_in),
        Value::Object(o) => o.values().find_map(marker_in),
        _ => None,
    }
}

fn marker_in_str(s: &str) -> Option<String> {
    s.match_indices(MARKER_PREFIX).find_map(|(at, _)| {
        let rest = &s[at + MARKER_PREFIX.len()..];
        let hash = rest.get(..MARKER_HASH_LEN)?;
        let well_formed = hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && matches!(rest.as_bytes().get(MARKER_HASH_LEN), Some(b' ' | b'>'));
        well_formed.then(|| hash.to_owned())
    })
}

/// Whether some `function_call_output` answers a `context_expand` call of the input.
pub(crate) fn expand_answered(req: &Value) -> bool {
    let expand_calls: Vec<&str> = items(req)
        .iter()
        .filter(|i| item_type(i) == Some("function_call"))
        .filter(|i| i.get("name").and_then(Value::as_str) == Some(EXPAND_TOOL))
        .filter_map(|i| i.get("call_id").and_then(Value::as_str))
        .collect();
    items(req).iter().any(|i| {
        item_type(i) == Some("function_call_output")
            && i.get("call_id")
                .and_then(Value::as_str)
                .is_some_and(|id| expand_calls.contains(&id))
    })
}

/// Output text of the last `function_call_output` item.
pub(crate) fn last_function_output(req: &Value) -> Option<String> {
    items(req)
        .iter()
        .rev()
        .find(|i| item_type(i) == Some("function_call_output"))
        .map(|i| i.get("output").map(content_text).unwrap_or_default())
}

/// Whether a `function_call_output` comes after the last user message (the tool the model asked for has answered).
pub(crate) fn output_after_last_user(req: &Value) -> bool {
    items(req)
        .iter()
        .rev()
        .take_while(|item| !is_user_message(item))
        .any(|item| item_type(item) == Some("function_call_output"))
}

/// Arguments (the JSON text) of the last `function_call` item of the input.
pub(crate) fn last_call_arguments(req: &Value) -> Option<String> {
    items(req)
        .iter()
        .rev()
        .find(|i| item_type(i) == Some("function_call"))
        .and_then(|i| i.get("arguments").and_then(Value::as_str))
        .map(str::to_owned)
}

/// First `n` characters (not bytes), so quoting never splits a UTF-8 sequence.
pub(crate) fn prefix_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marker_needs_twelve_lowercase_hex_then_space_or_close() {
        assert_eq!(
            marker_in_str("x <<ctxzip:0123456789ab 3 lines>> y").as_deref(),
            Some("0123456789ab")
        );
        assert_eq!(
            marker_in_str("<<ctxzip:0123456789ab>>").as_deref(),
            Some("0123456789ab")
        );
        assert_eq!(marker_in_str("<<ctxzip:0123456789AB more>>"), None);
        assert_eq!(marker_in_str("<<ctxzip:0123456789a more>>"), None);
        assert_eq!(marker_in_str("<<ctxzip:0123456789abc>>"), None);
    }

    #[test]
    fn last_user_text_reads_parts_and_easy_input() {
        let req = json!({"input": [
            {"role": "user", "content": "first"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "second"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "no"}]}
        ]});
        assert_eq!(last_user_text(&req), "second");
        assert_eq!(last_user_text(&json!({"input": "plain"})), "plain");
    }

    #[test]
    fn expansion_is_answered_only_by_matching_output() {
        let call = json!({"type": "function_call", "name": "context_expand", "call_id": "c1", "arguments": "{}"});
        let other = json!({"type": "function_call_output", "call_id": "c2", "output": "x"});
        let answer = json!({"type": "function_call_output", "call_id": "c1", "output": "y"});
        assert!(!expand_answered(
            &json!({"input": [call.clone(), other.clone()]})
        ));
        assert!(expand_answered(&json!({"input": [call, other, answer]})));
    }
}

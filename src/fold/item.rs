//! Read-only views of one Responses `input` item, as the fold needs them: its type, the
//! key that ties a tool call to its output, and the text a pin rule looks at.
//!
//! Items stay `serde_json::Value` throughout the fold so that an item type ctxgate does not
//! know is carried through untouched; these helpers only look, they never rewrite.

use serde_json::Value;

/// The item's type: its `type` member, or `message` for an item that has no `type` but a
/// `role` (the short form the Responses API accepts for messages).
pub fn item_type(item: &Value) -> Option<&str> {
    match item.get("type").and_then(Value::as_str) {
        Some(kind) => Some(kind),
        None if item.get("role").is_some() => Some("message"),
        None => None,
    }
}

/// The item's role, for messages.
pub fn role(item: &Value) -> Option<&str> {
    item.get("role").and_then(Value::as_str)
}

/// Whether the item is a `reasoning` item: its content is encrypted for the model that
/// produced it, so it is left out of a local summary request, and it belongs with the item
/// that follows it (see `split`).
pub fn is_reasoning(item: &Value) -> bool {
    item_type(item) == Some("reasoning")
}

/// The key that ties the two halves of a tool exchange together, so a split or a pin never
/// separates them: `call_id` for every `*_call` / `*_call_output` pair (function, custom
/// tool, local shell, computer, …), and for MCP approvals the request's `id`, which its
/// response names as `approval_request_id`.
pub fn link_key(item: &Value) -> Option<&str> {
    if let Some(id) = item.get("call_id").and_then(Value::as_str) {
        return Some(id);
    }
    match item_type(item) {
        Some("mcp_approval_request") => item.get("id").and_then(Value::as_str),
        Some("mcp_approval_response") => item.get("approval_request_id").and_then(Value::as_str),
        _ => None,
    }
}

/// The text a pin rule matches: a message's `content` (a string, or the `text` of each part)
/// and a tool output's `output` (likewise), joined by newlines. Other items have none.
pub fn text_of(item: &Value) -> String {
    let mut out = String::new();
    for key in ["content", "output"] {
        match item.get(key) {
            Some(Value::String(text)) => push_line(&mut out, text),
            Some(Value::Array(parts)) => {
                for text in parts
                    .iter()
                    .filter_map(|p| p.get("text"))
                    .filter_map(Value::as_str)
                {
                    push_line(&mut out, text);
                }
            }
            _ => {}
        }
    }
    out
}

fn push_line(out: &mut String, text: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typeless_item_with_role_is_a_message() {
        assert_eq!(
            item_type(&json!({"role": "user", "content": "hi"})),
            Some("message")
        );
        assert_eq!(item_type(&json!({"content": "hi"})), None);
        assert_eq!(
            item_type(&json!({"type": "compaction"})),
            Some("compaction")
        );
    }

    #[test]
    fn link_keys_cover_calls_outputs_and_mcp_approvals() {
        assert_eq!(
            link_key(&json!({"type": "function_call", "call_id": "c1"})),
            Some("c1")
        );
        assert_eq!(
            link_key(&json!({"type": "custom_tool_call_output", "call_id": "c2"})),
            Some("c2")
        );
        assert_eq!(
            link_key(&json!({"type": "mcp_approval_request", "id": "a1"})),
            Some("a1")
        );
        assert_eq!(
            link_key(&json!({"type": "mcp_approval_response", "approval_request_id": "a1"})),
            Some("a1")
        );
        assert_eq!(link_key(&json!({"type": "message", "id": "m1"})), None);
    }

    #[test]
    fn text_joins_string_and_part_content() {
        let parts = json!({"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]});
        assert_eq!(text_of(&parts), "a\nb");
        assert_eq!(
            text_of(&json!({"type": "function_call_output", "output": "ok"})),
            "ok"
        );
        assert_eq!(text_of(&json!({"type": "reasoning"})), "");
    }
}

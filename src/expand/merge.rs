//! JSON-mode (non-streaming) merging of expand rounds, and the item rules that the
//! stream stitcher shares.
//!
//! With `stream: false`, ctxgate answers the model's `context_expand` calls by
//! sending the upstream another request (the original input, the round's output
//! and one `function_call_output` per answer) and, once a round needs no expansion,
//! hands the client that last response as if it had been the only one: expand items
//! removed, usage summed over every round, the first round's id. Which items count
//! as expand calls or client calls is decided here for both modes, so JSON and SSE
//! answers agree.

use serde_json::{Map, Number, Value, json};

/// One `context_expand` call the proxy must answer itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpandCall {
    /// Echoed in the `function_call_output` that answers it.
    pub call_id: String,
    /// The raw JSON arguments string, as the model wrote it.
    pub arguments: String,
    /// The whole output item, for logging and replay.
    pub item: Value,
}

/// Call items the API executes itself: they are not the client's to answer, so
/// they are neither withheld nor dropped, and the model will not re-issue them.
const HOSTED_CALLS: &[&str] = &[
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
];

fn item_type(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

/// Whether `item` is a call of the proxy's own expand tool.
pub fn is_expand_call(item: &Value, expand_tool: &str) -> bool {
    item_type(item) == Some("function_call")
        && item.get("name").and_then(Value::as_str) == Some(expand_tool)
}

/// Whether `item` is a tool call the client must execute (`function_call`,
/// `custom_tool_call`, `local_shell_call`, ... any `*_call` not run by the API).
/// In a round that also calls the expand tool such calls are dropped: the model
/// sees the expansion first and re-issues them if still needed.
pub fn is_client_call(item: &Value, expand_tool: &str) -> bool {
    item_type(item).is_some_and(is_client_call_type) && !is_expand_call(item, expand_tool)
}

/// Whether an item of type `kind` is a call the client executes (the expand tool aside: it is a `function_call`
/// too, so check the name separately).
pub fn is_client_call_type(kind: &str) -> bool {
    kind.ends_with("_call") && !HOSTED_CALLS.contains(&kind)
}

/// The expand call carried by `item`, if it is one.
pub fn expand_call(item: &Value, expand_tool: &str) -> Option<ExpandCall> {
    if !is_expand_call(item, expand_tool) {
        return None;
    }
    let call_id = item
        .get("call_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let arguments = match item.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    Some(ExpandCall {
        call_id: call_id.to_owned(),
        arguments,
        item: item.clone(),
    })
}

fn output(response: &Value) -> &[Value] {
    response
        .get("output")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The expand calls in a response's `output`, in order.
pub fn expand_calls(response: &Value, expand_tool: &str) -> Vec<ExpandCall> {
    output(response)
        .iter()
        .filter_map(|item| expand_call(item, expand_tool))
        .collect()
}

/// How many client tool calls a response's `output` holds.
pub fn client_calls(response: &Value, expand_tool: &str) -> usize {
    output(response)
        .iter()
        .filter(|item| is_client_call(item, expand_tool))
        .count()
}

/// The next round's input from a round's output items: `input`, then the output
/// (reasoning and expand calls included, since the model must see its own calls
/// next to their answers; client calls dropped when the round also expands, since
/// an unanswered call is rejected by the API), then one `function_call_output` per
/// answer. The stream driver uses this with [`RoundEnd::output`](super::stitch::RoundEnd).
pub fn next_input(
    input: &[Value],
    output: &[Value],
    expand_tool: &str,
    answers: &[(String, String)],
) -> Vec<Value> {
    let expands = output.iter().any(|item| is_expand_call(item, expand_tool));
    let kept = output
        .iter()
        .filter(|item| !(expands && is_client_call(item, expand_tool)));
    let outputs = answers.iter().map(|(call_id, text)| {
        json!({"type": "function_call_output", "call_id": call_id, "output": text})
    });
    input
        .iter()
        .cloned()
        .chain(kept.cloned())
        .chain(outputs)
        .collect()
}

/// [`next_input`] for a whole JSON response.
pub fn followup_input(
    input: &[Value],
    response: &Value,
    expand_tool: &str,
    answers: &[(String, String)],
) -> Vec<Value> {
    next_input(input, output(response), expand_tool, answers)
}

/// The response the client gets: `last` with expand items removed from `output`,
/// the expand tool removed from the echoed `tools` (the client never declared it),
/// `usage` summed over `rounds_usage` (every round's usage, the last one's included;
/// left as it is when that is empty) and `id` set to the first round's id.
pub fn final_response(
    mut last: Value,
    rounds_usage: &[Value],
    first_id: &str,
    expand_tool: &str,
) -> Value {
    let Value::Object(obj) = &mut last else {
        return last;
    };
    if let Some(Value::Array(items)) = obj.get_mut("output") {
        items.retain(|item| !is_expand_call(item, expand_tool));
    }
    strip_expand_tool(obj, expand_tool);
    let usage = sum_usage(rounds_usage);
    if !usage.is_null() {
        obj.insert("usage".into(), usage);
    }
    obj.insert("id".into(), Value::String(first_id.to_owned()));
    last
}

/// Removes the expand tool from a response object's echoed `tools` (and `tool_choice`'s list of allowed tools), and
/// the directive from its `instructions`; returns whether anything was removed.
pub fn strip_expand_tool(response: &mut Map<String, Value>, expand_tool: &str) -> bool {
    let directive = strip_directive(response);
    let choice = response
        .get_mut("tool_choice")
        .and_then(allowed_list)
        .is_some_and(|allowed| drop_tool(allowed, expand_tool));
    let Some(Value::Array(tools)) = response.get_mut("tools") else {
        return directive || choice;
    };
    drop_tool(tools, expand_tool) || directive || choice
}

/// The list of a `tool_choice` that lets the model pick only from it (`{"type": "allowed_tools", "tools": […]}`).
pub fn allowed_list(choice: &mut Value) -> Option<&mut Vec<Value>> {
    let choice = choice.as_object_mut()?;
    if choice.get("type").and_then(Value::as_str) != Some("allowed_tools") {
        return None;
    }
    match choice.get_mut("tools") {
        Some(Value::Array(tools)) => Some(tools),
        _ => None,
    }
}

/// Removes the expand tool's entries from a list of tools; whether there was one.
fn drop_tool(tools: &mut Vec<Value>, expand_tool: &str) -> bool {
    let before = tools.len();
    tools.retain(|tool| {
        !(tool.get("type").and_then(Value::as_str) == Some("function")
            && tool.get("name").and_then(Value::as_str) == Some(expand_tool))
    });
    tools.len() != before
}

/// Takes the directive the proxy appended back out of the echoed `instructions` (to `null` when the client sent
/// none): the client sees the instructions it sent.
fn strip_directive(response: &mut Map<String, Value>) -> bool {
    let Some(Value::String(text)) = response.get("instructions") else {
        return false;
    };
    let Some(value) = restore_instructions(text) else {
        return false;
    };
    response.insert("instructions".into(), value);
    true
}

/// The instructions the client sent, from echoed ones that carry the directive (`None` when they do not): the
/// directive and the blank line before it removed, `null` when nothing is left.
pub fn restore_instructions(text: &str) -> Option<Value> {
    use super::tool::DIRECTIVE;
    if !text.contains(DIRECTIVE) {
        return None;
    }
    let restored = text
        .strip_suffix(DIRECTIVE)
        .map(|t| t.strip_suffix("\n\n").unwrap_or(t))
        .unwrap_or(text);
    Some(if restored.is_empty() {
        Value::Null
    } else {
        Value::String(restored.to_string())
    })
}

/// Sums usage objects field by field, nested `*_details` included; the first
/// usage's key order is kept and keys only later rounds have are appended.
/// Non-objects (a round without usage) are skipped; `Null` if nothing is left.
pub fn sum_usage(usages: &[Value]) -> Value {
    let mut acc: Option<Value> = None;
    for usage in usages.iter().filter(|u| u.is_object()) {
        match &mut acc {
            None => acc = Some(usage.clone()),
            Some(sum) => add_into(sum, usage),
        }
    }
    acc.unwrap_or(Value::Null)
}

fn add_into(acc: &mut Value, more: &Value) {
    match (&mut *acc, more) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b {
                match a.get_mut(key) {
                    Some(slot) => add_into(slot, value),
                    None => {
                        a.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            if let Some(sum) = add_numbers(x, y) {
                *acc = sum;
            }
        }
        (Value::Null, _) => *acc = more.clone(),
        _ => {}
    }
}

/// Integer sums stay integers (saturating); anything else is summed as `f64`.
fn add_numbers(x: &Number, y: &Number) -> Option<Value> {
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return Some(Value::from(a.saturating_add(b)));
    }
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return Some(Value::from(a.saturating_add(b)));
    }
    Number::from_f64(x.as_f64()? + y.as_f64()?).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL: &str = crate::expand::tool::EXPAND_TOOL;

    fn round1() -> Value {
        json!({
            "id": "resp_1", "object": "response", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
                {"type": "function_call", "id": "fc_1", "call_id": "call_s", "name": "shell", "arguments": "{}"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_x", "name": TOOL, "arguments": "{\"hash\":\"ab\"}"},
                {"type": "web_search_call", "id": "ws_1", "status": "completed"}
            ],
            "tools": [{"type": "function", "name": "shell"}, {"type": "function", "name": TOOL}],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 2},
                      "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 1}, "total_tokens": 15}
        })
    }

    #[test]
    fn calls_are_classified() {
        let r = round1();
        let calls = expand_calls(&r, TOOL);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].call_id, "call_x");
        assert_eq!(calls[0].arguments, "{\"hash\":\"ab\"}");
        assert_eq!(
            client_calls(&r, TOOL),
            1,
            "hosted web_search_call is not a client call"
        );
    }

    #[test]
    fn followup_input_drops_client_calls_of_a_mixed_round() {
        let input = vec![json!({"role": "user", "content": "hi"})];
        let answers = vec![("call_x".to_owned(), "expanded".to_owned())];
        let next = followup_input(&input, &round1(), TOOL, &answers);
        let kinds: Vec<&str> = next
            .iter()
            .map(|v| {
                v.get("id")
                    .or(v.get("type"))
                    .and_then(Value::as_str)
                    .unwrap_or("user")
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user",
                "rs_1",
                "msg_1",
                "fc_2",
                "ws_1",
                "function_call_output"
            ]
        );
        assert_eq!(
            next[5],
            json!({"type": "function_call_output", "call_id": "call_x", "output": "expanded"})
        );
    }

    #[test]
    fn final_response_strips_sums_and_keeps_first_id() {
        let mut last = round1();
        last["id"] = json!("resp_2");
        let usages = [
            round1()["usage"].clone(),
            Value::Null,
            last["usage"].clone(),
        ];
        let merged = final_response(last, &usages, "resp_1", TOOL);
        assert_eq!(merged["id"], "resp_1");
        assert_eq!(merged["output"].as_array().map(Vec::len), Some(4));
        assert!(!merged.to_string().contains(TOOL));
        assert_eq!(merged["usage"]["total_tokens"], 30);
        assert_eq!(merged["usage"]["input_tokens_details"]["cached_tokens"], 4);
        assert_eq!(
            merged["usage"]["output_tokens_details"]["reasoning_tokens"],
            2
        );
        let keys: Vec<&String> = merged
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys.first().map(|k| k.as_str()),
            Some("id"),
            "key order kept"
        );
    }

    #[test]
    fn an_allowed_list_loses_the_tool_and_other_choices_stay() {
        let allowed = |extra: bool| {
            let mut tools = vec![json!({"type": "function", "name": "shell"})];
            if extra {
                tools.push(json!({"type": "function", "name": TOOL}));
            }
            json!({"type": "allowed_tools", "mode": "auto", "tools": tools})
        };
        let object =
            |v: Value| -> Map<String, Value> { serde_json::from_value(v).unwrap_or_default() };
        let mut obj = object(json!({"tool_choice": allowed(true), "tools": []}));
        assert!(strip_expand_tool(&mut obj, TOOL));
        assert_eq!(obj["tool_choice"], allowed(false));
        for choice in [
            json!("auto"),
            json!({"type": "function", "name": TOOL}),
            allowed(false),
        ] {
            let mut obj = object(json!({"tool_choice": choice.clone()}));
            assert!(!strip_expand_tool(&mut obj, TOOL));
            assert_eq!(obj["tool_choice"], choice);
        }
    }

    #[test]
    fn sum_usage_edge_cases() {
        assert_eq!(sum_usage(&[]), Value::Null);
        let one = json!({"input_tokens": 1, "x": null});
        assert_eq!(sum_usage(std::slice::from_ref(&one)), one);
        let sum = sum_usage(&[one, json!({"input_tokens": 0.5, "x": {"y": 1}, "z": 2})]);
        assert_eq!(sum, json!({"input_tokens": 1.5, "x": {"y": 1}, "z": 2}));
    }
}

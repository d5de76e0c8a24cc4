//! The local fold's two pure halves: building the summary request sent to
//! `POST /responses`, and judging its answer (text present, response complete, summary
//! smaller than what it folds). The transform makes the call and asks again on a failure.
//!
//! The request carries the items to fold without their reasoning items — their content is
//! encrypted for the model that produced them, which a summariser cannot read and a
//! provider refuses from another model — then our summary prompt as the last user message.
//! It has no tools and no instructions (so a replay can tell the fold's call from a turn),
//! `store: false`, and a `max_output_tokens` cap so a runaway summary is cut by the server.

use serde_json::{Map, Value, json};

use super::estimate::Estimator;
use super::item::{is_reasoning, item_type};
use super::{FoldConfig, FoldError};

/// The instruction that follows the items to fold in a local summary request.
pub const DEFAULT_SUMMARY_PROMPT: &str = "\
Write a summary of the conversation above that will replace it: the conversation continues \
from your summary alone. Keep every fact, decision and constraint; every identifier exactly \
as written (file paths, names, ids, URLs, commands, numbers, versions); the outcome of every \
tool call, errors included; and every open task or question with what remains to be done. \
Be concise: terse prose or bullet points, no preamble. Add nothing that is not above, do not \
call tools, and do not continue the task.";

/// How the summary item opens; the summary text follows it.
pub const SUMMARY_PREFIX: &str = "Summary of the conversation so far:\n\n";

/// The item that stands in for a locally folded prefix: a user message whose `content` is a
/// plain string, [`SUMMARY_PREFIX`] then the summary. A string is the form every
/// Responses-compatible server accepts on input (an `input_text` part list is not accepted
/// by some), and a user message is accepted where a compaction item is not.
pub fn summary_item(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": format!("{SUMMARY_PREFIX}{text}")})
}

/// The estimated size of a summary's text: the estimate of its item less that of an item
/// with no text, so the wrapper every summary carries does not count against it.
pub fn summary_size(estimator: Estimator, text: &str) -> usize {
    estimator
        .estimate(&[summary_item(text)])
        .saturating_sub(estimator.estimate(&[summary_item("")]))
}

/// The `POST /responses` body asking `model` (omitted when empty: the server's default) to
/// summarise `to_fold`.
pub fn build_request(model: &str, to_fold: &[Value], config: &FoldConfig) -> Value {
    let mut input: Vec<Value> = to_fold
        .iter()
        .filter(|item| !is_reasoning(item))
        .cloned()
        .collect();
    input.push(json!({"type": "message", "role": "user", "content": config.summary_prompt}));
    let mut request = Map::new();
    if !model.is_empty() {
        request.insert("model".into(), json!(model));
    }
    request.insert("input".into(), Value::Array(input));
    request.insert("store".into(), json!(false));
    request.insert(
        "max_output_tokens".into(),
        json!(config.summary_max_output_tokens()),
    );
    if let Some(effort) = &config.reasoning_effort {
        request.insert("reasoning".into(), json!({"effort": effort}));
    }
    Value::Object(request)
}

/// Judges a summary response against `folded`, the estimate of the items it replaces, and
/// returns the summary text. In order: a response that did not complete (status
/// `incomplete`, or `failed`/`cancelled` in a 200 answer) is never applied, since a summary
/// cut short has lost what it had not yet said; then one with no text; then one whose text
/// is estimated at no fewer tokens than `folded`.
pub fn check_response(
    response: &Value,
    estimator: Estimator,
    folded: usize,
) -> Result<String, FoldError> {
    if let Some(reason) = unfinished(response) {
        return Err(FoldError::SummaryIncomplete { reason });
    }
    let text = summary_text(response).ok_or(FoldError::SummaryNoText)?;
    let size = summary_size(estimator, &text);
    if size >= folded {
        return Err(FoldError::SummaryTooLarge {
            summary: size,
            folded,
        });
    }
    Ok(text)
}

/// The summary text: the `output_text` parts of the response's message items, parts of one
/// message concatenated and messages separated by a blank line, trimmed. `None` when there
/// is no non-blank text (a response that ended in a tool call or in reasoning alone).
pub fn summary_text(response: &Value) -> Option<String> {
    let messages = output(response)
        .iter()
        .filter(|item| item_type(item) == Some("message"))
        .map(|message| {
            let parts = message
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<String>()
        })
        .filter(|text| !text.trim().is_empty())
        .collect::<Vec<_>>();
    let text = messages.join("\n\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The item types of a response's `output`, in order.
pub fn output_types(response: &Value) -> Vec<String> {
    output(response)
        .iter()
        .map(|item| item_type(item).unwrap_or("unknown").to_owned())
        .collect()
}

/// A response's `id`.
pub fn response_id(response: &Value) -> Option<String> {
    response
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A response's `output` items (none when absent or not an array).
pub fn output(response: &Value) -> &[Value] {
    response
        .get("output")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The reason a response did not complete, `None` when it did (or says nothing).
fn unfinished(response: &Value) -> Option<String> {
    let status = response.get("status").and_then(Value::as_str)?;
    if !matches!(status, "incomplete" | "failed" | "cancelled") {
        return None;
    }
    let reason = response
        .pointer("/incomplete_details/reason")
        .or_else(|| response.pointer("/error/message"))
        .and_then(Value::as_str)
        .unwrap_or(status);
    Some(reason.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Value {
        json!({"id": "resp_1", "status": "completed", "output": [
            {"type": "reasoning", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        ]})
    }

    #[test]
    fn request_drops_reasoning_and_ends_with_the_prompt() {
        let items = vec![
            json!({"role": "user", "content": "a"}),
            json!({"type": "reasoning", "encrypted_content": "e"}),
            json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}),
        ];
        let cfg = FoldConfig {
            reasoning_effort: Some("low".into()),
            ..FoldConfig::default()
        };
        let request = build_request("gpt-x", &items, &cfg);
        let input = request["input"].as_array().cloned().unwrap_or_default();
        assert_eq!(input.len(), 3);
        assert!(input.iter().all(|i| !is_reasoning(i)));
        assert_eq!(input[2]["content"], DEFAULT_SUMMARY_PROMPT);
        assert_eq!(request["store"], false);
        assert_eq!(request["max_output_tokens"], 8192);
        assert_eq!(request["reasoning"], json!({"effort": "low"}));
        assert_eq!(request["model"], "gpt-x");
        assert!(request.get("tools").is_none() && request.get("instructions").is_none());
        assert!(
            build_request("", &items, &FoldConfig::default())
                .get("model")
                .is_none()
        );
    }

    #[test]
    fn text_is_the_output_text_of_messages() {
        assert_eq!(summary_text(&answer(" short ")).as_deref(), Some("short"));
        let calls = json!({"output": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]});
        assert_eq!(summary_text(&calls), None);
        assert_eq!(output_types(&answer("x")), vec!["reasoning", "message"]);
        assert_eq!(response_id(&answer("x")).as_deref(), Some("resp_1"));
    }

    #[test]
    fn checks_incomplete_then_no_text_then_size() {
        let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []});
        assert_eq!(
            check_response(&cut, Estimator::Bytes, 1000),
            Err(FoldError::SummaryIncomplete {
                reason: "max_output_tokens".into()
            })
        );
        assert_eq!(
            check_response(&json!({"output": []}), Estimator::Bytes, 1000),
            Err(FoldError::SummaryNoText)
        );
        let text = "x".repeat(400); // 100 estimated tokens of text
        assert_eq!(summary_size(Estimator::Bytes, &text), 100);
        assert_eq!(
            check_response(&answer(&text), Estimator::Bytes, 100),
            Err(FoldError::SummaryTooLarge {
                summary: 100,
                folded: 100
            })
        );
        assert_eq!(
            check_response(&answer(&text), Estimator::Bytes, 101),
            Ok(text)
        );
    }
}

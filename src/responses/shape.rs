//! What a stage needs to know of an input item without caring about its every field: its shape.
//!
//! Responses items come in many types (messages, function/custom/shell calls and their outputs, reasoning,
//! compaction, and types newer than this code). [`shape_of`] reduces one to the few facts the stages decide on —
//! is it a user message, a tool call (with its name and arguments), a tool output, an assistant message — and
//! [`rewrite_texts`] replaces the large texts inside an item while leaving every other field, known or not,
//! exactly as it was. Unknown types are [`Shape::Other`] and are never rewritten.

use serde_json::Value;

/// The part of an item the stages decide on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A user message, with the start of its text (the query the compressor pins relevance to).
    UserMessage { text: String },
    /// A developer or system message (the harness's instructions).
    Instructions,
    /// An assistant message.
    AssistantMessage,
    /// A tool call (`function_call`, `custom_tool_call`, `local_shell_call`, `shell_call`…).
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// A tool's output. `function` is true for `function_call_output` (compressed at first sight); other outputs
    /// (`custom_tool_call_output`, shell outputs…) belong to the live zone.
    Output { call_id: String, function: bool },
    /// Reasoning, compaction, and every type this code does not know.
    Other,
}

/// How much of a user message is kept as the relevance query: enough for the task's words.
const QUERY_TEXT_CHARS: usize = 2000;

fn str_field<'a>(item: &'a Value, key: &str) -> &'a str {
    item.get(key).and_then(Value::as_str).unwrap_or("")
}

pub fn shape_of(item: &Value) -> Shape {
    let kind = item.get("type").and_then(Value::as_str);
    let role = item.get("role").and_then(Value::as_str);
    match (kind, role) {
        (Some("message") | None, Some("user")) => {
            let mut text = String::new();
            for t in texts(item.get("content"))
                .into_iter()
                .filter(|t| !is_harness_context(t))
            {
                if text.len() >= QUERY_TEXT_CHARS {
                    break;
                }
                text.push_str(t);
                text.push('\n');
            }
            let cut = (0..=QUERY_TEXT_CHARS.min(text.len()))
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            text.truncate(cut);
            Shape::UserMessage { text }
        }
        (Some("message") | None, Some("developer" | "system")) => Shape::Instructions,
        (Some("message") | None, Some("assistant")) => Shape::AssistantMessage,
        (Some(t), _)
            if t.ends_with("_call_output")
                || t.ends_with("_output") && item.get("call_id").is_some() =>
        {
            Shape::Output {
                call_id: str_field(item, "call_id").to_string(),
                function: t == "function_call_output",
            }
        }
        (Some(t), _) if t.ends_with("_call") && item.get("call_id").is_some() => {
            let arguments = match item
                .get("arguments")
                .or_else(|| item.get("input"))
                .or_else(|| item.get("action"))
            {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let name = match item.get("name").and_then(Value::as_str) {
                Some(n) => n.to_string(),
                None => t.to_string(),
            };
            Shape::Call {
                call_id: str_field(item, "call_id").to_string(),
                name,
                arguments,
            }
        }
        _ => Shape::Other,
    }
}

/// Text an agent harness puts in a user message to set the scene, not the user's task: the Codex CLI sends the
/// project's AGENTS.md (`# AGENTS.md instructions for DIR` then `<INSTRUCTIONS>…`, formerly `<user_instructions>`)
/// and an `<environment_context>` (working directory, shell, date) as the conversation's first user message, the
/// task after it. As the relevance query their words (the directory, `bash`, the date, the house rules) say
/// nothing about which lines of an output matter, and they took the places the task's words needed.
pub fn is_harness_context(text: &str) -> bool {
    let t = text.trim();
    if t.starts_with("# AGENTS.md instructions for ") {
        return true;
    }
    let Some(rest) = t.strip_prefix('<') else {
        return false;
    };
    let Some(name) = rest.split('>').next() else {
        return false;
    };
    let scene = name.ends_with("_context")
        || name.ends_with("_instructions")
        || name.eq_ignore_ascii_case("instructions");
    scene
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        && t.strip_suffix('>')
            .and_then(|u| u.strip_suffix(name))
            .is_some_and(|u| u.ends_with("</"))
}

/// The texts of a message `content` or a tool `output`: the string itself, or the `text` of each part.
fn texts(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

/// The member holding an item's text: `output` for tool outputs, `content` for messages.
fn text_member(shape: &Shape) -> Option<&'static str> {
    match shape {
        Shape::Output { .. } => Some("output"),
        Shape::UserMessage { .. } | Shape::AssistantMessage | Shape::Instructions => {
            Some("content")
        }
        Shape::Call { .. } | Shape::Other => None,
    }
}

/// Every text of the item (a message's content parts, a tool output), borrowed: what the compress stage indexes
/// when a new output may repeat an earlier one.
pub fn item_texts<'a>(item: &'a Value, shape: &Shape) -> Vec<&'a str> {
    text_member(shape)
        .map(|m| texts(item.get(m)))
        .unwrap_or_default()
}

/// The longest text of the item (0 when it has none): what decides whether it is worth a look.
pub fn longest_text(item: &Value, shape: &Shape) -> usize {
    text_member(shape)
        .map(|m| {
            texts(item.get(m))
                .iter()
                .map(|t| t.len())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// The item with each text of at least `min_chars` passed through `f` (which returns `None` to keep a text),
/// or `None` when nothing changed. Every other field — and the order of keys — is kept.
pub fn rewrite_texts(
    item: &Value,
    shape: &Shape,
    min_chars: usize,
    mut f: impl FnMut(&str) -> Option<String>,
) -> Option<Value> {
    let member = text_member(shape)?;
    let mut out = item.clone();
    let slot = out.get_mut(member)?;
    let mut changed = false;
    match slot {
        Value::String(s) if s.len() >= min_chars => {
            if let Some(new) = f(s) {
                *s = new;
                changed = true;
            }
        }
        Value::Array(parts) => {
            for part in parts.iter_mut() {
                if let Some(Value::String(s)) = part.get_mut("text") {
                    if s.len() >= min_chars {
                        if let Some(new) = f(s) {
                            *s = new;
                            changed = true;
                        }
                    }
                }
            }
        }
        _ => {}
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_harness_scene_is_not_the_users_task() {
        // What the Codex CLI (0.171) sends as the first user message, then the task.
        let scene = json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "# AGENTS.md instructions for /work/proj\n\n<INSTRUCTIONS>\nUse pytest.\n</INSTRUCTIONS>"},
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/work/proj</cwd>\n  <shell>bash</shell>\n</environment_context>"}
        ]});
        assert_eq!(
            shape_of(&scene),
            Shape::UserMessage {
                text: String::new()
            }
        );
        assert!(is_harness_context(
            "<user_instructions>\nbe brief\n</user_instructions>\n"
        ));
        // A task wrapped in tags is a task; so is one that only opens with a scene.
        for task in [
            "<pr_description>\nFix the parser\n</pr_description>",
            "<environment_context>x</environment_context>\nNow fix test_login",
            "<uploaded_files>\n/testbed\n</uploaded_files>\nI've uploaded a repository",
            "<instructions>",
        ] {
            assert!(!is_harness_context(task), "{task}");
        }
        let mixed = json!({"role": "user", "content": [
            {"type": "input_text", "text": "<environment_context><cwd>/w</cwd></environment_context>"},
            {"type": "input_text", "text": "fix test_login"}
        ]});
        assert!(
            matches!(shape_of(&mixed), Shape::UserMessage { text } if text == "fix test_login\n")
        );
    }

    #[test]
    fn shapes_of_common_items() {
        assert!(
            matches!(shape_of(&json!({"role":"user","content":"hi"})), Shape::UserMessage { text } if text == "hi\n")
        );
        assert_eq!(
            shape_of(&json!({"type":"message","role":"developer","content":"x"})),
            Shape::Instructions
        );
        assert_eq!(
            shape_of(&json!({"type":"function_call","call_id":"c","name":"sh","arguments":"{}"})),
            Shape::Call {
                call_id: "c".into(),
                name: "sh".into(),
                arguments: "{}".into()
            }
        );
        assert_eq!(
            shape_of(&json!({"type":"custom_tool_call_output","call_id":"c","output":"x"})),
            Shape::Output {
                call_id: "c".into(),
                function: false
            }
        );
        assert_eq!(
            shape_of(&json!({"type":"reasoning","encrypted_content":"x"})),
            Shape::Other
        );
        assert_eq!(shape_of(&json!({"type":"from_the_future"})), Shape::Other);
        assert_eq!(shape_of(&json!(42)), Shape::Other);
    }

    #[test]
    fn rewrites_only_large_texts_and_keeps_other_fields() {
        let item = json!({"z":1,"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"aaaa"},{"type":"input_image","image_url":"u"},{"type":"input_text","text":"bb"}],"a":2});
        let shape = shape_of(&item);
        let out = rewrite_texts(&item, &shape, 3, |t| Some(t.to_uppercase())).unwrap();
        assert_eq!(out["output"][0]["text"], "AAAA");
        assert_eq!(out["output"][2]["text"], "bb");
        assert_eq!(out["output"][1]["image_url"], "u");
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "type", "call_id", "output", "a"]);
        assert!(rewrite_texts(&item, &shape, 3, |_| None).is_none());
    }
}

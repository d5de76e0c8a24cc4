//! Where a transcript's tokens are, before and after the stages: by what each input item is.
//!
//! The transcripts table says how much a request shrank; deciding what to do next needs where the tokens left
//! are — in source views that stay verbatim by rule, in outputs too small to be worth a marker, in the model's
//! own notes and calls, in the task. Each item of the request is put in one part by what it is in the original
//! (a `function_call_output` by the call that produced it), and its tokens before and after are added there; what
//! is not an item (instructions, the tools, the expand tool a first marker brings, the body's framing) is the
//! rest. Pure: the caller counts tokens.

use serde::Serialize;
use serde_json::Value;

use crate::ctxzip::views::views_source_file;

/// What an input item is, for the breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Part {
    /// A tool output whose call viewed a source file (`cat app.py`, an editor's `view`): verbatim by rule.
    SourceViews,
    /// A tool output shorter than `min_tool_output_chars`: never compressed.
    SmallOutputs,
    /// Every other tool output.
    OtherOutputs,
    /// An assistant message followed by a tool call: the agent's notes on its way.
    AgentNotes,
    /// Any other assistant message.
    AssistantMessages,
    /// A tool call: the commands and files the model wrote.
    CallArguments,
    /// A user, developer or system message: the task, the harness's instructions.
    Messages,
    /// Anything else (reasoning, a compaction item).
    OtherItems,
    /// Not an item: instructions, tools (and the expand tool), the body's framing.
    Rest,
}

impl Part {
    pub const ALL: [Part; 9] = [
        Part::SourceViews,
        Part::SmallOutputs,
        Part::OtherOutputs,
        Part::AgentNotes,
        Part::AssistantMessages,
        Part::CallArguments,
        Part::Messages,
        Part::OtherItems,
        Part::Rest,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Part::SourceViews => "tool outputs: source views (verbatim by rule)",
            Part::SmallOutputs => "tool outputs: under min_tool_output_chars",
            Part::OtherOutputs => "tool outputs: the others",
            Part::AgentNotes => "assistant messages before a tool call (agent notes)",
            Part::AssistantMessages => "other assistant messages",
            Part::CallArguments => "tool calls (the model's commands and edits)",
            Part::Messages => "user, developer and system messages",
            Part::OtherItems => "other items",
            Part::Rest => "instructions, tools and framing",
        }
    }
}

/// Tokens of one part, before and after.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PartTokens {
    pub before: usize,
    pub after: usize,
}

/// The parts' tokens over the transcripts added so far, in [`Part::ALL`] order, and how many transcripts a fold
/// left out (their items no longer pair with the original's).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Breakdown {
    pub parts: [PartTokens; 9],
    pub folded: usize,
}

impl Breakdown {
    /// Adds one transcript: `original` and `sent` are the request's input arrays before and after the stages,
    /// `totals` the whole bodies' tokens; `count` counts a text's tokens. A transcript whose input was folded (its
    /// items no longer pair one to one) is only counted in [`Breakdown::folded`].
    pub fn add(
        &mut self,
        original: &[Value],
        sent: &[Value],
        totals: (usize, usize),
        min_output_chars: usize,
        count: &mut impl FnMut(&str) -> usize,
    ) {
        if original.len() != sent.len() {
            self.folded += 1;
            return;
        }
        let (mut items_before, mut items_after) = (0, 0);
        for ((item, after), part) in original
            .iter()
            .zip(sent)
            .zip(classify(original, min_output_chars))
        {
            let (b, a) = (count(&item.to_string()), count(&after.to_string()));
            let slot = &mut self.parts[part as usize];
            slot.before += b;
            slot.after += a;
            items_before += b;
            items_after += a;
        }
        let rest = &mut self.parts[Part::Rest as usize];
        rest.before += totals.0.saturating_sub(items_before);
        rest.after += totals.1.saturating_sub(items_after);
    }
}

/// The part of each item of `items`, in order.
pub fn classify(items: &[Value], min_output_chars: usize) -> Vec<Part> {
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let calls: std::collections::HashMap<String, (String, String)> = items
        .iter()
        .filter(|i| str_of(i, "type").as_deref() == Some("function_call"))
        .filter_map(|i| {
            Some((
                str_of(i, "call_id")?,
                (
                    str_of(i, "name")?,
                    str_of(i, "arguments").unwrap_or_default(),
                ),
            ))
        })
        .collect();
    items
        .iter()
        .enumerate()
        .map(|(k, item)| {
            let kind = str_of(item, "type").unwrap_or_else(|| "message".into());
            match kind.as_str() {
                "function_call_output" => {
                    let viewed = str_of(item, "call_id")
                        .and_then(|id| calls.get(&id))
                        .is_some_and(|(name, args)| views_source_file(name, args));
                    let chars = super::run::output_text(item).map_or(0, |t| t.chars().count());
                    if viewed {
                        Part::SourceViews
                    } else if chars < min_output_chars {
                        Part::SmallOutputs
                    } else {
                        Part::OtherOutputs
                    }
                }
                "function_call" | "custom_tool_call" | "local_shell_call" => Part::CallArguments,
                "message" => match str_of(item, "role").as_deref() {
                    Some("assistant") => {
                        let before_call = items.get(k + 1).is_some_and(|next| {
                            str_of(next, "type").as_deref() == Some("function_call")
                        });
                        if before_call {
                            Part::AgentNotes
                        } else {
                            Part::AssistantMessages
                        }
                    }
                    _ => Part::Messages,
                },
                _ => Part::OtherItems,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn transcript() -> Vec<Value> {
        vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "look"}]}),
            json!({"type": "function_call", "call_id": "a", "name": "shell", "arguments": "{\"command\": \"cat app.py\"}"}),
            json!({"type": "function_call_output", "call_id": "a", "output": "x = 1\n".repeat(1000)}),
            json!({"type": "function_call", "call_id": "b", "name": "shell", "arguments": "{\"command\": \"ls\"}"}),
            json!({"type": "function_call_output", "call_id": "b", "output": "app.py"}),
            json!({"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{\"command\": \"pytest\"}"}),
            json!({"type": "function_call_output", "call_id": "c", "output": "ok\n".repeat(2000)}),
            json!({"type": "reasoning", "summary": []}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        ]
    }

    #[test]
    fn each_item_is_put_in_its_part() {
        use Part::*;
        assert_eq!(
            classify(&transcript(), 2048),
            vec![
                Messages,
                AgentNotes,
                CallArguments,
                SourceViews,
                CallArguments,
                SmallOutputs,
                CallArguments,
                OtherOutputs,
                OtherItems,
                AssistantMessages
            ]
        );
    }

    #[test]
    fn tokens_add_up_to_the_totals_and_a_folded_transcript_is_set_apart() {
        let original = transcript();
        let mut sent = original.clone();
        sent[7] = json!({"type": "function_call_output", "call_id": "c", "output": "ok (×2000)"});
        let mut count = |t: &str| t.len().div_ceil(4);
        let body = |items: &[Value]| json!({"model": "m", "input": items}).to_string();
        let totals = (count(&body(&original)), count(&body(&sent)));
        let mut b = Breakdown::default();
        b.add(&original, &sent, totals, 2048, &mut count);
        let sum = |b: &Breakdown, f: fn(&PartTokens) -> usize| b.parts.iter().map(f).sum::<usize>();
        assert_eq!(sum(&b, |p| p.before), totals.0);
        assert_eq!(sum(&b, |p| p.after), totals.1);
        let other = b.parts[Part::OtherOutputs as usize];
        assert!(other.after < other.before / 10, "{other:?}");
        let views = b.parts[Part::SourceViews as usize];
        assert_eq!(views.before, views.after);
        b.add(&original, &sent[..5], totals, 2048, &mut count);
        assert_eq!(b.folded, 1);
        assert_eq!(sum(&b, |p| p.before), totals.0);
    }
}

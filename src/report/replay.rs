//! A session replayed turn by turn, as the agent sent it, with a provider prefix cache.
//!
//! One request per model call: the input up to each point where the model spoke next (a call, a message, a
//! reasoning item after something the model did not write), `store: false`, `prompt_cache_key` = the session. A
//! provider's prompt cache serves the leading part of a request that is byte-identical to the previous request's —
//! the instructions and tools (when unchanged) and then input items — so per turn the cached tokens are those of
//! the leading items identical to the previous turn's, and the cost is uncached + 0.1 × cached. The same replay
//! is priced for the bodies as the agent sent them (direct) and as the stages rewrote them.

use serde_json::{Value, json};

use super::corpus::Transcript;
use super::measure::Tokens;
use super::run::Rig;
use super::{ReplayCost, ReplayRow, ReportError};

/// Whether the model wrote this item (so a model call ended just before it).
fn from_model(item: &Value) -> bool {
    match item.get("type").and_then(Value::as_str) {
        Some("function_call" | "reasoning" | "custom_tool_call") => true,
        Some("message") | None => item.get("role").and_then(Value::as_str) == Some("assistant"),
        _ => false,
    }
}

/// The input lengths at which the agent called the model.
pub(super) fn call_points(items: &[Value]) -> Vec<usize> {
    let mut points: Vec<usize> = (1..items.len())
        .filter(|&k| from_model(&items[k]) && !from_model(&items[k - 1]))
        .collect();
    if items.last().is_some_and(|i| !from_model(i)) {
        points.push(items.len());
    }
    points
}

/// What a prefix cache keys on, turn after turn.
#[derive(Default)]
struct Prefix {
    head: String,
    items: Vec<String>,
}

impl Prefix {
    /// Prices this turn against the previous one and remembers it.
    fn price(&mut self, tokens: &mut Tokens, body: &Value) -> ReplayCost {
        let head = json!([body.get("instructions"), body.get("tools")]).to_string();
        let items: Vec<String> = body
            .get("input")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Value::to_string).collect())
            .unwrap_or_default();
        let head_tokens = tokens.count(&head);
        let mut cost = ReplayCost {
            tokens: head_tokens,
            ..ReplayCost::default()
        };
        // A turn after the first sent the head and its first items before: what of them is not served from the
        // cache is read again.
        let again = !self.items.is_empty();
        let mut leading = head == self.head && again;
        if leading {
            cost.cached += head_tokens;
        } else if again {
            cost.reread += head_tokens;
        }
        for (i, item) in items.iter().enumerate() {
            let n = tokens.count(item);
            cost.tokens += n;
            leading = leading && self.items.get(i) == Some(item);
            if leading {
                cost.cached += n;
            } else if i < self.items.len() {
                cost.reread += n;
            }
        }
        self.head = head;
        self.items = items;
        cost
    }
}

pub(super) async fn replay(
    rig: &mut Rig,
    tokens: &mut Tokens,
    t: &Transcript,
) -> Result<ReplayRow, ReportError> {
    let mut row = ReplayRow {
        name: t.name.clone(),
        ..Default::default()
    };
    let (mut direct, mut proxy) = (Prefix::default(), Prefix::default());
    for end in call_points(&t.items) {
        let body = json!({
            "model": "mock-ok",
            "store": false,
            "prompt_cache_key": format!("report-replay-{}", t.name),
            "input": &t.items[..end],
        });
        let (sent, micros) = rig.turn(&t.name, &body).await?;
        row.turns += 1;
        row.micros += micros;
        let d = direct.price(tokens, &body);
        let p = proxy.price(tokens, &sent);
        row.direct.add(&d);
        row.proxy.add(&p);
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_call_ends_before_each_model_item() {
        let items: Vec<Value> = vec![
            json!({"type":"message","role":"developer","content":"sys"}),
            json!({"type":"message","role":"user","content":"task"}),
            json!({"type":"function_call","call_id":"a","name":"sh","arguments":"{}"}),
            json!({"type":"function_call","call_id":"b","name":"sh","arguments":"{}"}),
            json!({"type":"function_call_output","call_id":"a","output":"x"}),
            json!({"type":"function_call_output","call_id":"b","output":"y"}),
            json!({"type":"message","role":"assistant","content":"done"}),
            json!({"type":"message","role":"user","content":"more"}),
        ];
        assert_eq!(call_points(&items), vec![2, 6, 8]);
    }

    #[test]
    fn the_cache_serves_the_unchanged_leading_items() {
        let mut tokens = Tokens::new();
        let mut p = Prefix::default();
        let one = json!({"input":[{"a":"first item text"}]});
        let two = json!({"input":[{"a":"first item text"},{"b":"second"}]});
        let first = p.price(&mut tokens, &one);
        assert_eq!(first.cached, 0);
        let second = p.price(&mut tokens, &two);
        assert_eq!(second.cached, first.tokens);
        assert!(second.tokens > first.tokens);
        assert_eq!(second.reread, 0, "nothing changed before the new item");
        let changed = json!({"tools":[{"type":"function"}],"input":[{"a":"first item text"}]});
        let broken = p.price(&mut tokens, &changed);
        assert_eq!(broken.cached, 0);
        // The tools changed: the first item, sent before, is read again at full price; the head counts too.
        assert_eq!(broken.reread, broken.tokens);
    }
}

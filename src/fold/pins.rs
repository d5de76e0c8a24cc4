//! Pin rules: items of the folded prefix that must reach the model verbatim after the fold's
//! output — a policy notice, a reminder a harness injected, an instruction the user gave
//! once — rather than as whatever the summary made of them.
//!
//! Pinned items are still sent to be folded (so nothing is lost if a pin is later dropped);
//! they then follow the output, in their original order. A pinned tool call or output brings
//! its partner from the folded prefix with it, since an upstream rejects one half of an
//! exchange without the other. Pins are chosen from the client's transcript (never from a
//! previous fold's output), so a rule such as "role = user" cannot pin an earlier summary.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::item::{item_type, link_key, role, text_of};

/// One rule; an item is pinned when any rule matches it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum PinRule {
    /// Messages with this role (`developer`, `system`, `user`, `assistant`).
    Role { role: String },
    /// Items of this type (`message` also matches a typeless item with a role).
    Type { item_type: String },
    /// Items whose text (message content or tool output) contains this substring,
    /// case-sensitively.
    Text { contains: String },
}

impl PinRule {
    /// Whether the rule matches `item`.
    pub fn matches(&self, item: &Value) -> bool {
        match self {
            PinRule::Role { role: want } => role(item) == Some(want.as_str()),
            PinRule::Type { item_type: want } => item_type(item) == Some(want.as_str()),
            PinRule::Text { contains } => {
                !contains.is_empty() && text_of(item).contains(contains.as_str())
            }
        }
    }
}

/// The items of `folded` that `rules` pin, with the partners of pinned tool exchanges, in
/// their order in `folded`.
pub fn pinned(folded: &[Value], rules: &[PinRule]) -> Vec<Value> {
    if rules.is_empty() {
        return Vec::new();
    }
    let hits: Vec<bool> = folded
        .iter()
        .map(|item| rules.iter().any(|r| r.matches(item)))
        .collect();
    let keys: HashSet<&str> = folded
        .iter()
        .zip(&hits)
        .filter(|(_, hit)| **hit)
        .filter_map(|(item, _)| link_key(item))
        .collect();
    folded
        .iter()
        .zip(&hits)
        .filter(|(item, hit)| **hit || link_key(item).is_some_and(|k| keys.contains(k)))
        .map(|(item, _)| item.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items() -> Vec<Value> {
        vec![
            json!({"type": "message", "role": "developer", "content": "system prompt"}),
            json!({"role": "user", "content": "POLICY: never push to main"}),
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "done"}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok POLICY"}]}),
        ]
    }

    #[test]
    fn no_rules_pin_nothing() {
        assert!(pinned(&items(), &[]).is_empty());
    }

    #[test]
    fn rules_by_role_type_and_text() {
        let by_role = pinned(
            &items(),
            &[PinRule::Role {
                role: "developer".into(),
            }],
        );
        assert_eq!(by_role, vec![items()[0].clone()]);
        let by_type = pinned(
            &items(),
            &[PinRule::Type {
                item_type: "message".into(),
            }],
        );
        assert_eq!(
            by_type,
            vec![items()[0].clone(), items()[1].clone(), items()[4].clone()]
        );
        let by_text = pinned(
            &items(),
            &[PinRule::Text {
                contains: "POLICY".into(),
            }],
        );
        assert_eq!(by_text, vec![items()[1].clone(), items()[4].clone()]);
    }

    #[test]
    fn a_pinned_output_brings_its_call_in_order() {
        let rules = [PinRule::Type {
            item_type: "function_call_output".into(),
        }];
        assert_eq!(
            pinned(&items(), &rules),
            vec![items()[2].clone(), items()[3].clone()]
        );
    }

    #[test]
    fn rules_parse_from_config_json() {
        let rules: Vec<PinRule> = serde_json::from_value(json!([
            {"by": "role", "role": "developer"},
            {"by": "type", "item_type": "compaction"},
            {"by": "text", "contains": "AGENTS.md"}
        ]))
        .unwrap_or_default();
        assert_eq!(rules.len(), 3);
    }
}

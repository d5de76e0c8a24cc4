//! Chooses how the mock answers a `/v1/responses` request and what it outputs.
//!
//! The behaviour is named by `metadata.mock` when present, else by `model`, so a
//! test can drive the mock through an unmodified client that only lets it pick a
//! model, and a proxy that rewrites `model` can still be steered via metadata.
//!
//! | name | answer |
//! |---|---|
//! | anything else, `mock-ok` | one message `Hello from ctxgate-mock. Last input: <120 chars>` (4 deltas) |
//! | `mock-call` | function call to the forced or first function tool (`shell` if none) |
//! | `mock-incomplete` | status `incomplete`, reason `max_output_tokens`, partial text |
//! | `mock-failed` | status `failed` with an error object; SSE ends with `response.failed` |
//! | `mock-error-NNN` | HTTP NNN with an OpenAI error body (JSON even when streaming) |
//! | `mock-truncate` | SSE cut after 5 events / JSON cut in half, no terminal event |
//! | `mock-slow` | 200 deltas spaced by `max(chunk_delay, 20ms)` |
//! | `mock-split` | every SSE event written as several body frames |
//! | `mock-expand` | `context_expand` call for the first marker, else quote the last tool output |
//! | `mock-summary` | `SUMMARY: items=N digest=HEX` |
//! | `mock-summary-notext` | completed response with no output at all |
//! | `mock-summary-toolarge` | `SUMMARY: ...` longer than the whole request body |
//! | `mock-summary-incomplete` | status `incomplete` with a partial summary |
//! | `mock-nocompact` | like `mock-ok`, but `/v1/responses/compact` answers 404 |
//! | `mock-agent-shell` | calls the client's shell tool with a command printing ~75 KB of logs, then a fixed text |
//! | `mock-agent-loop` | calls the first function tool with `{"page": N}` for N = 1..=8, then a fixed text |

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::agent;
use super::ids::hex;
use super::input;

/// Deltas a normal message is split into: enough to exercise reassembly.
const TEXT_PIECES: usize = 4;
/// Deltas of `mock-slow`: long enough to disconnect in the middle.
pub(crate) const SLOW_PIECES: usize = 200;
/// Events of `mock-truncate` before the stream just ends.
pub(crate) const TRUNCATE_AFTER: usize = 5;

/// A named mock behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Ok,
    Call,
    Incomplete,
    Failed,
    Error(u16),
    Truncate,
    Slow,
    Split,
    Expand,
    /// Calls `context_expand` whenever it is offered and a marker is in the input, answered or not.
    ExpandLoop,
    /// A client function call and a `context_expand` call in the same round, then a message.
    ExpandMixed,
    /// Calls `context_expand` with a hash that exists nowhere, then quotes the answer.
    ExpandUnknown,
    Summary,
    SummaryNoText,
    SummaryTooLarge,
    SummaryIncomplete,
    NoCompact,
    /// Drives an agent's shell tool once (see [`super::agent`]).
    AgentShell,
    /// Drives an agent through several function-tool turns (see [`super::agent`]).
    AgentLoop,
}

impl Scenario {
    /// Parses a scenario name; unknown names (real model names) mean [`Scenario::Ok`].
    pub fn parse(name: &str) -> Self {
        match name {
            "mock-call" => Self::Call,
            "mock-incomplete" => Self::Incomplete,
            "mock-failed" => Self::Failed,
            "mock-truncate" => Self::Truncate,
            "mock-slow" => Self::Slow,
            "mock-split" => Self::Split,
            "mock-expand" => Self::Expand,
            "mock-expand-loop" => Self::ExpandLoop,
            "mock-expand-mixed" => Self::ExpandMixed,
            "mock-expand-unknown" => Self::ExpandUnknown,
            "mock-summary" => Self::Summary,
            "mock-summary-notext" => Self::SummaryNoText,
            "mock-summary-toolarge" => Self::SummaryTooLarge,
            "mock-summary-incomplete" => Self::SummaryIncomplete,
            "mock-nocompact" => Self::NoCompact,
            "mock-agent-shell" => Self::AgentShell,
            "mock-agent-loop" => Self::AgentLoop,
            other => match other.strip_prefix("mock-error-").map(str::parse::<u16>) {
                Some(Ok(code)) if (400..=599).contains(&code) => Self::Error(code),
                // A malformed error scenario is itself a client error.
                Some(_) => Self::Error(400),
                None => Self::Ok,
            },
        }
    }

    /// `metadata.mock` wins over `model`.
    pub fn of_request(req: &Value) -> Self {
        let name = req
            .get("metadata")
            .and_then(|m| m.get("mock"))
            .and_then(Value::as_str)
            .or_else(|| req.get("model").and_then(Value::as_str))
            .unwrap_or("mock-ok");
        Self::parse(name)
    }

    /// Names listed by `GET /v1/models`.
    pub const NAMES: &'static [&'static str] = &[
        "mock-ok",
        "mock-call",
        "mock-incomplete",
        "mock-failed",
        "mock-error-429",
        "mock-error-500",
        "mock-truncate",
        "mock-slow",
        "mock-split",
        "mock-expand",
        "mock-expand-loop",
        "mock-expand-mixed",
        "mock-expand-unknown",
        "mock-summary",
        "mock-summary-notext",
        "mock-summary-toolarge",
        "mock-summary-incomplete",
        "mock-nocompact",
        "mock-agent-shell",
        "mock-agent-loop",
    ];
}

/// How the response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Completed,
    Incomplete,
    Failed,
}

/// How SSE bytes are paced onto the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pacing {
    Normal,
    Slow,
    Split,
}

/// One output item to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    Message { text: String },
    Call { name: String, arguments: String },
}

/// Everything needed to render a successful (HTTP 200) answer, as JSON or SSE.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub outcome: Outcome,
    pub items: Vec<Item>,
    /// Deltas per text.
    pub pieces: usize,
    pub pacing: Pacing,
    /// Cut the answer short (no terminal event / half a JSON document).
    pub truncate: bool,
}

impl Plan {
    fn new(items: Vec<Item>) -> Self {
        Self {
            outcome: Outcome::Completed,
            items,
            pieces: TEXT_PIECES,
            pacing: Pacing::Normal,
            truncate: false,
        }
    }

    /// The plan for every scenario answered with 200; `None` for [`Scenario::Error`].
    pub(crate) fn for_request(scenario: Scenario, req: &Value, body_len: usize) -> Option<Self> {
        let message = |text: String| Self::new(vec![Item::Message { text }]);
        let plan = match scenario {
            Scenario::Error(_) => return None,
            Scenario::Ok | Scenario::NoCompact => message(hello(req)),
            Scenario::Split => Self {
                pacing: Pacing::Split,
                ..message(hello(req))
            },
            Scenario::Truncate => Self {
                truncate: true,
                ..message(hello(req))
            },
            Scenario::Call => Self::new(vec![tool_call(req)]),
            Scenario::Incomplete => Self {
                outcome: Outcome::Incomplete,
                ..message(half(&hello(req)))
            },
            Scenario::Failed => Self {
                outcome: Outcome::Failed,
                ..Self::new(Vec::new())
            },
            Scenario::Slow => {
                let text = (0..SLOW_PIECES).map(|i| format!("tick {i:03} ")).collect();
                Self {
                    pieces: SLOW_PIECES,
                    pacing: Pacing::Slow,
                    ..message(text)
                }
            }
            Scenario::Expand => Self::new(vec![expand(req)]),
            Scenario::ExpandLoop => Self::new(vec![expand_always(req)]),
            Scenario::ExpandMixed => match expand(req) {
                call @ Item::Call { .. } => Self::new(vec![tool_call(req), call]),
                message => Self::new(vec![message]),
            },
            Scenario::ExpandUnknown => {
                if input::has_function_tool(req, input::EXPAND_TOOL) && !input::expand_answered(req)
                {
                    Self::new(vec![Item::Call {
                        name: input::EXPAND_TOOL.to_owned(),
                        arguments: json!({"hash": "ffffffffffff"}).to_string(),
                    }])
                } else {
                    Self::new(vec![expand(req)])
                }
            }
            Scenario::AgentShell => Self::new(vec![agent::shell(req)]),
            Scenario::AgentLoop => Self::new(vec![agent::agent_loop(req)]),
            Scenario::Summary => message(summary(req)),
            Scenario::SummaryNoText => Self::new(Vec::new()),
            Scenario::SummaryTooLarge => message(too_large_summary(req, body_len)),
            Scenario::SummaryIncomplete => Self {
                outcome: Outcome::Incomplete,
                ..message(half(&summary(req)))
            },
        };
        Some(plan)
    }
}

fn hello(req: &Value) -> String {
    let last = input::prefix_chars(&input::last_user_text(req), 120);
    format!("Hello from ctxgate-mock. Last input: {last}")
}

/// The first half (by characters) of `s`, what a response cut by a token limit has.
fn half(s: &str) -> String {
    input::prefix_chars(s, s.chars().count() / 2)
}

fn tool_call(req: &Value) -> Item {
    let tools = input::function_tools(req);
    let tool = match input::forced_function(req) {
        Some(name) => tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .copied(),
        None => tools.first().copied(),
    };
    let name = input::forced_function(req)
        .or_else(|| tool.and_then(|t| t.get("name")).and_then(Value::as_str))
        .unwrap_or("shell")
        .to_owned();
    // A shell-like tool gets a command; others get no arguments.
    let wants_cmd = tool.is_none_or(|t| t.pointer("/parameters/properties/cmd").is_some());
    let arguments = if wants_cmd {
        json!({"cmd": "ls"})
    } else {
        json!({})
    }
    .to_string();
    Item::Call { name, arguments }
}

fn expand(req: &Value) -> Item {
    if input::has_function_tool(req, input::EXPAND_TOOL) && !input::expand_answered(req) {
        if let Some(hash) = input::find_marker(req) {
            return Item::Call {
                name: input::EXPAND_TOOL.to_owned(),
                arguments: json!({"hash": hash}).to_string(),
            };
        }
    }
    let text = match input::last_function_output(req) {
        Some(out) => format!("Expanded content: \"{}\"", input::prefix_chars(&out, 200)),
        None => hello(req),
    };
    Item::Message { text }
}

fn expand_always(req: &Value) -> Item {
    match input::find_marker(req) {
        Some(hash) if input::has_function_tool(req, input::EXPAND_TOOL) => Item::Call {
            name: input::EXPAND_TOOL.to_owned(),
            arguments: json!({"hash": hash}).to_string(),
        },
        _ => expand(req),
    }
}

fn summary(req: &Value) -> String {
    let input = req.get("input").map(Value::to_string).unwrap_or_default();
    let digest = hex(&Sha256::digest(input.as_bytes()));
    format!(
        "SUMMARY: items={} digest={}",
        input::item_count(req),
        &digest[..16]
    )
}

fn too_large_summary(req: &Value, body_len: usize) -> String {
    let mut text = summary(req);
    while text.len() <= body_len {
        text.push_str(" padding the summary past the request size.");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_wins_over_model() {
        let req = json!({"model": "mock-call", "metadata": {"mock": "mock-error-503"}});
        assert_eq!(Scenario::of_request(&req), Scenario::Error(503));
        assert_eq!(
            Scenario::of_request(&json!({"model": "gpt-5"})),
            Scenario::Ok
        );
        assert_eq!(Scenario::parse("mock-error-abc"), Scenario::Error(400));
    }

    #[test]
    fn call_uses_first_function_tool_or_shell() {
        let req = json!({"tools": [{"type": "web_search"}, {"type": "function", "name": "grep", "parameters": {}}]});
        let item = tool_call(&req);
        assert_eq!(
            item,
            Item::Call {
                name: "grep".into(),
                arguments: "{}".into()
            }
        );
        let item = tool_call(&json!({}));
        assert_eq!(
            item,
            Item::Call {
                name: "shell".into(),
                arguments: r#"{"cmd":"ls"}"#.into()
            }
        );
    }

    #[test]
    fn too_large_summary_exceeds_body() {
        assert!(too_large_summary(&json!({"input": "x"}), 5000).len() > 5000);
    }
}

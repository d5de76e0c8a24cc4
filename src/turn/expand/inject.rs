//! The inject stage, last of the turn: offer `context_expand` when the outgoing input carries a marker.
//!
//! It also undoes the one thing expansion changes for the client: the response id it saw may stand for a later
//! round the proxy made, so an incoming `previous_response_id` is mapped back to the id the upstream really issued
//! ([`super::aliases`]); and a turn whose server-held history carries markers is offered the tool even when its
//! own input carries none.
//! The tool definition and the directive are constants, so every request that gets them gets the same bytes and
//! the provider's prompt cache is not disturbed; the client's own tools keep their bytes.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::Expander;
use crate::config::ExpandSettings;
use crate::expand::tool::{
    DirectiveSplice, EXPAND_TOOL, append_directive, splice_directive, tool_bytes,
};
use crate::expand::{eager, merge};
use crate::responses::RequestBody;
use crate::turn::Turn;
use crate::turn::stage::{Stage, StageError};

/// Whether a turn is offered the tool for its head's size alone ([`crate::expand::eager`]). Decided before the
/// stages run: the compress stage, first of them, counts the tool as paid for on such a turn.
pub fn offer_from_head(settings: &ExpandSettings, body: &RequestBody) -> bool {
    settings.enabled
        && settings.max_rounds > 0
        && eager::offered_from_head(body, settings.eager_min_head_tokens)
}

/// The body's edits when a turn is offered the tool: `context_expand` appended to `tools` (unless the client sent
/// it already) and the directive added to `instructions` on the client's encoded bytes where they allow it.
/// `false`, with the body unchanged, when `tools` is there but not an array.
pub fn offer_tool(body: &mut RequestBody) -> bool {
    let already = match body.get("tools") {
        Some(Value::Array(tools)) => lists_expand_tool(&tools),
        _ => false,
    };
    if !already && !body.append_encoded_to_array("tools", tool_bytes()) {
        return false;
    }
    allow_in_tool_choice(body);
    match splice_directive(body.member_bytes("instructions").as_deref()) {
        DirectiveSplice::Keep => {}
        DirectiveSplice::Set(encoded) => body.set_encoded("instructions", encoded),
        DirectiveSplice::Decode => {
            let instructions = body.get_str("instructions");
            body.set(
                "instructions",
                Value::String(append_directive(instructions.as_deref())),
            );
        }
    }
    true
}

/// A client that lets the model pick only from a list (`tool_choice: {"type": "allowed_tools", "tools": […]}`)
/// would leave the expand tool uncallable: it joins the list. The answer's echo of `tool_choice` is given back
/// without it ([`crate::expand::echo`], [`crate::expand::merge::strip_expand_tool`]).
fn allow_in_tool_choice(body: &mut RequestBody) {
    let Some(mut choice) = body.get("tool_choice") else {
        return;
    };
    let Some(tools) = merge::allowed_list(&mut choice) else {
        return;
    };
    if lists_expand_tool(tools) {
        return;
    }
    tools.push(serde_json::json!({"type": "function", "name": EXPAND_TOOL}));
    body.set("tool_choice", choice);
}

/// Whether a list of tools (the request's, or a `tool_choice`'s allowed ones) names the expand tool already.
fn lists_expand_tool(tools: &[Value]) -> bool {
    tools
        .iter()
        .any(|t| t.get("name").and_then(Value::as_str) == Some(EXPAND_TOOL))
}

/// The inject stage's name (logs, the fault counter); follow-up rounds run every stage but this one.
pub const EXPAND_STAGE: &str = "expand";

pub struct InjectStage {
    expander: Arc<Expander>,
}

impl InjectStage {
    pub fn new(expander: Arc<Expander>) -> InjectStage {
        InjectStage { expander }
    }
}

#[async_trait]
impl Stage for InjectStage {
    fn name(&self) -> &'static str {
        EXPAND_STAGE
    }

    async fn apply(&self, turn: &mut Turn) -> Result<(), StageError> {
        let settings = &self.expander.settings;
        if !settings.enabled {
            return Ok(());
        }
        let tenant = turn.tenant().to_string();
        let mut history_has_markers = false;
        if let Some(previous) = turn.body.get_str("previous_response_id") {
            let found = self.expander.aliases.lookup(&tenant, &previous).await?;
            if let Some(alias) = found {
                history_has_markers = alias.markers;
                if alias.real_id != previous {
                    turn.body
                        .set("previous_response_id", Value::String(alias.real_id));
                }
            }
        }
        // Only the exact form ctxgate writes counts: text that merely resembles a marker (typed by a user,
        // quoted from docs) must reach the upstream byte for byte, with no tool added.
        let carries = history_has_markers
            || turn.offer_from_head
            || turn.body.input_any(crate::ctxzip::marker::has_own_marker);
        let tool_choice_none =
            matches!(turn.body.get("tool_choice"), Some(Value::String(s)) if s == "none");
        if !carries || tool_choice_none || settings.max_rounds == 0 {
            return Ok(());
        }
        if !offer_tool(&mut turn.body) {
            // `tools` is not an array: the upstream will refuse the request; leave it as the client sent it.
            return Ok(());
        }
        turn.expand_active = true;
        Ok(())
    }
}

//! The inject stage, last of the turn: offer `context_expand` when the outgoing input carries a marker.
//!
//! It also undoes the one thing expansion changes for the client: the response id it saw may stand for a later
//! round the proxy made, so an incoming `previous_response_id` is mapped back to the id the upstream really issued.
//! The tool definition and the directive are constants, so every request that gets them gets the same bytes and
//! the provider's prompt cache is not disturbed; the client's own tools keep their bytes.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Expander;
use crate::expand::tool::{EXPAND_TOOL, append_directive, tool_definition};
use crate::proxy::turn::{Stage, StageError, Turn};
use crate::store::{Namespace, Record, unix_now};

/// Response-id aliases live as long as the upstream keeps responses (30 days).
pub const ALIAS_TTL_SECS: u64 = 30 * 24 * 3600;

/// What ctxgate remembers of a response id it handed a client.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Alias {
    pub v: u32,
    /// The id of the last round the upstream really made.
    pub real_id: String,
    /// Whether that turn's input carried markers (the server-side history then does too).
    #[serde(default)]
    pub markers: bool,
}

pub struct InjectStage {
    expander: Arc<Expander>,
}

impl InjectStage {
    pub fn new(expander: Arc<Expander>) -> InjectStage {
        InjectStage { expander }
    }
}

/// Records, in the background, that `client_id` stands for `real_id`. A turn the proxy did not continue needs no
/// alias (the client saw the real id), so nothing is written for it: no store write on the common path.
pub fn remember_alias(
    expander: &Expander,
    tasks: &tokio_util::task::TaskTracker,
    tenant: &str,
    client_id: &str,
    real_id: &str,
) {
    if client_id == real_id || client_id.is_empty() || real_id.is_empty() {
        return;
    }
    let alias = Alias {
        v: 1,
        real_id: real_id.to_string(),
        markers: true,
    };
    let Ok(value) = serde_json::to_vec(&alias) else {
        return;
    };
    let now = unix_now();
    let record = Record {
        value,
        created_at: now,
        expires_at: Some(now + ALIAS_TTL_SECS),
    };
    let (store, tenant, key) = (
        expander.store().clone(),
        tenant.to_string(),
        client_id.to_string(),
    );
    tasks.spawn(async move {
        if let Err(e) = store.put(Namespace::Aliases, &tenant, &key, record).await {
            tracing::warn!(error = %e, "could not store a response-id alias");
        }
    });
}

#[async_trait]
impl Stage for InjectStage {
    fn name(&self) -> &'static str {
        "expand"
    }

    async fn apply(&self, turn: &mut Turn) -> Result<(), StageError> {
        let settings = &self.expander.settings;
        if !settings.enabled {
            return Ok(());
        }
        let tenant = turn.caller.tenant.as_str().to_string();
        let mut history_has_markers = false;
        if let Some(previous) = turn.body.get_str("previous_response_id") {
            let found = self
                .expander
                .store()
                .get(Namespace::Aliases, &tenant, &previous, unix_now())
                .await?
                .and_then(|r| serde_json::from_slice::<Alias>(&r.value).ok());
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
        let carries =
            history_has_markers || turn.body.input_any(crate::ctxzip::marker::has_own_marker);
        let tool_choice_none =
            matches!(turn.body.get("tool_choice"), Some(Value::String(s)) if s == "none");
        if !carries || tool_choice_none || settings.max_rounds == 0 {
            return Ok(());
        }
        let already = match turn.body.get("tools") {
            Some(Value::Array(tools)) => tools
                .iter()
                .any(|t| t.get("name").and_then(Value::as_str) == Some(EXPAND_TOOL)),
            _ => false,
        };
        if !already && !turn.body.append_to_array("tools", &tool_definition()) {
            // `tools` is not an array: the upstream will refuse the request; leave it as the client sent it.
            return Ok(());
        }
        let instructions = turn.body.get_str("instructions");
        turn.body.set(
            "instructions",
            Value::String(append_directive(instructions.as_deref())),
        );
        turn.expand_active = true;
        Ok(())
    }
}

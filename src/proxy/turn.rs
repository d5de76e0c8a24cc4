//! The `/v1/responses` turn as named phases over one context.
//!
//! A [`Turn`] carries what every phase needs: the caller, the parsed body, the client's headers and what to tell
//! the client back. [`Stage`]s (compress, fold, inject expand — added by later issues) each get `&mut Turn` in order.
//! A stage computes its change first and applies it last, so a stage that fails leaves the body as it found it:
//! the turn fails open and the fault is counted under the stage's name.

use async_trait::async_trait;
use axum::http::{HeaderMap, HeaderName, HeaderValue};

use super::auth::Caller;
use super::error::ProxyError;
use crate::responses::RequestBody;

/// Request header that tells ctxgate to leave the body alone.
pub const BYPASS_HEADER: &str = "x-ctxgate-bypass";

pub struct Turn {
    pub request_id: String,
    pub caller: Caller,
    pub body: RequestBody,
    pub client_headers: HeaderMap,
    /// `x-ctxgate-*` headers for the client's response.
    pub response_headers: Vec<(HeaderName, HeaderValue)>,
    /// Set when the request offers `context_expand`: the answer must be read (and perhaps continued) by the proxy.
    pub expand_active: bool,
}

impl Turn {
    pub fn bypass(&self) -> bool {
        self.client_headers
            .get(BYPASS_HEADER)
            .is_some_and(|v| v.as_bytes() == b"1" || v.as_bytes().eq_ignore_ascii_case(b"true"))
    }

    pub fn add_response_header(&mut self, name: &'static str, value: String) {
        if let Ok(v) = HeaderValue::from_str(&value) {
            self.response_headers
                .push((HeaderName::from_static(name), v));
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// An internal fault: the turn goes on without this stage's change.
    #[error("{0}")]
    Fault(String),
    /// The stage must fail the turn with this error (e.g. a fold configured with `on_error = "fail"`).
    #[error(transparent)]
    Reject(ProxyError),
}

impl From<crate::store::StoreError> for StageError {
    fn from(e: crate::store::StoreError) -> Self {
        StageError::Fault(e.to_string())
    }
}

#[async_trait]
pub trait Stage: Send + Sync {
    /// Low-cardinality name for logs and the fault counter.
    fn name(&self) -> &'static str;
    async fn apply(&self, turn: &mut Turn) -> Result<(), StageError>;
}

/// Runs the stages in order. A fault is logged and counted and the next stage runs; a rejection ends the turn.
pub async fn run_stages(
    stages: &[std::sync::Arc<dyn Stage>],
    turn: &mut Turn,
    on_fault: impl Fn(&'static str),
) -> Result<(), ProxyError> {
    for stage in stages {
        match stage.apply(turn).await {
            Ok(()) => {}
            Err(StageError::Fault(message)) => {
                tracing::warn!(request_id = %turn.request_id, stage = stage.name(), %message, "stage failed open");
                on_fault(stage.name());
            }
            Err(StageError::Reject(e)) => return Err(e),
        }
    }
    Ok(())
}

//! The fold's calls upstream: `/responses/compact` and the local summary request, made over the proxy's own
//! upstream client with the caller's identity.
//!
//! The pure fold ([`crate::fold`]) reaches the upstream only through its [`Summarizer`] trait; this is the one
//! implementation. Transport faults become [`CallError`]s from the client library's error kinds, an answer of
//! 404/405/501 says the upstream has no compaction endpoint.

use async_trait::async_trait;
use axum::http::HeaderMap;
use serde_json::Value;

use crate::fold::{CallError, Summarizer};
use crate::proxy::upstream::{SendError, Upstream};

/// The fold's calls, made over the proxy's upstream client with the caller's identity.
pub struct UpstreamSummarizer<'a> {
    pub upstream: &'a Upstream,
    pub identity: HeaderMap,
}

impl UpstreamSummarizer<'_> {
    async fn call(&self, path: &str, body: &Value) -> Result<Value, CallError> {
        let bytes = serde_json::to_vec(body).map_err(|e| CallError::Transport(e.to_string()))?;
        let (status, answer) = self
            .upstream
            .call_json(path, &self.identity, bytes.into())
            .await
            .map_err(|e| match e {
                SendError::Timeout(_) => CallError::Timeout,
                other => CallError::Transport(other.to_string()),
            })?;
        match status {
            200..=299 => serde_json::from_slice(&answer)
                .map_err(|e| CallError::Transport(format!("answer is not JSON: {e}"))),
            404 | 405 | 501 => Err(CallError::Unsupported { status }),
            _ => Err(CallError::Status {
                status,
                body: String::from_utf8_lossy(&answer[..answer.len().min(2048)]).into_owned(),
            }),
        }
    }
}

#[async_trait]
impl Summarizer for UpstreamSummarizer<'_> {
    async fn compact(&self, model: &str, input: &[Value]) -> Result<Value, CallError> {
        let body = serde_json::json!({"model": model, "input": input});
        self.call("/v1/responses/compact", &body).await
    }

    async fn respond(&self, request: Value) -> Result<Value, CallError> {
        self.call("/v1/responses", &request).await
    }
}

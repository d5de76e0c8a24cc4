//! ctxgate's own errors and their one rendering, in the OpenAI error shape.
//!
//! Upstream errors never pass through here: they reach the client exactly as the upstream sent them. Only what
//! ctxgate itself refuses or fails at — a body too large, a bad proxy credential, an upstream it could not reach,
//! an original that is not there — becomes a [`ProxyError`]; [`ProxyError::status`] is the single, exhaustive
//! status mapping and [`IntoResponse`] the one rendering (handlers return `Result<Response, ProxyError>`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("request body exceeds the limit of {limit} bytes")]
    BodyTooLarge { limit: u64 },
    #[error("could not read the request body: {0}")]
    BadRequestBody(String),
    #[error("invalid or missing API key for this proxy")]
    Unauthorized,
    #[error("no route for {0}")]
    NotFound(String),
    #[error("upstream unreachable: {0}")]
    UpstreamUnreachable(String),
    #[error("upstream did not answer within {0:?}")]
    UpstreamTimeout(std::time::Duration),
    #[error("proxy misconfigured: {0}")]
    Misconfigured(String),
    /// A fold failed and `[fold] on_error = "fail"` says the turn fails with it.
    #[error("the transcript is over budget and folding it failed: {0}")]
    FoldFailed(String),
    /// An upstream answer the proxy must read whole (to answer expand calls) is larger than it will hold.
    #[error("upstream unreachable: answer larger than {} MiB", .limit / (1024 * 1024))]
    AnswerTooLarge { limit: usize },
    /// A side endpoint was asked for an original the caller's tenant does not have; the message is the tool's
    /// own answer (what was missing, or which hashes a prefix matched).
    #[error("{0}")]
    OriginalNotFound(String),
    /// The operator view was asked for, but no `[auth] admin_keys` are configured.
    #[error(
        "the operator view is off: set [auth] admin_keys (CTXGATE_AUTH_ADMIN_KEYS) to enable it"
    )]
    AdminDisabled,
    /// The operator view was asked for with a credential that is not an admin key.
    #[error("this endpoint needs an admin key from [auth] admin_keys")]
    AdminOnly,
    /// The store could not answer a request that has nothing to give without it.
    #[error("the store is unavailable: {0}")]
    StoreUnavailable(String),
}

impl ProxyError {
    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ProxyError::BadRequestBody(_) => StatusCode::BAD_REQUEST,
            ProxyError::Unauthorized => StatusCode::UNAUTHORIZED,
            ProxyError::NotFound(_) => StatusCode::NOT_FOUND,
            ProxyError::UpstreamUnreachable(_) => StatusCode::BAD_GATEWAY,
            ProxyError::UpstreamTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::Misconfigured(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ProxyError::FoldFailed(_) => StatusCode::BAD_GATEWAY,
            ProxyError::AnswerTooLarge { .. } => StatusCode::BAD_GATEWAY,
            ProxyError::OriginalNotFound(_) => StatusCode::NOT_FOUND,
            ProxyError::AdminDisabled => StatusCode::NOT_FOUND,
            ProxyError::AdminOnly => StatusCode::FORBIDDEN,
            ProxyError::StoreUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// `(type, code)` of the OpenAI error object.
    fn kind(&self) -> (&'static str, &'static str) {
        match self {
            ProxyError::BodyTooLarge { .. } => ("invalid_request_error", "request_too_large"),
            ProxyError::BadRequestBody(_) => ("invalid_request_error", "bad_request_body"),
            ProxyError::Unauthorized => ("invalid_request_error", "invalid_api_key"),
            ProxyError::NotFound(_) => ("invalid_request_error", "not_found"),
            ProxyError::UpstreamUnreachable(_) => ("upstream_error", "upstream_unreachable"),
            ProxyError::UpstreamTimeout(_) => ("upstream_error", "upstream_timeout"),
            ProxyError::Misconfigured(_) => ("server_error", "proxy_misconfigured"),
            ProxyError::FoldFailed(_) => ("upstream_error", "fold_failed"),
            ProxyError::AnswerTooLarge { .. } => ("upstream_error", "upstream_unreachable"),
            ProxyError::OriginalNotFound(_) => ("invalid_request_error", "original_not_found"),
            ProxyError::AdminDisabled => ("invalid_request_error", "admin_disabled"),
            ProxyError::AdminOnly => ("invalid_request_error", "admin_key_required"),
            ProxyError::StoreUnavailable(_) => ("server_error", "store_unavailable"),
        }
    }

    /// The OpenAI-shaped JSON body.
    pub fn body(&self) -> serde_json::Value {
        let (kind, code) = self.kind();
        let message = match self {
            // The expand tool's own text, as the model would see it.
            ProxyError::OriginalNotFound(text) => text.clone(),
            _ => format!("ctxgate: {self}"),
        };
        json!({"error": {"message": message, "type": kind, "code": code}})
    }
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let status = self.status();
        if !matches!(self, ProxyError::OriginalNotFound(_)) {
            tracing::info!(status = status.as_u16(), error = %self, "request refused");
        }
        (status, axum::Json(self.body())).into_response()
    }
}

//! The [`Stage`] trait every step of the turn implements, its typed faults, and the loop that runs them in order.
//!
//! A stage computes its change first and applies it last, so a stage that fails leaves the body as it found it:
//! the turn fails open and the fault is counted under the stage's name and the fault's [`FaultKind`]. Only a
//! [`StageError::Reject`] ends the turn (e.g. a fold configured with `on_error = "fail"`).

use std::sync::Arc;

use async_trait::async_trait;

use super::Turn;
use crate::proxy::error::ProxyError;
use crate::telemetry::Metrics;

/// What kind of fault a stage met: the low-cardinality label of the fault counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The store could not be read or written.
    Store,
    /// The shared store is down: the turn went on without it (logged once per state change, not per request).
    StoreUnavailable,
    /// Something in the request did not parse as the stage needed it.
    Parse,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Store => "store",
            FaultKind::StoreUnavailable => "store_unavailable",
            FaultKind::Parse => "parse",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// An internal fault: the turn goes on without this stage's change.
    #[error("{}: {message}", .kind.as_str())]
    Fault { kind: FaultKind, message: String },
    /// The stage must fail the turn with this error.
    #[error(transparent)]
    Reject(ProxyError),
}

impl StageError {
    pub fn parse(message: impl Into<String>) -> StageError {
        StageError::Fault {
            kind: FaultKind::Parse,
            message: message.into(),
        }
    }
}

impl From<crate::store::StoreError> for StageError {
    fn from(e: crate::store::StoreError) -> Self {
        StageError::Fault {
            kind: if e.is_unavailable() {
                FaultKind::StoreUnavailable
            } else {
                FaultKind::Store
            },
            message: e.to_string(),
        }
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
    stages: &[Arc<dyn Stage>],
    turn: &mut Turn,
    metrics: &Metrics,
) -> Result<(), ProxyError> {
    for stage in stages {
        match stage.apply(turn).await {
            Ok(()) => {}
            Err(StageError::Fault { kind, message }) => {
                if kind == FaultKind::StoreUnavailable {
                    tracing::debug!(request_id = %turn.request_id, stage = stage.name(), %message, "stage failed open: store down");
                } else {
                    tracing::warn!(request_id = %turn.request_id, stage = stage.name(), kind = kind.as_str(), %message, "stage failed open");
                }
                metrics.stage_fault(stage.name(), kind.as_str());
            }
            Err(StageError::Reject(e)) => return Err(e),
        }
    }
    Ok(())
}

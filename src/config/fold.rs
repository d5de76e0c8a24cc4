//! The `[fold]` section, resolved into the fold's own [`FoldConfig`].

use std::time::Duration;

use super::ConfigError;
use super::raw::RawFold;
use crate::fold::{Estimator, FoldConfig, FoldMode, OnError, PinRule};

/// How long a fold record is kept after it was last used: a conversation idle for a week folds afresh.
pub const DEFAULT_FOLD_RECORD_TTL_SECS: u64 = 7 * 24 * 3600;

/// What is pinned when `[fold] pins` is not set: the harness's own instructions (`developer` and `system`
/// messages) must reach the model verbatim, never as whatever a summary made of them.
pub fn default_pins() -> Vec<PinRule> {
    vec![
        PinRule::Role {
            role: "developer".into(),
        },
        PinRule::Role {
            role: "system".into(),
        },
    ]
}

#[derive(Debug, Clone)]
pub struct FoldSettings {
    pub fold: FoldConfig,
    pub record_ttl: Duration,
}

fn invalid(key: &str, message: String) -> ConfigError {
    ConfigError::Invalid {
        key: format!("fold.{key}"),
        message,
    }
}

fn positive(key: &str, v: Option<u64>, default: usize) -> Result<usize, ConfigError> {
    match v {
        None => Ok(default),
        Some(0) => Err(invalid(key, "must be positive".into())),
        Some(n) => usize::try_from(n).map_err(|_| invalid(key, "too large".into())),
    }
}

pub fn resolve(raw: RawFold) -> Result<FoldSettings, ConfigError> {
    let defaults = FoldConfig::default();
    let mode = match raw.mode.as_deref() {
        None | Some("auto") => FoldMode::Auto,
        Some("compact") => FoldMode::Compact,
        Some("local") => FoldMode::Local,
        Some("off") => FoldMode::Off,
        Some(other) => {
            return Err(invalid(
                "mode",
                format!("{other:?}: expected auto, compact, local or off"),
            ));
        }
    };
    let on_error = match raw.on_error.as_deref() {
        None | Some("send_unfolded") => OnError::SendUnfolded,
        Some("fail") => OnError::Fail,
        Some(other) => {
            return Err(invalid(
                "on_error",
                format!("{other:?}: expected send_unfolded or fail"),
            ));
        }
    };
    let estimator = match raw.estimator.as_deref() {
        None | Some("bytes") => Estimator::Bytes,
        Some("tiktoken") => Estimator::Tiktoken,
        Some(other) => {
            return Err(invalid(
                "estimator",
                format!("{other:?}: expected bytes or tiktoken"),
            ));
        }
    };
    let max_output_tokens = match raw.max_output_tokens {
        None => None,
        Some(0) => return Err(invalid("max_output_tokens", "must be positive".into())),
        Some(n) => {
            Some(u32::try_from(n).map_err(|_| invalid("max_output_tokens", "too large".into()))?)
        }
    };
    let summary_prompt = match raw.summary_prompt {
        Some(p) if p.trim().is_empty() => {
            return Err(invalid("summary_prompt", "must not be empty".into()));
        }
        Some(p) => p,
        None => defaults.summary_prompt.clone(),
    };
    Ok(FoldSettings {
        fold: FoldConfig {
            mode,
            budget: positive("budget", raw.budget, defaults.budget)?,
            keep_last: positive("keep_last", raw.keep_last, defaults.keep_last)?,
            min_fold: raw
                .min_fold
                .map(|n| usize::try_from(n).map_err(|_| invalid("min_fold", "too large".into())))
                .transpose()?,
            model: raw.model.filter(|m| !m.is_empty()),
            summary_prompt,
            max_output_tokens,
            reasoning_effort: raw.reasoning_effort.filter(|e| !e.is_empty()),
            pins: raw.pins.unwrap_or_else(default_pins),
            back_off: raw.back_off.unwrap_or(true),
            on_error,
            estimator,
        },
        record_ttl: Duration::from_secs(
            raw.record_ttl_secs
                .unwrap_or(DEFAULT_FOLD_RECORD_TTL_SECS)
                .max(1),
        ),
    })
}

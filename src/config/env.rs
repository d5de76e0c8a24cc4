//! `CTXGATE_*` environment variables as a configuration source.
//!
//! The environment is read through [`EnvSource`] so tests hand in a map instead of mutating the process
//! environment (which is global state shared by every test thread). Each variable names one field:
//! `CTXGATE_<SECTION>_<FIELD>` in upper case, e.g. `CTXGATE_UPSTREAM_URL`, `CTXGATE_SERVER_LISTEN`.

use std::collections::HashMap;

use super::ConfigError;
use super::raw::RawConfig;

/// Where environment variables come from.
pub trait EnvSource {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl EnvSource for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

fn number(env: &dyn EnvSource, name: &str) -> Result<Option<u64>, ConfigError> {
    match env.var(name) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ConfigError::Invalid {
                key: name.to_string(),
                message: format!("expected a whole number, got {v:?}"),
            }),
    }
}

fn flag(env: &dyn EnvSource, name: &str) -> Result<Option<bool>, ConfigError> {
    match env.var(name).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(v) if matches!(v.as_str(), "1" | "true" | "yes" | "on") => Ok(Some(true)),
        Some(v) if matches!(v.as_str(), "0" | "false" | "no" | "off") => Ok(Some(false)),
        Some(v) => Err(ConfigError::Invalid {
            key: name.to_string(),
            message: format!("expected true or false, got {v:?}"),
        }),
    }
}

fn list(env: &dyn EnvSource, name: &str) -> Option<Vec<String>> {
    env.var(name).map(|v| {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    })
}

/// Reads every `CTXGATE_*` variable ctxgate knows into a raw config layer.
pub fn from_env(env: &dyn EnvSource) -> Result<RawConfig, ConfigError> {
    let mut raw = RawConfig::default();
    raw.server.listen = env.var("CTXGATE_SERVER_LISTEN");
    raw.server.max_body_bytes = number(env, "CTXGATE_SERVER_MAX_BODY_BYTES")?;
    raw.server.shutdown_grace_secs = number(env, "CTXGATE_SERVER_SHUTDOWN_GRACE_SECS")?;
    raw.upstream.url = env.var("CTXGATE_UPSTREAM_URL");
    raw.upstream.api_key_env = env.var("CTXGATE_UPSTREAM_API_KEY_ENV");
    raw.upstream.connect_timeout_ms = number(env, "CTXGATE_UPSTREAM_CONNECT_TIMEOUT_MS")?;
    raw.upstream.read_timeout_ms = number(env, "CTXGATE_UPSTREAM_READ_TIMEOUT_MS")?;
    raw.upstream.stream_idle_timeout_ms = number(env, "CTXGATE_UPSTREAM_STREAM_IDLE_TIMEOUT_MS")?;
    raw.auth.keys = list(env, "CTXGATE_AUTH_KEYS");
    raw.auth.admin_keys = list(env, "CTXGATE_AUTH_ADMIN_KEYS");
    raw.store.path = env.var("CTXGATE_STORE_PATH");
    raw.store.max_bytes = number(env, "CTXGATE_STORE_MAX_BYTES")?;
    raw.store.url = env.var("CTXGATE_STORE_URL");
    raw.store.key_prefix = env.var("CTXGATE_STORE_KEY_PREFIX");
    raw.store.timeout_ms = number(env, "CTXGATE_STORE_TIMEOUT_MS")?;
    raw.store.password_env = env.var("CTXGATE_STORE_PASSWORD_ENV");
    raw.store.lock_ttl_ms = number(env, "CTXGATE_STORE_LOCK_TTL_MS")?;
    raw.compress.enabled = flag(env, "CTXGATE_COMPRESS_ENABLED")?;
    raw.expand.enabled = flag(env, "CTXGATE_EXPAND_ENABLED")?;
    raw.expand.max_rounds = number(env, "CTXGATE_EXPAND_MAX_ROUNDS")?;
    raw.expand.max_chars = number(env, "CTXGATE_EXPAND_MAX_CHARS")?;
    raw.expand.suggest_threshold = number(env, "CTXGATE_EXPAND_SUGGEST_THRESHOLD")?;
    raw.expand.eager_min_head_tokens = number(env, "CTXGATE_EXPAND_EAGER_MIN_HEAD_TOKENS")?;
    raw.compress.min_tool_output_chars = number(env, "CTXGATE_COMPRESS_MIN_TOOL_OUTPUT_CHARS")?;
    raw.compress.min_saved_tokens = number(env, "CTXGATE_COMPRESS_MIN_SAVED_TOKENS")?;
    raw.compress.protect_recent = number(env, "CTXGATE_COMPRESS_PROTECT_RECENT")?;
    raw.compress.protect_recent_turns = number(env, "CTXGATE_COMPRESS_PROTECT_RECENT_TURNS")?;
    raw.compress.exclude_tools = list(env, "CTXGATE_COMPRESS_EXCLUDE_TOOLS");
    raw.compress.keep_patterns = list(env, "CTXGATE_COMPRESS_KEEP_PATTERNS");
    raw.compress.code = flag(env, "CTXGATE_COMPRESS_CODE")?;
    raw.compress.agent_steps = flag(env, "CTXGATE_COMPRESS_AGENT_STEPS")?;
    raw.compress.agent_notes = flag(env, "CTXGATE_COMPRESS_AGENT_NOTES")?;
    raw.compress.ttl_secs = number(env, "CTXGATE_COMPRESS_TTL_SECS")?;
    raw.compress.failures = env.var("CTXGATE_COMPRESS_FAILURES");
    raw.compress.min_item_saved_tokens = number(env, "CTXGATE_COMPRESS_MIN_ITEM_SAVED_TOKENS")?;
    raw.compress.min_repeat_chars = number(env, "CTXGATE_COMPRESS_MIN_REPEAT_CHARS")?;
    raw.compress.min_saved_prefix_percent =
        number(env, "CTXGATE_COMPRESS_MIN_SAVED_PREFIX_PERCENT")?;
    raw.log.format = env.var("CTXGATE_LOG_FORMAT");
    raw.log.level = env.var("CTXGATE_LOG_LEVEL");
    raw.fold.mode = env.var("CTXGATE_FOLD_MODE");
    raw.fold.budget = number(env, "CTXGATE_FOLD_BUDGET")?;
    raw.fold.keep_last = number(env, "CTXGATE_FOLD_KEEP_LAST")?;
    raw.fold.min_fold = number(env, "CTXGATE_FOLD_MIN_FOLD")?;
    raw.fold.model = env.var("CTXGATE_FOLD_MODEL");
    raw.fold.max_output_tokens = number(env, "CTXGATE_FOLD_MAX_OUTPUT_TOKENS")?;
    raw.fold.reasoning_effort = env.var("CTXGATE_FOLD_REASONING_EFFORT");
    raw.fold.on_error = env.var("CTXGATE_FOLD_ON_ERROR");
    raw.fold.estimator = env.var("CTXGATE_FOLD_ESTIMATOR");
    Ok(raw)
}

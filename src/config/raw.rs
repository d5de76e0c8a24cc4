//! The configuration as the sources spell it: every field optional, unknown keys rejected.
//!
//! Three sources fill the same raw shape — `config/ctxgate.toml`, `CTXGATE_*` environment variables and
//! command-line flags — and are layered with [`RawConfig::overlay`] before [`super::Config::resolve`] checks the
//! result and fills in defaults. Keeping the raw shape separate means a missing field is visible as `None` until
//! the single place that decides its default.

use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    pub server: RawServer,
    #[serde(default)]
    pub upstream: RawUpstream,
    #[serde(default)]
    pub auth: RawAuth,
    #[serde(default)]
    pub store: RawStore,
    #[serde(default)]
    pub log: RawLog,
    #[serde(default)]
    pub fold: RawFold,
    #[serde(default)]
    pub compress: RawCompress,
    #[serde(default)]
    pub expand: RawExpand,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    pub listen: Option<String>,
    pub max_body_bytes: Option<u64>,
    pub shutdown_grace_secs: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpstream {
    pub url: Option<String>,
    pub api_key_env: Option<String>,
    pub connect_timeout_ms: Option<u64>,
    pub read_timeout_ms: Option<u64>,
    pub stream_idle_timeout_ms: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    pub keys: Option<Vec<String>>,
    pub admin_keys: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStore {
    pub path: Option<String>,
    pub max_bytes: Option<u64>,
    pub url: Option<String>,
    pub key_prefix: Option<String>,
    pub timeout_ms: Option<u64>,
    pub password_env: Option<String>,
    pub lock_ttl_ms: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    pub format: Option<String>,
    pub level: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExpand {
    pub enabled: Option<bool>,
    pub max_rounds: Option<u64>,
    pub max_chars: Option<u64>,
    pub suggest_threshold: Option<u64>,
    pub eager_min_head_tokens: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCompress {
    pub enabled: Option<bool>,
    pub min_tool_output_chars: Option<u64>,
    pub min_saved_tokens: Option<u64>,
    pub protect_recent: Option<u64>,
    pub protect_recent_turns: Option<u64>,
    pub agent_steps: Option<bool>,
    pub agent_notes: Option<bool>,
    pub exclude_tools: Option<Vec<String>>,
    pub keep_patterns: Option<Vec<String>>,
    pub code: Option<bool>,
    pub user_messages: Option<bool>,
    pub ttl_secs: Option<u64>,
    pub failures: Option<String>,
    pub min_item_saved_tokens: Option<u64>,
    pub min_repeat_chars: Option<u64>,
    pub min_saved_prefix_percent: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFold {
    pub mode: Option<String>,
    pub budget: Option<u64>,
    pub keep_last: Option<u64>,
    pub min_fold: Option<u64>,
    pub model: Option<String>,
    pub summary_prompt: Option<String>,
    pub max_output_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    pub pins: Option<Vec<crate::fold::PinRule>>,
    pub back_off: Option<bool>,
    pub on_error: Option<String>,
    pub estimator: Option<String>,
    pub record_ttl_secs: Option<u64>,
}

/// `a.or(b)` for every field: the later source wins where it says something.
macro_rules! overlay_fields {
    ($base:expr, $top:expr; $($field:ident),+) => {
        $( if $top.$field.is_some() { $base.$field = $top.$field; } )+
    };
}

impl RawConfig {
    /// Lays `top` over `self`: every field `top` sets replaces the one below it.
    pub fn overlay(mut self, top: RawConfig) -> RawConfig {
        overlay_fields!(self.server, top.server; listen, max_body_bytes, shutdown_grace_secs);
        overlay_fields!(self.upstream, top.upstream;
            url, api_key_env, connect_timeout_ms, read_timeout_ms, stream_idle_timeout_ms);
        overlay_fields!(self.auth, top.auth; keys, admin_keys);
        overlay_fields!(self.store, top.store;
            path, max_bytes, url, key_prefix, timeout_ms, password_env, lock_ttl_ms);
        overlay_fields!(self.expand, top.expand; enabled, max_rounds, max_chars, suggest_threshold, eager_min_head_tokens);
        overlay_fields!(self.compress, top.compress;
            enabled, min_tool_output_chars, min_saved_tokens, protect_recent, protect_recent_turns, agent_steps, agent_notes, exclude_tools, keep_patterns, code,
            user_messages, ttl_secs, failures, min_item_saved_tokens, min_repeat_chars,
            min_saved_prefix_percent);
        overlay_fields!(self.log, top.log; format, level);
        overlay_fields!(self.fold, top.fold;
            mode, budget, keep_last, min_fold, model, summary_prompt, max_output_tokens, reasoning_effort, pins,
            back_off, on_error, estimator, record_ttl_secs);
        self
    }
}

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
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStore {
    pub path: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    pub format: Option<String>,
    pub level: Option<String>,
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
        overlay_fields!(self.auth, top.auth; keys);
        overlay_fields!(self.store, top.store; path);
        overlay_fields!(self.log, top.log; format, level);
        self
    }
}

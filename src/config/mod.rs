//! Typed configuration: defaults < `config/ctxgate.toml` < `CTXGATE_*` < command-line flags.
//!
//! Loading happens in two stages. The sources are parsed into [`raw::RawConfig`] layers (every field optional,
//! unknown keys rejected with their path) and overlaid; [`Config::resolve`] then checks the merged layer and fills
//! every gap from the named defaults below. Everything downstream sees only the checked [`Config`].

pub mod compress;
pub mod env;
pub mod fold;
pub mod raw;
pub mod store;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use raw::RawConfig;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_UPSTREAM: &str = "https://api.openai.com/v1";
pub const DEFAULT_STORE_PATH: &str = "data/ctxgate.redb";
/// 64 MiB: large enough for a long agent transcript, small enough to refuse a runaway client.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// 2 GiB of originals and compressed forms before the oldest are evicted.
pub const DEFAULT_STORE_MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;
pub const DEFAULT_SHUTDOWN_GRACE_SECS: u64 = 30;
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;
/// Wait for the upstream's response headers. A non-streaming reasoning call can think for minutes before its
/// first byte, so this is generous.
pub const DEFAULT_READ_TIMEOUT_MS: u64 = 600_000;
/// Longest silence tolerated inside a response body; a stream is never cut for its total length.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid setting {key}: {message}")]
    Invalid { key: String, message: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// The checked configuration every part of ctxgate reads.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub max_body_bytes: u64,
    pub shutdown_grace: Duration,
    pub upstream: UpstreamConfig,
    pub auth: AuthConfig,
    pub store_path: PathBuf,
    pub log_format: LogFormat,
    pub log_level: String,
    pub fold: fold::FoldSettings,
    pub compress: compress::CompressSettings,
    pub expand: ExpandSettings,
    /// Bound on the store's originals and compressed forms, in bytes; oldest evicted first.
    pub store_max_bytes: u64,
    /// The backend (redb or Redis) and its settings.
    pub store: store::StoreSettings,
}

/// Rounds of `context_expand` answered inside the proxy per turn.
pub const DEFAULT_EXPAND_MAX_ROUNDS: usize = 4;
/// Largest window of an original one expansion returns.
pub const DEFAULT_EXPAND_MAX_CHARS: usize = 16_000;
/// Distinct expansions containing a token before it is suggested as a keep pattern.
pub const DEFAULT_SUGGEST_THRESHOLD: u64 = 3;
/// A conversation whose head (what every turn repeats) is at least this many estimated tokens is offered the tool
/// from its first turn ([`crate::expand::eager`]): an agent's instructions and tools are thousands of tokens, beside
/// which the tool's 190 are small, and its session then never reads its cached prefix again for a first marker nor
/// waits for one (dev session replay: 10.8 % of the cost saved with 0, 14.2 % with this). A chat's head is shorter
/// and keeps its bytes until a marker comes.
pub const DEFAULT_EAGER_MIN_HEAD_TOKENS: u64 = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpandSettings {
    pub enabled: bool,
    pub max_rounds: usize,
    pub max_chars: usize,
    pub suggest_threshold: u64,
    /// Offer the tool from a conversation's first turn when its fixed head is at least this many estimated
    /// tokens ([`crate::expand::eager`]); 0: only once the input carries a marker.
    pub eager_min_head_tokens: u64,
}

#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Base URL ending before the route, e.g. `https://api.openai.com/v1`; client paths under `/v1/` are appended
    /// after stripping their `/v1`.
    pub url: reqwest::Url,
    /// Name of the environment variable holding the proxy-held upstream key, when ctxgate holds the credential.
    pub api_key_env: Option<String>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub stream_idle_timeout: Duration,
}

#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    /// Client keys accepted when ctxgate holds the upstream credential.
    pub keys: Vec<String>,
    /// Operator keys that open the view across tenants (`GET /admin/stats`); empty: that view is off.
    pub admin_keys: Vec<String>,
}

impl Config {
    /// Loads the file (when given or when the default `config/ctxgate.toml` exists), then the environment, then
    /// the flags' layer.
    pub fn load(
        file: Option<&Path>,
        env: &dyn env::EnvSource,
        flags: RawConfig,
    ) -> Result<Config, ConfigError> {
        let from_file = match file {
            Some(path) => read_file(path)?,
            None => {
                let default = Path::new("config/ctxgate.toml");
                if default.exists() {
                    read_file(default)?
                } else {
                    RawConfig::default()
                }
            }
        };
        let merged = from_file.overlay(env::from_env(env)?).overlay(flags);
        Config::resolve(merged)
    }

    /// Checks a merged raw layer and fills in defaults.
    pub fn resolve(raw: RawConfig) -> Result<Config, ConfigError> {
        let store = store::resolve(&raw.store)?;
        let listen_text = raw.server.listen.unwrap_or_else(|| DEFAULT_LISTEN.into());
        let listen = listen_text
            .parse::<SocketAddr>()
            .map_err(|e| invalid("server.listen", format!("{listen_text:?}: {e}")))?;
        let url_text = raw.upstream.url.unwrap_or_else(|| DEFAULT_UPSTREAM.into());
        let url = reqwest::Url::parse(url_text.trim_end_matches('/'))
            .map_err(|e| invalid("upstream.url", format!("{url_text:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(
                "upstream.url",
                "must be an http or https URL".into(),
            ));
        }
        let max_body_bytes = raw.server.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if max_body_bytes == 0 {
            return Err(invalid("server.max_body_bytes", "must be positive".into()));
        }
        let log_format = match raw.log.format.as_deref().unwrap_or("text") {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            other => {
                return Err(invalid(
                    "log.format",
                    format!("{other:?}: expected \"text\" or \"json\""),
                ));
            }
        };
        let keys = raw.auth.keys.unwrap_or_default();
        let admin_keys: Vec<String> = raw
            .auth
            .admin_keys
            .unwrap_or_default()
            .into_iter()
            .map(|k| k.trim().to_string())
            .collect();
        if admin_keys.iter().any(String::is_empty) {
            return Err(invalid("auth.admin_keys", "a key is empty".into()));
        }
        if admin_keys.iter().any(|k| keys.contains(k)) {
            return Err(invalid(
                "auth.admin_keys",
                "a key is also a client key in auth.keys: an operator key must be its own".into(),
            ));
        }
        let api_key_env = raw.upstream.api_key_env.filter(|s| !s.is_empty());
        if api_key_env.is_some() && keys.is_empty() {
            return Err(invalid(
                "auth.keys",
                "upstream.api_key_env is set, so ctxgate holds the upstream key: list the client keys it accepts"
                    .into(),
            ));
        }
        let ms = |v: Option<u64>, d: u64, key: &str| -> Result<Duration, ConfigError> {
            match v.unwrap_or(d) {
                0 => Err(invalid(key, "must be positive".into())),
                n => Ok(Duration::from_millis(n)),
            }
        };
        Ok(Config {
            listen,
            max_body_bytes,
            shutdown_grace: Duration::from_secs(
                raw.server
                    .shutdown_grace_secs
                    .unwrap_or(DEFAULT_SHUTDOWN_GRACE_SECS),
            ),
            upstream: UpstreamConfig {
                url,
                api_key_env,
                connect_timeout: ms(
                    raw.upstream.connect_timeout_ms,
                    DEFAULT_CONNECT_TIMEOUT_MS,
                    "upstream.connect_timeout_ms",
                )?,
                read_timeout: ms(
                    raw.upstream.read_timeout_ms,
                    DEFAULT_READ_TIMEOUT_MS,
                    "upstream.read_timeout_ms",
                )?,
                stream_idle_timeout: ms(
                    raw.upstream.stream_idle_timeout_ms,
                    DEFAULT_STREAM_IDLE_TIMEOUT_MS,
                    "upstream.stream_idle_timeout_ms",
                )?,
            },
            auth: AuthConfig { keys, admin_keys },
            store_path: PathBuf::from(raw.store.path.unwrap_or_else(|| DEFAULT_STORE_PATH.into())),
            log_format,
            log_level: raw.log.level.unwrap_or_else(|| "info".into()),
            fold: fold::resolve(raw.fold)?,
            compress: compress::resolve(raw.compress)?,
            expand: ExpandSettings {
                enabled: raw.expand.enabled.unwrap_or(true),
                max_rounds: raw
                    .expand
                    .max_rounds
                    .unwrap_or(DEFAULT_EXPAND_MAX_ROUNDS as u64)
                    .min(64) as usize,
                max_chars: match raw
                    .expand
                    .max_chars
                    .unwrap_or(DEFAULT_EXPAND_MAX_CHARS as u64)
                {
                    0 => return Err(invalid("expand.max_chars", "must be positive".into())),
                    n => usize::try_from(n).unwrap_or(usize::MAX),
                },
                suggest_threshold: raw
                    .expand
                    .suggest_threshold
                    .unwrap_or(DEFAULT_SUGGEST_THRESHOLD)
                    .max(1),
                eager_min_head_tokens: raw
                    .expand
                    .eager_min_head_tokens
                    .unwrap_or(DEFAULT_EAGER_MIN_HEAD_TOKENS),
            },
            store,
            store_max_bytes: match raw.store.max_bytes.unwrap_or(DEFAULT_STORE_MAX_BYTES) {
                0 => return Err(invalid("store.max_bytes", "must be positive".into())),
                n => n,
            },
        })
    }
}

fn invalid(key: &str, message: String) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        message,
    }
}

fn read_file(path: &Path) -> Result<RawConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_toml(path, &text)
}

/// Parses a config file's text; errors name the offending key path (e.g. `unknown field `lisen`` under
/// `[server]`) and the line.
pub fn parse_toml(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    toml::from_str::<RawConfig>(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().to_string(),
    })
}

#[cfg(test)]
mod tests;

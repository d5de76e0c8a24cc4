//! The `[compress]` section: which items ctxzip compresses, and how long originals stay expandable.

use std::time::Duration;

use super::ConfigError;
use super::raw::RawCompress;

/// Outputs shorter than this are never compressed (a marker and its note would eat most of the gain).
pub const DEFAULT_MIN_TOOL_OUTPUT_CHARS: usize = 2048;
/// What the first markers of a conversation must save together: the first marker also brings the
/// `context_expand` tool and directive (190 `o200k_base` tokens; 213 by this threshold's own bytes/4 estimate), so a
/// smaller saving would make the request bigger.
pub const DEFAULT_MIN_SAVED_TOKENS: u64 = 224;
/// What each compressed item must save on its own once the conversation carries the tool: its marker line and
/// note cost a few dozen tokens, and a model that expands it pays the original back.
pub const DEFAULT_MIN_ITEM_SAVED_TOKENS: u64 = 64;
/// Outputs from this size on are looked at for runs of lines an earlier output already shows: below it, one
/// marker line would cost about what it hides.
pub const DEFAULT_MIN_REPEAT_CHARS: usize = 512;
/// While a conversation carries no marker, its first markers must also save this share (in percent) of the
/// estimated tokens before them: the tool and directive they bring change the request's head, so the provider's
/// cached prefix is paid in full once, and a small saving late in a long session would cost more than it saves.
pub const DEFAULT_MIN_SAVED_PREFIX_PERCENT: u64 = 10;

/// What happens to a tool output that reports a failure (non-zero exit code, traceback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failures {
    /// Compressed around its error regions: tracebacks, failure blocks, diagnostics and the end of the run stay
    /// verbatim, passing noise goes behind a marker.
    Regions,
    /// Left whole, whatever its size (the seed's behaviour).
    Verbatim,
}
/// User turns at the end of the transcript whose live-zone items stay verbatim.
pub const DEFAULT_PROTECT_RECENT_TURNS: usize = 2;
/// How long an original stays expandable after the last request that carried its marker.
pub const DEFAULT_TTL_SECS: u64 = 1800;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressSettings {
    pub enabled: bool,
    pub min_tool_output_chars: usize,
    pub min_saved_tokens: u64,
    /// The most recent tool outputs left verbatim (0: compress at first sight).
    pub protect_recent: usize,
    pub protect_recent_turns: usize,
    /// Whether the agent's tool loop is decided at first sight: assistant messages followed by a tool call before
    /// the next user message, and outputs of tools other than functions. In an agent session one user turn spans
    /// the whole task, so the live zone's `protect_recent_turns` would otherwise keep all of them verbatim.
    pub agent_steps: bool,
    /// Whether the agent's notes (an assistant message on its way to a tool call) keep only a short head and tail
    /// when compressed, instead of the plain-lines selection every other text gets. See [`crate::ctxzip::Options::notes`].
    pub agent_notes: bool,
    pub exclude_tools: Vec<String>,
    pub keep_patterns: Vec<String>,
    pub code: bool,
    pub user_messages: bool,
    pub ttl: Duration,
    pub failures: Failures,
    pub min_item_saved_tokens: u64,
    /// Outputs at least this long that repeat runs of an earlier output's lines point back to it (0: never).
    pub min_repeat_chars: usize,
    /// See [`DEFAULT_MIN_SAVED_PREFIX_PERCENT`].
    pub min_saved_prefix_percent: u64,
}

impl Default for CompressSettings {
    fn default() -> Self {
        CompressSettings {
            enabled: true,
            min_tool_output_chars: DEFAULT_MIN_TOOL_OUTPUT_CHARS,
            min_saved_tokens: DEFAULT_MIN_SAVED_TOKENS,
            protect_recent: 0,
            protect_recent_turns: DEFAULT_PROTECT_RECENT_TURNS,
            agent_steps: true,
            agent_notes: true,
            exclude_tools: Vec::new(),
            keep_patterns: Vec::new(),
            code: false,
            user_messages: false,
            ttl: Duration::from_secs(DEFAULT_TTL_SECS),
            failures: Failures::Regions,
            min_item_saved_tokens: DEFAULT_MIN_ITEM_SAVED_TOKENS,
            min_repeat_chars: DEFAULT_MIN_REPEAT_CHARS,
            min_saved_prefix_percent: DEFAULT_MIN_SAVED_PREFIX_PERCENT,
        }
    }
}

fn size(key: &str, v: Option<u64>, default: usize) -> Result<usize, ConfigError> {
    v.map_or(Ok(default), |n| {
        usize::try_from(n).map_err(|_| ConfigError::Invalid {
            key: format!("compress.{key}"),
            message: "too large".into(),
        })
    })
}

pub fn resolve(raw: RawCompress) -> Result<CompressSettings, ConfigError> {
    let d = CompressSettings::default();
    let ttl_secs = raw.ttl_secs.unwrap_or(DEFAULT_TTL_SECS);
    if ttl_secs == 0 {
        return Err(ConfigError::Invalid {
            key: "compress.ttl_secs".into(),
            message: "must be positive: an original must outlive the request carrying its marker"
                .into(),
        });
    }
    let failures = match raw.failures.as_deref() {
        None | Some("regions") => Failures::Regions,
        Some("verbatim") => Failures::Verbatim,
        Some(other) => {
            return Err(ConfigError::Invalid {
                key: "compress.failures".into(),
                message: format!("{other:?}: expected regions or verbatim"),
            });
        }
    };
    Ok(CompressSettings {
        failures,
        min_item_saved_tokens: raw.min_item_saved_tokens.unwrap_or(d.min_item_saved_tokens),
        min_repeat_chars: size("min_repeat_chars", raw.min_repeat_chars, d.min_repeat_chars)?,
        min_saved_prefix_percent: raw
            .min_saved_prefix_percent
            .unwrap_or(d.min_saved_prefix_percent),
        enabled: raw.enabled.unwrap_or(d.enabled),
        min_tool_output_chars: size(
            "min_tool_output_chars",
            raw.min_tool_output_chars,
            d.min_tool_output_chars,
        )?
        .max(1),
        min_saved_tokens: raw.min_saved_tokens.unwrap_or(d.min_saved_tokens),
        protect_recent: size("protect_recent", raw.protect_recent, d.protect_recent)?,
        protect_recent_turns: size(
            "protect_recent_turns",
            raw.protect_recent_turns,
            d.protect_recent_turns,
        )?,
        agent_steps: raw.agent_steps.unwrap_or(d.agent_steps),
        agent_notes: raw.agent_notes.unwrap_or(d.agent_notes),
        exclude_tools: raw.exclude_tools.unwrap_or_default(),
        keep_patterns: raw
            .keep_patterns
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .collect(),
        code: raw.code.unwrap_or(d.code),
        user_messages: raw.user_messages.unwrap_or(d.user_messages),
        ttl: Duration::from_secs(ttl_secs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_and_item_threshold_resolve_with_clear_errors() {
        let d = resolve(RawCompress::default());
        assert!(
            matches!(d, Ok(ref s) if s.failures == Failures::Regions && s.min_item_saved_tokens == DEFAULT_MIN_ITEM_SAVED_TOKENS)
        );
        let verbatim = resolve(RawCompress {
            failures: Some("verbatim".into()),
            min_item_saved_tokens: Some(10),
            min_repeat_chars: Some(0),
            ..RawCompress::default()
        });
        assert!(
            matches!(verbatim, Ok(ref s) if s.failures == Failures::Verbatim && s.min_item_saved_tokens == 10 && s.min_repeat_chars == 0)
        );
        assert!(matches!(d, Ok(ref s) if s.min_repeat_chars == DEFAULT_MIN_REPEAT_CHARS));
        let bad = resolve(RawCompress {
            failures: Some("drop".into()),
            ..RawCompress::default()
        });
        assert!(
            matches!(bad, Err(ConfigError::Invalid { ref key, ref message }) if key == "compress.failures" && message.contains("regions"))
        );
    }
}

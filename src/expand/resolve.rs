//! From the model's `context_expand` arguments to one stored original's hash.
//!
//! In the request path, when the upstream answers with a `context_expand` call the proxy parses its
//! `arguments` string ([`ExpandArgs::parse`]), [`normalize`]s the hash the model typed (models copy the
//! whole marker, change case, add quotes or keep the note), asks the store for an exact key or a prefix scan
//! ([`lookup_plan`]), and picks the result ([`choose`]). Whatever goes wrong becomes a short tool output
//! the model can act on ([`miss_text`], [`ambiguous_text`], [`bad_args_text`], [`invalid_hash_text`]): a
//! failed expansion never fails the turn.

use std::fmt;

use serde_json::{Map, Value};

use super::tool::EXPAND_TOOL;

/// Hex characters of a full marker hash (the store key).
pub const HASH_LEN: usize = 12;
/// Shortest prefix we look up: shorter ones would match too many originals to be useful (and invite guessing).
pub const MIN_PREFIX: usize = 6;
/// How much of a bad argument we echo back: enough to recognise it, never a flood.
const ECHO_MAX: usize = 80;
/// How many ambiguous candidates we list.
const LIST_MAX: usize = 10;

/// The arguments of one `context_expand` call, after tolerant parsing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExpandArgs {
    /// What the model gave as the hash, untouched; see [`normalize`].
    pub hash: String,
    /// Words to filter lines by; `None` when absent, null or blank.
    pub query: Option<String>,
    /// Start of the window, in characters (with a query: matching lines to skip).
    pub offset: Option<usize>,
    /// Largest window wanted, in characters.
    pub limit: Option<usize>,
}

/// Why the arguments could not be used. Its `Display` is written for the model, which must fix its call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsError {
    /// The arguments were not JSON at all.
    NotJson(String),
    /// JSON, but neither an object nor a string.
    NotObject,
    /// No usable `hash` field.
    MissingHash,
    /// A field had an unusable value.
    BadField { field: &'static str, reason: String },
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson(err) => write!(f, "the arguments are not valid JSON ({err})"),
            Self::NotObject => f.write_str("the arguments must be a JSON object"),
            Self::MissingHash => f.write_str("the \"hash\" field is missing or empty"),
            Self::BadField { field, reason } => write!(f, "\"{field}\" {reason}"),
        }
    }
}

impl std::error::Error for ArgsError {}

impl ExpandArgs {
    /// Parses a function call's `arguments` string.
    ///
    /// Tolerant because models are sloppy and a retry costs a round trip: numbers may come as strings or as
    /// integral floats, null or blank optional fields count as absent, unknown fields are ignored, arguments
    /// double-encoded as a JSON string are decoded once, and a bare JSON string is taken as the hash.
    /// Negative or fractional numbers and a missing hash are errors with a message the model can act on.
    pub fn parse(arguments_json: &str) -> Result<ExpandArgs, ArgsError> {
        if arguments_json.trim().is_empty() {
            return Err(ArgsError::MissingHash);
        }
        let value: Value =
            serde_json::from_str(arguments_json).map_err(|e| ArgsError::NotJson(e.to_string()))?;
        match value {
            Value::Object(map) => Self::from_map(&map),
            Value::String(s) => match serde_json::from_str::<Value>(&s) {
                Ok(Value::Object(map)) => Self::from_map(&map),
                _ if s.trim().is_empty() => Err(ArgsError::MissingHash),
                _ => Ok(ExpandArgs {
                    hash: s,
                    ..ExpandArgs::default()
                }),
            },
            _ => Err(ArgsError::NotObject),
        }
    }

    fn from_map(map: &Map<String, Value>) -> Result<ExpandArgs, ArgsError> {
        let hash = match map.get("hash") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(_) | Value::Null) | None => return Err(ArgsError::MissingHash),
            Some(_) => return Err(bad("hash", "must be a string such as \"3f9a0c21b7e4\"")),
        };
        let query = match map.get("query") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(_) => return Err(bad("query", "must be a string of words")),
        };
        Ok(ExpandArgs {
            hash,
            query,
            offset: count(map.get("offset"), "offset")?,
            limit: count(map.get("limit"), "limit")?,
        })
    }
}

fn bad(field: &'static str, reason: &str) -> ArgsError {
    ArgsError::BadField {
        field,
        reason: reason.to_owned(),
    }
}

/// A non-negative integer field; strings and integral floats accepted, huge values saturate.
fn count(value: Option<&Value>, field: &'static str) -> Result<Option<usize>, ArgsError> {
    let number = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => match s.trim().parse::<f64>() {
            Ok(f) => f,
            Err(_) => {
                return Err(bad(
                    field,
                    &format!("must be a whole number, got {}", echo(s)),
                ));
            }
        },
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(u), _) => return Ok(Some(usize::try_from(u).unwrap_or(usize::MAX))),
            (None, Some(f)) => f,
            (None, None) => return Err(bad(field, "must be a whole number")),
        },
        Some(_) => return Err(bad(field, "must be a whole number")),
    };
    if number.is_nan() || number.fract() != 0.0 {
        return Err(bad(field, &format!("must be a whole number, got {number}")));
    }
    if number < 0.0 {
        return Err(bad(field, &format!("must be 0 or more, got {number}")));
    }
    // Saturating float-to-int cast: anything past usize::MAX becomes usize::MAX.
    Ok(Some(number as usize))
}

/// The hash candidate in whatever the model typed: lowercase hex, 6 to 12 characters.
///
/// Accepts the bare hash, the whole marker `<<ctxzip:HASH NOTE>>`, the hash followed by its note, a `ctxzip:`
/// prefix, any case, and surrounding quotes or whitespace. A hex run longer than 12 (up to a full SHA-256) is
/// cut to 12. Preference: the run right after `ctxzip:`, then the first whole word that is hex and at least 12
/// long, then the first whole hex word of at least 6, then any hex run of at least 6. `None` when there is none.
pub fn normalize(hash_arg: &str) -> Option<String> {
    let text = hash_arg
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`') || c.is_whitespace());
    let lower = text.to_ascii_lowercase();
    let after_prefix = lower
        .find("ctxzip:")
        .map(|at| leading_hex(lower[at + 7..].trim_start()));
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let whole_hex = |min: usize| {
        words
            .iter()
            .copied()
            .find(|w| w.len() >= min && w.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let found = after_prefix
        .filter(|run| run.len() >= MIN_PREFIX)
        .or_else(|| whole_hex(HASH_LEN))
        .or_else(|| whole_hex(MIN_PREFIX))
        .or_else(|| {
            lower
                .split(|c: char| !c.is_ascii_hexdigit())
                .find(|run| run.len() >= MIN_PREFIX)
        })?;
    // Longer runs (a full 64-character SHA-256, or anything longer) are cut to the key length.
    Some(found[..found.len().min(HASH_LEN)].to_owned())
}

fn leading_hex(text: &str) -> &str {
    let end = text
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(text.len());
    &text[..end]
}

/// How the store is asked for a normalized hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A full 12-character key: one point read.
    Exact(String),
    /// A shorter prefix: scan this tenant's keys that start with it, then [`choose`].
    Prefix(String),
}

/// Exact read for a full hash, prefix scan for 6 to 11 characters. Expects [`normalize`]'s output; anything
/// longer than a key is cut to one, and a too-short prefix is left for [`choose`] to refuse.
pub fn lookup_plan(normalized: &str) -> Lookup {
    let key = normalized.to_ascii_lowercase();
    if key.len() >= HASH_LEN && key.is_char_boundary(HASH_LEN) {
        Lookup::Exact(key[..HASH_LEN].to_owned())
    } else {
        Lookup::Prefix(key)
    }
}

/// What a prefix scan came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Exactly one original starts with the prefix.
    Unique(String),
    /// Several do; sorted, without duplicates.
    Ambiguous(Vec<String>),
    /// None does (or the prefix is shorter than [`MIN_PREFIX`]).
    Missing,
}

/// Picks among the hashes the store returned for a prefix. The store's answer is filtered again (case-insensitive
/// `starts_with`, deduplicated) so a sloppy scan cannot hand out an original that was not asked for.
pub fn choose(prefix: &str, candidates: &[String]) -> Resolution {
    let prefix = prefix.to_ascii_lowercase();
    if prefix.len() < MIN_PREFIX {
        return Resolution::Missing;
    }
    let mut hits: Vec<String> = candidates
        .iter()
        .map(|c| c.to_ascii_lowercase())
        .filter(|c| c.starts_with(&prefix))
        .collect();
    hits.sort();
    hits.dedup();
    match hits.len() {
        0 => Resolution::Missing,
        1 => hits.pop().map_or(Resolution::Missing, Resolution::Unique),
        _ => Resolution::Ambiguous(hits),
    }
}

/// Tool output for a hash with no stored original. The store forgets after its TTL, and the model may have
/// mistyped; either way re-running the producing tool is the one reliable way back.
pub fn miss_text(hash_arg: &str) -> String {
    format!(
        "{EXPAND_TOOL}: no stored original for {}. It has expired or never existed. Re-run the tool that \
         produced the output to get the full content again.",
        echo(hash_arg)
    )
}

/// Tool output for a prefix that matches several originals: list them so the model can pick.
pub fn ambiguous_text(prefix: &str, candidates: &[String]) -> String {
    let shown: Vec<&str> = candidates
        .iter()
        .take(LIST_MAX)
        .map(String::as_str)
        .collect();
    let more = candidates.len().saturating_sub(LIST_MAX);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "{EXPAND_TOOL}: the prefix {} matches {} stored originals: {}{tail}. Call again with the full \
         12-character hash from the marker.",
        echo(prefix),
        candidates.len(),
        shown.join(", ")
    )
}

/// Tool output for unusable arguments: what was wrong and what a good call looks like.
pub fn bad_args_text(err: &ArgsError) -> String {
    format!(
        "{EXPAND_TOOL}: invalid arguments: {err}. Expected {{\"hash\": \"<12 hex characters from the \
         marker>\"}}, optionally with \"query\" (string), \"offset\" (integer >= 0) and \"limit\" (integer >= 1)."
    )
}

/// Tool output for a hash argument without 6 consecutive hex characters.
pub fn invalid_hash_text(hash_arg: &str) -> String {
    format!(
        "{EXPAND_TOOL}: {} is not a marker hash. Pass the 12 hex characters after \"ctxzip:\" in a marker \
         like <<ctxzip:HASH NOTE>> (a unique prefix of at least {MIN_PREFIX} characters also works).",
        echo(hash_arg)
    )
}

/// Quotes a model-supplied string for an error message, cut to [`ECHO_MAX`] characters.
fn echo(text: &str) -> String {
    let cut: String = text.chars().take(ECHO_MAX).collect();
    let suffix = if cut.len() < text.len() { "…" } else { "" };
    format!("{}{suffix}", Value::String(cut))
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;

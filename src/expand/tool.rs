//! The `context_expand` tool definition and the directive that explains markers to the model.
//!
//! In the request path, once the proxy sees a `<<ctxzip:HASH NOTE>>` marker in a request's input it adds
//! [`tool_definition`] beside the client's own tools and appends [`DIRECTIVE`] to `instructions`
//! ([`append_directive`]). Both are constant text with a fixed key order: provider prompt caches key on the exact
//! prefix bytes, so what we add must be byte-identical on every turn.

use serde_json::{Value, json};

/// Name of the tool the proxy answers itself; a call to any other tool goes back to the client.
pub const EXPAND_TOOL: &str = "context_expand";

/// What the model reads to decide when and how to call the tool. Kept in one constant so it never drifts.
const TOOL_DESCRIPTION: &str = "Get back text that this conversation shows shortened. A marker \
<<ctxzip:HASH NOTE>> stands where lines were removed (NOTE says how many); pass its HASH. Long originals come back \
one window at a time; the last line says how to get the next.";

const HASH_DESCRIPTION: &str = "The marker's 12 hex characters (the whole marker, or a unique prefix of 6 or more, \
also works).";

const QUERY_DESCRIPTION: &str = "Optional words: only lines containing any of them (case-insensitive) come back, \
with a little context. Quote a phrase to match it exactly.";

const OFFSET_DESCRIPTION: &str =
    "Optional: where to start, in characters (with `query`: matching lines to skip).";

const LIMIT_DESCRIPTION: &str =
    "Optional: at most this many characters (default and maximum 16000).";

/// The directive appended to `instructions` when the input carries a marker. Constant, so the instructions stay
/// byte-stable across turns; short, because it rides along in every request of the conversation and its cost (with
/// the tool's) is what the first markers of a conversation must save ([`crate::config::compress::DEFAULT_MIN_SAVED_TOKENS`]).
pub const DIRECTIVE: &str = "## Offloaded context\n\
Some long outputs here were shortened: a marker <<ctxzip:HASH NOTE>> stands where text was removed, and what is \
shown keeps the errors and representative lines. If you need removed text, call context_expand with the marker's \
HASH (add a query to get only matching lines). If it says the content expired, run again the tool that produced it.";

/// The `context_expand` function tool in Responses API shape.
///
/// The tool definition, built once: every turn that offers the tool appends these same bytes.
pub fn tool_value() -> &'static Value {
    static TOOL: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    TOOL.get_or_init(tool_definition)
}

/// The tool definition encoded as JSON, once: appending it to a request's `tools` copies these bytes instead of
/// serializing the value on every turn.
pub fn tool_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| serde_json::to_vec(tool_value()).unwrap_or_default())
}

/// Built from constants with `json!` under `preserve_order`, so its serialization is identical on every call.
/// `strict` is false because `query`, `offset` and `limit` are optional, which strict mode does not allow
/// without nullable types.
pub fn tool_definition() -> Value {
    json!({
        "type": "function",
        "name": EXPAND_TOOL,
        "description": TOOL_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {
                "hash": {"type": "string", "description": HASH_DESCRIPTION},
                "query": {"type": "string", "description": QUERY_DESCRIPTION},
                "offset": {"type": "integer", "minimum": 0, "description": OFFSET_DESCRIPTION},
                "limit": {"type": "integer", "minimum": 1, "description": LIMIT_DESCRIPTION}
            },
            "required": ["hash"],
            "additionalProperties": false
        },
        "strict": false
    })
}

/// Existing instructions, a blank line, then [`DIRECTIVE`]; just the directive when there are none.
///
/// Idempotent: instructions that already contain the directive (a client replaying the rewritten body, or a
/// second pass in the expand loop) come back unchanged, so the directive never appears twice.
pub fn append_directive(instructions: Option<&str>) -> String {
    match instructions {
        None => DIRECTIVE.to_owned(),
        Some(text) if text.trim().is_empty() => DIRECTIVE.to_owned(),
        Some(text) if text.contains(DIRECTIVE) => text.to_owned(),
        Some(text) => format!("{text}\n\n{DIRECTIVE}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_has_the_responses_shape() {
        let def = tool_definition();
        assert_eq!(def["type"], "function");
        assert_eq!(def["name"], EXPAND_TOOL);
        assert_eq!(def["strict"], false);
        let params = &def["parameters"];
        assert_eq!(params["type"], "object");
        assert_eq!(params["required"], json!(["hash"]));
        assert_eq!(params["additionalProperties"], false);
        for (key, ty) in [
            ("hash", "string"),
            ("query", "string"),
            ("offset", "integer"),
            ("limit", "integer"),
        ] {
            assert_eq!(params["properties"][key]["type"], ty, "{key}");
            assert!(
                params["properties"][key]["description"].is_string(),
                "{key}"
            );
        }
        let keys: Vec<&String> = def
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            ["type", "name", "description", "parameters", "strict"]
        );
    }

    #[test]
    fn definition_is_byte_identical_every_call() {
        let first = serde_json::to_string(&tool_definition()).unwrap_or_default();
        assert!(!first.is_empty());
        for _ in 0..5 {
            assert_eq!(
                serde_json::to_string(&tool_definition()).unwrap_or_default(),
                first
            );
        }
        let props = r#""properties":{"hash":"#;
        assert!(first.contains(props));
        let order = ["\"hash\":{", "\"query\":{", "\"offset\":{", "\"limit\":{"];
        let positions: Vec<usize> = order.iter().filter_map(|k| first.find(k)).collect();
        assert_eq!(positions.len(), 4);
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn directive_names_the_tool_and_the_marker() {
        assert!(DIRECTIVE.contains(EXPAND_TOOL));
        assert!(DIRECTIVE.contains("<<ctxzip:HASH NOTE>>"));
        assert!(DIRECTIVE.contains("expired"));
        assert!(DIRECTIVE.len() < 800);
    }

    /// The first markers of a conversation must save what the tool and directive they bring cost, counted the way
    /// the threshold counts savings; the threshold stays close, so small first savings are not refused for nothing.
    #[test]
    fn the_first_marker_threshold_pays_for_the_tool_and_directive() {
        let cost = crate::ctxzip::estimate_tokens(&String::from_utf8_lossy(tool_bytes()))
            + crate::ctxzip::estimate_tokens(&format!("\n\n{DIRECTIVE}"));
        let threshold = crate::config::compress::DEFAULT_MIN_SAVED_TOKENS as usize;
        assert!(cost <= threshold, "tool and directive {cost} > {threshold}");
        assert!(
            threshold - cost < 64,
            "threshold {threshold} far above the cost {cost}"
        );
    }

    #[test]
    fn append_directive_to_nothing() {
        assert_eq!(append_directive(None), DIRECTIVE);
        assert_eq!(append_directive(Some("")), DIRECTIVE);
        assert_eq!(append_directive(Some("  \n")), DIRECTIVE);
    }

    #[test]
    fn append_directive_after_existing_text() {
        let out = append_directive(Some("Be brief."));
        assert_eq!(out, format!("Be brief.\n\n{DIRECTIVE}"));
    }

    #[test]
    fn append_directive_is_idempotent() {
        let once = append_directive(Some("Be brief."));
        assert_eq!(append_directive(Some(&once)), once);
        let bare = append_directive(None);
        assert_eq!(append_directive(Some(&bare)), bare);
    }
}

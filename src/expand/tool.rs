//! The `context_expand` tool definition and the directive that explains markers to the model.
//!
//! In the request path, once the proxy sees a `<<ctxzip:HASH NOTE>>` marker in a request's input it adds
//! [`tool_definition`] beside the client's own tools and appends [`DIRECTIVE`] to `instructions`
//! ([`append_directive`]). Both are constant text with a fixed key order: provider prompt caches key on the exact
//! prefix bytes, so what we add must be byte-identical on every turn.

use bytes::Bytes;
use serde_json::{Value, json};

/// Name of the tool the proxy answers itself; a call to any other tool goes back to the client.
pub const EXPAND_TOOL: &str = "context_expand";

/// What the model reads to decide when and how to call the tool. Kept in one constant so it never drifts.
const TOOL_DESCRIPTION: &str =
    "Return the text a <<ctxzip:HASH NOTE>> marker stands for, one window at a time.";

const HASH_DESCRIPTION: &str = "The marker's HASH.";

const QUERY_DESCRIPTION: &str = "Optional: only lines with one of these words, and their context.";

const OFFSET_DESCRIPTION: &str = "Optional: characters (with query: matching lines) to skip.";

const LIMIT_DESCRIPTION: &str = "Optional: at most this many characters (maximum 16000).";

/// The directive appended to `instructions` when the input carries a marker. Constant, so the instructions stay
/// byte-stable across turns; short, because it rides along in every request of the conversation and its cost (with
/// the tool's) is what the first markers of a conversation must save ([`crate::config::compress::DEFAULT_MIN_SAVED_TOKENS`]).
pub const DIRECTIVE: &str = "## Offloaded context\n\
A marker <<ctxzip:HASH NOTE>> stands where text was cut from a long output; errors and representative lines are \
kept. To see cut text, call context_expand with the HASH. If it has expired, run the tool again.";

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
                "offset": {"type": "integer", "description": OFFSET_DESCRIPTION},
                "limit": {"type": "integer", "description": LIMIT_DESCRIPTION}
            },
            "required": ["hash"],
            "additionalProperties": false
        },
        "strict": false
    })
}

/// How a request's `instructions` get the directive ([`splice_directive`]).
#[derive(Debug, PartialEq, Eq)]
pub enum DirectiveSplice {
    /// They already carry it: left as they are.
    Keep,
    /// The new member, encoded.
    Set(Bytes),
    /// Bytes the splice does not follow (escaped non-ASCII, nothing but whitespace, not a string): decode them
    /// and use [`append_directive`].
    Decode,
}

/// [`append_directive`] on the encoded member (`None`: absent), without decoding and encoding the client's text
/// again: an agent's instructions run to tens of KB, and every turn that offers the tool carries them. The
/// client's bytes are kept and the directive's encoding appended inside the closing quote, which is what encoding
/// the joined text gives wherever the client encoded as serde does; where it may not (a `\u` escape, which could
/// also spell the directive), the caller decodes.
pub fn splice_directive(encoded: Option<&[u8]>) -> DirectiveSplice {
    static ALONE: std::sync::OnceLock<Bytes> = std::sync::OnceLock::new();
    static INNER: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let alone = || {
        ALONE
            .get_or_init(|| Bytes::from(json_string(DIRECTIVE)))
            .clone()
    };
    let raw = match encoded {
        None | Some(b"null") => return DirectiveSplice::Set(alone()),
        Some(raw) => raw,
    };
    let Some(inner) = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")) else {
        return DirectiveSplice::Decode;
    };
    if memchr::memmem::find(inner, b"\\u").is_some() || !has_graphic(inner) {
        return DirectiveSplice::Decode;
    }
    let directive = INNER.get_or_init(|| {
        let quoted = json_string(DIRECTIVE);
        quoted[1..quoted.len() - 1].to_vec()
    });
    if memchr::memmem::find(inner, directive).is_some() {
        return DirectiveSplice::Keep;
    }
    let mut out = Vec::with_capacity(raw.len() + directive.len() + 6);
    out.extend_from_slice(&raw[..raw.len() - 1]);
    out.extend_from_slice(b"\\n\\n");
    out.extend_from_slice(directive);
    out.push(b'"');
    DirectiveSplice::Set(Bytes::from(out))
}

/// Whether an encoded string (between its quotes) certainly holds a character that is not whitespace: a printable
/// ASCII character, or an escaped quote, backslash or slash. Then [`append_directive`] keeps the text.
fn has_graphic(inner: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&b) = inner.get(i) {
        match b {
            b'\\' => {
                if matches!(inner.get(i + 1), Some(b'"' | b'\\' | b'/')) {
                    return true;
                }
                i += 2;
            }
            b if b.is_ascii_graphic() => return true,
            _ => i += 1,
        }
    }
    false
}

/// `text` encoded as a JSON string, quotes included.
fn json_string(text: &str) -> Vec<u8> {
    serde_json::to_vec(text).unwrap_or_default()
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

    /// The splice gives the bytes encoding the joined text gives, for instructions encoded as serde encodes them,
    /// and leaves to decoding what it cannot tell.
    #[test]
    fn the_directive_is_spliced_as_encoding_the_joined_text_would_write_it() {
        let encoded = |text: &str| serde_json::to_vec(text).unwrap_or_default();
        let joined = |text: Option<&str>| encoded(&append_directive(text));
        let long = "You are a coding agent. ".repeat(2000);
        let cases = [
            "Be brief.",
            "Line one\nline \"two\"\twith a tab and a backslash \\ at the end\\",
            "Ünïcödé and emoji 🦀, kept as UTF-8",
            long.as_str(),
        ];
        for text in cases {
            let spliced = splice_directive(Some(&encoded(text)));
            assert_eq!(
                spliced,
                DirectiveSplice::Set(Bytes::from(joined(Some(text)))),
                "{text:.40}"
            );
        }
        for absent in [None, Some(&b"null"[..])] {
            assert_eq!(
                splice_directive(absent),
                DirectiveSplice::Set(Bytes::from(joined(None)))
            );
        }
        // Instructions that already end with the directive (a client replaying a rewritten body) stay as they are.
        assert_eq!(
            splice_directive(Some(&joined(Some("Be brief.")))),
            DirectiveSplice::Keep
        );
        // What the splice cannot judge by bytes is decoded: a \u escape (which may spell the directive), text with
        // no letter or digit (whitespace gives the directive alone), anything but a string.
        let undecided: [&[u8]; 5] = [
            br#""caf\u00e9""#,
            br#"" \n ""#,
            br#""""#,
            b"42",
            br#"{"a":1}"#,
        ];
        for raw in undecided {
            assert_eq!(
                splice_directive(Some(raw)),
                DirectiveSplice::Decode,
                "{raw:?}"
            );
        }
    }

    /// Text made of the characters a splice could get wrong: escapes, whitespace of every kind, non-ASCII, the
    /// directive itself.
    fn tricky_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("a".to_string()),
            Just(" ".to_string()),
            Just("\n".to_string()),
            Just("\t".to_string()),
            Just("\r".to_string()),
            Just("\\".to_string()),
            Just("\"".to_string()),
            Just("/".to_string()),
            Just("\u{1}".to_string()),
            Just("\u{a0}".to_string()),
            Just("\u{3000}".to_string()),
            Just("é".to_string()),
            Just("🦀".to_string()),
            Just("#".to_string()),
            Just(DIRECTIVE.to_string()),
            Just(DIRECTIVE[..20].to_string()),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Whatever the client's instructions and however it encoded them (as serde does, or with `/` escaped as
        /// `\/`, which JSON allows), the spliced member decodes to what decoding and appending would give; where
        /// the splice keeps the bytes, appending would have kept the text too.
        #[test]
        fn a_spliced_directive_decodes_to_the_appended_text(
            text in tricky_text(),
            slash_escaped in proptest::prelude::any::<bool>(),
        ) {
            let mut encoded = serde_json::to_string(&text).unwrap_or_default();
            if slash_escaped {
                encoded = encoded.replace('/', "\\/");
            }
            let want = append_directive(Some(&text));
            match splice_directive(Some(encoded.as_bytes())) {
                DirectiveSplice::Set(bytes) => {
                    let got: String = serde_json::from_slice(&bytes).unwrap_or_default();
                    proptest::prop_assert_eq!(got, want);
                }
                DirectiveSplice::Keep => proptest::prop_assert_eq!(text, want),
                DirectiveSplice::Decode => {}
            }
        }
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

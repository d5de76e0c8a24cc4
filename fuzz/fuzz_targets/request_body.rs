//! The request body view faces every byte a client sends: it must never panic, and what it does not rewrite
//! must come back byte for byte. A body the proxy offers `context_expand` gets the tool appended to `tools` and the
//! directive spliced into its encoded `instructions` (the inject stage's edits, made on the bytes): the result must
//! still be JSON, its `instructions` what decoding and appending would give, everything else as it was.
#![no_main]

use bytes::Bytes;
use ctxgate::expand::tool::{EXPAND_TOOL, append_directive};
use ctxgate::responses::RequestBody;
use ctxgate::turn::expand::inject::offer_tool;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let original = Bytes::copy_from_slice(data);
    let Ok(body) = RequestBody::parse(original.clone()) else {
        return;
    };
    // Nothing rewritten: the client's exact bytes.
    assert_eq!(body.to_bytes(), original);
    let _ = body
        .items()
        .map(|items| items.iter().map(|i| i.json_len()).sum::<usize>());
    let _ = body.get_str("prompt_cache_key");
    offer_the_tool(&original);
});

/// The inject stage's edits ([`offer_tool`]), then what must hold of the bytes they give.
fn offer_the_tool(original: &Bytes) {
    let Ok(mut body) = RequestBody::parse(original.clone()) else {
        return;
    };
    let Ok(Value::Object(before)) = serde_json::from_slice::<Value>(original) else {
        return;
    };
    // A body that names a member twice is refused (readers disagree on which copy counts), so every key here is
    // read the same way by serde.
    if let Ok(Keys(keys)) = serde_json::from_slice::<Keys>(original) {
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "a parsed body names a member twice");
    }
    if !offer_tool(&mut body) {
        return;
    }
    let rewritten = body.to_bytes();
    let after: Value = match serde_json::from_slice(&rewritten) {
        Ok(Value::Object(after)) => Value::Object(after),
        other => panic!("the rewritten body is not a JSON object: {other:?}"),
    };
    let tools = after.get("tools").and_then(Value::as_array);
    assert!(tools.is_some_and(|t| {
        t.iter()
            .any(|t| t.get("name").and_then(Value::as_str) == Some(EXPAND_TOOL))
    }));
    // A string (or absent, or null) gets the directive appended; anything else was replaced by the directive alone,
    // as decoding reads it as no text.
    let text = match before.get("instructions") {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    };
    assert_eq!(
        after.get("instructions").and_then(Value::as_str),
        Some(append_directive(text).as_str())
    );
    for (key, value) in &before {
        if key != "tools" && key != "instructions" {
            assert_eq!(after.get(key), Some(value), "{key}");
        }
    }
}

/// The top-level keys of a JSON object, in order, repeats included.
struct Keys(Vec<String>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                    keys.push(key);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(Visit)
    }
}

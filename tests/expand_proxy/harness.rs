//! The expand tests' own harness: a conversation whose tool output is compressed (so it carries a marker).

use super::common::*;
use serde_json::{Value, json};

/// A conversation whose tool output will be compressed (so the input carries a marker).
pub fn conversation(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "stream": stream,
        "prompt_cache_key": "expand-thread",
        "tools": [{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}],
        "input": [
            {"role":"user","content":"What failed in the build?"},
            {"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"cargo build -vv\"}"},
            {"type":"function_call_output","call_id":"c1","output": corpus("cargo_build_vv.log")}
        ]
    })
}

pub async fn post(proxy: &Proxy, body: &Value, key: &str) -> reqwest::Response {
    post_responses(proxy, body, key).await
}

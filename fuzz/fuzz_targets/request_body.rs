//! The request body view faces every byte a client sends: it must never panic, and what it does not rewrite
//! must come back byte for byte.
#![no_main]

use bytes::Bytes;
use ctxgate::responses::RequestBody;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let original = Bytes::copy_from_slice(data);
    if let Ok(body) = RequestBody::parse(original.clone()) {
        // Nothing rewritten: the client's exact bytes.
        assert_eq!(body.to_bytes(), original);
        let _ = body.items().map(|items| items.iter().map(|i| i.json_len()).sum::<usize>());
        let _ = body.get_str("prompt_cache_key");
    }
});

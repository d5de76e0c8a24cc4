//! Every compressor, on any text: no panic, the error floor holds, every marker names the original, the result
//! is smaller, and compressing the result again changes nothing.
#![no_main]

use ctxgate::ctxzip::{Options, compress, find_markers, hash_of, keeps_floor};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first byte picks options, so query and keep-pattern paths are explored too.
    let opts = Options {
        query: if data.first().is_some_and(|b| b & 1 == 1) {
            vec!["error".into(), "test".into()]
        } else {
            Vec::new()
        },
        keep_patterns: if data.first().is_some_and(|b| b & 2 == 2) {
            vec!["TODO".into()]
        } else {
            Vec::new()
        },
        compress_code: data.first().is_some_and(|b| b & 4 == 4),
        notes: data.first().is_some_and(|b| b & 8 == 8),
        viewed_source: data.first().is_some_and(|b| b & 16 == 16),
        fetched: data.first().is_some_and(|b| b & 32 == 32),
    };
    let Some(c) = compress(text, &opts) else {
        return;
    };
    assert!(c.text.len() < text.len());
    assert!(keeps_floor(text, &c.text), "error floor broken");
    let hash = hash_of(text);
    let markers = find_markers(&c.text);
    assert!(!markers.is_empty() && markers.iter().all(|(h, _)| *h == hash));
    assert_eq!(compress(text, &opts), Some(c.clone()), "not deterministic");
    assert_eq!(compress(&c.text, &opts), None);
});

//! An output compressed in the context of an earlier one it may repeat: any two texts (split at the first NUL
//! byte) give no panic, a result that keeps the error floor, names only the new text's hash, is smaller, and is
//! the same when asked again.
#![no_main]

use ctxgate::ctxzip::repeats::{Earlier, Seen, find};
use ctxgate::ctxzip::{Options, compress_in_context, find_markers, hash_of, keeps_floor};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some((earlier, new)) = text.split_once('\0') else {
        return;
    };
    let opts = Options {
        keep_patterns: if new.len() % 2 == 1 {
            vec!["TODO".into()]
        } else {
            Vec::new()
        },
        ..Options::default()
    };
    let seen = Seen::new(vec![Earlier {
        ordinal: 0,
        label: "call_1",
        text: earlier,
    }]);
    let repeats = find(new, 1, &seen, &opts);
    let by_kind = new.len() % 3 == 0;
    let Some(c) = compress_in_context((new, &hash_of(new)), &opts, by_kind, repeats.as_ref().map(|r| (r, &seen)))
    else {
        return;
    };
    assert!(c.text.len() < new.len());
    assert!(keeps_floor(new, &c.text), "error floor broken");
    let hash = hash_of(new);
    let markers = find_markers(&c.text);
    assert!(!markers.is_empty() && markers.iter().all(|(h, _)| *h == hash));
    let again = compress_in_context((new, &hash_of(new)), &opts, by_kind, repeats.as_ref().map(|r| (r, &seen)));
    assert_eq!(again, Some(c), "not deterministic");
});

//! Always reversible through the store: whatever ctxzip compresses, the original stored under the marker's hash (as
//! the compress stage stores it, in the real redb file) comes back byte for byte.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use ctxgate::ctxzip::{self, Options};
use ctxgate::store::records::{OriginalMeta, RECORD_VERSION, decode_original, encode_original};
use ctxgate::store::redb::RedbStore;
use ctxgate::store::{Namespace, Record, Store};
use proptest::prelude::*;

fn lines() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[ -~]{0,80}",
        "error: [a-z ]{1,40}",
        "\\PC{0,60}",
        Just("   Compiling crate v0.1.0".to_string()),
    ];
    prop::collection::vec(line, 50..400).prop_map(|v| v.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn every_marker_expands_to_the_original_through_the_store(text in lines()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
        if let Some(c) = ctxzip::compress(&text, &Options::default()) {
            prop_assert!(c.text.len() < text.len());
            let meta = OriginalMeta { v: RECORD_VERSION, ..OriginalMeta::default() };
            rt.block_on(store.put(
                Namespace::Originals,
                "t",
                &c.hash,
                Record { value: encode_original(&meta, &text), created_at: 0, expires_at: None },
            ))
            .unwrap();
            for (hash, _) in ctxzip::find_markers(&c.text) {
                let record = rt.block_on(store.get(Namespace::Originals, "t", &hash, 0)).unwrap().unwrap();
                let (_, original) = decode_original(&record.value).unwrap();
                prop_assert_eq!(&original, &text);
            }
        }
    }
}

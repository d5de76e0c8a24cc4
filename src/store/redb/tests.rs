//! Unit tests for [`super`]: the redb store: records, expiry, prefix scans, eviction, close.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on what it did not expect"
)]

use super::*;

fn rec(v: &str, expires: Option<u64>) -> Record {
    Record {
        value: v.as_bytes().to_vec(),
        created_at: 100,
        expires_at: expires,
    }
}

#[tokio::test]
async fn put_get_scan_touch_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("nested/dir/s.redb")).unwrap();
    store
        .put(
            Namespace::Originals,
            "t1",
            "abcdef123456",
            rec("one", Some(200)),
        )
        .await
        .unwrap();
    store
        .put(Namespace::Originals, "t1", "abcdef999999", rec("two", None))
        .await
        .unwrap();
    store
        .put(
            Namespace::Originals,
            "t2",
            "abcdef000000",
            rec("other tenant", None),
        )
        .await
        .unwrap();
    let got = store
        .get(Namespace::Originals, "t1", "abcdef123456", 150)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.value, b"one");
    assert!(
        store
            .get(Namespace::Originals, "t1", "abcdef123456", 200)
            .await
            .unwrap()
            .is_none()
    );
    let scan = store
        .scan_prefix(Namespace::Originals, "t1", "abcdef", 10, 150)
        .await
        .unwrap();
    assert_eq!(scan.len(), 2);
    assert_eq!(scan[0].0, "abcdef123456");
    assert!(
        store
            .touch(Namespace::Originals, "t1", "abcdef123456", Some(500), 150)
            .await
            .unwrap()
    );
    assert_eq!(store.sweep_expired(400).await.unwrap(), 0);
    assert_eq!(store.sweep_expired(600).await.unwrap(), 1);
    assert!(
        store
            .get(Namespace::Originals, "t2", "abcdef123456", 150)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn survives_reopen_and_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        store
            .put(Namespace::Folds, "t", "k", rec("kept", None))
            .await
            .unwrap();
        store.close().await.unwrap();
        assert!(matches!(store.ping().await, Err(StoreError::Closed)));
    }
    let store = RedbStore::open(&path).unwrap();
    let got = store.get(Namespace::Folds, "t", "k", 0).await.unwrap();
    assert_eq!(got.unwrap().value, b"kept");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn unusable_path_is_an_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let err = RedbStore::open(&file.join("below/s.redb"))
        .err()
        .expect("a path under a file cannot be a store");
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    let err = RedbStore::open(&file).err().expect("not a redb file");
    assert!(err.to_string().contains("plain-file"), "{err}");
}

#[tokio::test]
async fn eviction_keeps_the_store_under_its_bound_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    for i in 0..10u64 {
        let r = Record {
            value: vec![b'x'; 1000],
            created_at: i,
            expires_at: Some(1000 + i),
        };
        store
            .put(Namespace::Originals, "t", &format!("k{i}"), r)
            .await
            .unwrap();
    }
    let evicted = store
        .evict_to(&[Namespace::Originals], 5_500)
        .await
        .unwrap();
    assert_eq!(evicted, 5);
    assert!(
        store
            .get(Namespace::Originals, "t", "k0", 0)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get(Namespace::Originals, "t", "k9", 0)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        store
            .evict_to(&[Namespace::Originals], 5_500)
            .await
            .unwrap(),
        0
    );
}

#[test]
fn corrupt_header_is_an_error_not_a_panic() {
    assert!(decode(&[9, 9]).is_err());
    assert!(decode(&[]).is_err());
}

#[tokio::test]
async fn the_index_follows_writes_touches_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    let put = |k: &'static str, expires: u64| {
        let r = Record {
            value: vec![b'x'; 1000],
            created_at: 0,
            expires_at: Some(expires),
        };
        store.put(Namespace::Originals, "t", k, r)
    };
    put("a", 100).await.unwrap();
    put("b", 200).await.unwrap();
    put("c", 300).await.unwrap();
    // Rewriting a record replaces its index row (its size is not counted twice); touching "a" makes it the
    // youngest; deleting "b" drops its row.
    put("c", 300).await.unwrap();
    assert!(
        store
            .touch(Namespace::Originals, "t", "a", Some(900), 50)
            .await
            .unwrap()
    );
    assert!(store.delete(Namespace::Originals, "t", "b").await.unwrap());
    // Two records of ~1004 bytes: within 2100, one over 1500, and "c" (now the oldest) goes first.
    assert_eq!(
        store
            .evict_to(&[Namespace::Originals], 2_100)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .evict_to(&[Namespace::Originals], 1_500)
            .await
            .unwrap(),
        1
    );
    assert!(
        store
            .get(Namespace::Originals, "t", "c", 0)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get(Namespace::Originals, "t", "a", 0)
            .await
            .unwrap()
            .is_some()
    );
    // The sweep reads the expired end of the index only, and nothing twice.
    assert_eq!(store.sweep_expired(899).await.unwrap(), 0);
    assert_eq!(store.sweep_expired(900).await.unwrap(), 1);
    assert_eq!(store.sweep_expired(900).await.unwrap(), 0);
    assert_eq!(store.len(Namespace::Originals).await.unwrap(), 0);
}

#[tokio::test]
async fn eviction_leaves_other_namespaces_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    for (i, ns) in [
        Namespace::Folds,
        Namespace::Originals,
        Namespace::Compressed,
    ]
    .into_iter()
    .enumerate()
    {
        let r = Record {
            value: vec![b'x'; 1000],
            created_at: 0,
            expires_at: Some(10 + i as u64),
        };
        store.put(ns, "t", "k", r).await.unwrap();
    }
    let bounded = [Namespace::Originals, Namespace::Compressed];
    assert_eq!(store.evict_to(&bounded, 1_500).await.unwrap(), 1);
    assert!(
        store
            .get(Namespace::Folds, "t", "k", 0)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .get(Namespace::Originals, "t", "k", 0)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get(Namespace::Compressed, "t", "k", 0)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn a_file_without_the_index_gets_it_built_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.redb");
    {
        // A file as an earlier release wrote it: the namespace tables only.
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut t = tx.open_table(codec::table(Namespace::Originals)).unwrap();
            for (i, k) in ["old", "new"].iter().enumerate() {
                let r = rec("v", Some(100 + i as u64));
                t.insert(
                    codec::full_key("t", k).as_str(),
                    codec::encode(&r).as_slice(),
                )
                .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    let store = RedbStore::open(&path).unwrap();
    assert_eq!(store.sweep_expired(100).await.unwrap(), 1);
    assert!(
        store
            .get(Namespace::Originals, "t", "old", 0)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get(Namespace::Originals, "t", "new", 0)
            .await
            .unwrap()
            .is_some()
    );
}

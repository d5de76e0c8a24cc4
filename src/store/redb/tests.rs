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

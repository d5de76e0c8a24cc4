//! One store test suite, run against every backend: the redb file, a real Redis and a real three-master Redis
//! Cluster. Each property is written once as an async fn over [`Backend`]; `suite!` instantiates all of them per
//! backend, so the backends are held to the same contract by the same code.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::redis::{shared_cluster, shared_redis, unique_prefix};
use ctxgate::config::raw::RawStore;
use ctxgate::store::redb::RedbStore;
use ctxgate::store::redis::RedisStore;
use ctxgate::store::redis::health::StoreHealth;
use ctxgate::store::{Namespace, Record, Store, StoreError, unix_now};
use ctxgate::telemetry::Metrics;

/// A backend under test: `open` gives a handle on the same data each time (two handles = two replicas for Redis).
struct Backend {
    open: Box<dyn Fn() -> Arc<dyn Store> + Send + Sync>,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    fn redb() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(RedbStore::open(&dir.path().join("s.redb")).unwrap());
        Backend {
            open: Box::new(move || store.clone()),
            _dir: Some(dir),
        }
    }

    fn redis_at(url: String, test: &str) -> Backend {
        Backend::redis_with_prefix(url, unique_prefix(test))
    }

    fn redis_with_prefix(url: String, prefix: String) -> Backend {
        let raw = RawStore {
            url: Some(url),
            key_prefix: Some(prefix),
            ..RawStore::default()
        };
        let settings = ctxgate::config::store::resolve(&raw)
            .unwrap()
            .redis
            .unwrap();
        let env = std::collections::HashMap::<String, String>::new();
        Backend {
            open: Box::new(move || {
                let health = Arc::new(StoreHealth::new(&Metrics::new(), settings.describe()));
                Arc::new(RedisStore::open(&settings, &env, health).unwrap())
            }),
            _dir: None,
        }
    }

    fn redis(test: &str) -> Backend {
        Backend::redis_at(shared_redis().url(), test)
    }

    fn cluster(test: &str) -> Backend {
        Backend::redis_at(shared_cluster().url(), test)
    }

    fn store(&self) -> Arc<dyn Store> {
        (self.open)()
    }
}

fn rec(value: &[u8], expires_at: Option<u64>) -> Record {
    Record {
        value: value.to_vec(),
        created_at: unix_now(),
        expires_at,
    }
}

/// Instantiates every property for one backend.
macro_rules! suite {
    ($backend:ident, $($test:ident),+ $(,)?) => {
        mod $backend {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::Backend::$backend(stringify!($test))).await;
                }
            )+
        }
    };
}

macro_rules! all_backends {
    ($($test:ident),+ $(,)?) => {
        suite!(redis, $($test),+);
        suite!(cluster, $($test),+);
        mod redb {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::Backend::redb()).await;
                }
            )+
        }
    };
}

all_backends!(
    records_round_trip_byte_for_byte_per_tenant,
    expiry_is_honoured_and_touch_moves_it,
    contains_sees_live_records_without_reading_them,
    prefix_scans_list_live_keys_in_order_up_to_the_limit,
    prefix_scans_find_keys_whatever_their_expiry,
    put_many_writes_every_tenant,
    delete_removes_the_record_and_its_scan_entry,
    expired_records_are_gone_after_a_sweep,
    counters_add_up_across_replicas,
    a_lock_has_one_holder_and_lapses,
    closed_store_refuses_calls,
);

async fn records_round_trip_byte_for_byte_per_tenant(b: Backend) {
    let s = b.store();
    let now = unix_now();
    let mut binary: Vec<u8> = (0..=255u8).collect();
    binary.extend(std::iter::repeat_n(b'x', 1 << 20));
    s.put(
        Namespace::Originals,
        "t1",
        "abc123",
        rec(&binary, Some(now + 600)),
    )
    .await
    .unwrap();
    s.put(Namespace::Folds, "t1", "anchor/p1", rec(b"fold", None))
        .await
        .unwrap();
    let got = s
        .get(Namespace::Originals, "t1", "abc123", now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.value, binary);
    assert_eq!(got.expires_at, Some(now + 600));
    let fold = s
        .get(Namespace::Folds, "t1", "anchor/p1", now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (fold.value.as_slice(), fold.expires_at),
        (&b"fold"[..], None)
    );
    // Another tenant, another namespace, a missing key: nothing.
    assert!(
        s.get(Namespace::Originals, "t2", "abc123", now)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.get(Namespace::Compressed, "t1", "abc123", now)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.get(Namespace::Originals, "t1", "nope", now)
            .await
            .unwrap()
            .is_none()
    );
    // A second handle (another replica) reads the same record.
    let other = b.store();
    assert!(
        other
            .get(Namespace::Originals, "t1", "abc123", now)
            .await
            .unwrap()
            .is_some()
    );
    assert!(s.ping().await.is_ok());
}

async fn expiry_is_honoured_and_touch_moves_it(b: Backend) {
    let s = b.store();
    let now = unix_now();
    s.put(Namespace::Originals, "t", "h", rec(b"v", Some(now + 100)))
        .await
        .unwrap();
    assert!(
        s.get(Namespace::Originals, "t", "h", now + 99)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        s.get(Namespace::Originals, "t", "h", now + 100)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.touch(Namespace::Originals, "t", "h", Some(now + 500), now)
            .await
            .unwrap()
    );
    let got = s
        .get(Namespace::Originals, "t", "h", now + 200)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.expires_at, Some(now + 500));
    assert!(
        s.touch(Namespace::Originals, "t", "h", None, now)
            .await
            .unwrap()
    );
    let got = s
        .get(Namespace::Originals, "t", "h", now + 10_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.expires_at, None);
    // Nothing to touch: missing, another tenant, or expired at `now`.
    assert!(
        !s.touch(Namespace::Originals, "t", "missing", Some(now + 9), now)
            .await
            .unwrap()
    );
    assert!(
        !s.touch(Namespace::Originals, "u", "h", Some(now + 9), now)
            .await
            .unwrap()
    );
    s.put(Namespace::Originals, "t", "old", rec(b"v", Some(now + 50)))
        .await
        .unwrap();
    assert!(
        !s.touch(Namespace::Originals, "t", "old", Some(now + 900), now + 60)
            .await
            .unwrap()
    );
}

async fn contains_sees_live_records_without_reading_them(b: Backend) {
    let s = b.store();
    let now = unix_now();
    let big = vec![b'x'; 1 << 20];
    s.put(Namespace::Originals, "t", "big", rec(&big, Some(now + 100)))
        .await
        .unwrap();
    s.put(Namespace::Originals, "t", "forever", rec(b"v", None))
        .await
        .unwrap();
    let has = |tenant: &'static str, key: &'static str, at: u64| {
        let s = s.clone();
        async move {
            s.contains(Namespace::Originals, tenant, key, at)
                .await
                .unwrap()
        }
    };
    assert!(has("t", "big", now).await);
    assert!(has("t", "forever", now + 1_000_000).await);
    // Gone at its expiry, as `get` has it; missing; another tenant's; another namespace's.
    assert!(!has("t", "big", now + 100).await);
    assert!(
        s.get(Namespace::Originals, "t", "big", now + 100)
            .await
            .unwrap()
            .is_none()
    );
    assert!(!has("t", "missing", now).await);
    assert!(!has("u", "big", now).await);
    assert!(
        !s.contains(Namespace::Compressed, "t", "big", now)
            .await
            .unwrap()
    );
    s.delete(Namespace::Originals, "t", "forever")
        .await
        .unwrap();
    assert!(!has("t", "forever", now).await);
}

async fn prefix_scans_list_live_keys_in_order_up_to_the_limit(b: Backend) {
    let s = b.store();
    let now = unix_now();
    for key in ["a/3", "a/1", "b/1", "a/2", "ab"] {
        s.put(
            Namespace::Folds,
            "t",
            key,
            rec(key.as_bytes(), Some(now + 600)),
        )
        .await
        .unwrap();
    }
    s.put(
        Namespace::Folds,
        "t",
        "a/0",
        rec(b"short-lived", Some(now + 5)),
    )
    .await
    .unwrap();
    s.put(Namespace::Folds, "other", "a/9", rec(b"x", None))
        .await
        .unwrap();
    let keys = |rows: Vec<(String, Record)>| rows.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    let all = s
        .scan_prefix(Namespace::Folds, "t", "a/", 10, now + 10)
        .await
        .unwrap();
    assert_eq!(keys(all), ["a/1", "a/2", "a/3"]);
    let two = s
        .scan_prefix(Namespace::Folds, "t", "a/", 2, now + 10)
        .await
        .unwrap();
    assert_eq!(two[1].1.value, b"a/2");
    assert_eq!(keys(two), ["a/1", "a/2"]);
    let with_short = s
        .scan_prefix(Namespace::Folds, "t", "a", 10, now)
        .await
        .unwrap();
    assert_eq!(keys(with_short), ["a/0", "a/1", "a/2", "a/3", "ab"]);
    assert!(
        s.scan_prefix(Namespace::Folds, "t", "zz", 10, now)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.scan_prefix(Namespace::Originals, "t", "a", 10, now)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A Redis store written before the name set existed — records and their expiry index only, what an older ctxgate
/// wrote — is still scanned by prefix: the first scan files the missing names, so a record written since (which
/// does file its name) does not hide the older ones.
#[tokio::test]
async fn redis_records_written_before_the_name_set_are_found_by_prefix() {
    let server = shared_redis();
    let prefix = unique_prefix("before_the_name_set");
    let b = Backend::redis_with_prefix(server.url(), prefix.clone());
    let s = b.store();
    let now = unix_now();
    // More keys than the script files in one batch (512), and than one scan page reads.
    let old: Vec<String> = (0..1100)
        .map(|i| format!("{:02x}{i:04}", (i * 53) % 256))
        .collect();
    for key in &old {
        s.put(
            Namespace::Originals,
            "t",
            key,
            rec(key.as_bytes(), Some(now + 600)),
        )
        .await
        .unwrap();
    }
    // As an older ctxgate left it: no name set.
    let names = format!("{prefix}{{t}}:n:originals");
    let client = ::redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let removed: i64 = ::redis::cmd("DEL")
        .arg(&names)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(removed, 1);
    // Written after the upgrade: it files its own name.
    s.put(
        Namespace::Originals,
        "t",
        "zz99",
        rec(b"new", Some(now + 600)),
    )
    .await
    .unwrap();
    let mut want: Vec<&str> = old.iter().map(String::as_str).chain(["zz99"]).collect();
    want.sort_unstable();
    let all = s
        .scan_prefix(Namespace::Originals, "t", "", 2000, now)
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        want
    );
    for key in old.iter().step_by(37) {
        let rows = s
            .scan_prefix(Namespace::Originals, "t", key, 10, now)
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "prefix {key}");
        assert_eq!(rows[0].1.value, key.as_bytes());
    }
    let filed: i64 = ::redis::cmd("ZCARD")
        .arg(&names)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(filed, 1101);
}

/// Records written and refreshed at different times have different expiries; a prefix scan still finds each one
/// (on Redis the key index must not depend on the expiry's order).
async fn prefix_scans_find_keys_whatever_their_expiry(b: Backend) {
    let s = b.store();
    let now = unix_now();
    let keys: Vec<String> = (0..24)
        .map(|i| format!("{:02x}{i:02}", (i * 37) % 256))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        // Expiries out of key order, one without any.
        let expires = (i != 5).then(|| now + 600 + ((i as u64 * 7919) % 97) * 60);
        s.put(Namespace::Originals, "t", key, rec(key.as_bytes(), expires))
            .await
            .unwrap();
    }
    // Refreshed later, at yet other expiries.
    for key in keys.iter().step_by(3) {
        assert!(
            s.touch(Namespace::Originals, "t", key, Some(now + 9000), now)
                .await
                .unwrap()
        );
    }
    for key in &keys {
        let rows = s
            .scan_prefix(Namespace::Originals, "t", key, 10, now)
            .await
            .unwrap();
        let found: Vec<&str> = rows.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(found, [key.as_str()], "prefix {key}");
        let rows = s
            .scan_prefix(Namespace::Originals, "t", &key[..2], 10, now)
            .await
            .unwrap();
        assert!(rows.iter().any(|(k, _)| k == key), "prefix {}", &key[..2]);
    }
    let mut sorted = keys.clone();
    sorted.sort();
    let all = s
        .scan_prefix(Namespace::Originals, "t", "", 100, now)
        .await
        .unwrap();
    assert_eq!(
        all.into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
        sorted,
        "every key, in key order"
    );
}

async fn put_many_writes_every_tenant(b: Backend) {
    let s = b.store();
    let now = unix_now();
    let rows = (0..20)
        .map(|i| {
            (
                format!("tenant{}", i % 3),
                format!("resp_{i}"),
                rec(format!("{i}").as_bytes(), Some(now + 60)),
            )
        })
        .collect();
    s.put_many(Namespace::Aliases, rows).await.unwrap();
    for i in 0..20 {
        let got = s
            .get(
                Namespace::Aliases,
                &format!("tenant{}", i % 3),
                &format!("resp_{i}"),
                now,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.value, format!("{i}").as_bytes());
    }
    s.put_many(Namespace::Aliases, Vec::new()).await.unwrap();
}

async fn delete_removes_the_record_and_its_scan_entry(b: Backend) {
    let s = b.store();
    let now = unix_now();
    s.put(Namespace::Compressed, "t", "k/1", rec(b"v", None))
        .await
        .unwrap();
    assert!(s.delete(Namespace::Compressed, "t", "k/1").await.unwrap());
    assert!(!s.delete(Namespace::Compressed, "t", "k/1").await.unwrap());
    assert!(
        s.get(Namespace::Compressed, "t", "k/1", now)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.scan_prefix(Namespace::Compressed, "t", "k/", 10, now)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn expired_records_are_gone_after_a_sweep(b: Backend) {
    let s = b.store();
    let now = unix_now();
    // Already expired when written (redb keeps it until the sweep, Redis drops it at once): never readable.
    s.put(
        Namespace::Originals,
        "t",
        "gone",
        rec(b"v", Some(now.saturating_sub(10))),
    )
    .await
    .unwrap();
    s.put(
        Namespace::Originals,
        "t",
        "kept",
        rec(b"v", Some(now + 600)),
    )
    .await
    .unwrap();
    assert!(
        s.get(Namespace::Originals, "t", "gone", now)
            .await
            .unwrap()
            .is_none()
    );
    s.sweep_expired(now).await.unwrap();
    assert!(
        s.get(Namespace::Originals, "t", "gone", 0)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.get(Namespace::Originals, "t", "kept", now)
            .await
            .unwrap()
            .is_some()
    );
    let scan = s
        .scan_prefix(Namespace::Originals, "t", "", 10, now)
        .await
        .unwrap();
    assert_eq!(scan.len(), 1);
}

async fn counters_add_up_across_replicas(b: Backend) {
    let (a, c) = (b.store(), b.store());
    let mut tasks = Vec::new();
    for i in 0..40 {
        let s = if i % 2 == 0 { a.clone() } else { c.clone() };
        tasks.push(tokio::spawn(async move {
            s.incr_many(
                "t1",
                "savings",
                &[("compressions", 1), ("saved_tokens", 10)],
            )
            .await
            .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    a.incr_many("t2", "savings", &[("expansions", 3)])
        .await
        .unwrap();
    a.incr_many("t2", "savings", &[("expansions", -1)])
        .await
        .unwrap();
    assert_eq!(
        c.counters("t1", "savings").await.unwrap(),
        [
            ("compressions".to_string(), 40),
            ("saved_tokens".to_string(), 400)
        ]
    );
    assert_eq!(
        c.counters("t2", "savings").await.unwrap(),
        [("expansions".to_string(), 2)]
    );
    assert!(c.counters("t3", "savings").await.unwrap().is_empty());
    assert_eq!(a.counter_tenants("savings").await.unwrap(), ["t1", "t2"]);
    assert!(a.counter_tenants("other").await.unwrap().is_empty());
}

async fn a_lock_has_one_holder_and_lapses(b: Backend) {
    let (a, c) = (b.store(), b.store());
    let ttl = Duration::from_secs(30);
    assert!(a.try_lock("t", "fold/x", "replica-a", ttl).await.unwrap());
    assert!(!c.try_lock("t", "fold/x", "replica-b", ttl).await.unwrap());
    assert!(
        c.try_lock("u", "fold/x", "replica-b", ttl).await.unwrap(),
        "per tenant"
    );
    // Only the holder releases it.
    c.unlock("t", "fold/x", "replica-b").await.unwrap();
    assert!(!c.try_lock("t", "fold/x", "replica-b", ttl).await.unwrap());
    a.unlock("t", "fold/x", "replica-a").await.unwrap();
    assert!(c.try_lock("t", "fold/x", "replica-b", ttl).await.unwrap());
    // A holder that never unlocks blocks no longer than its lock lives.
    assert!(
        a.try_lock("t", "fold/y", "dead", Duration::from_millis(50))
            .await
            .unwrap()
    );
    let mut taken = false;
    for _ in 0..200 {
        if c.try_lock("t", "fold/y", "replica-b", ttl).await.unwrap() {
            taken = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(taken, "the lapsed lock was never free again");
}

async fn closed_store_refuses_calls(b: Backend) {
    let s = b.store();
    s.close().await.unwrap();
    assert!(matches!(s.ping().await, Err(StoreError::Closed)));
    assert!(matches!(
        s.get(Namespace::Originals, "t", "k", 0).await,
        Err(StoreError::Closed)
    ));
}

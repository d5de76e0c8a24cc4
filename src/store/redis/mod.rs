//! The shared store: the [`Store`] trait on Redis or Redis Cluster, so many replicas serve one fleet of agents.
//!
//! Every record a request reads or writes — the original behind a marker, its compressed form, a fold — goes here
//! instead of a local file, so a marker made through one replica expands through any other. Redis does the
//! housekeeping redb does by hand: a record's expiry is its key's (`SET … EXAT`, `EXPIREAT` on touch), and the size
//! bound is Redis's `maxmemory` with an eviction policy (see the README), so [`Store::sweep_expired`] and
//! [`Store::evict_to`] have nothing to do here. A write returns once Redis acknowledged it — the compress stage
//! still sends a marker only after that, so no marker goes out whose original was not stored.
//!
//! Every call is bounded by `[store] timeout_ms` and goes through [`health::StoreHealth`]: when Redis is down the
//! calls fail fast with [`StoreError::Unavailable`] and the stages fail open.

mod codec;
pub mod conn;
pub mod health;
mod scan;
mod write;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use redis::{AsyncCommands, RedisError, RedisResult, Value};

use self::codec::{decode, records_from};
use self::conn::{Client, Conn, Keys};
use self::health::StoreHealth;
use super::{Namespace, Record, Store, StoreError};
use crate::config::store::RedisSettings;

/// Longest the first connection (or a reconnection) may take; calls are bounded by `[store] timeout_ms` after it.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Moves a live record's expiry (and its index entry) atomically; 0 when there is no live record at `ARGV[3]`.
const TOUCH_SCRIPT: &str = r"
local t = redis.call('EXPIRETIME', KEYS[1])
if t == -2 or (t >= 0 and t <= tonumber(ARGV[3])) then return 0 end
if ARGV[1] == '' then
  redis.call('PERSIST', KEYS[1])
  redis.call('ZADD', KEYS[2], '+inf', ARGV[2])
else
  redis.call('EXPIREAT', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
end
return 1
";

/// [`TOUCH_SCRIPT`] with its hash taken once: `Script::new` hashes the source on every call, and a touch runs
/// whenever a request carries a marker again.
static TOUCH: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(TOUCH_SCRIPT));

/// Deletes a lock only if its owner still holds it.
const UNLOCK_SCRIPT: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";
static UNLOCK: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(UNLOCK_SCRIPT));

/// A Redis-backed [`Store`].
pub struct RedisStore {
    client: Client,
    /// Made on first use, then shared (it reconnects by itself).
    conn: tokio::sync::Mutex<Option<Conn>>,
    keys: Keys,
    timeout: Duration,
    cluster: bool,
    closed: AtomicBool,
    health: Arc<StoreHealth>,
}

impl RedisStore {
    /// Checks the settings and prepares the client; connects on first use. The password comes from the URL, or
    /// from the environment variable `[store] password_env` names (a missing variable is an open error).
    pub fn open(
        settings: &RedisSettings,
        env: &dyn crate::config::env::EnvSource,
        health: Arc<StoreHealth>,
    ) -> Result<RedisStore, StoreError> {
        let fail = |message: String| StoreError::Open {
            path: settings.describe(),
            message,
        };
        let password = match &settings.password_env {
            None => None,
            Some(var) => Some(env.var(var).filter(|p| !p.is_empty()).ok_or_else(|| {
                fail(format!(
                    "store.password_env names {var}, but that environment variable is not set"
                ))
            })?),
        };
        let client = Client::new(settings, password.as_deref()).map_err(|e| fail(e.to_string()))?;
        Ok(RedisStore {
            client,
            conn: tokio::sync::Mutex::new(None),
            keys: Keys::new(&settings.key_prefix),
            timeout: settings.timeout,
            cluster: settings.cluster,
            closed: AtomicBool::new(false),
            health,
        })
    }

    pub fn health(&self) -> &Arc<StoreHealth> {
        &self.health
    }

    async fn connection(&self) -> RedisResult<Conn> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        let conn = self.client.connect(self.timeout).await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Runs one operation on the connection, bounded by the timeout, and reports the outcome to the health
    /// tracker. A store marked down is not called at all (fail fast), except for its probes.
    async fn run<T, F, Fut>(&self, what: &'static str, op: F) -> Result<T, StoreError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = RedisResult<T>>,
    {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        self.health.admit()?;
        // Connecting (the first call, or after the connection was lost) has its own, longer bound: a cluster
        // connection reads the slot map from the nodes first.
        let connect_bound = self.timeout.max(CONNECT_TIMEOUT);
        let conn = match tokio::time::timeout(connect_bound, self.connection()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                self.health.failed(&e.to_string());
                return Err(StoreError::Unavailable(format!("{what}: connecting: {e}")));
            }
            Err(_) => {
                let why = format!(
                    "{what}: connecting timed out after {} ms",
                    connect_bound.as_millis()
                );
                self.health.failed(&why);
                return Err(StoreError::Unavailable(why));
            }
        };
        match tokio::time::timeout(self.timeout, op(conn)).await {
            Ok(Ok(value)) => {
                self.health.succeeded();
                Ok(value)
            }
            Ok(Err(e)) if is_data_error(&e) => {
                self.health.succeeded();
                Err(StoreError::Corrupt(format!("{what}: {e}")))
            }
            Ok(Err(e)) => {
                self.health.failed(&e.to_string());
                Err(StoreError::Unavailable(format!("{what}: {e}")))
            }
            Err(_) => {
                let why = format!("{what} timed out after {} ms", self.timeout.as_millis());
                self.health.failed(&why);
                Err(StoreError::Unavailable(why))
            }
        }
    }
}

/// A reply that arrived but is not what ctxgate wrote (the key holds something else): the store is up, the record
/// unreadable.
fn is_data_error(e: &RedisError) -> bool {
    matches!(e.kind(), redis::ErrorKind::TypeError)
}

#[async_trait]
impl Store for RedisStore {
    async fn get(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        now: u64,
    ) -> Result<Option<Record>, StoreError> {
        let k = self.keys.record(ns, tenant, key);
        let replies: Vec<Value> = self
            .run("get", |mut c| async move {
                redis::pipe()
                    .get(&k)
                    .cmd("EXPIRETIME")
                    .arg(&k)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        let rows = records_from(replies).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        match rows.into_iter().next().flatten() {
            None => Ok(None),
            Some((bytes, expiry)) => {
                let r = decode(&bytes, expiry)?;
                Ok((!r.is_expired(now)).then_some(r))
            }
        }
    }

    async fn contains(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let k = self.keys.record(ns, tenant, key);
        // EXPIRETIME: -2 for a missing key, -1 for one without expiry; Redis's own clock drops expired keys, and
        // `now` is honoured as `get` honours it.
        let expire_time: i64 = self
            .run("contains", |mut c| async move {
                redis::cmd("EXPIRETIME").arg(&k).query_async(&mut c).await
            })
            .await?;
        Ok(match expire_time {
            -2 => false,
            t => !super::expired(u64::try_from(t).ok().filter(|t| *t > 0), now),
        })
    }

    async fn put(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        record: Record,
    ) -> Result<(), StoreError> {
        let pipe = self.write_pipeline(ns, tenant, &[(key, &record)]);
        self.run("put", |mut c| async move {
            pipe.query_async::<()>(&mut c).await
        })
        .await
    }

    async fn put_many(
        &self,
        ns: Namespace,
        records: Vec<(String, String, Record)>,
    ) -> Result<(), StoreError> {
        // One transaction per tenant: a transaction may not cross cluster slots, and each tenant is one slot.
        let mut by_tenant: Vec<(&str, Vec<(&str, &Record)>)> = Vec::new();
        for (tenant, key, record) in &records {
            match by_tenant.iter_mut().find(|(t, _)| t == tenant) {
                Some((_, rows)) => rows.push((key, record)),
                None => by_tenant.push((tenant, vec![(key, record)])),
            }
        }
        let pipes: Vec<redis::Pipeline> = by_tenant
            .iter()
            .map(|(tenant, rows)| self.write_pipeline(ns, tenant, rows))
            .collect();
        if pipes.is_empty() {
            return Ok(());
        }
        self.run("put_many", |mut c| async move {
            for pipe in pipes {
                pipe.query_async::<()>(&mut c).await?;
            }
            Ok(())
        })
        .await
    }

    async fn touch(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        expires_at: Option<u64>,
        now: u64,
    ) -> Result<bool, StoreError> {
        let (k, index) = (
            self.keys.record(ns, tenant, key),
            self.keys.index(ns, tenant),
        );
        let at = expires_at.map(|t| t.max(1).to_string()).unwrap_or_default();
        let key = key.to_string();
        let touched: i64 = self
            .run("touch", |mut c| async move {
                TOUCH
                    .key(&k)
                    .key(&index)
                    .arg(at)
                    .arg(key)
                    .arg(now)
                    .invoke_async(&mut c)
                    .await
            })
            .await?;
        Ok(touched == 1)
    }

    async fn delete(&self, ns: Namespace, tenant: &str, key: &str) -> Result<bool, StoreError> {
        let (k, index, names) = (
            self.keys.record(ns, tenant, key),
            self.keys.index(ns, tenant),
            self.keys.names(ns, tenant),
        );
        let key = key.to_string();
        let (deleted, _, _): (i64, i64, i64) = self
            .run("delete", |mut c| async move {
                redis::pipe()
                    .atomic()
                    .del(&k)
                    .zrem(&index, &key)
                    .zrem(&names, &key)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(deleted > 0)
    }

    async fn scan_prefix(
        &self,
        ns: Namespace,
        tenant: &str,
        prefix: &str,
        limit: usize,
        now: u64,
    ) -> Result<Vec<(String, Record)>, StoreError> {
        self.scan(ns, tenant, prefix, limit, now).await
    }

    /// Redis expires keys itself.
    async fn sweep_expired(&self, _now: u64) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// Redis bounds its memory itself (`maxmemory` and an eviction policy).
    async fn evict_to(
        &self,
        _namespaces: &[Namespace],
        _max_bytes: u64,
    ) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn incr_many(
        &self,
        tenant: &str,
        key: &str,
        deltas: &[(&str, i64)],
    ) -> Result<Vec<i64>, StoreError> {
        if deltas.is_empty() {
            return Ok(Vec::new());
        }
        let counters = self.keys.counters(tenant, key);
        let mut pipe = redis::pipe();
        pipe.atomic();
        for (field, delta) in deltas {
            pipe.hincr(&counters, *field, *delta);
        }
        let tenants = self.keys.counter_tenants(key);
        let tenant = tenant.to_string();
        // The tenant list is its own key (another slot in a cluster): a second command, not part of the
        // transaction. Adding a member that is there already changes nothing.
        self.run("incr_many", |mut c| async move {
            let totals: Vec<i64> = pipe.query_async(&mut c).await?;
            c.sadd::<_, _, ()>(&tenants, tenant).await?;
            Ok(totals)
        })
        .await
    }

    async fn counters(&self, tenant: &str, key: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let counters = self.keys.counters(tenant, key);
        let mut fields: Vec<(String, i64)> = self
            .run(
                "counters",
                |mut c| async move { c.hgetall(&counters).await },
            )
            .await?;
        fields.sort();
        Ok(fields)
    }

    async fn counter_tenants(&self, key: &str) -> Result<Vec<String>, StoreError> {
        let tenants = self.keys.counter_tenants(key);
        let mut list: Vec<String> = self
            .run("counter_tenants", |mut c| async move {
                c.smembers(&tenants).await
            })
            .await?;
        list.sort();
        Ok(list)
    }

    async fn try_lock(
        &self,
        tenant: &str,
        key: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let lock = self.keys.lock(tenant, key);
        let owner = owner.to_string();
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let reply: Option<String> = self
            .run("try_lock", |mut c| async move {
                redis::cmd("SET")
                    .arg(&lock)
                    .arg(owner)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(reply.is_some())
    }

    async fn unlock(&self, tenant: &str, key: &str, owner: &str) -> Result<(), StoreError> {
        let lock = self.keys.lock(tenant, key);
        let owner = owner.to_string();
        self.run("unlock", |mut c| async move {
            UNLOCK
                .key(&lock)
                .arg(owner)
                .invoke_async::<i64>(&mut c)
                .await
        })
        .await
        .map(|_| ())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.run("ping", |mut c| async move {
            redis::cmd("PING").query_async::<String>(&mut c).await
        })
        .await
        .map(|_| ())
    }

    async fn close(&self) -> Result<(), StoreError> {
        self.closed.store(true, Ordering::Release);
        self.conn.lock().await.take();
        Ok(())
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("cluster", &self.cluster)
            .field("keys", &self.keys)
            .finish()
    }
}

//! The connection to Redis and the names of ctxgate's keys in it.
//!
//! One connection serves every request of a replica: a multiplexed [`ConnectionManager`] for a single Redis (it
//! reconnects by itself), a [`ClusterConnection`] for a Redis Cluster (it follows slot moves and reconnects to
//! nodes). It is made lazily, on the first call, so ctxgate starts — not ready, failing open — while Redis is still
//! down, and comes up when Redis does.
//!
//! Every key starts with the configured prefix and the tenant as a Redis Cluster hash tag (`ctxgate:{tenant}:…`):
//! the keys one operation touches (a record and its namespace's index, a counter set, a lock) then hash to the
//! same slot, so no command or transaction crosses slots. The cost: one tenant's records live on one cluster node;
//! many tenants spread over all of them.

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

use super::super::Namespace;
use crate::config::store::RedisSettings;

/// The client a connection is made from.
pub enum Client {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

impl Client {
    /// Checks the node URLs (with the password from the environment, when it is not in the URL) and builds the
    /// client; no connection is made yet.
    pub fn new(settings: &RedisSettings, password: Option<&str>) -> RedisResult<Client> {
        let nodes: Vec<String> = settings
            .nodes
            .iter()
            .map(|n| with_password(n, password))
            .collect();
        let timeout = settings.timeout;
        if settings.cluster {
            let client = redis::cluster::ClusterClientBuilder::new(nodes)
                .connection_timeout(timeout.max(super::CONNECT_TIMEOUT))
                .response_timeout(timeout)
                .retries(1)
                .build()?;
            Ok(Client::Cluster(client))
        } else {
            let url = nodes.into_iter().next().unwrap_or_default();
            Ok(Client::Single(redis::Client::open(url)?))
        }
    }

    /// Connects (bounded by the caller's timeout).
    pub async fn connect(&self, timeout: std::time::Duration) -> RedisResult<Conn> {
        match self {
            Client::Single(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(timeout.max(super::CONNECT_TIMEOUT))
                    .set_response_timeout(timeout)
                    .set_number_of_retries(1);
                let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
                Ok(Conn::Single(manager))
            }
            Client::Cluster(client) => Ok(Conn::Cluster(client.get_async_connection().await?)),
        }
    }
}

/// Puts `password` into a node URL that has none.
fn with_password(node: &str, password: Option<&str>) -> String {
    let Some(password) = password else {
        return node.to_string();
    };
    match reqwest::Url::parse(node) {
        Ok(mut url) if url.password().is_none() => match url.set_password(Some(password)) {
            Ok(()) => url.to_string(),
            Err(()) => node.to_string(),
        },
        _ => node.to_string(),
    }
}

/// A live connection, single node or cluster; cheap to clone (both are handles on one multiplexed connection).
#[derive(Clone)]
pub enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The names of ctxgate's keys under one prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    /// `prefix{tenant}`: the tenant as the hash tag (`_` for the empty tenant, since `{}` is no tag).
    fn tagged(&self, tenant: &str) -> String {
        let tenant = if tenant.is_empty() { "_" } else { tenant };
        format!("{}{{{tenant}}}", self.prefix)
    }

    /// A record (a string: header + value, with the record's expiry as the key's).
    pub fn record(&self, ns: Namespace, tenant: &str, key: &str) -> String {
        format!("{}:r:{}:{key}", self.tagged(tenant), ns.as_str())
    }

    /// The sorted set of a tenant's keys in a namespace by expiry (member = key, score = expiry): what writes prune
    /// expired entries from.
    pub fn index(&self, ns: Namespace, tenant: &str) -> String {
        format!("{}:i:{}", self.tagged(tenant), ns.as_str())
    }

    /// The same keys by name (member = key, every score 0): what a prefix scan reads. `ZRANGEBYLEX` is only
    /// defined over members of one score, so the names cannot live in the expiry-scored index.
    pub fn names(&self, ns: Namespace, tenant: &str) -> String {
        format!("{}:n:{}", self.tagged(tenant), ns.as_str())
    }

    /// A counter set (a hash of field → total).
    pub fn counters(&self, tenant: &str, key: &str) -> String {
        format!("{}:c:{key}", self.tagged(tenant))
    }

    /// A lock (a string holding its owner, with a PX expiry).
    pub fn lock(&self, tenant: &str, key: &str) -> String {
        format!("{}:l:{key}", self.tagged(tenant))
    }

    /// The set of tenants that have a counter set `key` (no hash tag: it is one key of its own).
    pub fn counter_tenants(&self, key: &str) -> String {
        format!("{}tenants:{key}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_tenant_share_a_hash_tag() {
        let k = Keys::new("ctxgate:");
        assert_eq!(
            k.record(Namespace::Originals, "ab12", "h1"),
            "ctxgate:{ab12}:r:originals:h1"
        );
        assert_eq!(k.index(Namespace::Folds, "ab12"), "ctxgate:{ab12}:i:folds");
        assert_eq!(k.names(Namespace::Folds, "ab12"), "ctxgate:{ab12}:n:folds");
        assert_eq!(k.counters("", "savings"), "ctxgate:{_}:c:savings");
        assert_eq!(k.lock("t", "fold/x"), "ctxgate:{t}:l:fold/x");
        assert_eq!(k.counter_tenants("savings"), "ctxgate:tenants:savings");
    }

    #[test]
    fn a_password_from_the_environment_goes_into_urls_without_one() {
        assert_eq!(
            with_password("redis://h:1", Some("s3cret")),
            "redis://:s3cret@h:1"
        );
        assert_eq!(
            with_password("redis://:inurl@h:1", Some("other")),
            "redis://:inurl@h:1"
        );
        assert_eq!(with_password("redis://h:1", None), "redis://h:1");
    }
}

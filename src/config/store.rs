//! The `[store]` section's choice of backend: the embedded redb file, or a Redis shared by several replicas.
//!
//! `[store] url` picks the backend: unset, ctxgate keeps its records in the redb file at `[store] path`; a
//! `redis://`, `rediss://` (TLS), `redis+cluster://` or `rediss+cluster://` URL makes every replica read and write
//! the same Redis (or Redis Cluster), which is what lets a marker compressed through one replica be expanded
//! through another. The URL is checked here, once, so a typo stops ctxgate at start with the key's name instead of
//! surfacing as a connection error on the first request.

use std::time::Duration;

use super::{ConfigError, invalid};

/// Prefix of every key ctxgate writes to Redis, so it can share a Redis with other applications.
pub const DEFAULT_KEY_PREFIX: &str = "ctxgate:";
/// Longest one Redis call may take before it counts as failed and the request goes on without the store (fail
/// open). Redis answers in well under a millisecond on a LAN; a second means it is down or swamped.
pub const DEFAULT_TIMEOUT_MS: u64 = 1_000;
/// How long a replica's fold lock lives: a replica that dies mid-fold blocks the others no longer than this.
pub const DEFAULT_LOCK_TTL_MS: u64 = 30_000;

/// A Redis (or Redis Cluster) the store lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisSettings {
    /// Connection URLs, one per seed node (one for a single Redis), each `redis://` or `rediss://`, with the
    /// credentials of the configured URL in every one.
    pub nodes: Vec<String>,
    pub cluster: bool,
    pub tls: bool,
    /// Prefix of every key (`ctxgate:` by default).
    pub key_prefix: String,
    /// Bound on every Redis call.
    pub timeout: Duration,
    /// Name of an environment variable holding the password, when it is not in the URL.
    pub password_env: Option<String>,
}

impl RedisSettings {
    /// The URL as the logs may show it: hosts only, never the password.
    pub fn describe(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .filter_map(|n| reqwest::Url::parse(n).ok())
            .map(|u| {
                format!(
                    "{}:{}",
                    u.host_str().unwrap_or_default(),
                    u.port().unwrap_or(6379)
                )
            })
            .collect();
        let scheme = match (self.tls, self.cluster) {
            (false, false) => "redis",
            (true, false) => "rediss",
            (false, true) => "redis+cluster",
            (true, true) => "rediss+cluster",
        };
        format!("{scheme}://{}", hosts.join(","))
    }
}

/// The store settings every backend shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// `Some` when `[store] url` names a Redis; the redb file at `Config::store_path` otherwise.
    pub redis: Option<RedisSettings>,
    /// Lifetime of the cross-replica fold lock.
    pub lock_ttl: Duration,
}

/// Checks `[store] url`, `key_prefix`, `timeout_ms`, `password_env` and `lock_ttl_ms`.
pub fn resolve(raw: &super::raw::RawStore) -> Result<StoreSettings, ConfigError> {
    let lock_ttl = match raw.lock_ttl_ms.unwrap_or(DEFAULT_LOCK_TTL_MS) {
        0 => return Err(invalid("store.lock_ttl_ms", "must be positive".into())),
        n => Duration::from_millis(n),
    };
    let url = raw.url.as_deref().map(str::trim).filter(|u| !u.is_empty());
    let Some(url) = url else {
        return Ok(StoreSettings {
            redis: None,
            lock_ttl,
        });
    };
    let key_prefix = raw
        .key_prefix
        .clone()
        .unwrap_or_else(|| DEFAULT_KEY_PREFIX.into());
    if key_prefix.contains(['{', '}']) || key_prefix.chars().any(char::is_whitespace) {
        return Err(invalid(
            "store.key_prefix",
            format!(
                "{key_prefix:?}: braces (Redis Cluster hash tags) and whitespace are not allowed"
            ),
        ));
    }
    let timeout = match raw.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS) {
        0 => return Err(invalid("store.timeout_ms", "must be positive".into())),
        n => Duration::from_millis(n),
    };
    let (nodes, cluster, tls) = parse_url(url)?;
    Ok(StoreSettings {
        redis: Some(RedisSettings {
            nodes,
            cluster,
            tls,
            key_prefix,
            timeout,
            password_env: raw.password_env.clone().filter(|s| !s.trim().is_empty()),
        }),
        lock_ttl,
    })
}

/// Splits a store URL into one connection URL per node. Cluster URLs list their seed nodes comma-separated
/// (`redis+cluster://:pw@h1:7000,h2:7001`); the credentials before `@` apply to every node.
fn parse_url(url: &str) -> Result<(Vec<String>, bool, bool), ConfigError> {
    let bad = |message: String| invalid("store.url", message);
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad(format!(
            "{}: expected redis://, rediss://, redis+cluster:// or rediss+cluster://",
            redact(url)
        )));
    };
    let (tls, cluster) = match scheme {
        "redis" => (false, false),
        "rediss" => (true, false),
        "redis+cluster" => (false, true),
        "rediss+cluster" => (true, true),
        other => {
            return Err(bad(format!(
                "unknown scheme {other:?}: expected redis, rediss, redis+cluster or rediss+cluster"
            )));
        }
    };
    let node_scheme = if tls { "rediss" } else { "redis" };
    let (userinfo, hosts_and_path) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    let (hosts, path) = match hosts_and_path.split_once('/') {
        Some((h, p)) => (h, Some(p)),
        None => (hosts_and_path, None),
    };
    let hosts: Vec<&str> = hosts.split(',').map(str::trim).collect();
    if hosts.iter().any(|h| h.is_empty()) {
        return Err(bad(format!("{}: a host is missing", redact(url))));
    }
    if !cluster && hosts.len() > 1 {
        return Err(bad(format!(
            "{}: several hosts need the redis+cluster:// scheme",
            redact(url)
        )));
    }
    let path = path.filter(|p| !p.is_empty());
    if cluster && path.is_some_and(|p| p != "0") {
        return Err(bad(
            "Redis Cluster has only database 0: drop the /DB part".into()
        ));
    }
    let mut nodes = Vec::with_capacity(hosts.len());
    for host in hosts {
        let mut node = format!("{node_scheme}://");
        if let Some(u) = userinfo {
            node.push_str(u);
            node.push('@');
        }
        node.push_str(host);
        if let Some(p) = path {
            node.push('/');
            node.push_str(p);
        }
        let parsed =
            reqwest::Url::parse(&node).map_err(|e| bad(format!("{}: {e}", redact(url))))?;
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(bad(format!("{}: a host is missing", redact(url))));
        }
        if let Some(p) = path
            && p.parse::<u32>().is_err()
        {
            return Err(bad(format!(
                "{}: the path must be a database number",
                redact(url)
            )));
        }
        nodes.push(node);
    }
    Ok((nodes, cluster, tls))
}

/// The URL without its credentials, for error messages.
fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rsplit_once('@')) {
        (Some((scheme, _)), Some((_, hosts))) => format!("{scheme}://***@{hosts}"),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use crate::config::raw::RawStore;

    fn with_url(url: &str) -> Result<StoreSettings, ConfigError> {
        resolve(&RawStore {
            url: Some(url.into()),
            ..RawStore::default()
        })
    }

    #[test]
    fn no_url_is_the_embedded_store() {
        let s = resolve(&RawStore::default()).unwrap();
        assert!(s.redis.is_none());
        assert_eq!(s.lock_ttl, Duration::from_millis(DEFAULT_LOCK_TTL_MS));
    }

    #[test]
    fn single_and_cluster_urls_become_node_urls() {
        let s = with_url("redis://:secret@127.0.0.1:6380/2").unwrap();
        let r = s.redis.unwrap();
        assert_eq!(r.nodes, ["redis://:secret@127.0.0.1:6380/2"]);
        assert!(!r.cluster && !r.tls);
        assert_eq!(r.key_prefix, DEFAULT_KEY_PREFIX);
        assert!(!r.describe().contains("secret"), "{}", r.describe());
        let r = with_url("rediss+cluster://user:pw@h1:7000, h2:7001")
            .unwrap()
            .redis
            .unwrap();
        assert_eq!(
            r.nodes,
            ["rediss://user:pw@h1:7000", "rediss://user:pw@h2:7001"]
        );
        assert!(r.cluster && r.tls);
        assert_eq!(r.describe(), "rediss+cluster://h1:7000,h2:7001");
    }

    #[test]
    fn bad_urls_name_the_key_and_hide_the_password() {
        for (url, needle) in [
            ("http://h:1", "unknown scheme"),
            ("redis://:pw@h1:1,h2:2", "redis+cluster"),
            ("redis+cluster://h1:1,,h2:2", "host is missing"),
            ("redis+cluster://h1:1/3", "database 0"),
            ("redis://:pw@h:1/x", "database number"),
            ("redis://:pw@h:notaport", "store.url"),
            ("h:6379", "expected redis://"),
        ] {
            let err = with_url(url).unwrap_err().to_string();
            assert!(err.contains("store.url"), "{url}: {err}");
            assert!(err.contains(needle), "{url}: {err}");
            assert!(!err.contains("pw@"), "{url}: {err}");
        }
        let err = resolve(&RawStore {
            url: Some("redis://h:1".into()),
            key_prefix: Some("a{b}".into()),
            ..RawStore::default()
        })
        .unwrap_err();
        assert!(err.to_string().contains("store.key_prefix"), "{err}");
    }
}

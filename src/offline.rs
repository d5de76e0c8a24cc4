//! The offline commands over the store: `ctxgate expand HASH` and `ctxgate stats`.
//!
//! An operator reads what ctxgate kept without a running server and without a client credential: these commands
//! open the store the config names — the redb file, or the Redis at `[store] url` — through the same [`Store`] trait
//! the proxy uses, and may look across tenants (the proxy itself never does, outside `GET /admin/stats`). The
//! tenants are the ones with savings counters: every tenant that ever compressed an output has them. redb allows
//! one process at a time, so while `ctxgate serve` holds the file they say so and point at the HTTP endpoints
//! instead; a Redis is shared, so they read it beside the running replicas.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::config::Config;
use crate::config::env::EnvSource;
use crate::expand::resolve::{self, ExpandArgs};
use crate::expand::window;
use crate::store::records::{
    Records, SAVINGS_KEY, SavingsTotals, TOTALS_KEY, TOTALS_TENANT, decode_original, get_json,
    tenant_savings,
};
use crate::store::redis::health::StoreHealth;
use crate::store::{Namespace, Store, StoreError, unix_now};
use crate::telemetry::Metrics;
use crate::turn::expand::patterns::{COUNTS_KEY, load_book};

#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// The redb file could not be opened (most often: `ctxgate serve` holds it).
    #[error(
        "{0} (if ctxgate serve is running on this store, use GET /v1/ctxzip/HASH or /v1/ctxzip/stats instead)"
    )]
    Open(StoreError),
    /// The store (named as the logs name it: the file, or the Redis hosts without the password) failed.
    #[error("{target}: {source}")]
    Store { target: String, source: StoreError },
    #[error("{0}")]
    NotFound(String),
    #[error("hash prefix {prefix} matches originals of several tenants ({tenants}); pass --tenant")]
    SeveralTenants { prefix: String, tenants: String },
}

/// Most originals of one tenant a hash prefix lists when it is ambiguous.
const AMBIGUOUS_LIST: usize = 16;

/// An opened store and how errors name it.
struct Opened {
    store: Arc<dyn Store>,
    target: String,
}

impl Opened {
    fn fail(&self, source: StoreError) -> OfflineError {
        OfflineError::Store {
            target: self.target.clone(),
            source,
        }
    }
}

/// Opens the store `config` names: a missing redb file is an error here (the proxy would create one).
fn open(config: &Config, env: &dyn EnvSource) -> Result<Opened, OfflineError> {
    let target = match &config.store.redis {
        Some(redis) => redis.describe(),
        None => {
            let path = &config.store_path;
            if !path.exists() {
                return Err(OfflineError::Open(StoreError::Open {
                    path: path.display().to_string(),
                    message: "no such file".into(),
                }));
            }
            path.display().to_string()
        }
    };
    let health = Arc::new(StoreHealth::new(&Metrics::new(), target.clone()));
    match crate::store::open(config, env, health) {
        Ok(store) => Ok(Opened { store, target }),
        // A Redis is shared: a running ctxgate is no reason it cannot be opened.
        Err(source) if config.store.redis.is_some() => Err(OfflineError::Store { target, source }),
        Err(e) => Err(OfflineError::Open(e)),
    }
}

/// Every tenant the store knows: those with savings counters or keep-pattern counts, sorted.
async fn tenants(store: &dyn Store) -> Result<BTreeSet<String>, StoreError> {
    let mut all: BTreeSet<String> = store
        .counter_tenants(SAVINGS_KEY)
        .await?
        .into_iter()
        .collect();
    all.extend(store.counter_tenants(COUNTS_KEY).await?);
    Ok(all)
}

/// The original behind `args.hash` (a window of it, as the tool would answer), from any tenant unless one is given.
pub async fn expand(
    config: &Config,
    env: &dyn EnvSource,
    tenant: Option<&str>,
    args: &ExpandArgs,
) -> Result<String, OfflineError> {
    let Some(prefix) = resolve::normalize(&args.hash) else {
        return Err(OfflineError::NotFound(resolve::invalid_hash_text(
            &args.hash,
        )));
    };
    let opened = open(config, env)?;
    let store = &opened.store;
    let now = unix_now();
    let candidates = match tenant {
        Some(t) => BTreeSet::from([t.to_string()]),
        None => tenants(store.as_ref()).await.map_err(|e| opened.fail(e))?,
    };
    let mut matches = Vec::new();
    for t in candidates {
        let rows = store
            .scan_prefix(Namespace::Originals, &t, &prefix, AMBIGUOUS_LIST, now)
            .await
            .map_err(|e| opened.fail(e))?;
        matches.extend(
            rows.into_iter()
                .map(|(hash, record)| (t.clone(), hash, record)),
        );
    }
    let _ = store.close().await;
    let owners: BTreeSet<&str> = matches.iter().map(|(t, _, _)| t.as_str()).collect();
    if owners.len() > 1 {
        return Err(OfflineError::SeveralTenants {
            prefix,
            tenants: owners.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    match matches.as_slice() {
        [] => Err(OfflineError::NotFound(resolve::miss_text(&args.hash))),
        [(_, hash, record)] => {
            let (_, text) = decode_original(&record.value)
                .ok_or_else(|| opened.fail(StoreError::Corrupt(format!("original {hash}"))))?;
            Ok(window::render(&text, args, config.expand.max_chars, hash))
        }
        several => {
            let hashes: Vec<String> = several.iter().map(|(_, h, _)| h.clone()).collect();
            Err(OfflineError::NotFound(resolve::ambiguous_text(
                &prefix, &hashes,
            )))
        }
    }
}

#[derive(Debug, Default, serde::Serialize)]
pub struct TenantStats {
    /// The tenant's savings counters (every process that served it added to them).
    pub totals: SavingsTotals,
    pub originals: u64,
    pub original_bytes: u64,
    pub suggestions: Vec<crate::expand::suggest::PatternStat>,
}

#[derive(Debug, serde::Serialize)]
pub struct StoreStats {
    pub totals: SavingsTotals,
    pub tenants: BTreeMap<String, TenantStats>,
}

/// Savings totals, originals per tenant and keep-pattern suggestions, with the config's `[compress] keep_patterns`
/// (not suggested again) and `[expand] suggest_threshold` (a pattern counted that often is suggested).
pub async fn stats(config: &Config, env: &dyn EnvSource) -> Result<StoreStats, OfflineError> {
    let opened = open(config, env)?;
    let result = collect_stats(opened.store.clone(), config).await;
    let _ = opened.store.close().await;
    result.map_err(|e| opened.fail(e))
}

async fn collect_stats(store: Arc<dyn Store>, config: &Config) -> Result<StoreStats, StoreError> {
    let now = unix_now();
    // Releases before per-tenant counters kept one instance total; it still counts.
    let mut totals: SavingsTotals = get_json(
        store.as_ref(),
        Namespace::Counters,
        TOTALS_TENANT,
        TOTALS_KEY,
        now,
    )
    .await?
    .unwrap_or_default();
    let mut tenants_stats: BTreeMap<String, TenantStats> = tenants(store.as_ref())
        .await?
        .into_iter()
        .map(|t| (t, TenantStats::default()))
        .collect();
    for (tenant, t) in tenant_savings(store.as_ref()).await? {
        totals.add(&t);
        tenants_stats.entry(tenant).or_default().totals = t;
    }
    let records = Records::new(
        store.clone(),
        tokio_util::task::TaskTracker::new(),
        crate::clock::Clock::system(),
    );
    for (tenant, s) in &mut tenants_stats {
        for (_, record) in store
            .scan_prefix(Namespace::Originals, tenant, "", usize::MAX, now)
            .await?
        {
            s.originals += 1;
            s.original_bytes += record.value.len() as u64;
        }
        let mut book = load_book(&records, tenant, config.expand.suggest_threshold).await;
        book.set_known_patterns(&config.compress.keep_patterns);
        s.suggestions = book.suggestions();
    }
    Ok(StoreStats {
        totals,
        tenants: tenants_stats,
    })
}

impl StoreStats {
    pub fn to_text(&self) -> String {
        let t = &self.totals;
        let mut out = format!(
            "compressions: {}\nsaved tokens (per compression): {}\nwire-saved tokens (every request carrying a marker): {}\nexpansions: {} (misses: {})\n",
            t.compressions, t.saved_tokens, t.wire_saved_tokens, t.expansions, t.expansion_misses
        );
        for (tenant, s) in &self.tenants {
            out.push_str(&format!(
                "\ntenant {tenant}: {} originals, {} bytes\n",
                s.originals, s.original_bytes
            ));
            for p in &s.suggestions {
                out.push_str(&format!(
                    "  suggested keep pattern: {:<32} in {} distinct expansions (tools: {})\n",
                    p.pattern,
                    p.expansions,
                    p.tools.join(", ")
                ));
            }
        }
        out
    }
}

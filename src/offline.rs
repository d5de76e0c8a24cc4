//! The offline commands over the store file: `ctxgate expand HASH` and `ctxgate stats`.
//!
//! An operator reads what ctxgate kept without a running server and without a client credential: these commands
//! open the redb file directly and may look across tenants (the proxy itself never does). redb allows one process
//! at a time, so while `ctxgate serve` holds the file they say so and point at the HTTP endpoints instead.

use std::collections::BTreeMap;
use std::path::Path;

use crate::expand::resolve::{self, ExpandArgs};
use crate::expand::window;
use crate::store::records::{
    SAVINGS_KEY, SUGGESTIONS_KEY, SavingsTotals, SuggestionBook, TOTALS_KEY, TOTALS_TENANT, decode,
    decode_original, get_json,
};
use crate::store::redb::RedbStore;
use crate::store::{Namespace, Store, StoreError, unix_now};

#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error(
        "{0} (if ctxgate serve is running on this store, use GET /v1/ctxzip/HASH or /v1/ctxzip/stats instead)"
    )]
    Store(StoreError),
    #[error("{0}")]
    NotFound(String),
    #[error("hash prefix {prefix} matches originals of several tenants ({tenants}); pass --tenant")]
    SeveralTenants { prefix: String, tenants: String },
}

fn open(path: &Path) -> Result<RedbStore, OfflineError> {
    if !path.exists() {
        return Err(OfflineError::Store(StoreError::Open {
            path: path.display().to_string(),
            message: "no such file".into(),
        }));
    }
    RedbStore::open(path).map_err(OfflineError::Store)
}

/// The original behind `args.hash` (a window of it, as the tool would answer), from any tenant unless one is given.
pub async fn expand(
    path: &Path,
    tenant: Option<&str>,
    args: &ExpandArgs,
    max_chars: usize,
) -> Result<String, OfflineError> {
    let store = open(path)?;
    let Some(prefix) = resolve::normalize(&args.hash) else {
        return Err(OfflineError::NotFound(resolve::invalid_hash_text(
            &args.hash,
        )));
    };
    let now = unix_now();
    let rows = store
        .scan_all(Namespace::Originals, now)
        .await
        .map_err(OfflineError::Store)?;
    let matches: Vec<_> = rows
        .into_iter()
        .filter(|(t, k, _)| k.starts_with(&prefix) && tenant.is_none_or(|want| want == t))
        .collect();
    let tenants: std::collections::BTreeSet<&str> =
        matches.iter().map(|(t, _, _)| t.as_str()).collect();
    if tenants.len() > 1 {
        return Err(OfflineError::SeveralTenants {
            prefix,
            tenants: tenants.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    match matches.as_slice() {
        [] => Err(OfflineError::NotFound(resolve::miss_text(&args.hash))),
        [(_, hash, record)] => {
            let (_, text) = decode_original(&record.value).ok_or_else(|| {
                OfflineError::Store(StoreError::Corrupt(format!("original {hash}")))
            })?;
            Ok(window::render(&text, args, max_chars, hash))
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

/// Savings totals, originals per tenant and keep-pattern suggestions.
/// `threshold` is the configured `[expand] suggest_threshold`: a pattern counted that often is suggested.
pub async fn stats(
    path: &Path,
    known_patterns: &[String],
    threshold: u64,
) -> Result<StoreStats, OfflineError> {
    let store = open(path)?;
    let now = unix_now();
    // Releases before per-tenant counters kept one instance total; it still counts.
    let mut totals: SavingsTotals =
        get_json(&store, Namespace::Counters, TOTALS_TENANT, TOTALS_KEY, now)
            .await
            .map_err(OfflineError::Store)?
            .unwrap_or_default();
    let mut tenants: BTreeMap<String, TenantStats> = BTreeMap::new();
    for (tenant, _, record) in store
        .scan_all(Namespace::Originals, now)
        .await
        .map_err(OfflineError::Store)?
    {
        let t = tenants.entry(tenant).or_default();
        t.originals += 1;
        t.original_bytes += record.value.len() as u64;
    }
    for (tenant, key, record) in store
        .scan_all(Namespace::Counters, now)
        .await
        .map_err(OfflineError::Store)?
    {
        if key == SAVINGS_KEY {
            let fields: BTreeMap<String, i64> =
                serde_json::from_slice(&record.value).unwrap_or_default();
            let fields: Vec<(String, i64)> = fields.into_iter().collect();
            let t = SavingsTotals::from_counters(&fields);
            totals.add(&t);
            tenants.entry(tenant).or_default().totals = t;
        } else if key == SUGGESTIONS_KEY {
            let mut book: SuggestionBook = decode(&record).unwrap_or_default();
            let counts = store
                .counters(&tenant, crate::turn::expand::patterns::COUNTS_KEY)
                .await
                .map_err(OfflineError::Store)?;
            book.apply_counts(&counts, threshold);
            book.set_known_patterns(known_patterns);
            tenants.entry(tenant).or_default().suggestions = book.suggestions();
        }
    }
    let _ = store.close().await;
    Ok(StoreStats { totals, tenants })
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

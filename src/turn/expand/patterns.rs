//! Keep-pattern counts that add up across replicas: how many distinct originals each identifier was expanded from.
//!
//! After an expansion is answered, its identifiers are counted in the tenant's counter sets — never by reading,
//! changing and writing one record, which two replicas doing at once would lose an update of. Each (identifier,
//! original) pair is added to [`SEEN_KEY`]: a new total of 1 means this is the pair's first expansion, on whichever
//! replica, and only then is the identifier's count in [`COUNTS_KEY`] added to. The count's new total is returned by
//! the store, so exactly one replica sees it reach the threshold and writes the suggestion's audit event. The
//! tenant's [`SuggestionBook`] keeps the rest — first-seen casing, tools, when last seen — and takes its counts from
//! these sets when read ([`SuggestionBook::apply_counts`]).

use std::collections::BTreeMap;

use crate::expand::suggest::SuggestionBook;
use crate::store::records::Records;
use crate::store::{Store, StoreError};

/// Counter set (per tenant): lowercase identifier → distinct originals it was expanded from.
pub const COUNTS_KEY: &str = "keep_patterns";
/// Counter set (per tenant): `identifier \x1f hash` → how often that original was expanded showing it.
pub const SEEN_KEY: &str = "keep_pattern_seen";

/// Counts the identifiers of an expansion ([`crate::expand::suggest::candidate_tokens`] of its text), expanded
/// from original `hash`; returns those (first-seen casing) whose count reached `threshold` with this call.
pub async fn count(
    store: &dyn Store,
    tenant: &str,
    hash: &str,
    candidates: &[String],
    threshold: u64,
) -> Result<Vec<String>, StoreError> {
    let hash = hash.trim().to_ascii_lowercase();
    // Lowercase key → the casing first seen in this text.
    let mut tokens: BTreeMap<String, &String> = BTreeMap::new();
    for token in candidates {
        tokens.entry(token.to_ascii_lowercase()).or_insert(token);
    }
    if tokens.is_empty() {
        return Ok(Vec::new());
    }
    let pairs: Vec<String> = tokens.keys().map(|k| format!("{k}\u{1f}{hash}")).collect();
    let deltas: Vec<(&str, i64)> = pairs.iter().map(|p| (p.as_str(), 1)).collect();
    let seen = store.incr_many(tenant, SEEN_KEY, &deltas).await?;
    let first: Vec<&String> = tokens
        .keys()
        .zip(seen)
        .filter(|(_, n)| *n == 1)
        .map(|(k, _)| k)
        .collect();
    if first.is_empty() {
        return Ok(Vec::new());
    }
    let deltas: Vec<(&str, i64)> = first.iter().map(|k| (k.as_str(), 1)).collect();
    let counts = store.incr_many(tenant, COUNTS_KEY, &deltas).await?;
    let threshold = i64::try_from(threshold.max(1)).unwrap_or(i64::MAX);
    Ok(first
        .into_iter()
        .zip(counts)
        .filter(|(_, n)| *n == threshold)
        .filter_map(|(k, _)| tokens.get(k).map(|t| (*t).clone()))
        .collect())
}

/// A tenant's keep-pattern statistics: the book's record with the counts every replica added to (empty when none
/// or unreadable; the book's own counts when the store's are unreadable).
pub async fn load_book(records: &Records, tenant: &str, threshold: u64) -> SuggestionBook {
    let mut book: SuggestionBook = records
        .get_json(
            crate::store::Namespace::Counters,
            tenant,
            crate::store::records::SUGGESTIONS_KEY,
        )
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    match records.store().counters(tenant, COUNTS_KEY).await {
        Ok(counts) => book.apply_counts(&counts, threshold),
        Err(e) => crate::store_fault!(e, error = %e, "keep-pattern counts unavailable"),
    }
    book
}

//! The fold stage's records: a conversation's folds and its last failed fold, read once and written durably.
//!
//! Records are kept per tenant and conversation anchor ([`crate::store::records::fold_key`]). New records are
//! written on the tracked task set before the turn goes on, so a restart reuses the fold and keeps backing off a
//! failed one; a reused fold's expiry moves forward once less than half its lifetime remains.

use serde_json::Value;

use crate::fold::{self, FailedFold, FoldRecord};
use crate::store::records::{Records, fold_key, fold_prefix};
use crate::store::{Namespace, StoreError};

/// Most fold records read per anchor (the longest matching one is used).
const MAX_RECORDS_PER_ANCHOR: usize = 64;

/// A conversation's fold records and its last failed fold.
pub async fn load(
    records: &Records,
    tenant: &str,
    anchor_key: &str,
) -> Result<(Vec<FoldRecord>, Option<FailedFold>), StoreError> {
    let folds = records
        .scan_json::<FoldRecord>(
            Namespace::Folds,
            tenant,
            &fold_prefix(anchor_key),
            MAX_RECORDS_PER_ANCHOR,
        )
        .await?;
    let failed = records
        .get_json::<FailedFold>(Namespace::FailedFolds, tenant, anchor_key)
        .await?;
    Ok((folds, failed))
}

/// Writes the new records and waits for them; the writes run on the tracked task set, so they land even if the
/// client hangs up meanwhile.
pub async fn persist(
    records: &Records,
    ttl_secs: u64,
    tenant: &str,
    anchor_key: &str,
    record: Option<&FoldRecord>,
    failed: Option<&FailedFold>,
) {
    if record.is_none() && failed.is_none() {
        return;
    }
    let expires = Some(records.now() + ttl_secs);
    let (writer, tenant, anchor_key) =
        (records.clone(), tenant.to_string(), anchor_key.to_string());
    let (record, failed) = (record.cloned(), failed.cloned());
    let task = records.spawn(async move {
        let mut results = Vec::new();
        if let Some(r) = record {
            let key = fold_key(&anchor_key, &r.prefix_hash);
            let put = writer.put_json_durably(Namespace::Folds, &tenant, &key, &r, expires);
            results.push((Namespace::Folds, put.await));
        }
        if let Some(f) = failed {
            let put = writer.put_json_durably(Namespace::FailedFolds, &tenant, &anchor_key, &f, expires);
            results.push((Namespace::FailedFolds, put.await));
        }
        for (ns, result) in results {
            if let Err(e) = result {
                crate::store_fault!(e, error = %e, namespace = ns.as_str(), "could not store a fold record");
            }
        }
    });
    let _ = task.await;
}

/// Keeps a reused fold alive: its expiry moves forward once less than half its lifetime remains.
pub fn refresh(
    records: &Records,
    ttl_secs: u64,
    tenant: &str,
    anchor_key: &str,
    items: &[Value],
    split: usize,
    folds: &[FoldRecord],
) {
    let now = records.now();
    let due = folds
        .iter()
        .any(|r| r.split == split && now.saturating_sub(r.created_at_unix) >= ttl_secs / 2);
    if !due {
        return;
    }
    let Some(hash) = fold::prefix_hash(items, split) else {
        return;
    };
    let Some(record) = folds.iter().find(|r| r.prefix_hash == hash) else {
        return;
    };
    let mut renewed = record.clone();
    renewed.created_at_unix = now;
    records.put_json_later(
        Namespace::Folds,
        tenant,
        &fold_key(anchor_key, &hash),
        &renewed,
        Some(now + ttl_secs),
        "a refreshed fold record",
    );
}

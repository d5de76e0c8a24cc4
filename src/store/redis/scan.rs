//! Prefix scans on Redis: the marker-prefix lookup of `context_expand` and the listing of a conversation's folds.
//!
//! Redis has no ordered keyspace, so each tenant's namespace keeps its keys in a sorted set of names (every score
//! 0, as `ZRANGEBYLEX` requires: a lex range over members of different scores is undefined) beside the
//! expiry-scored index writes prune from, and a scan is `ZRANGEBYLEX` over the names, then the records themselves
//! in one pipeline — the same key order redb's table gives. Entries whose record Redis already expired or evicted
//! are dropped from both sets on the way.
//!
//! The name set came after the index (a store written by an older ctxgate has only the index): a scan that finds
//! the index holding more keys than the names first files the missing ones (`NAMES_SCRIPT`), once per tenant and
//! namespace, so records written before an upgrade are found by prefix too — a conversation's folds are kept for
//! days, and a fold that is not found is made again.

use redis::Value;

use super::RedisStore;
use super::codec::{decode, records_from};
use crate::store::{Namespace, Record, StoreError};

/// One page of names, after filing in the name set (score 0) every key the expiry index holds and the names do not.
/// Every write and removal changes both sets together, so the names hold fewer keys only where records were
/// written before the name set existed; then all of the index is added (`NX`: names present stay), in batches
/// `unpack` can take. KEYS: index, names; ARGV: min, max, offset, count of `ZRANGEBYLEX`.
const NAMES_SCRIPT: &str = r"
if redis.call('ZCARD', KEYS[1]) > redis.call('ZCARD', KEYS[2]) then
  local all = redis.call('ZRANGE', KEYS[1], 0, -1)
  for i = 1, #all, 512 do
    local args = {}
    for j = i, math.min(i + 511, #all) do
      args[#args + 1] = 0
      args[#args + 1] = all[j]
    end
    redis.call('ZADD', KEYS[2], 'NX', unpack(args))
  end
end
return redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', ARGV[3], ARGV[4])
";
static NAMES: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(NAMES_SCRIPT));

impl RedisStore {
    /// Live records of a tenant whose key starts with `prefix`, in key order, at most `limit`.
    pub(super) async fn scan(
        &self,
        ns: Namespace,
        tenant: &str,
        prefix: &str,
        limit: usize,
        now: u64,
    ) -> Result<Vec<(String, Record)>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let index = self.keys.index(ns, tenant);
        let names = self.keys.names(ns, tenant);
        // The names are sorted by key bytes like redb's table: `[prefix` .. `(prefix\xff` is every key starting
        // with the prefix (0xff never occurs in UTF-8).
        let (min, max) = if prefix.is_empty() {
            (b"-".to_vec(), b"+".to_vec())
        } else {
            let mut min = vec![b'['];
            min.extend_from_slice(prefix.as_bytes());
            let mut max = vec![b'('];
            max.extend_from_slice(prefix.as_bytes());
            max.push(0xff);
            (min, max)
        };
        let record_key = |key: &str| self.keys.record(ns, tenant, key);
        let batch = limit.clamp(16, 512);
        let mut out = Vec::new();
        let mut offset = 0usize;
        loop {
            let members: Vec<String> = {
                let (index, names, min, max) = (&index, &names, &min, &max);
                self.run("scan_prefix", |mut c| async move {
                    NAMES
                        .key(index)
                        .key(names)
                        .arg(min)
                        .arg(max)
                        .arg(offset)
                        .arg(batch)
                        .invoke_async(&mut c)
                        .await
                })
                .await?
            };
            if members.is_empty() {
                break;
            }
            let mut pipe = redis::pipe();
            for m in &members {
                let k = record_key(m);
                pipe.get(&k).cmd("EXPIRETIME").arg(&k);
            }
            let replies: Vec<Value> = self
                .run("scan_prefix", |mut c| async move {
                    pipe.query_async(&mut c).await
                })
                .await?;
            let rows = records_from(replies).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let mut gone = Vec::new();
            for (member, row) in members.iter().zip(rows) {
                match row {
                    // Expired or evicted by Redis: its index entries go too.
                    None => gone.push(member.clone()),
                    Some((bytes, expiry)) => {
                        let r = decode(&bytes, expiry)?;
                        if !r.is_expired(now) && out.len() < limit {
                            out.push((member.clone(), r));
                        }
                    }
                }
            }
            // The removed names no longer count towards the next page's offset.
            let kept = members.len() - gone.len();
            if !gone.is_empty() {
                let (index, names) = (&index, &names);
                self.run("scan_prefix", |mut c| async move {
                    redis::pipe()
                        .atomic()
                        .zrem(index, &gone)
                        .ignore()
                        .zrem(names, &gone)
                        .ignore()
                        .query_async::<()>(&mut c)
                        .await
                })
                .await?;
            }
            offset += kept;
            if out.len() >= limit || members.len() < batch {
                break;
            }
        }
        Ok(out)
    }
}

//! How records reach Redis: one atomic transaction per tenant that sets each value with its expiry (`SET … EXAT`)
//! and files its key in the tenant's two sorted sets — the expiry-scored index and the names a prefix scan reads
//! ([`super::scan`]). Redis expires the values by itself but not their index entries, so every write also prunes
//! a bounded batch of entries whose records have expired: the indexes stay as small as the live records without
//! a sweeper.

use super::RedisStore;
use super::codec::{encode, score};
use crate::store::{Namespace, Record};

/// Drops the index entries (both sets) of records expired before `ARGV[1]` (an exclusive score bound, `(NOW`), at
/// most 256 per call so one write never does unbounded work.
const PRUNE_SCRIPT: &str = r"
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 256)
if #gone > 0 then
  redis.call('ZREM', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
end
return #gone
";

impl RedisStore {
    /// The atomic write of records of one tenant: each value with its expiry, and its index entry.
    pub(super) fn write_pipeline(
        &self,
        ns: Namespace,
        tenant: &str,
        rows: &[(&str, &Record)],
    ) -> redis::Pipeline {
        let index = self.keys.index(ns, tenant);
        let names = self.keys.names(ns, tenant);
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut now = 0;
        for (key, record) in rows {
            let mut set = redis::cmd("SET");
            set.arg(self.keys.record(ns, tenant, key))
                .arg(encode(record));
            if let Some(at) = record.expires_at {
                set.arg("EXAT").arg(at.max(1));
            }
            pipe.add_command(set).ignore();
            pipe.zadd(&index, *key, score(record.expires_at)).ignore();
            pipe.zadd(&names, *key, 0).ignore();
            now = now.max(record.created_at);
        }
        // Index entries of records that have expired since: pruned on every write, so the indexes stay as small as
        // the live records.
        pipe.cmd("EVAL")
            .arg(PRUNE_SCRIPT)
            .arg(2)
            .arg(&index)
            .arg(&names)
            .arg(format!("({now}"))
            .ignore();
        pipe
    }
}

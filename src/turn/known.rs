//! Each tenant's recent input item lists, so the next body of a conversation is not split again where it repeats
//! the last one ([`crate::responses::known`]).
//!
//! Read before the body is parsed (only the tenant is known then: which conversation a body belongs to is read
//! from the body), written after. A list is kept for a body whose items span [`MIN_BYTES`] or more: a 10 KB body
//! costs about 30k instructions to split and 8k to verify against a list, while a body of a few hundred bytes
//! splits for less than a lookup. A body that was taken from a known list replaces it by its own, longer one, so
//! an active conversation holds one entry; a body that repeats a list exactly only renews it. Bounded by entries
//! per tenant and in all, the least recently used going first: every entry holds its items' spans and prefix
//! digests (24 bytes an item) and a few bytes of its edges, never the body. Every operation touches one tenant's
//! few lists and the recency index, whatever the number of tenants.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::responses::RequestBody;
use crate::responses::known::KnownItems;

/// Bodies whose items span fewer bytes are not remembered.
pub const MIN_BYTES: usize = 4 << 10;

/// How many lists and items the book keeps.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Lists kept per tenant (about as many as the tenant's conversations that are active at once).
    per_tenant: usize,
    /// Lists kept in all.
    lists: usize,
    /// Items kept in all: bounds the memory whatever the transcripts' lengths (24 bytes an item: its span and
    /// its prefix digest).
    items: usize,
}

/// 16 lists a tenant, 1024 in all, 12 MB of spans and digests at most.
const LIMITS: Limits = Limits {
    per_tenant: 16,
    lists: 1024,
    items: 1 << 19,
};

/// The book of every tenant's lists.
pub struct KnownInputs {
    inner: Mutex<Book>,
    limits: Limits,
}

impl Default for KnownInputs {
    fn default() -> Self {
        Self::with_limits(LIMITS)
    }
}

#[derive(Default)]
struct Book {
    /// Each tenant's lists, most recently used first.
    tenants: HashMap<Arc<str>, VecDeque<Entry>>,
    /// Every list's tenant by the list's stamp: the first is the least recently used list of all.
    order: BTreeMap<u64, Arc<str>>,
    /// The stamp the next list used gets.
    next: u64,
    /// Items held by every list together.
    items: usize,
}

struct Entry {
    stamp: u64,
    list: Arc<KnownItems>,
}

impl KnownInputs {
    fn with_limits(limits: Limits) -> Self {
        Self {
            inner: Mutex::new(Book::default()),
            limits,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tenant's lists, longest first (the split takes the first that matches).
    pub fn for_tenant(&self, tenant: &str) -> Vec<Arc<KnownItems>> {
        let mut lists: Vec<Arc<KnownItems>> = self
            .lock()
            .tenants
            .get(tenant)
            .map(|entries| entries.iter().map(|e| e.list.clone()).collect())
            .unwrap_or_default();
        lists.sort_by_key(|k| std::cmp::Reverse(k.len()));
        lists
    }

    /// Remembers `body`'s input items for the tenant, in place of the list its first items were taken from.
    pub fn remember(&self, tenant: &str, body: &RequestBody) {
        let len = body.items_span_len();
        if len < MIN_BYTES {
            return;
        }
        let replaced = body.known_used();
        if let Some(hash) = replaced
            && self.lock().renew(tenant, hash, len)
        {
            return;
        }
        // Built outside the lock: it may hash the items the known list did not cover.
        let Some(known) = body.known_items() else {
            return;
        };
        self.lock().insert(tenant, known, replaced, self.limits);
    }
}

impl Book {
    /// Marks the tenant's list `hash` as just used if the body's items are exactly that list (`len` bytes: a
    /// list is a prefix of the body's items, so the same length is the same items); `false` otherwise.
    fn renew(&mut self, tenant: &str, hash: u128, len: usize) -> bool {
        let Some((tenant, entries)) = self.tenants.get_key_value(tenant) else {
            return false;
        };
        let tenant = tenant.clone();
        let Some(at) = entries
            .iter()
            .position(|e| e.list.hash() == hash && e.list.len() == len)
        else {
            return false;
        };
        let stamp = self.next;
        self.next += 1;
        let Some(entries) = self.tenants.get_mut(&*tenant) else {
            return false;
        };
        let Some(mut entry) = entries.remove(at) else {
            return false;
        };
        self.order.remove(&entry.stamp);
        entry.stamp = stamp;
        entries.push_front(entry);
        self.order.insert(stamp, tenant);
        true
    }

    /// Adds `known` as the tenant's newest list, dropping the list it grew from (`replaced`) and any copy of it,
    /// then evicts down to the limits, least recently used first.
    fn insert(&mut self, tenant: &str, known: KnownItems, replaced: Option<u128>, limits: Limits) {
        let tenant: Arc<str> = match self.tenants.get_key_value(tenant) {
            Some((t, _)) => t.clone(),
            None => Arc::from(tenant),
        };
        let stamp = self.next;
        self.next += 1;
        let entries = self.tenants.entry(tenant.clone()).or_default();
        let (order, items) = (&mut self.order, &mut self.items);
        entries.retain(|e| {
            let hash = e.list.hash();
            let drop = Some(hash) == replaced || hash == known.hash();
            if drop {
                *items -= e.list.items();
                order.remove(&e.stamp);
            }
            !drop
        });
        *items += known.items();
        entries.push_front(Entry {
            stamp,
            list: Arc::new(known),
        });
        order.insert(stamp, tenant.clone());
        while entries.len() > limits.per_tenant {
            if let Some(e) = entries.pop_back() {
                *items -= e.list.items();
                order.remove(&e.stamp);
            }
        }
        while self.order.len() > limits.lists || self.items > limits.items {
            let Some((stamp, owner)) = self.order.pop_first() else {
                break;
            };
            if let Some(entries) = self.tenants.get_mut(&*owner) {
                // The least recently used list of all is its tenant's least recently used too.
                if let Some(at) = entries.iter().rposition(|e| e.stamp == stamp)
                    && let Some(e) = entries.remove(at)
                {
                    self.items -= e.list.items();
                }
                if entries.is_empty() {
                    self.tenants.remove(&*owner);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use bytes::Bytes;

    /// A body of `n` items of about 1 KB, the `i`-th saying `i` (and `tag`).
    fn body_of(tag: &str, n: usize, known: &[Arc<KnownItems>]) -> RequestBody {
        let pad = "x".repeat(1000);
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"type":"message","content":"{tag} {i} {pad}"}}"#))
            .collect();
        let text = format!(r#"{{"model":"m","input":[{}]}}"#, items.join(", "));
        RequestBody::parse_known(Bytes::from(text), known).unwrap()
    }

    /// The tenant's lists as (items, hash), in the book's order (most recently used first).
    fn lists_of(book: &KnownInputs, tenant: &str) -> Vec<(usize, u128)> {
        book.lock()
            .tenants
            .get(tenant)
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| (e.list.items(), e.list.hash()))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_conversation_keeps_one_list_that_grows_with_it() {
        let book = KnownInputs::default();
        book.remember("t", &body_of("a", 3, &[]));
        assert!(book.for_tenant("t").is_empty(), "below MIN_BYTES");
        book.remember("t", &body_of("a", 10, &[]));
        let lists = book.for_tenant("t");
        assert_eq!(lists.len(), 1);
        let next = body_of("a", 11, &lists);
        assert_eq!(next.known_used(), Some(lists[0].hash()));
        book.remember("t", &next);
        let lists = book.for_tenant("t");
        assert_eq!(
            lists.len(),
            1,
            "the longer list replaced the one it grew from"
        );
        assert_eq!(lists[0].items(), 11);
        assert!(book.for_tenant("u").is_empty(), "another tenant sees none");
    }

    #[test]
    fn a_repeated_body_renews_its_list_instead_of_adding_one() {
        let book = KnownInputs::with_limits(Limits {
            per_tenant: 3,
            ..LIMITS
        });
        for tag in ["a", "b", "c"] {
            book.remember("t", &body_of(tag, 8, &[]));
        }
        let a_hash = body_of("a", 8, &[]).known_items().unwrap().hash();
        let a = book
            .for_tenant("t")
            .into_iter()
            .find(|k| k.hash() == a_hash)
            .unwrap();
        let again = body_of("a", 8, std::slice::from_ref(&a));
        assert_eq!(again.known_used(), Some(a.hash()));
        book.remember("t", &again);
        let order = lists_of(&book, "t");
        assert_eq!(order.len(), 3, "no list added");
        assert_eq!(order[0], (8, a.hash()), "a is now the most recently used");
        assert!(
            book.for_tenant("t").iter().any(|k| Arc::ptr_eq(k, &a)),
            "the same list was renewed, not built again"
        );
        // The next new conversation evicts the least recently used, b, not a.
        let b = body_of("b", 8, &[]).known_items().unwrap().hash();
        book.remember("t", &body_of("d", 8, &[]));
        let order = lists_of(&book, "t");
        assert!(order.iter().any(|&(_, h)| h == a.hash()));
        assert!(order.iter().all(|&(_, h)| h != b));
    }

    #[test]
    fn a_tenant_keeps_at_most_per_tenant_lists() {
        let book = KnownInputs::default();
        for k in 0..LIMITS.per_tenant + 3 {
            book.remember("t", &body_of(&format!("c{k}"), 7, &[]));
        }
        book.remember("u", &body_of("u", 7, &[]));
        assert_eq!(book.for_tenant("t").len(), LIMITS.per_tenant);
        assert_eq!(book.for_tenant("u").len(), 1);
        let held = book.lock();
        assert_eq!(held.items, 7 * (LIMITS.per_tenant + 1));
        assert_eq!(held.order.len(), LIMITS.per_tenant + 1);
    }

    #[test]
    fn the_bounds_evict_the_least_recently_used_list_of_any_tenant() {
        let book = KnownInputs::with_limits(Limits {
            per_tenant: 4,
            lists: 3,
            items: 1000,
        });
        book.remember("t", &body_of("t1", 5, &[]));
        book.remember("u", &body_of("u1", 5, &[]));
        book.remember("t", &body_of("t2", 5, &[]));
        let t1 = lists_of(&book, "t")[1];
        // t1 is used again: u1 is now the least recently used of all.
        let t1_list = book
            .for_tenant("t")
            .into_iter()
            .find(|k| k.hash() == t1.1)
            .unwrap();
        book.remember("t", &body_of("t1", 5, &[t1_list]));
        book.remember("v", &body_of("v1", 5, &[]));
        assert!(book.for_tenant("u").is_empty(), "u1 was evicted");
        assert!(
            !book.lock().tenants.contains_key("u"),
            "no empty tenant is kept"
        );
        assert_eq!(book.for_tenant("t").len(), 2);
        assert_eq!(book.for_tenant("v").len(), 1);
        // The item bound: a list of 12 items leaves at most 10 (the limit) in all.
        let small = KnownInputs::with_limits(Limits {
            per_tenant: 4,
            lists: 10,
            items: 10,
        });
        small.remember("t", &body_of("a", 5, &[]));
        small.remember("u", &body_of("b", 5, &[]));
        small.remember("t", &body_of("c", 6, &[]));
        let held = small.lock();
        assert!(held.items <= 10);
        assert_eq!(held.items, 6, "both older lists went, oldest first");
        assert_eq!(held.order.len(), 1);
    }
}

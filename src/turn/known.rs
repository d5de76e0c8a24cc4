//! Each tenant's recent input item lists, so the next body of a conversation is not split again where it repeats
//! the last one ([`crate::responses::known`]).
//!
//! Read before the body is parsed (only the tenant is known then: which conversation a body belongs to is read
//! from the body), written after. A list is kept only for a body whose items span [`MIN_BYTES`] or more: below
//! that, splitting costs less than remembering. A body that was taken from a known list replaces it by its own,
//! longer one, so an active conversation holds one entry. Bounded by entries per tenant and in all: every entry
//! holds its items' spans and prefix digests (24 bytes an item) and a few bytes of its edges, never the body.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::responses::RequestBody;
use crate::responses::known::KnownItems;

/// Bodies whose items span fewer bytes are not remembered.
pub const MIN_BYTES: usize = 64 << 10;
/// Lists kept per tenant (about as many as the tenant's conversations that are active at once).
const PER_TENANT: usize = 16;
/// Lists kept in all.
const CAPACITY: usize = 1024;
/// Items kept in all: bounds the memory whatever the transcripts' lengths (24 bytes an item: its span and its
/// prefix digest; 12 MB).
const MAX_ITEMS: usize = 1 << 19;

/// The book: newest first, each entry with its tenant.
#[derive(Default)]
pub struct KnownInputs {
    inner: Mutex<Book>,
}

#[derive(Default)]
struct Book {
    entries: VecDeque<(Arc<str>, Arc<KnownItems>)>,
    items: usize,
}

impl KnownInputs {
    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tenant's lists, longest first (the split takes the first that matches).
    pub fn for_tenant(&self, tenant: &str) -> Vec<Arc<KnownItems>> {
        let mut lists: Vec<Arc<KnownItems>> = self
            .lock()
            .entries
            .iter()
            .filter(|(t, _)| &**t == tenant)
            .map(|(_, k)| k.clone())
            .collect();
        lists.sort_by_key(|k| std::cmp::Reverse(k.len()));
        lists
    }

    /// Remembers `body`'s input items for the tenant, in place of the list its first items were taken from.
    pub fn remember(&self, tenant: &str, body: &RequestBody) {
        if body.items_span_len() < MIN_BYTES {
            return;
        }
        let Some(known) = body.known_items() else {
            return;
        };
        let replaced = body.known_used();
        let mut book = self.lock();
        let Book { entries, items } = &mut *book;
        entries.retain(|(t, k)| {
            let drop = &**t == tenant && (Some(k.hash()) == replaced || k.hash() == known.hash());
            if drop {
                *items -= k.items();
            }
            !drop
        });
        *items += known.items();
        entries.push_front((Arc::from(tenant), Arc::new(known)));
        let mut seen = 0;
        entries.retain(|(t, k)| {
            let keep = &**t != tenant || {
                seen += 1;
                seen <= PER_TENANT
            };
            if !keep {
                *items -= k.items();
            }
            keep
        });
        while entries.len() > CAPACITY || *items > MAX_ITEMS {
            match entries.pop_back() {
                Some((_, k)) => *items -= k.items(),
                None => break,
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

    #[test]
    fn a_conversation_keeps_one_list_that_grows_with_it() {
        let book = KnownInputs::default();
        book.remember("t", &body_of("a", 10, &[]));
        assert!(book.for_tenant("t").is_empty(), "below MIN_BYTES");
        book.remember("t", &body_of("a", 100, &[]));
        let lists = book.for_tenant("t");
        assert_eq!(lists.len(), 1);
        let next = body_of("a", 101, &lists);
        assert_eq!(next.known_used(), Some(lists[0].hash()));
        book.remember("t", &next);
        let lists = book.for_tenant("t");
        assert_eq!(
            lists.len(),
            1,
            "the longer list replaced the one it grew from"
        );
        assert_eq!(lists[0].items(), 101);
        assert!(book.for_tenant("u").is_empty(), "another tenant sees none");
    }

    #[test]
    fn a_tenant_keeps_at_most_per_tenant_lists() {
        let book = KnownInputs::default();
        for k in 0..PER_TENANT + 3 {
            book.remember("t", &body_of(&format!("c{k}"), 70, &[]));
        }
        book.remember("u", &body_of("u", 70, &[]));
        assert_eq!(book.for_tenant("t").len(), PER_TENANT);
        assert_eq!(book.for_tenant("u").len(), 1);
        assert_eq!(book.lock().items, 70 * (PER_TENANT + 1));
    }
}

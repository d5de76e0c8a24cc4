//! The `/v1/responses` turn: named phases over one [`Turn`] context.
//!
//! parse → tenant → **compress** → **fold** → **inject expand** → send → **expand rounds** → account. The
//! [`handler`] reads the body, builds the [`Turn`] (caller, parsed body, client headers) and runs the ordered
//! [`stage::Stage`]s; when the inject stage offered `context_expand`, the last phase, [`expand::rounds`], takes the
//! turn and runs the upstream rounds itself. Each stage lives in its own module and imports no sibling stage: what
//! two stages both need (the tenant, the conversation anchor, item facts) is a fact of the turn, computed once here
//! or in [`crate::responses`], and what they store is a typed record of [`crate::store::records`].

pub mod compress;
pub mod expand;
pub mod facts;
pub mod fold;
pub mod handler;
pub mod known;
pub mod memo;
pub mod stage;

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue};

use crate::config::Config;
use crate::proxy::auth::Caller;
use crate::proxy::upstream::Upstream;
use crate::responses::RequestBody;
use crate::store::records::Records;
use crate::telemetry::Metrics;
use stage::Stage;

/// Request header that tells ctxgate to leave the body alone.
pub const BYPASS_HEADER: &str = "x-ctxgate-bypass";

pub struct Turn {
    pub request_id: String,
    pub caller: Caller,
    pub body: RequestBody,
    pub client_headers: HeaderMap,
    /// `x-ctxgate-*` headers for the client's response.
    pub response_headers: Vec<(HeaderName, HeaderValue)>,
    /// Set when the request offers `context_expand`: the answer must be read (and perhaps continued) by the proxy.
    pub expand_active: bool,
    /// Set before the stages when the conversation is offered `context_expand` for its head's size
    /// ([`crate::expand::eager`]): the compress stage then counts the tool as paid for, and the inject stage offers it.
    pub offer_from_head: bool,
    /// The conversation anchor's store key, with the first item it was computed from (see [`Turn::anchor_key`]).
    anchor: Option<(Option<u128>, String)>,
}

impl Turn {
    pub fn new(
        request_id: String,
        caller: Caller,
        body: RequestBody,
        client_headers: HeaderMap,
    ) -> Turn {
        Turn {
            request_id,
            caller,
            body,
            client_headers,
            response_headers: Vec::new(),
            expand_active: false,
            offer_from_head: false,
            anchor: None,
        }
    }

    /// The tenant every record of this turn is scoped to.
    pub fn tenant(&self) -> &str {
        self.caller.tenant.as_str()
    }

    pub fn bypass(&self) -> bool {
        self.client_headers
            .get(BYPASS_HEADER)
            .is_some_and(|v| v.as_bytes() == b"1" || v.as_bytes().eq_ignore_ascii_case(b"true"))
    }

    pub fn add_response_header(&mut self, name: &'static str, value: String) {
        if let Ok(v) = HeaderValue::from_str(&value) {
            self.response_headers
                .push((HeaderName::from_static(name), v));
        }
    }

    /// The store key of the conversation anchor (see [`crate::responses::identity::anchor`]), computed once per
    /// turn and shared by the stages; computed again only if a stage replaced the first item. `first_digest`, when
    /// the caller already has the first item's digest, saves parsing it.
    pub fn anchor_key(&mut self, first_digest: Option<&[u8; 32]>) -> String {
        let first = self
            .body
            .items()
            .and_then(|items| items.first())
            .map(crate::responses::Item::content_key);
        if let Some((seen, key)) = &self.anchor {
            if *seen == first {
                return key.clone();
            }
        }
        let prompt_cache_key = self.body.get_str("prompt_cache_key");
        // A client's key names the conversation: the first item's digest is only needed without one.
        let keyed = prompt_cache_key.as_deref().is_some_and(|k| !k.is_empty());
        let digest = match first_digest {
            Some(d) => Some(*d),
            None if keyed => None,
            None => self
                .body
                .items()
                .and_then(|items| items.first())
                .and_then(first_item_digest),
        };
        let anchor = crate::responses::identity::anchor_of_digest(
            prompt_cache_key.as_deref(),
            digest.as_ref(),
        );
        let key = crate::responses::identity::anchor_key(&anchor);
        self.anchor = Some((first, key.clone()));
        key
    }
}

/// The digest of a conversation's first item. Every turn of a conversation starts with the same item, so the last
/// one seen on this thread is remembered with its exact bytes: a turn whose first item has those bytes reuses the
/// digest instead of parsing, canonicalizing and hashing the item again (bytes compared in full, so a different
/// item never gets a stale digest).
fn first_item_digest(item: &crate::responses::Item) -> Option<[u8; 32]> {
    type Last = std::cell::RefCell<Option<(Vec<u8>, [u8; 32])>>;
    thread_local! {
        static LAST: Last = const { std::cell::RefCell::new(None) };
    }
    let compute = || item.value().map(crate::responses::identity::item_digest);
    let Some(raw) = item.raw_bytes() else {
        return compute();
    };
    LAST.with(|last| {
        let Ok(mut last) = last.try_borrow_mut() else {
            return compute();
        };
        if let Some((seen, digest)) = last.as_ref() {
            if seen.as_slice() == raw {
                return Some(*digest);
            }
        }
        let digest = compute()?;
        *last = Some((raw.to_vec(), digest));
        Some(digest)
    })
}

/// The turn's stages, in order: compress first (fold weighs the compressed transcript), then fold, then the expand
/// tool is offered if the outgoing input carries a marker.
pub fn stages(
    config: &Config,
    records: &Records,
    upstream: &Upstream,
    metrics: &Arc<Metrics>,
    expander: &Arc<expand::Expander>,
) -> Vec<Arc<dyn Stage>> {
    vec![
        Arc::new(compress::CompressStage::new(
            config.compress.clone(),
            records.clone(),
            metrics.clone(),
        )),
        Arc::new(fold::FoldStage::new(
            config.fold.clone(),
            records.clone(),
            upstream.clone(),
            metrics.clone(),
            config.store.lock_ttl,
        )),
        Arc::new(expand::inject::InjectStage::new(expander.clone())),
    ]
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::first_item_digest;
    use crate::responses::identity::item_digest;
    use crate::responses::{Item, RequestBody};
    use bytes::Bytes;

    fn first(body: &'static [u8]) -> RequestBody {
        RequestBody::parse(Bytes::from_static(body)).unwrap()
    }

    #[test]
    fn the_remembered_first_item_digest_is_only_reused_for_the_same_bytes() {
        let a = first(br#"{"input":[{"role":"developer","content":"be brief"}]}"#);
        let a_again = first(br#"{"input":[{"role":"developer","content":"be brief"}]}"#);
        // The same item in other bytes: the canonical digest is the same, computed afresh.
        let a_spaced = first(br#"{"input":[ {"content":"be brief", "role":"developer"} ]}"#);
        let b = first(br#"{"input":[{"role":"developer","content":"be terse"}]}"#);
        let digest = |body: &RequestBody| first_item_digest(&body.items().unwrap()[0]).unwrap();
        let expected = |body: &RequestBody| item_digest(body.items().unwrap()[0].value().unwrap());
        for body in [&a, &a_again, &b, &a_spaced, &a, &b, &b] {
            assert_eq!(digest(body), expected(body));
        }
        assert_eq!(digest(&a), digest(&a_spaced));
        assert_ne!(digest(&a), digest(&b));
        let rewritten =
            Item::rewritten(serde_json::json!({"role":"developer","content":"be terse"}));
        assert_eq!(first_item_digest(&rewritten), Some(digest(&b)));
    }
}

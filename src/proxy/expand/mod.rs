//! Expansion inside the proxy: the model's `context_expand` calls answered from the store.
//!
//! The agent behind ctxgate does not know `context_expand`, so ctxgate offers the tool itself ([`inject`]), answers
//! the model's calls ([`Expander::answer`]) and runs the next upstream round — for JSON answers in [`rounds`], for
//! SSE in [`stream`] — so the client sees one response as if nothing happened. The same answers are served to
//! people and scripts by the side endpoints ([`endpoints`]). Every expansion refreshes the original's expiry, is
//! counted and audited, and feeds the keep-pattern suggestions.

pub mod aliases;
pub mod endpoints;
pub mod inject;
pub mod rounds;
pub mod stream;

use std::sync::Arc;

use tokio_util::task::TaskTracker;

use crate::config::ExpandSettings;
use crate::expand::resolve::{self, ExpandArgs, Lookup, Resolution};
use crate::expand::suggest::SuggestionBook;
use crate::expand::window;
use crate::proxy::compress::load_original;
use crate::store::{Namespace, Record, Store, StoreError, unix_now};
use crate::telemetry::Metrics;

/// Store key (Counters namespace) of a tenant's keep-pattern statistics.
pub const SUGGESTIONS_KEY: &str = "suggestions";
/// Most candidates read for a hash prefix.
const PREFIX_CANDIDATES: usize = 16;

/// What one expansion answered.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The tool output: the original (or a window of it), or why there is none.
    pub text: String,
    pub hit: bool,
    pub hash: Option<String>,
}

pub struct Expander {
    pub settings: ExpandSettings,
    /// Expiry given to an expanded original (the compression TTL).
    pub ttl_secs: u64,
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    tasks: TaskTracker,
    /// Serialises read-modify-write of the suggestion records within this process.
    book_lock: Arc<tokio::sync::Mutex<()>>,
    /// Response-id aliases of turns that offered the tool.
    pub aliases: aliases::AliasBook,
}

impl Expander {
    pub fn new(
        settings: ExpandSettings,
        ttl_secs: u64,
        store: Arc<dyn Store>,
        metrics: Arc<Metrics>,
        tasks: TaskTracker,
    ) -> Expander {
        Expander {
            settings,
            ttl_secs,
            aliases: aliases::AliasBook::new(store.clone(), tasks.clone()),
            store,
            metrics,
            tasks,
            book_lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Finds the original a hash argument names, within the tenant: exact, or by a unique prefix.
    pub async fn find(&self, tenant: &str, hash_arg: &str) -> Result<FindResult, StoreError> {
        let Some(normalized) = resolve::normalize(hash_arg) else {
            return Ok(FindResult::Missing);
        };
        let hash = match resolve::lookup_plan(&normalized) {
            Lookup::Exact(h) => h,
            Lookup::Prefix(p) => {
                let rows = self
                    .store
                    .scan_prefix(
                        Namespace::Originals,
                        tenant,
                        &p,
                        PREFIX_CANDIDATES,
                        unix_now(),
                    )
                    .await?;
                let keys: Vec<String> = rows.into_iter().map(|(k, _)| k).collect();
                match resolve::choose(&p, &keys) {
                    Resolution::Unique(h) => h,
                    Resolution::Ambiguous(c) => return Ok(FindResult::Ambiguous(p, c)),
                    Resolution::Missing => return Ok(FindResult::Missing),
                }
            }
        };
        Ok(
            match load_original(self.store.as_ref(), tenant, &hash).await? {
                Some((meta, text)) => FindResult::Found {
                    hash,
                    tool: meta.tool,
                    text,
                },
                None => FindResult::Missing,
            },
        )
    }

    /// Answers one `context_expand` call (its JSON arguments) for a tenant. Never fails: a store fault is answered
    /// as a miss the model can act on, and counted.
    pub async fn answer(&self, tenant: &str, request_id: &str, arguments: &str) -> Answer {
        let args = match ExpandArgs::parse(arguments) {
            Ok(a) => a,
            Err(e) => {
                return self.account(tenant, request_id, None, resolve::bad_args_text(&e), false);
            }
        };
        self.answer_args(tenant, request_id, &args).await
    }

    pub async fn answer_args(&self, tenant: &str, request_id: &str, args: &ExpandArgs) -> Answer {
        self.answer_window(tenant, request_id, args, self.settings.max_chars)
            .await
    }

    /// As [`Self::answer_args`], with windows of at most `max_chars` (the side endpoint passes no bound when
    /// the caller asked for no window: an HTTP client wants the whole original, not the tool's first page).
    pub async fn answer_window(
        &self,
        tenant: &str,
        request_id: &str,
        args: &ExpandArgs,
        max_chars: usize,
    ) -> Answer {
        match self.find(tenant, &args.hash).await {
            Ok(FindResult::Found { hash, tool, text }) => {
                let out = window::render(&text, args, max_chars, &hash);
                // Suggestions count what the model was shown (the window), not the whole original.
                self.after_hit(tenant, &hash, &tool, &out);
                self.account(tenant, request_id, Some(hash), out, true)
            }
            Ok(FindResult::Ambiguous(p, c)) => self.account(
                tenant,
                request_id,
                None,
                resolve::ambiguous_text(&p, &c),
                false,
            ),
            Ok(FindResult::Missing) => self.account(
                tenant,
                request_id,
                None,
                resolve::miss_text(&args.hash),
                false,
            ),
            Err(e) => {
                tracing::warn!(%request_id, error = %e, "store unavailable for an expansion");
                self.metrics.stage_fault("expand");
                self.account(
                    tenant,
                    request_id,
                    None,
                    resolve::miss_text(&args.hash),
                    false,
                )
            }
        }
    }

    fn account(
        &self,
        tenant: &str,
        request_id: &str,
        hash: Option<String>,
        text: String,
        hit: bool,
    ) -> Answer {
        use std::sync::atomic::Ordering::Relaxed;
        let savings = &self.metrics.savings;
        if hit {
            savings.expansions.fetch_add(1, Relaxed);
            self.metrics.expansions.inc();
        } else {
            savings.expansion_misses.fetch_add(1, Relaxed);
            self.metrics.expansion_misses.inc();
        }
        let totals = savings.totals();
        tracing::info!(
            target: "ctxgate::audit",
            event = "context_expanded",
            request_id,
            tenant,
            hash = hash.as_deref().unwrap_or(""),
            hit,
            bytes = text.len(),
            total_expansions = totals.expansions,
            total_expansion_misses = totals.expansion_misses,
            total_saved_tokens = totals.saved_tokens,
            total_wire_saved_tokens = totals.wire_saved_tokens,
            total_compressions = totals.compressions,
            "context_expanded"
        );
        Answer { text, hit, hash }
    }

    /// After a hit, in the background: the original's expiry moves forward and its tokens feed the suggestions.
    fn after_hit(&self, tenant: &str, hash: &str, tool: &str, text: &str) {
        let now = unix_now();
        let expires = Some(now + self.ttl_secs);
        let (store, tenant, hash, tool) = (
            self.store.clone(),
            tenant.to_string(),
            hash.to_string(),
            tool.to_string(),
        );
        let text = text.to_string();
        let threshold = self.settings.suggest_threshold;
        let book_task =
            self.record_suggestions(tenant.clone(), hash.clone(), tool, text, threshold);
        self.tasks.spawn(async move {
            if let Err(e) = store
                .touch(Namespace::Originals, &tenant, &hash, expires, now)
                .await
            {
                tracing::warn!(error = %e, "could not refresh an expanded original");
            }
            book_task.await;
        });
    }

    fn record_suggestions(
        &self,
        tenant: String,
        hash: String,
        tool: String,
        text: String,
        threshold: u64,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let store = self.store.clone();
        let lock = self.book_lock.clone();
        async move {
            let _guard = lock.lock().await;
            let now = unix_now();
            let mut book = load_book(store.as_ref(), &tenant).await;
            let crossed = book.record(&hash, &tool, &text, now, threshold);
            for pattern in &crossed {
                tracing::info!(target: "ctxgate::audit", event = "context_pattern_suggested", tenant = %tenant, pattern = %pattern, "context_pattern_suggested");
            }
            if let Ok(value) = serde_json::to_vec(&book) {
                let record = Record {
                    value,
                    created_at: now,
                    expires_at: None,
                };
                if let Err(e) = store
                    .put(Namespace::Counters, &tenant, SUGGESTIONS_KEY, record)
                    .await
                {
                    tracing::warn!(error = %e, "could not store keep-pattern statistics");
                }
            }
        }
    }
}

/// The outcome of looking a hash argument up.
#[derive(Debug)]
pub enum FindResult {
    Found {
        hash: String,
        tool: String,
        text: String,
    },
    Ambiguous(String, Vec<String>),
    Missing,
}

/// A tenant's keep-pattern statistics (empty when none or unreadable).
pub async fn load_book(store: &dyn Store, tenant: &str) -> SuggestionBook {
    match store
        .get(Namespace::Counters, tenant, SUGGESTIONS_KEY, unix_now())
        .await
    {
        Ok(Some(r)) => serde_json::from_slice(&r.value).unwrap_or_default(),
        _ => SuggestionBook::default(),
    }
}

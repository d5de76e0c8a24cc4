//! Expansion inside the proxy: the model's `context_expand` calls answered from the store.
//!
//! The agent behind ctxgate does not know `context_expand`, so ctxgate offers the tool itself ([`inject`]), answers
//! the model's calls ([`Expander::answer`]) and runs the next upstream round — for JSON answers in [`rounds`], for
//! SSE in [`stream`] — so the client sees one response as if nothing happened. The rounds are the turn's last
//! named phase: [`rounds::run`] takes the [`crate::turn::Turn`] the stages left. The same answers are served to
//! people and scripts by the side endpoints (`crate::edge::ctxzip`). Every expansion refreshes the original's expiry, is
//! counted and audited, and feeds the keep-pattern suggestions.

pub mod aliases;
pub mod inject;
pub mod patterns;
pub mod rounds;
pub mod stream;

use std::sync::Arc;

use crate::config::ExpandSettings;
use crate::expand::resolve::{self, ExpandArgs, Lookup, Resolution};
use crate::expand::suggest::{SuggestionBook, candidate_tokens};
use crate::expand::window;
use crate::store::records::{Records, SAVINGS_KEY, SUGGESTIONS_KEY, refresh_slack};
use crate::store::{Namespace, StoreError};
use crate::telemetry::{Metrics, audit};
use crate::turn::stage::FaultKind;
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
    records: Records,
    metrics: Arc<Metrics>,
    /// Serialises read-modify-write of the suggestion records within this process.
    book_lock: Arc<tokio::sync::Mutex<()>>,
    /// Response-id aliases of turns that offered the tool.
    pub aliases: aliases::AliasBook,
}

impl Expander {
    pub fn new(
        settings: ExpandSettings,
        ttl_secs: u64,
        records: Records,
        metrics: Arc<Metrics>,
    ) -> Expander {
        Expander {
            settings,
            ttl_secs,
            aliases: aliases::AliasBook::new(records.clone()),
            records,
            metrics,
            book_lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    pub fn records(&self) -> &Records {
        &self.records
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
                    .records
                    .store()
                    .scan_prefix(
                        Namespace::Originals,
                        tenant,
                        &p,
                        PREFIX_CANDIDATES,
                        self.records.now(),
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
        Ok(match self.records.load_original(tenant, &hash).await? {
            Some(original) => FindResult::Found {
                hash,
                tool: original.meta.tool,
                text: original.text,
                expires_at: original.expires_at,
            },
            None => FindResult::Missing,
        })
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
            Ok(FindResult::Found {
                hash,
                tool,
                text,
                expires_at,
            }) => {
                let out = window::render(&text, args, max_chars, &hash);
                // Suggestions count what the model was shown (the window), not the whole original.
                self.after_hit(tenant, &hash, &tool, &out, expires_at);
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
                crate::store_fault!(e, %request_id, error = %e, "store unavailable for an expansion");
                self.metrics
                    .stage_fault(inject::EXPAND_STAGE, FaultKind::Store.as_str());
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
        let field = if hit {
            "expansions"
        } else {
            "expansion_misses"
        };
        self.records
            .count_later(tenant, SAVINGS_KEY, vec![(field, 1)]);
        audit::expanded(
            &self.metrics,
            audit::Expanded {
                request_id,
                tenant,
                hash: hash.as_deref(),
                hit,
                bytes: text.len(),
            },
        );
        Answer { text, hit, hash }
    }

    /// After a hit, in the background: the original's expiry moves forward and its tokens feed the suggestions.
    /// The expiry is rewritten only when less than the TTL is left (see [`refresh_slack`]): the write copies the
    /// whole original, which for a large one cost more than the rest of the expansion.
    fn after_hit(&self, tenant: &str, hash: &str, tool: &str, text: &str, expires_at: Option<u64>) {
        let now = self.records.now();
        if expires_at.is_some_and(|at| at < now + self.ttl_secs) {
            let expires = Some(now + self.ttl_secs + refresh_slack(self.ttl_secs));
            let refresh = vec![(Namespace::Originals, hash.to_string())];
            self.records
                .touch_later(refresh, tenant, expires, "an expanded original");
        }
        let (records, lock) = (self.records.clone(), self.book_lock.clone());
        let (tenant, hash, tool) = (tenant.to_string(), hash.to_string(), tool.to_string());
        let text = text.to_string();
        let threshold = self.settings.suggest_threshold;
        self.records.spawn(async move {
            // Read once, for the counts and for the book.
            let tokens = candidate_tokens(&text);
            drop(text);
            // The counts go to the store's counter sets, atomically across replicas.
            match patterns::count(records.store().as_ref(), &tenant, &hash, &tokens, threshold)
                .await
            {
                Ok(crossed) => {
                    for pattern in &crossed {
                        audit::pattern_suggested(&tenant, pattern);
                    }
                }
                Err(e) => crate::store_fault!(e, error = %e, "could not count keep patterns"),
            }
            // The book keeps what each pattern looks like (casing, tools, last seen): serialised within this
            // process; a concurrent write on another replica may drop such details, never a count.
            let _guard = lock.lock().await;
            let mut book = load_book(&records, &tenant).await;
            book.record_tokens(&hash, &tool, tokens, records.now(), u64::MAX);
            if let Err(e) = records
                .put_json_durably(Namespace::Counters, &tenant, SUGGESTIONS_KEY, &book, None)
                .await
            {
                crate::store_fault!(e, error = %e, "could not store keep-pattern statistics");
            }
        });
    }
}

/// The outcome of looking a hash argument up.
#[derive(Debug)]
pub enum FindResult {
    Found {
        hash: String,
        tool: String,
        text: String,
        /// The original's expiry as stored (whether expanding it is due to move it forward).
        expires_at: Option<u64>,
    },
    Ambiguous(String, Vec<String>),
    Missing,
}

/// A tenant's keep-pattern book as stored, without the store's counts (what [`Expander`] rewrites).
async fn load_book(records: &Records, tenant: &str) -> SuggestionBook {
    records
        .get_json(Namespace::Counters, tenant, SUGGESTIONS_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

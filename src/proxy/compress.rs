//! The compress stage: large tool outputs and live-zone texts replaced by ctxzip's compressed form.
//!
//! For each large item of the input it decides whether the item may be compressed (its seam, its position, its
//! tool, whether it reports an error), then takes the compressed form this conversation already uses for that
//! original — from memory, else from the store — or makes one with [`ctxzip::compress`]. A new original is written
//! durably before the request carrying its marker leaves; if that write fails the item goes verbatim. Every marker
//! a request carries refreshes its original's expiry and counts its saving again (wire savings); each response gets
//! `x-ctxgate-compressed` and `x-ctxgate-saved-tokens`.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::task::TaskTracker;

use super::cache::{Memo, key_of};
use super::originals::{
    CompressedForm, OriginalMeta, RECORD_VERSION, compressed_key, decode_original, encode_original,
};
use super::turn::{Stage, StageError, Turn};
use crate::config::compress::{CompressSettings, Failures};
use crate::ctxzip;
use crate::responses::shape::{Shape, longest_text, rewrite_texts, shape_of};
use crate::store::{Namespace, Record, Store, StoreError, unix_now};
use crate::telemetry::{KindLabels, Metrics, ReasonLabels};

/// The tool whose outputs are originals already: never compressed again.
pub const EXPAND_TOOL: &str = "context_expand";
pub const COMPRESSED_HEADER: &str = "x-ctxgate-compressed";
pub const SAVED_HEADER: &str = "x-ctxgate-saved-tokens";
const MEMO_CAPACITY: usize = 50_000;
/// At most this much past the TTL is added when an original's expiry is refreshed.
const REFRESH_SLACK_MAX_SECS: u64 = 60;

/// One marker an item carries: the original's hash and what it saves.
#[derive(Debug, Clone)]
struct MarkerUse {
    hash: String,
    saved_tokens: u64,
    /// Where the conversation remembers the compressed form (refreshed with the original).
    form_key: String,
}

/// What a conversation decided for one text.
enum Known {
    Compressed(String, MarkerUse),
    Verbatim,
    New,
}

/// A compression made this turn, before the conversation-wide decision to send it.
struct Fresh {
    compressed: ctxzip::Compressed,
    form_key: String,
    query: Vec<String>,
    before: u64,
    after: u64,
}

/// One text of a candidate item, as this turn sees it.
enum TextState {
    /// Compressed on an earlier turn (or just now): these bytes replace it.
    Known(String, MarkerUse),
    /// Compressible, awaiting the conversation-wide decision.
    Fresh(Fresh),
    /// Sent as it is.
    Verbatim,
}

/// A candidate item whose decision is made this turn.
struct Pending<'a> {
    index: usize,
    memo_key: u128,
    value: &'a Value,
    shape: &'a Shape,
    tool: &'a str,
    seam: &'static str,
    /// Texts this long or longer are looked at (and rewritten).
    text_min: usize,
    texts: Vec<(String, TextState)>,
    /// Earlier items (index, content key) that a text's compressed form may point back to.
    sources: Vec<(usize, u128)>,
    /// A store fault left a text verbatim this turn: the decision is not remembered, the next turn tries again.
    faulted: bool,
}

/// An item's compressed form, independent of where in the transcript it stands.
#[derive(Debug)]
struct Compression {
    value: Value,
    markers: Vec<MarkerUse>,
    /// Earlier items (index, content key) the form points back to ([`ctxzip::repeats`]): it stands only where
    /// they stand before it, the same.
    sources: Vec<(usize, u128)>,
}

/// Per-turn context for compressing new originals.
struct Context<'a> {
    tenant: &'a str,
    first_user: &'a str,
    request_id: &'a str,
}

pub struct CompressStage {
    settings: CompressSettings,
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    tasks: TaskTracker,
    /// Shape and longest text of an item, by its bytes.
    shapes: Memo<Arc<(Shape, usize)>>,
    /// The compressed form (or `None`: verbatim whatever its position) by tenant, anchor and item bytes.
    rewrites: Memo<Option<Arc<Compression>>>,
    /// The expiry last given to an original, by tenant and hash, so refreshes are written only when due.
    expiries: Memo<u64>,
}

impl CompressStage {
    pub fn new(
        settings: CompressSettings,
        store: Arc<dyn Store>,
        metrics: Arc<Metrics>,
        tasks: TaskTracker,
    ) -> Self {
        CompressStage {
            settings,
            store,
            metrics,
            tasks,
            shapes: Memo::new(MEMO_CAPACITY),
            rewrites: Memo::new(MEMO_CAPACITY),
            expiries: Memo::new(MEMO_CAPACITY),
        }
    }

    fn skipped(&self, reason: &'static str) {
        self.metrics
            .compress_skipped
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    fn shape(&self, raw_key: u128, item: &crate::responses::Item) -> Option<Arc<(Shape, usize)>> {
        if let Some(s) = self.shapes.get(raw_key) {
            return Some(s);
        }
        let value = item.value()?;
        let shape = shape_of(value);
        let longest = longest_text(value, &shape);
        let entry = Arc::new((shape, longest));
        self.shapes.insert(raw_key, entry.clone());
        Some(entry)
    }

    /// What this conversation already decided for `text`: its compressed form (put back in the store if the
    /// original was evicted meanwhile, so the marker stays expandable), verbatim, or nothing yet.
    async fn known(
        &self,
        ctx: &Context<'_>,
        (text, hash): (&str, &str),
        tool: &str,
        form_key: &str,
    ) -> Result<Known, StoreError> {
        let now = unix_now();
        let expires = Some(now + self.settings.ttl.as_secs());
        let Some(record) = self
            .store
            .get(Namespace::Compressed, ctx.tenant, form_key, now)
            .await?
        else {
            return Ok(Known::New);
        };
        let Ok(form) = serde_json::from_slice::<CompressedForm>(&record.value) else {
            return Ok(Known::New);
        };
        if form.verbatim {
            return Ok(Known::Verbatim);
        }
        if self
            .store
            .get(Namespace::Originals, ctx.tenant, hash, now)
            .await?
            .is_none()
        {
            let meta = OriginalMeta {
                v: RECORD_VERSION,
                tool: tool.into(),
                kind: form.kind.clone(),
                ..Default::default()
            };
            self.put_original(ctx.tenant, hash, &meta, text, expires)
                .await?;
        }
        let saved = form.tokens_before.saturating_sub(form.tokens_after);
        Ok(Known::Compressed(
            form.text,
            MarkerUse {
                hash: hash.to_owned(),
                saved_tokens: saved,
                form_key: form_key.to_owned(),
            },
        ))
    }

    /// A compression of `text` made now, not yet stored; `None` when ctxzip leaves it as it is.
    fn fresh(
        &self,
        ctx: &Context<'_>,
        text: &str,
        arguments: &str,
        form_key: String,
        by_kind: bool,
        repeats: Option<(&ctxzip::repeats::Repeats, &ctxzip::repeats::Seen<'_>)>,
    ) -> Option<Fresh> {
        let query = ctxzip::query_terms(&format!("{}\n{}", ctx.first_user, arguments));
        let options = ctxzip::Options {
            query: query.clone(),
            keep_patterns: self.settings.keep_patterns.clone(),
            compress_code: self.settings.code,
        };
        let compressed = ctxzip::compress_in_context(text, &options, by_kind, repeats)?;
        Some(Fresh {
            form_key,
            before: ctxzip::estimate_tokens(text) as u64,
            after: ctxzip::estimate_tokens(&compressed.text) as u64,
            compressed,
            query,
        })
    }

    /// Stores the originals of this request's new compressions in one durable transaction (no request may carry
    /// their markers before it returns), then their compressed forms in another (best effort), and accounts for
    /// them. Returns, in order, each text with its compressed bytes and marker.
    async fn commit_all(
        &self,
        ctx: &Context<'_>,
        batch: Vec<(String, &str, &'static str, Fresh)>,
    ) -> Result<Vec<(String, String, MarkerUse)>, StoreError> {
        let now = unix_now();
        let expiry = now + self.settings.ttl.as_secs();
        let record = |value| Record {
            value,
            created_at: now,
            expires_at: Some(expiry),
        };
        let mut originals = Vec::with_capacity(batch.len());
        let mut forms = Vec::with_capacity(batch.len());
        let mut done = Vec::with_capacity(batch.len());
        let mut accounts = Vec::with_capacity(batch.len());
        for (text, tool, seam, fresh) in batch {
            let Fresh {
                compressed,
                form_key,
                query,
                before: tokens_before,
                after: tokens_after,
            } = fresh;
            let meta = OriginalMeta {
                v: RECORD_VERSION,
                tool: tool.into(),
                kind: compressed.kind.as_str().into(),
                query,
                bytes: text.len() as u64,
                tokens_before,
                tokens_after,
            };
            let form = CompressedForm {
                v: RECORD_VERSION,
                text: compressed.text.clone(),
                kind: meta.kind.clone(),
                tokens_before,
                tokens_after,
                verbatim: false,
            };
            originals.push((
                ctx.tenant.to_owned(),
                compressed.hash.clone(),
                record(encode_original(&meta, &text)),
            ));
            // Best effort: without the form, the same options make the same bytes again anyway.
            if let Ok(value) = serde_json::to_vec(&form) {
                forms.push((ctx.tenant.to_owned(), form_key.clone(), record(value)));
            }
            accounts.push((
                seam,
                tool.to_owned(),
                compressed.kind,
                tokens_before,
                tokens_after,
            ));
            done.push((
                text,
                compressed.text,
                MarkerUse {
                    hash: compressed.hash,
                    saved_tokens: tokens_before.saturating_sub(tokens_after),
                    form_key,
                },
            ));
        }
        self.put_many_durably(Namespace::Originals, originals)
            .await?;
        if let Err(e) = self.put_many_durably(Namespace::Compressed, forms).await {
            tracing::warn!(error = %e, "could not store compressed forms");
        }
        for (_, _, marker) in &done {
            self.expiries.insert(
                key_of(&[ctx.tenant.as_bytes(), marker.hash.as_bytes()]),
                expiry,
            );
        }
        for (seam, tool, kind, before, after) in accounts {
            self.account_new(ctx, seam, &tool, kind, before, after);
        }
        Ok(done)
    }

    /// Remembers, in the background, that this conversation sends `text` verbatim: a later turn (or a restart)
    /// must not compress it then, or the prefix the provider cached would change.
    fn remember_verbatim(&self, ctx: &Context<'_>, form_key: String) {
        let form = CompressedForm {
            v: RECORD_VERSION,
            text: String::new(),
            kind: String::new(),
            tokens_before: 0,
            tokens_after: 0,
            verbatim: true,
        };
        let Ok(value) = serde_json::to_vec(&form) else {
            return;
        };
        let key = form_key;
        let record = Record {
            value,
            created_at: unix_now(),
            expires_at: Some(unix_now() + self.settings.ttl.as_secs()),
        };
        let (store, tenant) = (self.store.clone(), ctx.tenant.to_string());
        self.tasks.spawn(async move {
            if let Err(e) = store
                .put(Namespace::Compressed, &tenant, &key, record)
                .await
            {
                tracing::warn!(error = %e, "could not remember a verbatim decision");
            }
        });
    }

    /// Stores an original under its hash, durably: no request may carry its marker before this returns.
    async fn put_original(
        &self,
        tenant: &str,
        hash: &str,
        meta: &OriginalMeta,
        text: &str,
        expires: Option<u64>,
    ) -> Result<(), StoreError> {
        let record = encode_original(meta, text);
        self.put_durably(Namespace::Originals, tenant, hash, record, expires)
            .await
    }

    /// A store write that completes even if the client hangs up meanwhile.
    async fn put_durably(
        &self,
        ns: Namespace,
        tenant: &str,
        key: &str,
        value: Vec<u8>,
        expires_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let (store, tenant, key) = (self.store.clone(), tenant.to_string(), key.to_string());
        let record = Record {
            value,
            created_at: unix_now(),
            expires_at,
        };
        self.tasks
            .spawn(async move { store.put(ns, &tenant, &key, record).await })
            .await
            .map_err(|e| StoreError::Io(format!("store task: {e}")))?
    }

    /// Several records in one store transaction that completes even if the client hangs up meanwhile.
    async fn put_many_durably(
        &self,
        ns: Namespace,
        records: Vec<(String, String, Record)>,
    ) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let store = self.store.clone();
        self.tasks
            .spawn(async move { store.put_many(ns, records).await })
            .await
            .map_err(|e| StoreError::Io(format!("store task: {e}")))?
    }

    fn account_new(
        &self,
        ctx: &Context<'_>,
        seam: &'static str,
        tool: &str,
        kind: ctxzip::Kind,
        before: u64,
        after: u64,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        let saved = before.saturating_sub(after);
        let savings = &self.metrics.savings;
        savings.compressions.fetch_add(1, Relaxed);
        savings.saved_tokens.fetch_add(saved, Relaxed);
        self.metrics
            .compressions
            .get_or_create(&KindLabels {
                kind: kind.as_str(),
            })
            .inc();
        self.metrics.compress_saved_tokens.inc_by(saved);
        let totals = savings.totals();
        tracing::info!(
            target: "ctxgate::audit",
            event = "context_compressed",
            request_id = ctx.request_id,
            tenant = ctx.tenant,
            seam,
            tool,
            kind = kind.as_str(),
            tokens_before = before,
            tokens_after = after,
            saved_tokens = saved,
            total_saved_tokens = totals.saved_tokens,
            total_wire_saved_tokens = totals.wire_saved_tokens,
            total_compressions = totals.compressions,
            total_expansions = totals.expansions,
            "context_compressed"
        );
    }

    /// Moves the expiry of originals still in use forward, in the background: a marker that reaches the model stays
    /// expandable for at least the TTL after the last request that carried it. The new expiry has a little slack
    /// so that a conversation's every turn does not cost a store write.
    fn refresh(&self, tenant: &str, markers: &[MarkerUse]) {
        let ttl = self.settings.ttl.as_secs();
        let slack = (ttl / 10).clamp(1, REFRESH_SLACK_MAX_SECS);
        let now = unix_now();
        let mut due = Vec::new();
        for m in markers {
            let key = key_of(&[tenant.as_bytes(), m.hash.as_bytes()]);
            let expiry = self.expiries.get(key).unwrap_or(0);
            if expiry < now + ttl {
                self.expiries.insert(key, now + ttl + slack);
                due.push((m.hash.clone(), m.form_key.clone()));
            }
        }
        if due.is_empty() {
            return;
        }
        let (store, tenant) = (self.store.clone(), tenant.to_string());
        self.tasks.spawn(async move {
            for (hash, form_key) in due {
                let expires = Some(now + ttl + slack);
                let results = [
                    store
                        .touch(Namespace::Originals, &tenant, &hash, expires, now)
                        .await,
                    store
                        .touch(Namespace::Compressed, &tenant, &form_key, expires, now)
                        .await,
                ];
                for r in results {
                    if let Err(e) = r {
                        tracing::warn!(error = %e, "could not refresh an original's expiry");
                    }
                }
            }
        });
    }
}

/// Whether an item may be compressed at its position: tool outputs unless among the `protect_recent` last; live-zone
/// items unless in the frozen prefix (the first item) or the most recent turns.
struct Positions {
    recent_outputs_from: usize,
    recent_turns_from: usize,
}

impl Positions {
    fn allows(&self, index: usize, shape: &Shape) -> bool {
        match shape {
            Shape::Output { function: true, .. } => index < self.recent_outputs_from,
            _ => index > 0 && index < self.recent_turns_from,
        }
    }
}

#[async_trait]
impl Stage for CompressStage {
    fn name(&self) -> &'static str {
        "compress"
    }

    async fn apply(&self, turn: &mut Turn) -> Result<(), StageError> {
        if !self.settings.enabled {
            return Ok(());
        }
        let Some(items) = turn.body.items() else {
            turn.add_response_header(COMPRESSED_HEADER, "0".into());
            turn.add_response_header(SAVED_HEADER, "0".into());
            return Ok(());
        };
        let min = self.settings.min_tool_output_chars;
        // Outputs that repeat an earlier output's lines are worth a look from a smaller size on.
        let min_repeat = match self.settings.min_repeat_chars {
            0 => min,
            n => n.min(min),
        };
        // An item whose whole JSON is shorter than the threshold has no text that long: most turns stop here.
        if items.iter().all(|i| i.json_len() < min_repeat) {
            turn.add_response_header(COMPRESSED_HEADER, "0".into());
            turn.add_response_header(SAVED_HEADER, "0".into());
            return Ok(());
        }
        let raw_keys: Vec<u128> = items
            .iter()
            .map(crate::responses::Item::content_key)
            .collect();
        let mut shapes = Vec::with_capacity(items.len());
        for (item, key) in items.iter().zip(&raw_keys) {
            shapes.push(self.shape(*key, item));
        }
        let shape_at = |i: usize| shapes[i].as_deref().map(|(s, _)| s);
        let is_candidate = |i: usize| match shapes[i].as_deref() {
            Some((Shape::Output { .. }, longest)) => *longest >= min_repeat,
            Some((Shape::AssistantMessage, longest)) => *longest >= min,
            Some((Shape::UserMessage { .. }, longest)) => {
                self.settings.user_messages && *longest >= min
            }
            _ => false,
        };
        let candidates: Vec<usize> = (0..items.len()).filter(|i| is_candidate(*i)).collect();
        if candidates.is_empty() {
            turn.add_response_header(COMPRESSED_HEADER, "0".into());
            turn.add_response_header(SAVED_HEADER, "0".into());
            return Ok(());
        }
        // Borrowed from the shapes: a long transcript has thousands of calls, and this runs every turn.
        let mut calls: rustc_hash::FxHashMap<&str, (&str, &str)> = rustc_hash::FxHashMap::default();
        let mut first_user = "";
        let mut user_positions = Vec::new();
        let mut function_outputs = Vec::new();
        // Each output's position among the request's outputs, and the item index of each: what repeats count in.
        let mut ordinals: Vec<Option<usize>> = vec![None; items.len()];
        let mut outputs: Vec<usize> = Vec::new();
        for i in 0..items.len() {
            match shape_at(i) {
                Some(Shape::Call {
                    call_id,
                    name,
                    arguments,
                }) => {
                    calls.insert(call_id.as_str(), (name.as_str(), arguments.as_str()));
                }
                Some(Shape::UserMessage { text }) => {
                    if user_positions.is_empty() {
                        first_user = text.as_str();
                    }
                    user_positions.push(i);
                }
                Some(Shape::Output { function, .. }) => {
                    outputs.push(i);
                    if *function {
                        function_outputs.push(i);
                    }
                }
                _ => {}
            }
        }
        for (ordinal, &i) in outputs.iter().enumerate() {
            ordinals[i] = Some(ordinal);
        }
        let protect_turns = self.settings.protect_recent_turns;
        let positions = Positions {
            recent_outputs_from: match self.settings.protect_recent {
                0 => usize::MAX,
                n => function_outputs
                    .iter()
                    .rev()
                    .nth(n - 1)
                    .copied()
                    .unwrap_or(0),
            },
            recent_turns_from: match protect_turns {
                0 => usize::MAX,
                n if user_positions.len() >= n => user_positions[user_positions.len() - n],
                _ => 0,
            },
        };
        let anchor = crate::fold::anchor(
            turn.body.get_str("prompt_cache_key").as_deref(),
            items.first().and_then(|i| i.value()),
        );
        let anchor_key = super::fold::anchor_key(&anchor);
        let tenant = turn.caller.tenant.as_str().to_string();
        let ctx = Context {
            tenant: &tenant,
            first_user,
            request_id: &turn.request_id,
        };
        let mut rewrites: Vec<(usize, Arc<Compression>)> = Vec::new();
        let mut pending: Vec<Pending<'_>> = Vec::new();
        // The earlier outputs new ones may repeat, indexed once, when a new output first needs them.
        let repeat_opts = ctxzip::Options {
            keep_patterns: self.settings.keep_patterns.clone(),
            ..ctxzip::Options::default()
        };
        let mut seen: Option<ctxzip::repeats::Seen<'_>> = None;
        let build_seen = || {
            let new_ordinals = candidates.iter().filter_map(|i| ordinals[*i]);
            let (lo, hi) = new_ordinals.fold((usize::MAX, 0), |(lo, hi), o| (lo.min(o), hi.max(o)));
            let mut earlier = Vec::new();
            for (ordinal, &idx) in outputs
                .iter()
                .enumerate()
                .take(hi)
                .skip(lo.saturating_sub(ctxzip::repeats::WINDOW))
            {
                let (Some(value), Some(Shape::Output { call_id, .. })) =
                    (items[idx].value(), shape_at(idx))
                else {
                    continue;
                };
                for text in crate::responses::shape::item_texts(
                    value,
                    &Shape::Output {
                        call_id: String::new(),
                        function: true,
                    },
                ) {
                    earlier.push(ctxzip::repeats::Earlier {
                        ordinal,
                        label: call_id.as_str(),
                        text,
                    });
                }
            }
            ctxzip::repeats::Seen::new(earlier)
        };
        // Whether this conversation already carries a marker (so the expand tool is paid for).
        let mut has_marker = false;
        for i in candidates.iter().copied() {
            let Some(shape) = shape_at(i) else { continue };
            if !positions.allows(i, shape) {
                continue;
            }
            let call = match shape {
                Shape::Output { call_id, .. } => calls.get(call_id.as_str()),
                _ => None,
            };
            let (tool, arguments) = call.copied().unwrap_or(("", ""));
            if tool == EXPAND_TOOL || self.settings.exclude_tools.iter().any(|t| t == tool) {
                self.skipped("excluded_tool");
                continue;
            }
            let memo_key = key_of(&[
                tenant.as_bytes(),
                anchor_key.as_bytes(),
                &raw_keys[i].to_le_bytes(),
            ]);
            if let Some(known) = self.rewrites.get(memo_key) {
                // A form that points back to earlier outputs is reused only where they stand before it, the same.
                let stands = known.as_ref().is_none_or(|c| {
                    c.sources
                        .iter()
                        .all(|(s, key)| *s < i && raw_keys.get(*s) == Some(key))
                });
                if stands {
                    if let Some(c) = known {
                        has_marker = true;
                        rewrites.push((i, c));
                    }
                    continue;
                }
            }
            let Some(value) = items[i].value() else {
                continue;
            };
            let seam = if matches!(shape, Shape::Output { function: true, .. }) {
                "tool_output"
            } else {
                "live_zone"
            };
            let text_min = match shape {
                Shape::Output { .. } => min_repeat,
                _ => min,
            };
            let mut item = Pending {
                index: i,
                memo_key,
                value,
                shape,
                tool,
                seam,
                text_min,
                texts: Vec::new(),
                sources: Vec::new(),
                faulted: false,
            };
            let mut texts = Vec::new();
            let _ = rewrite_texts(value, shape, text_min, |t| {
                texts.push(t.to_string());
                None
            });
            for text in texts {
                if ctxzip::contains_marker(&text) {
                    continue;
                }
                if matches!(shape, Shape::Output { .. })
                    && self.settings.failures == Failures::Verbatim
                    && ctxzip::verbatim::looks_like_error_output(&text)
                {
                    self.skipped("error_output");
                    continue;
                }
                let by_kind = text.len() >= min;
                let repeats = match ordinals[i] {
                    Some(ordinal) if self.settings.min_repeat_chars > 0 => {
                        let index = seen.get_or_insert_with(build_seen);
                        ctxzip::repeats::find(&text, ordinal, index, &repeat_opts)
                    }
                    _ => None,
                };
                if !by_kind && repeats.is_none() {
                    continue;
                }
                let hash = ctxzip::hash_of(&text);
                // A form that points back to earlier outputs is remembered with what it points to.
                let form_key = match (&repeats, &seen) {
                    (Some(r), Some(index)) => {
                        for ordinal in r.sources(index) {
                            if let Some(&s) = outputs.get(ordinal) {
                                item.sources.push((s, raw_keys[s]));
                            }
                        }
                        compressed_key(&anchor_key, &format!("{hash}~{}", r.context()))
                    }
                    _ => compressed_key(&anchor_key, &hash),
                };
                let in_context = repeats.as_ref().zip(seen.as_ref());
                let state = match self.known(&ctx, (&text, &hash), tool, &form_key).await {
                    Ok(Known::Compressed(new, marker)) => {
                        has_marker = true;
                        TextState::Known(new, marker)
                    }
                    Ok(Known::Verbatim) => TextState::Verbatim,
                    Ok(Known::New) => {
                        match self.fresh(&ctx, &text, arguments, form_key, by_kind, in_context) {
                            Some(f) => TextState::Fresh(f),
                            None => TextState::Verbatim,
                        }
                    }
                    Err(e) => {
                        tracing::warn!(request_id = %turn.request_id, error = %e, "store unreadable; text left verbatim");
                        self.skipped("store_failed");
                        item.faulted = true;
                        TextState::Verbatim
                    }
                };
                item.texts.push((text, state));
            }
            pending.push(item);
        }
        // Each new text is decided once, here, for the whole conversation: it is compressed when its saving pays
        // for its own marker and — while the conversation has no marker yet — when the request's new texts
        // together pay for the expand tool and directive the first marker brings.
        let min_item = self.settings.min_item_saved_tokens;
        let worthy = |f: &Fresh| f.before.saturating_sub(f.after) >= min_item;
        let new_saving: u64 = pending
            .iter()
            .flat_map(|p| &p.texts)
            .filter_map(|(_, s)| match s {
                TextState::Fresh(f) if worthy(f) => Some(f.before.saturating_sub(f.after)),
                _ => None,
            })
            .sum();
        // The first marker also changes the request's head (tool and directive), so the provider's cached prefix
        // before the new items is paid in full once: the saving must be worth a share of it too.
        let first_new = pending
            .iter()
            .find(|p| {
                p.texts
                    .iter()
                    .any(|(_, s)| matches!(s, TextState::Fresh(f) if worthy(f)))
            })
            .map_or(0, |p| p.index);
        let cached_before: u64 = items[..first_new]
            .iter()
            .map(|i| i.json_len() as u64)
            .sum::<u64>()
            / 4;
        let first_threshold = self
            .settings
            .min_saved_tokens
            .max(cached_before.saturating_mul(self.settings.min_saved_prefix_percent) / 100);
        let pays = has_marker || new_saving >= first_threshold;
        // Every new original of this request goes to the store in one durable transaction.
        let mut batch = Vec::new();
        let mut owners = Vec::new();
        for (p, item) in pending.iter_mut().enumerate() {
            let mut kept = Vec::with_capacity(item.texts.len());
            for (text, state) in std::mem::take(&mut item.texts) {
                match state {
                    TextState::Fresh(f) if pays && worthy(&f) => {
                        owners.push(p);
                        batch.push((text, item.tool, item.seam, f));
                    }
                    other => kept.push((text, other)),
                }
            }
            item.texts = kept;
        }
        let mut committed: Vec<Vec<(String, String, MarkerUse)>> =
            pending.iter().map(|_| Vec::new()).collect();
        if !batch.is_empty() {
            match self.commit_all(&ctx, batch).await {
                Ok(done) => {
                    for (p, entry) in owners.into_iter().zip(done) {
                        committed[p].push(entry);
                    }
                }
                Err(e) => {
                    // Nothing is sent behind a marker whose original is not safe: these texts go verbatim.
                    tracing::warn!(request_id = %turn.request_id, error = %e, "originals not stored; texts left verbatim");
                    for p in owners {
                        self.skipped("store_failed");
                        pending[p].faulted = true;
                    }
                }
            }
        }
        for (mut item, committed) in pending.into_iter().zip(committed) {
            let mut replaced: HashMap<String, String> = HashMap::new();
            let mut markers = Vec::new();
            for (text, new, marker) in committed {
                markers.push(marker);
                replaced.insert(text, new);
            }
            for (text, state) in std::mem::take(&mut item.texts) {
                match state {
                    TextState::Known(new, marker) => {
                        markers.push(marker);
                        replaced.insert(text, new);
                    }
                    TextState::Verbatim => {}
                    TextState::Fresh(f) => {
                        self.skipped("small_saving");
                        self.remember_verbatim(&ctx, f.form_key);
                    }
                }
            }
            let found = if replaced.is_empty() {
                None
            } else {
                let sources = std::mem::take(&mut item.sources);
                rewrite_texts(item.value, item.shape, item.text_min, |t| {
                    replaced.get(t).cloned()
                })
                .map(|value| {
                    Arc::new(Compression {
                        value,
                        markers,
                        sources,
                    })
                })
            };
            if !item.faulted {
                self.rewrites.insert(item.memo_key, found.clone());
            }
            if let Some(c) = found {
                rewrites.push((item.index, c));
            }
        }
        let markers: Vec<MarkerUse> = rewrites
            .iter()
            .flat_map(|(_, c)| c.markers.iter().cloned())
            .collect();
        let wire_saved: u64 = markers.iter().map(|m| m.saved_tokens).sum();
        self.refresh(&tenant, &markers);
        let count = rewrites.len();
        for (i, c) in rewrites {
            turn.body.replace_item(i, c.value.clone());
        }
        self.metrics.wire_saved_tokens.inc_by(wire_saved);
        self.metrics
            .savings
            .wire_saved_tokens
            .fetch_add(wire_saved, std::sync::atomic::Ordering::Relaxed);
        turn.add_response_header(COMPRESSED_HEADER, count.to_string());
        turn.add_response_header(SAVED_HEADER, wire_saved.to_string());
        Ok(())
    }
}

/// Reads an original back (for expansion and the CLI).
pub async fn load_original(
    store: &dyn Store,
    tenant: &str,
    hash: &str,
) -> Result<Option<(OriginalMeta, String)>, StoreError> {
    Ok(store
        .get(Namespace::Originals, tenant, hash, unix_now())
        .await?
        .and_then(|r| decode_original(&r.value)))
}

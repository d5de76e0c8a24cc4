//! The compress stage: large tool outputs and live-zone texts replaced by ctxzip's compressed form.
//!
//! For each large item of the input it decides whether the item may be compressed (its seam, its position, its
//! tool, whether it reports an error), then takes the compressed form this conversation already uses for that
//! original — from memory, else from the store — or makes one with [`ctxzip::compress`]. A new original is written
//! durably before the request carrying its marker leaves; if that write fails the item goes verbatim. Every marker
//! a request carries refreshes its original's expiry and counts its saving again (wire savings); each response gets
//! `x-ctxgate-compressed` and `x-ctxgate-saved-tokens`.

use std::sync::Arc;

mod candidate;
mod decide;
mod forms;
mod positions;
mod prefix;
mod scan;

use async_trait::async_trait;

use super::Turn;
use super::memo::{Memo, key_of};
use super::stage::{Stage, StageError};
use crate::config::compress::{CompressSettings, Failures};
use crate::ctxzip;
use crate::expand::tool::EXPAND_TOOL;
use crate::responses::Item;
use crate::responses::shape::{Shape, longest_text, rewrite_texts, shape_of};
use crate::store::records::{Records, SAVINGS_KEY, compressed_key};
use crate::telemetry::{Metrics, ReasonLabels};
use candidate::{Compression, Pending, TextState};
use decide::CatchUp;
use forms::{ByKind, Context, Known, MarkerUse};
use positions::Positions;
use prefix::{Heads, Settled};
use scan::Scan;

/// The agent's notes are compressed from this length on (tool outputs from `min_tool_output_chars`): a note keeps
/// only a few lines, so from about a thousand characters (some 25 lines of reasoning) it has lines to spare.
const NOTES_MIN_CHARS: usize = 1024;

pub const COMPRESSED_HEADER: &str = "x-ctxgate-compressed";
pub const SAVED_HEADER: &str = "x-ctxgate-saved-tokens";
const MEMO_CAPACITY: usize = 50_000;

/// The text lengths from which the stage looks at an item (see [`CompressStage::apply`]).
struct Limits {
    min: usize,
    min_repeat: usize,
    min_notes: usize,
}

pub struct CompressStage {
    settings: CompressSettings,
    records: Records,
    metrics: Arc<Metrics>,
    /// Shape and longest text of an item, by its bytes.
    shapes: Memo<Arc<(Shape, usize)>>,
    /// The compressed form (or `None`: verbatim whatever its position) by tenant, anchor and item bytes.
    rewrites: Memo<Option<Arc<Compression>>>,
    /// The expiry last given to an original, by tenant and hash, so refreshes are written only when due.
    expiries: Memo<u64>,
    /// Items sent verbatim because their position protected them, by the same key as `rewrites`.
    held: Memo<()>,
    /// The settled head of each recent conversation: a turn examines only the items after it.
    heads: Heads,
}

/// The stage's headers on a turn it left alone.
fn nothing(turn: &mut Turn) -> Result<(), StageError> {
    turn.add_response_header(COMPRESSED_HEADER, "0".into());
    turn.add_response_header(SAVED_HEADER, "0".into());
    Ok(())
}

impl CompressStage {
    pub fn new(settings: CompressSettings, records: Records, metrics: Arc<Metrics>) -> Self {
        CompressStage {
            settings,
            records,
            metrics,
            shapes: Memo::new(MEMO_CAPACITY),
            rewrites: Memo::new(MEMO_CAPACITY),
            expiries: Memo::new(MEMO_CAPACITY),
            held: Memo::new(MEMO_CAPACITY),
            heads: Heads::default(),
        }
    }

    fn skipped(&self, reason: &'static str) {
        self.skipped_n(reason, 1);
    }

    fn skipped_n(&self, reason: &'static str, n: u64) {
        self.metrics
            .compress_skipped
            .get_or_create(&ReasonLabels { reason })
            .inc_by(n);
    }

    fn shape(&self, item: &Item) -> Option<Arc<(Shape, usize)>> {
        let raw_key = item.content_key();
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
            return nothing(turn);
        };
        let min = self.settings.min_tool_output_chars;
        // Outputs that repeat an earlier output's lines are worth a look from a smaller size on.
        let min_repeat = match self.settings.min_repeat_chars {
            0 => min,
            n => n.min(min),
        };
        let min_notes = if self.settings.agent_notes {
            NOTES_MIN_CHARS.min(min)
        } else {
            min
        };
        // An item whose whole JSON is shorter than the threshold has no text that long: most turns stop here.
        if items
            .iter()
            .all(|i| i.json_len() < min_repeat.min(min_notes))
        {
            return nothing(turn);
        }
        let anchor_key = turn.anchor_key(None);
        let tenant = turn.tenant().to_string();
        // The head settled on an earlier turn is replayed, not examined again. A follow-up expand round carries the
        // first round's rewritten items, not the client's: it takes the full pass and is not remembered.
        let conversation = prefix::conversation_key(&tenant, &anchor_key);
        let head = if turn.expand_active {
            None
        } else {
            self.heads.find(conversation, &turn.body)
        };
        let limits = Limits {
            min,
            min_repeat,
            min_notes,
        };
        let ids = (tenant.as_str(), anchor_key.as_str(), conversation);
        match self.pass(turn, head, &limits, ids).await {
            Ok(done) => done,
            // The first marker comes with texts of the settled head: every item is looked at again. That pass
            // has no settled head, so it decides without asking again.
            Err(CatchUp) => match self.pass(turn, None, &limits, ids).await {
                Ok(done) => done,
                Err(CatchUp) => nothing(turn),
            },
        }
    }
}

impl CompressStage {
    /// One pass of the stage over the turn's items after `head` (all of them without one): decides, rewrites
    /// `turn`'s body and remembers the new head. `CatchUp` before anything is changed or stored when the first
    /// marker needs texts of the head.
    async fn pass(
        &self,
        turn: &mut Turn,
        mut head: Option<Arc<prefix::Decided>>,
        &Limits {
            min,
            min_repeat,
            min_notes,
        }: &Limits,
        (tenant, anchor_key, conversation): (&str, &str, u128),
    ) -> Result<Result<(), StageError>, CatchUp> {
        let Some(items) = turn.body.items() else {
            return Ok(Ok(()));
        };
        let mut scan = Scan::new(self, items, head.as_deref());
        let mut positions = scan.positions(&self.settings);
        if head.as_ref().is_some_and(|h| !positions.still_allow(h)) {
            head = None;
            scan = Scan::new(self, items, None);
            positions = scan.positions(&self.settings);
        }
        let shape_at = |i: usize| scan.shape(i);
        // The agent's notes on its way to a call: compressed as notes, from `min_notes` on.
        let is_note = |i: usize, shape: &Shape| {
            self.settings.agent_notes
                && matches!(shape, Shape::AssistantMessage)
                && positions.is_step(i)
        };
        let is_candidate = |i: usize| match scan.shape_and_longest(i) {
            Some((Shape::Output { .. }, longest)) => *longest >= min_repeat,
            Some((shape, longest)) if is_note(i, shape) => *longest >= min_notes,
            Some((Shape::AssistantMessage, longest)) => *longest >= min,
            Some((Shape::UserMessage { .. }, longest)) => {
                self.settings.user_messages && *longest >= min
            }
            _ => false,
        };
        let candidates: Vec<usize> = (scan.start..items.len())
            .filter(|i| is_candidate(*i))
            .collect();
        let replayed = head
            .as_ref()
            .map_or(0, |h| h.rewrites.len() as u64 + h.excluded);
        if candidates.is_empty() && replayed == 0 {
            if !turn.expand_active {
                let none = (&Settled::default(), &[][..]);
                self.remember_head(conversation, &scan, head.as_ref(), none, &turn.body);
            }
            return Ok(nothing(turn));
        }
        // Borrowed from the shapes: a long transcript has thousands of calls, and this runs every turn.
        let mut calls: rustc_hash::FxHashMap<&str, (&str, &str)> = rustc_hash::FxHashMap::default();
        for i in 0..scan.len() {
            if let Some(Shape::Call {
                call_id,
                name,
                arguments,
            }) = shape_at(i)
            {
                calls.insert(call_id.as_str(), (name.as_str(), arguments.as_str()));
            }
        }
        let first_user = match scan.first_user.and_then(shape_at) {
            Some(Shape::UserMessage { text }) => text.clone(),
            _ => String::new(),
        };
        let ctx = Context {
            tenant,
            first_user: &first_user,
            request_id: &turn.request_id,
        };
        let mut rewrites: Vec<(usize, Arc<Compression>)> = Vec::new();
        let mut settled = Settled::default();
        // Skips are counted when the pass goes through: a pass that answers `CatchUp` is taken again whole, and
        // its items would otherwise be counted twice.
        let mut skips: Vec<(&'static str, u64)> = Vec::new();
        if let Some(h) = &head {
            rewrites.extend(h.rewrites.iter().cloned());
            if h.excluded > 0 {
                skips.push(("excluded_tool", h.excluded));
            }
        }
        let mut pending: Vec<Pending<'_>> = Vec::new();
        // The earlier outputs new ones may repeat, indexed once, when a new output first needs them.
        let repeat_opts = ctxzip::Options {
            keep_patterns: self.settings.keep_patterns.clone(),
            ..ctxzip::Options::default()
        };
        let mut seen: Option<ctxzip::repeats::Seen<'_>> = None;
        let build_seen = || scan.earlier_outputs(items, &candidates);
        // Whether this conversation already carries a marker, or is offered the tool anyway (so it is paid for).
        let mut has_marker = turn.offer_from_head || head.as_ref().is_some_and(|h| h.has_marker);
        let replayed = rewrites.len();
        for i in candidates.iter().copied() {
            let Some(shape) = shape_at(i) else { continue };
            let memo_key = key_of(&[
                tenant.as_bytes(),
                anchor_key.as_bytes(),
                &items[i].content_key().to_le_bytes(),
            ]);
            if !positions.allows(i, shape) {
                if !Positions::forever_denied(i, shape) {
                    settled.open(i);
                    // Sent as the client sent it, so the provider caches it so: compressing it later gives that up.
                    self.held.insert(memo_key, ());
                }
                continue;
            }
            // A step of the tool loop stays allowed on every later turn: only other allowed items are checked again.
            if !positions.is_step(i) {
                settled
                    .allowed
                    .push((i, matches!(shape, Shape::Output { function: true, .. })));
            }
            let call = match shape {
                Shape::Output { call_id, .. } => calls.get(call_id.as_str()),
                _ => None,
            };
            let (tool, arguments) = call.copied().unwrap_or(("", ""));
            if tool == EXPAND_TOOL || self.settings.exclude_tools.iter().any(|t| t == tool) {
                skips.push(("excluded_tool", 1));
                settled.excluded.push(i);
                continue;
            }
            if let Some(known) = self.rewrites.get(memo_key) {
                // A form that points back to earlier outputs is reused only where they stand before it, the same.
                let stands = known.as_ref().is_none_or(|c| {
                    c.sources.iter().all(|(s, key)| {
                        *s < i && items.get(*s).map(Item::content_key) == Some(*key)
                    })
                });
                if stands {
                    if let Some(c) = known {
                        has_marker = true;
                        settled.markers.push(i);
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
            let notes = is_note(i, shape);
            let text_min = match shape {
                Shape::Output { .. } => min_repeat,
                _ if notes => min_notes,
                _ => min,
            };
            let mut item = Pending {
                index: i,
                memo_key,
                late: self.held.get(memo_key).is_some(),
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
                    skips.push(("error_output", 1));
                    continue;
                }
                // A note's texts are all at least `min_notes` long (`text_min`).
                let by_kind = if notes {
                    ByKind::Notes
                } else if text.len() < min {
                    ByKind::No
                } else {
                    ByKind::Content
                };
                let repeats = match scan.ordinal(i) {
                    Some(ordinal) if self.settings.min_repeat_chars > 0 => {
                        let index = seen.get_or_insert_with(build_seen);
                        ctxzip::repeats::find(&text, ordinal, index, &repeat_opts)
                    }
                    _ => None,
                };
                if by_kind == ByKind::No && repeats.is_none() {
                    continue;
                }
                let hash = ctxzip::hash_of(&text);
                // A form that points back to earlier outputs is remembered with what it points to.
                let form_key = match (&repeats, &seen) {
                    (Some(r), Some(index)) => {
                        for ordinal in r.sources(index) {
                            if let Some(s) = scan.output_at(ordinal) {
                                item.sources.push((s, items[s].content_key()));
                            }
                        }
                        compressed_key(anchor_key, &format!("{hash}~{}", r.context()))
                    }
                    _ => compressed_key(anchor_key, &hash),
                };
                let in_context = repeats.as_ref().zip(seen.as_ref());
                let state = match self.known(&ctx, (&text, &hash), tool, &form_key).await {
                    Ok(Known::Compressed(new, marker)) => {
                        has_marker = true;
                        settled.markers.push(i);
                        TextState::Known(new, marker)
                    }
                    Ok(Known::Verbatim) => TextState::Verbatim,
                    Ok(known @ (Known::New | Known::Waiting)) => {
                        // A waiting text was sent verbatim on earlier turns: the provider has cached it so.
                        item.late |= matches!(known, Known::Waiting);
                        match self.fresh(
                            &ctx,
                            (&text, &hash),
                            (tool, arguments),
                            form_key,
                            by_kind,
                            in_context,
                        ) {
                            Ok(Some(f)) => TextState::Fresh(f),
                            Ok(None) => TextState::Verbatim,
                            Err(forms::CompressorPanicked) => {
                                skips.push(("compressor_panic", 1));
                                TextState::Verbatim
                            }
                        }
                    }
                    Err(e) => {
                        crate::store_fault!(e, request_id = %turn.request_id, error = %e, "store unreadable; text left verbatim");
                        skips.push(("store_failed", 1));
                        item.faulted = true;
                        TextState::Verbatim
                    }
                };
                item.texts.push((text, state));
            }
            pending.push(item);
        }
        // The texts of the settled head that wait for the first marker (its later items are looked at now).
        let waiting_elsewhere = head
            .as_ref()
            .filter(|h| !h.has_marker)
            .map_or(0, |h| h.waiting_saving);
        let decisions = self
            .decide(
                &ctx,
                &turn.request_id,
                items,
                pending,
                (has_marker, waiting_elsewhere),
            )
            .await?;
        for (reason, n) in skips {
            self.skipped_n(reason, n);
        }
        rewrites.extend(decisions.compressed);
        if let Some(i) = decisions.faulted {
            settled.open(i);
        }
        settled.waiting = decisions.waiting;
        if !turn.expand_active {
            let tail = rewrites.get(replayed..).unwrap_or_default();
            self.remember_head(
                conversation,
                &scan,
                head.as_ref(),
                (&settled, tail),
                &turn.body,
            );
        }
        // Borrowed from the forms: a long transcript's every turn carries all of its markers again.
        let markers: Vec<&MarkerUse> = rewrites.iter().flat_map(|(_, c)| &c.markers).collect();
        let wire_saved: u64 = markers.iter().map(|m| m.saved_tokens).sum();
        self.refresh(tenant, &markers);
        let count = rewrites.len();
        for (i, c) in rewrites {
            turn.body.replace_item_encoded(i, c.encoded());
        }
        self.metrics.wire_saved_tokens.inc_by(wire_saved);
        if wire_saved > 0 {
            let delta = i64::try_from(wire_saved).unwrap_or(i64::MAX);
            self.records
                .count_later(tenant, SAVINGS_KEY, vec![("wire_saved_tokens", delta)]);
        }
        self.metrics
            .savings
            .wire_saved_tokens
            .fetch_add(wire_saved, std::sync::atomic::Ordering::Relaxed);
        turn.add_response_header(COMPRESSED_HEADER, count.to_string());
        turn.add_response_header(SAVED_HEADER, wire_saved.to_string());
        Ok(Ok(()))
    }
}

//! The compress stage's decision: which of a turn's new compressions are sent.
//!
//! Each new text is decided once, for the whole conversation: it is compressed when its saving pays for its own
//! marker and — while the conversation carries no marker yet — when the texts that could carry one together pay for
//! the expand tool and directive the first marker brings, and for the provider's cached prefix that the changed head
//! makes it read again. Until then a text worth its own marker *waits*: sent verbatim, remembered as waiting, its
//! saving counted on every later turn, and compressed with the others when the first marker comes (the provider
//! reads the whole prefix again then anyway). A text the conversation already sent verbatim once the tool was there
//! (its position protected it then) is in the provider's cache as it was: compressing it now makes the provider read
//! everything after it again, so the late texts of a request must together save a share of that too. The originals
//! of the texts sent compressed are stored in one durable transaction before the request leaves; a text whose
//! original could not be stored goes verbatim, and its decision is not remembered.

use std::collections::HashMap;
use std::sync::Arc;

use super::forms::{Context, Fresh, MarkerUse};
use super::{CompressStage, Compression, Pending, TextState};
use crate::responses::Item;
use crate::responses::shape::rewrite_texts;

/// A turn's decisions: the compressed items (index, form), the first item a store fault left undecided, and the
/// items whose saving waits for the conversation's first marker (index, estimated tokens saved).
#[derive(Default)]
pub(super) struct Decisions {
    pub compressed: Vec<(usize, Arc<Compression>)>,
    pub faulted: Option<usize>,
    pub waiting: Vec<(usize, u64)>,
}

/// The first marker pays once the items waiting in the settled head are counted: the turn must look at them
/// again (a full pass) to compress them with the new ones.
#[derive(Debug)]
pub(super) struct CatchUp;

impl CompressStage {
    /// The decisions on `pending`; every decision made is remembered. `waiting_elsewhere`: the estimated saving of
    /// the texts that wait for the first marker among the items this turn did not look at (the settled head).
    pub(super) async fn decide(
        &self,
        ctx: &Context<'_>,
        request_id: &str,
        items: &[Item],
        mut pending: Vec<Pending<'_>>,
        (has_marker, waiting_elsewhere): (bool, u64),
    ) -> Result<Decisions, CatchUp> {
        let mut decisions = Decisions::default();
        // Each new text is decided once, here, for the whole conversation: it is compressed when its saving pays
        // for its own marker and — while the conversation has no marker yet — when the texts that could carry one
        // together pay for the expand tool and directive the first marker brings.
        let min_item = self.settings.min_item_saved_tokens;
        let worthy = |f: &Fresh| f.before.saturating_sub(f.after) >= min_item;
        let saving = |p: &Pending<'_>| -> u64 {
            p.texts
                .iter()
                .filter_map(|(_, s)| match s {
                    TextState::Fresh(f) if worthy(f) => Some(f.before.saturating_sub(f.after)),
                    _ => None,
                })
                .sum()
        };
        let new_saving: u64 = pending.iter().map(saving).sum();
        // The first marker also changes the request's head (tool and directive), so the provider's cached prefix
        // — everything before the first text it has not seen — is paid in full once: the saving must be worth a
        // share of it too. Texts sent verbatim before (late, waiting) are part of that prefix; with none new, the
        // whole request is.
        let first_new = pending
            .iter()
            .find(|p| !p.late && saving(p) > 0)
            .map_or(items.len(), |p| p.index);
        // The share (`min_saved_prefix_percent`) of the estimated tokens of `cached` that a change to them must save.
        let share_of = |cached: &[Item]| -> u64 {
            let tokens = cached.iter().map(|i| i.json_len() as u64).sum::<u64>() / 4;
            tokens.saturating_mul(self.settings.min_saved_prefix_percent) / 100
        };
        let first_threshold = self
            .settings
            .min_saved_tokens
            .max(share_of(&items[..first_new]));
        let first_marker =
            !has_marker && new_saving > 0 && new_saving + waiting_elsewhere >= first_threshold;
        if first_marker && waiting_elsewhere > 0 {
            return Err(CatchUp);
        }
        let pays = has_marker || first_marker;
        // Late texts change bytes the provider has cached: everything from the first of them on is read again at
        // full price, so together they must save a share of it. Otherwise they stay as they were sent — for good,
        // or, while the conversation has no marker, until its first one (which makes the provider read it all
        // again anyway, so they go with it).
        let late_saving = |p: &Pending<'_>| if p.late { saving(p) } else { 0 };
        let late_pays = first_marker
            || match pending.iter().find(|p| late_saving(p) > 0) {
                None => true,
                Some(first) => {
                    pending.iter().map(late_saving).sum::<u64>() >= share_of(&items[first.index..])
                }
            };
        // Every new original of this request goes to the store in one durable transaction.
        let mut batch = Vec::new();
        let mut owners = Vec::new();
        for (p, item) in pending.iter_mut().enumerate() {
            let mut kept = Vec::with_capacity(item.texts.len());
            for (text, state) in std::mem::take(&mut item.texts) {
                match state {
                    TextState::Fresh(f) if pays && worthy(&f) && (late_pays || !item.late) => {
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
            match self.commit_all(ctx, batch).await {
                Ok(done) => {
                    for (p, entry) in owners.into_iter().zip(done) {
                        committed[p].push(entry);
                    }
                }
                Err(e) => {
                    // Nothing is sent behind a marker whose original is not safe: these texts go verbatim.
                    crate::store_fault!(e, request_id = %request_id, error = %e, "originals not stored; texts left verbatim");
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
            let mut waits = 0;
            for (text, state) in std::mem::take(&mut item.texts) {
                match state {
                    TextState::Known(new, marker) => {
                        markers.push(marker);
                        replaced.insert(text, new);
                    }
                    TextState::Verbatim => {}
                    // Its saving counts towards the first marker, on every turn until it comes.
                    TextState::Fresh(f) if !has_marker && worthy(&f) => {
                        self.skipped("awaiting_first_marker");
                        waits += f.before.saturating_sub(f.after);
                        self.remember_verbatim(ctx, f.form_key, true);
                    }
                    TextState::Fresh(f) => {
                        self.skipped(if item.late && !late_pays {
                            "cached_prefix"
                        } else {
                            "small_saving"
                        });
                        self.remember_verbatim(ctx, f.form_key, false);
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
                .map(|value| Arc::new(Compression::new(value, markers, sources)))
            };
            if item.faulted {
                decisions.faulted =
                    Some(decisions.faulted.map_or(item.index, |f| f.min(item.index)));
            } else if waits > 0 {
                // Not remembered as decided: a later turn (a full pass) looks at it again.
                decisions.waiting.push((item.index, waits));
            } else {
                self.rewrites.insert(item.memo_key, found.clone());
            }
            if let Some(c) = found {
                decisions.compressed.push((item.index, c));
            }
        }
        Ok(decisions)
    }
}

//! The compress stage's decision: which of a turn's new compressions are sent.
//!
//! Each new text is decided once, for the whole conversation: it is compressed when its saving pays for its own
//! marker and — while the conversation carries no marker yet — when the request's new texts together pay for the
//! expand tool and directive the first marker brings, and for the provider's cached prefix that the changed head
//! makes it read again. A text the conversation already sent verbatim (its position protected it then) is in the
//! provider's cache as it was: compressing it now makes the provider read everything after it again, so the late
//! texts of a request must together save a share of that too. The originals of the texts sent compressed are stored in one durable transaction before the
//! request leaves; a text whose original could not be stored goes verbatim, and its decision is not remembered.

use std::collections::HashMap;
use std::sync::Arc;

use super::forms::{Context, Fresh, MarkerUse};
use super::{CompressStage, Compression, Pending, TextState};
use crate::responses::Item;
use crate::responses::shape::rewrite_texts;

impl CompressStage {
    /// The compressed items (index, form) among `pending`, and the first item left undecided by a store fault;
    /// every decision made is remembered.
    pub(super) async fn decide(
        &self,
        ctx: &Context<'_>,
        request_id: &str,
        items: &[Item],
        mut pending: Vec<Pending<'_>>,
        has_marker: bool,
    ) -> (Vec<(usize, Arc<Compression>)>, Option<usize>) {
        let mut out = Vec::new();
        let mut first_faulted: Option<usize> = None;
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
        // Late texts change bytes the provider has cached: everything from the first of them on is read again at
        // full price, so together they must save a share of it. Otherwise they stay as they were sent, for good.
        let late_saving = |p: &Pending<'_>| -> u64 {
            if !p.late {
                return 0;
            }
            p.texts
                .iter()
                .filter_map(|(_, s)| match s {
                    TextState::Fresh(f) if worthy(f) => Some(f.before.saturating_sub(f.after)),
                    _ => None,
                })
                .sum()
        };
        let late_pays = match pending.iter().find(|p| late_saving(p) > 0) {
            None => true,
            Some(first) => {
                let cached_after: u64 = items[first.index..]
                    .iter()
                    .map(|i| i.json_len() as u64)
                    .sum::<u64>()
                    / 4;
                pending.iter().map(late_saving).sum::<u64>()
                    >= cached_after.saturating_mul(self.settings.min_saved_prefix_percent) / 100
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
            for (text, state) in std::mem::take(&mut item.texts) {
                match state {
                    TextState::Known(new, marker) => {
                        markers.push(marker);
                        replaced.insert(text, new);
                    }
                    TextState::Verbatim => {}
                    TextState::Fresh(f) => {
                        self.skipped(if item.late && !late_pays {
                            "cached_prefix"
                        } else {
                            "small_saving"
                        });
                        self.remember_verbatim(ctx, f.form_key);
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
                first_faulted = Some(first_faulted.map_or(item.index, |f| f.min(item.index)));
            } else {
                self.rewrites.insert(item.memo_key, found.clone());
            }
            if let Some(c) = found {
                out.push((item.index, c));
            }
        }
        (out, first_faulted)
    }
}

//! Per-round item bookkeeping of the stitcher: which upstream item goes where.
//!
//! Each upstream round numbers its items from 0; the client sees one list across
//! rounds. Items are classified on first sight (visible, the proxy's own expand
//! call, or a client call held until the round ends), their latest full form is
//! kept for the merged terminal event and for the driver's next input, and held
//! calls are given client indexes only when released, after every other item.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::{Stitcher, Terminal, view::frame};
use crate::expand::merge::{self, ExpandCall};
use crate::expand::sse::SseParser;

/// Where an upstream item (by its round-local `output_index`) goes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Slot {
    /// Streams live at this client output index.
    Visible(usize),
    /// The proxy's own expand call: never shown.
    Expand,
    /// A client call: buffered until the round's fate is known.
    Held,
}

/// A parsed event kept for later, with what is needed to re-frame or forward it.
#[derive(Debug)]
pub(super) struct Kept {
    pub(super) event: Option<String>,
    pub(super) obj: Map<String, Value>,
    pub(super) raw: Bytes,
}

#[derive(Debug, Default)]
pub(super) struct Round {
    pub(super) parser: SseParser,
    pub(super) slots: BTreeMap<u64, Slot>,
    /// Latest full form of each non-visible item (visible ones live in `client_items`).
    pub(super) forms: BTreeMap<u64, Value>,
    /// Streamed arguments of expand calls, in case the item lacks them.
    pub(super) args: BTreeMap<u64, String>,
    pub(super) held: Vec<(u64, Kept)>,
    pub(super) terminal: Option<(Terminal, Kept)>,
    /// A `data: [DONE]` sentinel some servers send last; replayed after our terminal.
    pub(super) done: Option<Bytes>,
    pub(super) id: Option<String>,
    pub(super) ended: bool,
    /// Client calls shown while the round streamed.
    pub(super) shown_calls: usize,
    /// The terminal event, when the light path kept it.
    pub(super) light_terminal: Option<super::light::LightTerminal>,
    /// The last lifecycle event's response, as the light path read and spliced it.
    pub(super) last_response: Option<super::light::LastResponse>,
}

impl Stitcher {
    /// The slot of item `index`, classifying it on first sight.
    pub(super) fn slot(&mut self, index: u64, item: Option<&Value>) -> Slot {
        if let Some(slot) = self.round.slots.get(&index) {
            return *slot;
        }
        let slot = match item {
            Some(i) if merge::is_expand_call(i, &self.tool) => Slot::Expand,
            Some(i) if merge::is_client_call(i, &self.tool) && self.holds_calls() => Slot::Held,
            _ => {
                self.round.shown_calls +=
                    usize::from(item.is_some_and(|i| merge::is_client_call(i, &self.tool)));
                self.client_items.push(item.cloned().unwrap_or(Value::Null));
                Slot::Visible(self.client_items.len() - 1)
            }
        };
        if let (Slot::Expand | Slot::Held, Some(item)) = (slot, item) {
            self.round.forms.insert(index, item.clone());
        }
        self.round.slots.insert(index, slot);
        slot
    }

    pub(super) fn note_expand(&mut self, index: u64, kind: &str, obj: &Map<String, Value>) {
        if let Some(item) = obj.get("item").filter(|i| i.is_object()) {
            self.round.forms.insert(index, item.clone());
        }
        let args = self.round.args.entry(index).or_default();
        match kind {
            "response.function_call_arguments.delta" => {
                args.push_str(obj.get("delta").and_then(Value::as_str).unwrap_or_default());
            }
            "response.function_call_arguments.done" => {
                if let Some(done) = obj.get("arguments").and_then(Value::as_str) {
                    done.clone_into(args);
                }
            }
            _ => {}
        }
    }

    /// Buffers an event of a held call. A call whose name shows up only late (in
    /// `output_item.done` or the terminal output) may still turn out to be the
    /// expand tool; as held events were never sent, it can be re-classified then.
    pub(super) fn hold(&mut self, index: u64, kept: Kept) {
        let item = kept.obj.get("item").filter(|i| i.is_object());
        let expands = item.is_some_and(|i| merge::is_expand_call(i, &self.tool));
        if let Some(item) = item {
            self.round.forms.insert(index, item.clone());
        }
        self.round.held.push((index, kept));
        if expands {
            self.unhold_as_expand(index);
        }
    }

    fn unhold_as_expand(&mut self, index: u64) {
        self.round.slots.insert(index, Slot::Expand);
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.round.held)
            .into_iter()
            .partition(|(i, _)| *i == index);
        self.round.held = rest;
        for (_, kept) in mine {
            let kind = kept
                .obj
                .get("type")
                .and_then(Value::as_str)
                .or(kept.event.as_deref());
            let kind = kind.unwrap_or_default().to_owned();
            self.note_expand(index, &kind, &kept.obj);
        }
    }

    pub(super) fn expand_call_at(&self, index: u64) -> Option<ExpandCall> {
        let mut call = merge::expand_call(self.round.forms.get(&index)?, &self.tool)?;
        if call.arguments.is_empty() {
            call.arguments = self.round.args.get(&index).cloned().unwrap_or_default();
        }
        Some(call)
    }

    /// Takes the terminal's `response.output` as the final form of the round's
    /// items (the authoritative one), classifying items that were never streamed.
    pub(super) fn adopt_final_forms(&mut self, items: &[Value]) {
        for (i, item) in items.iter().enumerate() {
            let index = i as u64;
            let known = self.round.slots.contains_key(&index);
            match self.slot(index, Some(item)) {
                Slot::Visible(ci) => {
                    if let Some(form) = self.client_items.get_mut(ci) {
                        if same_item(form, item) {
                            *form = item.clone();
                        }
                    }
                }
                Slot::Held if merge::is_expand_call(item, &self.tool) => {
                    self.unhold_as_expand(index);
                    self.round.forms.insert(index, item.clone());
                }
                Slot::Expand | Slot::Held => {
                    let form = self.round.forms.get(&index);
                    if !known || form.is_none_or(|f| same_item(f, item)) {
                        self.round.forms.insert(index, item.clone());
                    }
                }
            }
        }
    }

    /// The round's items from its events, for a round without a terminal output.
    pub(super) fn streamed_items(&self) -> Vec<Value> {
        let items = self
            .round
            .slots
            .iter()
            .filter_map(|(index, slot)| match slot {
                Slot::Visible(ci) => self.client_items.get(*ci).cloned(),
                Slot::Expand | Slot::Held => self.round.forms.get(index).cloned(),
            });
        items.filter(|item| !item.is_null()).collect()
    }

    pub(super) fn slots_where(&self, keep: impl Fn(&Slot) -> bool) -> Vec<u64> {
        let slots = self.round.slots.iter();
        slots.filter(|(_, s)| keep(s)).map(|(i, _)| *i).collect()
    }

    /// Shows the last round's held client calls, after every other item.
    pub(super) fn release_held(&mut self, out: &mut Vec<Bytes>) {
        let mut assigned = BTreeMap::new();
        for index in self.slots_where(|s| matches!(s, Slot::Held)) {
            let form = self.round.forms.get(&index).cloned().unwrap_or(Value::Null);
            self.client_items.push(form);
            let ci = self.client_items.len() - 1;
            assigned.insert(index, ci);
            self.round.slots.insert(index, Slot::Visible(ci));
        }
        for (
            index,
            Kept {
                event,
                mut obj,
                raw,
            },
        ) in std::mem::take(&mut self.round.held)
        {
            let changed = self.rewrite(&mut obj, assigned.get(&index).copied());
            out.push(frame(event.as_deref(), obj, raw, changed));
        }
    }
}

/// Two forms describe the same item unless both carry different ids.
fn same_item(a: &Value, b: &Value) -> bool {
    match (a.get("id"), b.get("id")) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

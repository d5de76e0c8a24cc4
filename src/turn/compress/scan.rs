//! The compress stage's view of a transcript from the first item a turn must examine.
//!
//! Items before that point were settled on an earlier turn ([`super::prefix`]): of them the stage reads only what
//! a later item depends on — where the last outputs and user messages stand (positions), the first user message
//! (query terms), the outputs a repeat may point back to, the calls of the new outputs. Those few shapes are taken
//! from the head (which remembers those of the first user message and the last outputs) or looked up; the rest of
//! the head is not touched. With no settled head the view starts at the first item and is exactly
//! the whole transcript.

use std::sync::Arc;

use super::CompressStage;
use super::positions::{Positions, agent_steps};
use super::prefix::Decided;
use crate::config::compress::CompressSettings;
use crate::ctxzip::repeats::{Earlier, Seen, WINDOW};
use crate::responses::shape::{Shape, item_texts};
use crate::responses::{Item, RequestBody};

pub(super) struct Scan {
    /// The first item examined this turn.
    pub start: usize,
    /// Shapes of the items from `start`, and of the few earlier ones read (`None` elsewhere, or unparseable).
    shapes: Vec<Option<Arc<(Shape, usize)>>>,
    pub first_user: Option<usize>,
    /// User messages in the whole transcript; positions of the head's last few and of every later one.
    users: usize,
    pub user_positions: Vec<usize>,
    /// Positions of the head's last few function outputs and of every later one.
    pub function_outputs: Vec<usize>,
    /// Ordinal (among the transcript's outputs) of `outputs[0]`; positions of the head's last [`WINDOW`] outputs
    /// and of every later one.
    pub outputs_base: usize,
    pub outputs: Vec<usize>,
}

impl Scan {
    /// The view of `items` past `head`, or of all of them.
    pub fn new(stage: &CompressStage, items: &[Item], head: Option<&Decided>) -> Scan {
        let start = head.map_or(0, |h| h.items).min(items.len());
        let mut shapes: Vec<Option<Arc<(Shape, usize)>>> = vec![None; items.len()];
        for (slot, item) in shapes.iter_mut().zip(items).skip(start) {
            *slot = stage.shape(item);
        }
        let (mut first_user, mut users, mut user_positions) = match head {
            Some(h) => (h.first_user, h.users, h.recent_users.clone()),
            None => (None, 0, Vec::new()),
        };
        let (mut function_outputs, outputs_base, mut outputs) = match head {
            Some(h) => (
                h.recent_function_outputs.clone(),
                h.outputs.saturating_sub(h.recent_outputs.len()),
                h.recent_outputs.clone(),
            ),
            None => (Vec::new(), 0, Vec::new()),
        };
        let mut tail_calls: Vec<&str> = Vec::new();
        let mut wanted: Vec<String> = Vec::new();
        for (i, shape) in shapes.iter().enumerate().skip(start) {
            match shape.as_deref().map(|(s, _)| s) {
                Some(Shape::UserMessage { text }) => {
                    // A message of harness context alone (Codex's AGENTS.md and environment) is not the task.
                    if !text.trim().is_empty() {
                        first_user.get_or_insert(i);
                    }
                    users += 1;
                    user_positions.push(i);
                }
                Some(Shape::Output { function, call_id }) => {
                    outputs.push(i);
                    if *function {
                        function_outputs.push(i);
                    }
                    if !tail_calls.contains(&call_id.as_str()) {
                        wanted.push(call_id.clone());
                    }
                }
                Some(Shape::Call { call_id, .. }) => tail_calls.push(call_id.as_str()),
                _ => {}
            }
        }
        wanted.retain(|w| !tail_calls.contains(&w.as_str()));
        // What of the head later items read: the first user message, the outputs a repeat may point to, and the
        // calls of the new outputs (looked for from the head's end, where they nearly always stand).
        let read = first_user
            .into_iter()
            .chain(outputs.iter().copied())
            .filter(|i| *i < start);
        let read: Vec<usize> = read.collect();
        for i in read {
            if shapes[i].is_none() {
                shapes[i] = head
                    .and_then(|h| h.shape(i))
                    .or_else(|| stage.shape(&items[i]));
            }
        }
        let mut j = start;
        while !wanted.is_empty() && j > 0 {
            j -= 1;
            let shape = stage.shape(&items[j]);
            if let Some((Shape::Call { call_id, .. }, _)) = shape.as_deref() {
                wanted.retain(|w| w != call_id);
            }
            shapes[j] = shape;
        }
        Scan {
            start,
            shapes,
            first_user,
            users,
            user_positions,
            function_outputs,
            outputs_base,
            outputs,
        }
    }

    /// The shape of item `i`, if it was read and parses.
    pub fn shape(&self, i: usize) -> Option<&Shape> {
        self.shapes.get(i)?.as_deref().map(|(s, _)| s)
    }

    /// The shape and longest text of item `i`, if it was read and parses.
    pub fn shape_and_longest(&self, i: usize) -> Option<&(Shape, usize)> {
        self.shapes.get(i)?.as_deref()
    }

    /// How many items there are (read or not).
    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    pub fn positions(&self, settings: &CompressSettings) -> Positions {
        Positions {
            recent_outputs_from: match settings.protect_recent {
                0 => usize::MAX,
                n => self
                    .function_outputs
                    .iter()
                    .rev()
                    .nth(n - 1)
                    .copied()
                    .unwrap_or(0),
            },
            recent_turns_from: match settings.protect_recent_turns {
                0 => usize::MAX,
                n if self.users >= n => self
                    .user_positions
                    .get(self.user_positions.len().saturating_sub(n))
                    .copied()
                    .unwrap_or(0),
                _ => 0,
            },
            steps_from: self.start,
            steps: if settings.agent_steps {
                agent_steps(
                    &(self.start..self.len())
                        .map(|i| self.shape(i))
                        .collect::<Vec<_>>(),
                )
            } else {
                Vec::new()
            },
        }
    }

    /// The ordinal among the transcript's outputs of the output at item `i`.
    pub fn ordinal(&self, i: usize) -> Option<usize> {
        self.outputs
            .binary_search(&i)
            .ok()
            .map(|at| self.outputs_base + at)
    }

    /// The item index of the output with this ordinal, if the view holds it.
    pub fn output_at(&self, ordinal: usize) -> Option<usize> {
        self.outputs
            .get(ordinal.checked_sub(self.outputs_base)?)
            .copied()
    }

    /// The earlier outputs a new output among `candidates` may repeat — from [`WINDOW`] outputs before the first
    /// new one up to the last — with their calls as labels, indexed by their lines.
    pub fn earlier_outputs<'a>(&'a self, items: &'a [Item], candidates: &[usize]) -> Seen<'a> {
        let new_ordinals = candidates.iter().filter_map(|i| self.ordinal(*i));
        let (lo, hi) = new_ordinals.fold((usize::MAX, 0), |(lo, hi), o| (lo.min(o), hi.max(o)));
        let from = lo.saturating_sub(WINDOW);
        let mut earlier = Vec::new();
        for (at, &idx) in self.outputs.iter().enumerate() {
            let ordinal = self.outputs_base + at;
            if ordinal < from || ordinal >= hi {
                continue;
            }
            let (Some(value), Some(Shape::Output { call_id, .. })) =
                (items[idx].value(), self.shape(idx))
            else {
                continue;
            };
            for text in item_texts(
                value,
                &Shape::Output {
                    call_id: String::new(),
                    function: true,
                },
            ) {
                earlier.push(Earlier {
                    ordinal,
                    label: call_id.as_str(),
                    text,
                });
            }
        }
        Seen::new(earlier)
    }

    /// The head of the transcript settled through `items` (exclusive), for the next turn: `previous` (the head
    /// this turn started from) extended with what this view saw before `items`. `decided` carries what the
    /// turn's decisions add (forms, excluded candidates, markers, allowed positions).
    pub fn seal(
        &self,
        settings: &CompressSettings,
        previous: Option<&Decided>,
        items: usize,
        decided: Decided,
        body: &RequestBody,
    ) -> Option<Decided> {
        let before = |v: &[usize], keep: usize| -> Vec<usize> {
            let until = v.partition_point(|i| *i < items);
            v[until.saturating_sub(keep)..until].to_vec()
        };
        let users_after = self.user_positions.iter().filter(|u| **u >= items).count();
        let outputs_before = self.outputs.partition_point(|o| *o < items);
        let mut head = Decided {
            items,
            first_user: self.first_user.filter(|u| *u < items),
            users: self.users - users_after,
            recent_users: before(&self.user_positions, settings.protect_recent_turns),
            recent_function_outputs: before(&self.function_outputs, settings.protect_recent),
            outputs: self.outputs_base + outputs_before,
            recent_outputs: before(&self.outputs, WINDOW),
            ..decided
        };
        if let Some(p) = previous {
            let mut rewrites = p.rewrites.clone();
            rewrites.append(&mut head.rewrites);
            head.rewrites = rewrites;
            head.excluded += p.excluded;
            head.has_marker |= p.has_marker;
            head.waiting_saving = if head.has_marker {
                0
            } else {
                head.waiting_saving + p.waiting_saving
            };
            head.last_allowed_output = head.last_allowed_output.or(p.last_allowed_output);
            head.last_allowed_live = head.last_allowed_live.or(p.last_allowed_live);
        }
        // The shapes the next turn reads of this head: this view read them all (they are among its outputs, or
        // its first user message).
        let mut read: Vec<usize> = head.first_user.into_iter().collect();
        read.extend(head.recent_outputs.iter().copied());
        read.sort_unstable();
        read.dedup();
        head.shapes = read
            .into_iter()
            .filter_map(|i| Some((i, self.shapes.get(i)?.clone()?)))
            .collect();
        head.seal(body)
    }
}

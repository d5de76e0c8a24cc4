//! The client view of one event: renumbered, re-indexed, first response id.
//!
//! Everything the client receives passes through here, so sequence numbers stay
//! strictly increasing across rounds, later rounds' response ids never leak and the
//! injected expand tool disappears from echoed `tools`. An event is re-serialized
//! only if one of these rewrites changed it; otherwise its upstream bytes are sent.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::Stitcher;
use crate::expand::{merge, sse};

impl Stitcher {
    /// Notes the response id an event carries: the first one seen is what the
    /// client gets; any other is a later round's, to be replaced wherever it shows.
    pub(super) fn learn_id(&mut self, obj: &Map<String, Value>) {
        let id = obj
            .get("response")
            .and_then(|r| r.get("id"))
            .and_then(Value::as_str);
        let Some(id) = id else { return };
        let created = obj
            .get("response")
            .and_then(|r| r.get("created_at"))
            .cloned();
        self.learn(id, created);
    }

    /// [`Self::learn_id`] from a response's id and creation time.
    pub(super) fn learn(&mut self, id: &str, created: Option<Value>) {
        if self.round.id.is_none() {
            self.round.id = Some(id.to_owned());
        }
        match &self.first_id {
            None => {
                self.first_id = Some(id.to_owned());
                self.first_created = created;
            }
            Some(first) if first != id && !self.later_ids.iter().any(|l| l == id) => {
                self.later_ids.push(id.to_owned());
            }
            Some(_) => {}
        }
    }

    /// Applies the client view to an event about to be sent; returns whether
    /// anything changed (if not, its original bytes are forwarded).
    pub(super) fn rewrite(
        &mut self,
        obj: &mut Map<String, Value>,
        client_index: Option<usize>,
    ) -> bool {
        let mut changed = false;
        if let Some(ci) = client_index {
            changed |= set(obj, "output_index", Value::from(ci));
        }
        if obj.contains_key("sequence_number") {
            changed |= set(obj, "sequence_number", Value::from(self.seq));
            self.seq += 1;
        }
        if let Some(Value::Object(response)) = obj.get_mut("response") {
            if let (Some(first), true) = (&self.first_id, response.contains_key("id")) {
                changed |= set(response, "id", Value::String(first.clone()));
            }
            if let (Some(created), true) =
                (&self.first_created, response.contains_key("created_at"))
            {
                changed |= set(response, "created_at", created.clone());
            }
            changed |= merge::strip_expand_tool(response, &self.tool);
        }
        if let (Some(first), false) = (&self.first_id, self.later_ids.is_empty()) {
            for value in obj.values_mut() {
                changed |= replace_ids(value, &self.later_ids, first);
            }
        }
        changed
    }
}

/// Sets `key` (in place, keeping key order) if its value differs.
fn set(obj: &mut Map<String, Value>, key: &str, value: Value) -> bool {
    if obj.get(key) == Some(&value) {
        return false;
    }
    obj.insert(key.to_owned(), value);
    true
}

/// Replaces every string equal to one of `ids` by `to`.
fn replace_ids(value: &mut Value, ids: &[String], to: &str) -> bool {
    match value {
        Value::String(s) if ids.iter().any(|id| id == s) => {
            to.clone_into(s);
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |c, v| replace_ids(v, ids, to) | c),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |c, v| replace_ids(v, ids, to) | c),
        _ => false,
    }
}

/// The original bytes if nothing changed, else the event re-serialized.
pub(super) fn frame(
    event: Option<&str>,
    obj: Map<String, Value>,
    raw: Bytes,
    changed: bool,
) -> Bytes {
    if !changed {
        return raw;
    }
    match serde_json::to_string(&Value::Object(obj)) {
        Ok(data) => sse::encode(event, &data),
        Err(_) => raw,
    }
}

//! A shown JSON row written as its differences from the list's first row (or a map's first member).
//!
//! API lists repeat most of every object: the pods of `kubectl get pods -o json` share their spec and status and
//! differ in a name, a uid and a few timestamps; the rows of a GitHub list carry the same user, repository and
//! link objects again and again. When a list keeps several rows visible ([`super::json_array`]), every row after
//! the first is therefore mostly a copy of it. Such a row is shown with only the members whose values differ from
//! the first row's (members that are objects on both sides are reduced the same way, key by key), plus one note
//! at its top: the marker (the original row is one expansion away) and the index of the row it is compared with.
//! Objects keyed by data rather than field names hold their records the same way (a package registry's
//! `versions`, `npm outdated --json`, `npm ls --json`'s `dependencies`): their later members are written against
//! the first member, named by its key.
//! Values are compared as their raw text, so only byte-identical members are left out, and the result is still
//! valid JSON. Rows that hold an error word or a keep pattern are protected before this and stay whole.

use super::jscan::{Member, Span, array_items, object_members};
use super::{Ctx, Unit};

/// Rows shorter than this are shown whole: the note (about 70 bytes) would eat most of what is left out.
pub(crate) const MIN_ROW: usize = 512;
/// A reduced row must leave out at least this many bytes…
const MIN_LEFT_OUT: usize = 128;
/// …and at least this share (percent) of the row, or the row is shown whole (or compressed as before).
const MIN_LEFT_OUT_PERCENT: usize = 25;
/// Objects nested deeper than this inside the row are compared whole.
const MAX_DEPTH: usize = 8;
/// The note member naming the list element the left-out keys are the same as.
const SAME_AS_ELEMENT: &str = "\"_keys_not_shown_are_as_in_element\"";
/// The note member naming the map member the left-out keys are the same as.
const SAME_AS_MEMBER: &str = "\"_keys_not_shown_are_as_in_member\"";

/// The row a reduced row is written against, as its note names it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reference<'a> {
    /// A list's element, by its index.
    Element(usize),
    /// An object's member, by its key: the key's JSON text as the original writes it, quotes included.
    Member(&'a str),
}

/// The row at `row` (an object) written as its differences from the row at `reference` (named by `name`), with
/// the number of keys left out; `None` when too little of it would be left out.
pub(crate) fn reduce_row(
    text: &str,
    row: Span,
    reference: Span,
    name: Reference<'_>,
    ctx: &Ctx,
) -> Option<(String, usize)> {
    if row.len() < MIN_ROW {
        return None;
    }
    let b = text.as_bytes();
    let members = object_members(b, row)?;
    // A row that already has a member of ctxzip's own would read ambiguously.
    if members.iter().any(|m| {
        let key = m.key.of(text);
        key.starts_with("\"_ctxzip") || key == SAME_AS_ELEMENT || key == SAME_AS_MEMBER
    }) {
        return None;
    }
    let (body, left_out) = reduced_members(text, &members, reference, 0)?;
    let marker = serde_json::to_string(&ctx.marker(left_out, Unit::Keys)).ok()?;
    let note = match name {
        Reference::Element(index) => format!("\"_ctxzip\": {marker}, {SAME_AS_ELEMENT}: {index}"),
        Reference::Member(key) => format!("\"_ctxzip\": {marker}, {SAME_AS_MEMBER}: {key}"),
    };
    let mut pieces = Vec::with_capacity(body.len() + 1);
    pieces.push(note);
    pieces.extend(body);
    let out = render(text, row, &members, &pieces);
    let saved = row.len().saturating_sub(out.len());
    (saved >= MIN_LEFT_OUT && saved * 100 >= row.len() * MIN_LEFT_OUT_PERCENT)
        .then_some((out, left_out))
}

/// The members of an object that differ from those of the object at `reference`, each as `"key": value` text,
/// and how many keys were left out (at every depth); `None` when none was.
fn reduced_members(
    text: &str,
    members: &[Member],
    reference: Span,
    depth: usize,
) -> Option<(Vec<String>, usize)> {
    let theirs = object_members(text.as_bytes(), reference)?;
    let mut kept = Vec::with_capacity(members.len());
    let mut left_out = 0;
    for m in members {
        let key = m.key.of(text);
        let Some(t) = theirs.iter().find(|t| t.key.of(text) == key) else {
            kept.push(member_text(text, m, m.value.of(text)));
            continue;
        };
        if m.value.of(text) == t.value.of(text) {
            left_out += 1;
            continue;
        }
        match reduced_value(text, m.value, t.value, depth + 1) {
            Some((reduced, n)) => {
                left_out += n;
                kept.push(member_text(text, m, &reduced));
            }
            None => kept.push(member_text(text, m, m.value.of(text))),
        }
    }
    (left_out > 0).then_some((kept, left_out))
}

/// A value that differs from its counterpart, reduced: an object to its differing members, an array to its
/// elements reduced one by one when both arrays are as long (an element equal to its counterpart becomes `{}` when
/// it is an object, and stays whole otherwise). `None` when nothing is left out.
fn reduced_value(text: &str, mine: Span, theirs: Span, depth: usize) -> Option<(String, usize)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let b = text.as_bytes();
    match (b.get(mine.start)?, b.get(theirs.start)?) {
        (b'{', b'{') => {
            let members = object_members(b, mine)?;
            let (pieces, n) = reduced_members(text, &members, theirs, depth)?;
            Some((render(text, mine, &members, &pieces), n))
        }
        (b'[', b'[') => {
            let items = array_items(b, mine)?;
            let counterparts = array_items(b, theirs)?;
            if items.len() != counterparts.len() {
                return None;
            }
            let mut pieces = Vec::with_capacity(items.len());
            let mut left_out = 0;
            for (item, other) in items.iter().zip(&counterparts) {
                let is_obj = b.get(item.start) == Some(&b'{');
                if is_obj && item.of(text) == other.of(text) {
                    left_out += object_members(b, *item).map_or(0, |m| m.len());
                    pieces.push("{}".to_string());
                    continue;
                }
                match is_obj
                    .then(|| reduced_value(text, *item, *other, depth + 1))
                    .flatten()
                {
                    Some((reduced, n)) => {
                        left_out += n;
                        pieces.push(reduced);
                    }
                    None => pieces.push(item.of(text).to_string()),
                }
            }
            (left_out > 0).then(|| (render_entries(text, mine, &items, &pieces), left_out))
        }
        _ => None,
    }
}

/// `"key": value` with the original's key and spacing around the colon.
fn member_text(text: &str, m: &Member, value: &str) -> String {
    let head = text.get(m.key.start..m.value.start).unwrap_or("");
    format!("{head}{value}")
}

/// The object at `span` with `pieces` as its members, in the original's layout.
fn render(text: &str, span: Span, members: &[Member], pieces: &[String]) -> String {
    let entries: Vec<Span> = members
        .iter()
        .map(|m| Span {
            start: m.key.start,
            end: m.value.end,
        })
        .collect();
    render_entries(text, span, &entries, pieces)
}

/// The container at `span` (an object or array whose members or elements are at `entries`) with `pieces` in their
/// place: the original's whitespace after the opening bracket, between entries and before the closing one.
fn render_entries(text: &str, span: Span, entries: &[Span], pieces: &[String]) -> String {
    let (open, close) = match text.as_bytes().get(span.start) {
        Some(b'[') => ('[', ']'),
        _ => ('{', '}'),
    };
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return format!("{open}{close}");
    };
    if pieces.is_empty() {
        return format!("{open}{close}");
    }
    let head = text.get(span.start + 1..first.start).unwrap_or("");
    let sep = match entries.get(1) {
        Some(second) => text.get(first.end..second.start).unwrap_or(", "),
        None => ", ",
    };
    let tail = text.get(last.end..span.end - 1).unwrap_or("");
    format!("{open}{head}{}{tail}{close}", pieces.join(sep))
}

#[cfg(test)]
mod tests {
    use super::super::Options;
    use super::super::jscan::array_items;
    use super::*;

    fn pods(n: usize) -> String {
        let pod = |i: usize| {
            format!(
                r#"{{
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {{
            "name": "web-{i}",
            "namespace": "default",
            "labels": {{"app": "web", "tier": "frontend"}},
            "uid": "2fd916b3-3df3-41ff-87b7-0213c60210c{i}"
        }},
        "spec": {{
            "containers": [{{"image": "nginx:1.25", "name": "web", "ports": [{{"containerPort": 80}}]}}],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30
        }},
        "status": {{"phase": "Running", "qosClass": "BestEffort", "hostIP": "10.0.0.{i}"}}
    }}"#
            )
        };
        let rows: Vec<String> = (0..n).map(pod).collect();
        format!("[\n    {}\n]", rows.join(",\n    "))
    }

    fn rows_of(t: &str) -> Vec<Span> {
        array_items(
            t.as_bytes(),
            Span {
                start: 0,
                end: t.len(),
            },
        )
        .unwrap_or_default()
    }

    #[test]
    fn a_row_keeps_only_what_differs_from_the_first_and_parses() {
        let t = pods(2);
        let rows = rows_of(&t);
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let (out, keys) =
            reduce_row(&t, rows[1], rows[0], Reference::Element(0), &ctx).unwrap_or_default();
        assert_eq!(keys, 7);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["metadata"]["name"], "web-1", "{out}");
        assert_eq!(v["status"]["hostIP"], "10.0.0.1", "{out}");
        assert_eq!(v["_keys_not_shown_are_as_in_element"], 0, "{out}");
        // Equal members are left out at every depth, and counted in the marker.
        assert!(v.get("spec").is_none() && v.get("kind").is_none(), "{out}");
        assert!(v["metadata"].get("namespace").is_none(), "{out}");
        assert!(v["status"].get("phase").is_none(), "{out}");
        assert_eq!(
            v["_ctxzip"], "<<ctxzip:0123456789ab 7_keys_offloaded>>",
            "{out}"
        );
        // The original's layout: members on their own lines, at their depth.
        assert!(out.contains("\n            \"name\": \"web-1\""), "{out}");
    }

    #[test]
    fn rows_that_differ_too_much_or_are_small_stay_whole() {
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let t = pods(2).replace(
            "nginx:1.25\", \"name\": \"web\"",
            "nginx:1.25\", \"name\": \"w\"",
        );
        let rows = rows_of(&t);
        // Different rows: nothing in common but the layout.
        let other = r#"[{"a": 1}, {"b": 2}]"#;
        let small = rows_of(other);
        assert!(reduce_row(other, small[1], small[0], Reference::Element(0), &ctx).is_none());
        // A row whose keys all differ from the reference's.
        let unlike = format!(
            "[{}, {{\"x\": \"{}\"}}]",
            t.get(rows[0].start..rows[0].end).unwrap_or(""),
            "y".repeat(600)
        );
        let spans = rows_of(&unlike);
        assert!(reduce_row(&unlike, spans[1], spans[0], Reference::Element(0), &ctx).is_none());
    }

    #[test]
    fn a_row_with_a_member_named_like_the_note_stays_whole() {
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let t = pods(2).replace(
            "\"kind\": \"Pod\"",
            "\"_keys_not_shown_are_as_in_element\": \"Pod\"",
        );
        let rows = rows_of(&t);
        assert!(reduce_row(&t, rows[1], rows[0], Reference::Element(0), &ctx).is_none());
    }
}

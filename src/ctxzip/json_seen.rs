//! Objects a JSON document already showed: a repeat is written as a reference to the first.
//!
//! API answers nest the same object many times over: a GitHub issue event carries its author as the issue's
//! `user`, again as its `assignee`, in `assignees`, as the milestone's `creator`, the repository's `owner` and the
//! event's `sender`; a pull request's `head` and `base` carry the same repository. While the JSON compressors walk
//! a document in order ([`super::json_object`], [`super::json_array`]), every object they leave visible is
//! remembered with its path (`.issue.user`); a later object with the same content (compared without the whitespace
//! between tokens, so indentation does not matter) becomes `{"_ctxzip": "<<ctxzip:HASH N_keys_offloaded>>",
//! "_same_as": ".issue.user"}`. Only objects the model can still see are pointed to: what a container that ends up
//! behind a marker registered while it was compressed is forgotten again. An object holding a keep pattern is never
//! replaced (the user's keep patterns show it where it stands); one holding an error word only when each of its
//! error lines is a line of the first copy, byte for byte: a test report that lists each failure under `tests`
//! and again under `failures` (Mocha's JSON reporter) shows the failure once, as the text compressors show stack
//! frames a failure above already showed, and the floor — every error line visible as the exact line — holds.

use std::cell::{Cell, RefCell};

use rustc_hash::FxHashMap as FastMap;

use super::jscan::{Span, lines_around, object_members, plain_str};
use super::relevance::{has_floor_word, is_floor_line};
use super::{Ctx, Unit};

/// Objects shorter than this (without whitespace) are shown again: the reference costs about 80 bytes.
const MIN_OBJECT: usize = 200;
/// The member naming where the first copy is.
const SAME_AS_KEY: &str = "_same_as";
/// The path step of an [`Step::Unaddressable`] element.
const UNADDRESSABLE: &str = "[?]";

/// One step of a path: a member's key or an element's index.
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
    /// An element after rows that went behind a marker from more than one place: its index in the original is
    /// not one the model can count to, so nothing in it is pointed to.
    Unaddressable,
}

/// What one compression has shown so far, and where the walk is.
#[derive(Default)]
pub(crate) struct Seen {
    /// Each object shown, by the digest of its compact text (its length beside it) → its path and the digests of
    /// its error lines. Digests, not the texts: a document's objects nest, and their texts together would be
    /// several times its size.
    objects: RefCell<FastMap<(u128, usize), Shown>>,
    /// The objects registered, in order, so a container that goes behind a marker can forget its own.
    log: RefCell<Vec<(u128, usize)>>,
    /// The path of the value being compressed, one step per container entered.
    path: RefCell<Vec<String>>,
    /// Inside a document decoded from a string (a JSON log line, a payload in `"body"`): no path from the outer
    /// document's root reaches into it, so nothing is registered or replaced there.
    apart: Cell<usize>,
}

/// Ends [`Seen::apart`] when dropped.
pub(crate) struct Apart<'a>(&'a Seen);

impl Drop for Apart<'_> {
    fn drop(&mut self) {
        self.0.apart.set(self.0.apart.get().saturating_sub(1));
    }
}

/// Leaves the step it was made for when dropped.
pub(crate) struct Entered<'a>(&'a Seen);

impl<'a> Step<'a> {
    /// The step into the member whose key is at `key` (a JSON string): unaddressable when the key has escapes.
    pub(crate) fn key(text: &'a str, key: Span) -> Step<'a> {
        plain_str(text, key).map_or(Step::Unaddressable, Step::Key)
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.path.borrow_mut().pop();
    }
}

impl Seen {
    /// Enters a member or element: paths registered until the guard drops go through it.
    pub(crate) fn enter(&self, step: Step<'_>) -> Entered<'_> {
        let step = match step {
            Step::Key(k) if is_identifier(k) => format!(".{k}"),
            Step::Key(k) => format!(
                "[{}]",
                serde_json::to_string(k).unwrap_or_else(|_| "\"?\"".into())
            ),
            Step::Index(i) => format!("[{i}]"),
            Step::Unaddressable => UNADDRESSABLE.into(),
        };
        self.path.borrow_mut().push(step);
        Entered(self)
    }

    /// Compresses a document nested in a string apart from the one around it, until the guard drops.
    pub(crate) fn apart(&self) -> Apart<'_> {
        self.apart.set(self.apart.get() + 1);
        Apart(self)
    }

    /// A point to forget back to ([`Seen::forget_since`]).
    pub(crate) fn mark(&self) -> usize {
        self.log.borrow().len()
    }

    /// Forgets the objects registered since `mark`: they went behind a marker with the container holding them.
    pub(crate) fn forget_since(&self, mark: usize) {
        let mut log = self.log.borrow_mut();
        let mut objects = self.objects.borrow_mut();
        for key in log.drain(mark..) {
            objects.remove(&key);
        }
    }

    /// Whether the object at `span` repeats one shown before: then the reference that stands for it. Otherwise
    /// what [`Seen::shown`] needs to remember it once it is shown (its compact text is digested here, once).
    pub(crate) fn look(&self, text: &str, span: Span, ctx: &Ctx) -> Look {
        if self.apart.get() > 0 {
            return Look::First(Sighting(None));
        }
        let raw = span.of(text);
        let key = compact_object(raw);
        let floor = if key.is_some() && has_floor_word(raw.as_bytes()) {
            floor_lines(text, span)
        } else {
            Vec::new()
        };
        let repeat = key.and_then(|key| {
            // A keep-pattern hit stays where it stands. A query hit does not hold a copy back: the first copy shows
            // it, and commands name what they fetch (`gh api repos/octocat/hello`), so the repeated author or owner
            // object is the one holding the query's words.
            if !ctx.matcher.is_empty() && ctx.matcher.scan(raw.as_bytes()).keep {
                return None;
            }
            let objects = self.objects.borrow();
            let first = objects.get(&key)?;
            // An error line stays visible as the exact line (the floor): a copy may go only when the first copy
            // shows each of its error lines as it is (same indentation, same neighbours on its line).
            if !floor.iter().all(|l| first.floor.binary_search(l).is_ok()) {
                return None;
            }
            let path = first.path.clone();
            drop(objects);
            let keys = object_members(text.as_bytes(), span)?.len();
            let marker = serde_json::to_string(&ctx.marker(keys, Unit::Keys)).ok()?;
            let path = serde_json::to_string(&path).ok()?;
            Some(Look::Repeat(
                format!("{{\"_ctxzip\": {marker}, \"{SAME_AS_KEY}\": {path}}}"),
                keys,
            ))
        });
        repeat.unwrap_or(Look::First(Sighting(key.map(|k| (k, floor)))))
    }

    /// Remembers an object [`Seen::look`] found new as shown at the current path, unless an equal one was shown
    /// before.
    pub(crate) fn shown(&self, sighting: Sighting) {
        let Sighting(Some((key, mut floor))) = sighting else {
            return;
        };
        let mut objects = self.objects.borrow_mut();
        if objects.contains_key(&key) {
            return;
        }
        let path = self.path.borrow();
        if path.iter().any(|s| s == UNADDRESSABLE) {
            return;
        }
        // jq's spelling: a path starts with a dot, also before an index or a quoted key.
        let path = match path.concat() {
            p if p.starts_with('.') => p,
            p => format!(".{p}"),
        };
        floor.sort_unstable();
        objects.insert(key, Shown { path, floor });
        self.log.borrow_mut().push(key);
    }
}

/// What [`Seen::look`] found.
pub(crate) enum Look {
    /// An equal object was shown before: the reference that stands for this one, and its number of keys.
    Repeat(String, usize),
    /// Not a repeat: for [`Seen::shown`] once it is shown.
    First(Sighting),
}

/// An object's compact-text digest and length, when it is one that may be pointed to later, and the digests of
/// its error lines ([`floor_lines`]).
pub(crate) struct Sighting(Option<((u128, usize), Vec<u64>)>);

/// An object shown: where it is, and the digests of its error lines, sorted.
struct Shown {
    path: String,
    floor: Vec<u64>,
}

/// The digests of the error lines ([`is_floor_line`]) among the whole lines the object at `span` is written on,
/// what comes before it on its first line and after it on its last included: those are the lines the floor
/// counts.
fn floor_lines(text: &str, span: Span) -> Vec<u64> {
    lines_around(text, span)
        .unwrap_or("")
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter(|line| is_floor_line(line))
        .map(|line| xxhash_rust::xxh3::xxh3_64(line.as_bytes()))
        .collect()
}

fn is_identifier(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The digest and length of an object's text without the whitespace between its tokens, when it is an object of
/// at least [`MIN_OBJECT`] bytes so written.
fn compact_object(raw: &str) -> Option<(u128, usize)> {
    if !raw.starts_with('{') {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut in_string = false;
    let mut escaped = false;
    for &c in raw.as_bytes() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            out.push(c);
        }
    }
    (out.len() >= MIN_OBJECT).then(|| (xxhash_rust::xxh3::xxh3_128(&out), out.len()))
}

#[cfg(test)]
mod tests {
    use super::super::Options;
    use super::*;

    fn span(t: &str, needle: &str, nth: usize) -> Span {
        let start = t.match_indices(needle).nth(nth).map_or(0, |(i, _)| i);
        let mut depth = 0;
        let mut end = start;
        for (i, c) in t[start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        Span { start, end }
    }

    /// The reference that stands for the second copy of `USER` in `t`, if any.
    fn second_copy(ctx: &Ctx, t: &str) -> Option<(String, usize)> {
        match ctx.seen.look(t, span(t, "{\"login\"", 1), ctx) {
            Look::Repeat(reference, keys) => Some((reference, keys)),
            Look::First(_) => None,
        }
    }

    /// Shows the object at `at` (as the compressors do for one they leave visible).
    fn show(ctx: &Ctx, t: &str, at: Span) {
        if let Look::First(sighting) = ctx.seen.look(t, at, ctx) {
            ctx.seen.shown(sighting);
        }
    }

    const USER: &str = r#"{"login": "octocat", "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==", "avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4", "gravatar_id": "", "url": "https://api.github.com/users/octocat", "html_url": "https://github.com/octocat", "type": "User", "site_admin": false}"#;

    #[test]
    fn an_object_shown_before_is_referred_to_by_its_path_whatever_its_indentation() {
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let pretty = USER.replace(", ", ",\n      ");
        let t = format!("{{\"issue\": {{\"user\": {USER}}}, \"sender\": {pretty}}}");
        {
            let _issue = ctx.seen.enter(Step::Key("issue"));
            let _user = ctx.seen.enter(Step::Key("user"));
            show(&ctx, &t, span(&t, "{\"login\"", 0));
        }
        let (reference, keys) = second_copy(&ctx, &t).unwrap_or_default();
        assert_eq!(keys, 9);
        assert_eq!(
            reference,
            "{\"_ctxzip\": \"<<ctxzip:0123456789ab 9_keys_offloaded>>\", \"_same_as\": \".issue.user\"}"
        );
    }

    #[test]
    fn what_went_behind_a_marker_and_small_objects_are_never_referred_to() {
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let t = format!("[{USER}, {USER}]");
        let mark = ctx.seen.mark();
        {
            let _row = ctx.seen.enter(Step::Index(0));
            show(&ctx, &t, span(&t, "{\"login\"", 0));
        }
        ctx.seen.forget_since(mark);
        assert!(second_copy(&ctx, &t).is_none());
        // Small objects.
        let small = "[{\"a\": 1}, {\"a\": 1}]";
        show(&ctx, small, span(small, "{\"a\"", 0));
        assert!(matches!(
            ctx.seen.look(small, span(small, "{\"a\"", 1), &ctx),
            Look::First(_)
        ));
    }

    /// A failure a report lists twice (Mocha's JSON reporter: under `tests` and again under `failures`) is shown
    /// once when the first copy shows each of its error lines as the exact line; written at another indentation,
    /// or with another key before it on its first line, the copy stays where it is.
    #[test]
    fn an_object_with_error_lines_is_referred_to_only_where_the_first_copy_shows_them() {
        let failing = USER
            .replace(
                "\"type\": \"User\"",
                "\"err\": \"AssertionError: expected 1 to equal 2\"",
            )
            .replace(", ", ",\n    ");
        let same = format!("{{\"tests\": [\n  {failing}\n], \"failures\": [\n  {failing}\n]}}");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        {
            let _tests = ctx.seen.enter(Step::Key("tests"));
            let _row = ctx.seen.enter(Step::Index(0));
            show(&ctx, &same, span(&same, "{\"login\"", 0));
        }
        let (reference, _) = second_copy(&ctx, &same).unwrap_or_default();
        assert!(
            reference.ends_with("\"_same_as\": \".tests[0]\"}"),
            "{reference}"
        );
        // Indented deeper, the copy's error line is not a line the first copy shows.
        let deeper = failing.replace("\n    ", "\n      ");
        let t = format!("{{\"tests\": [\n  {failing}\n], \"failures\": [\n  {deeper}\n]}}");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        show(&ctx, &t, span(&t, "{\"login\"", 0));
        assert!(second_copy(&ctx, &t).is_none());
        // On one line, what stands before the copy is part of its error line.
        let one = r#"{"login": "octocat", "title": "parses the header", "fullTitle": "Parser parses the header row", "file": "/home/runner/work/app/test/parser.spec.js", "err": "AssertionError: expected 1 to equal 2", "duration": 3}"#;
        let t = format!("{{\"test\": {one},\n\"failure\": {one}}}");
        assert!(compact_object(one).is_some() && t.lines().all(|l| l.len() < 300));
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        show(&ctx, &t, span(&t, "{\"login\"", 0));
        assert!(second_copy(&ctx, &t).is_none());
    }

    #[test]
    fn a_query_naming_the_object_does_not_hold_its_copies_back_a_keep_pattern_does() {
        let t = format!("[{USER}, {USER}]");
        let query = Options {
            query: vec!["octocat".into()],
            ..Options::default()
        };
        let ctx = Ctx::new("0123456789ab".into(), &query);
        show(&ctx, &t, span(&t, "{\"login\"", 0));
        assert!(second_copy(&ctx, &t).is_some());
        let keep = Options {
            keep_patterns: vec!["octocat".into()],
            ..Options::default()
        };
        let ctx = Ctx::new("0123456789ab".into(), &keep);
        show(&ctx, &t, span(&t, "{\"login\"", 0));
        assert!(second_copy(&ctx, &t).is_none());
    }

    #[test]
    fn only_whitespace_between_tokens_is_ignored() {
        let pad = "p".repeat(MIN_OBJECT);
        let a = format!("{{\"a\": \"x y\", \"q\": \"say \\\" hi\", \"pad\": \"{pad}\"}}");
        let b =
            format!("{{\n  \"a\":\"x y\",\n  \"q\": \"say \\\" hi\",\n  \"pad\": \"{pad}\"\n}}");
        let c = format!("{{\"a\": \"xy\", \"q\": \"say \\\" hi\", \"pad\": \"{pad}\"}}");
        let d = format!("{{\"a\": \"x y\", \"q\": \"say \\\"hi\", \"pad\": \"{pad}\"}}");
        assert!(compact_object(&a).is_some());
        assert_eq!(compact_object(&a), compact_object(&b));
        assert_ne!(compact_object(&a), compact_object(&c));
        assert_ne!(compact_object(&a), compact_object(&d));
        assert_eq!(compact_object("{\"a\": 1}"), None);
    }

    #[test]
    fn nothing_under_an_unaddressable_element_is_pointed_to() {
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let t = format!("[{USER}, {USER}]");
        {
            let _row = ctx.seen.enter(Step::Unaddressable);
            let _user = ctx.seen.enter(Step::Key("user"));
            show(&ctx, &t, span(&t, "{\"login\"", 0));
        }
        assert!(second_copy(&ctx, &t).is_none());
    }

    #[test]
    fn keys_that_are_not_identifiers_are_quoted_in_the_path() {
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let t = format!("[{USER}, {USER}]");
        {
            let _a = ctx.seen.enter(Step::Key("pull requests"));
            let _b = ctx.seen.enter(Step::Index(3));
            show(&ctx, &t, span(&t, "{\"login\"", 0));
        }
        let (reference, _) = second_copy(&ctx, &t).unwrap_or_default();
        assert!(
            reference.ends_with("\"_same_as\": \".[\\\"pull requests\\\"][3]\"}"),
            "{reference}"
        );
    }
}

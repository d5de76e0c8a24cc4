//! JSON documents and object envelopes: compress the large fields inside, recursively, stay valid JSON.
//!
//! In the request path an API answer like `{"packages": [...], "resolve": {...}, "version": 1}` keeps its
//! shape: small fields are copied byte for byte, large arrays go to the array compressor, large objects are
//! walked again (to a bounded depth), objects with many members are treated as maps (rows = members), and
//! long strings are decoded, compressed as text (a log inside `"stdout"` keeps its error lines) or shortened,
//! and re-encoded. Only the replaced spans change; everything between them is the original text, except that the
//! result's small multi-line containers are then written on one line ([`json_fold`]), which alone may pay for a
//! document whose rows all stay. A Jupyter notebook keeps every cell and its source; only what its cells hold
//! besides compresses ([`super::notebook`]).

use super::jrows::stays_whole;
use super::jscan::{Member, Span, array_items, object_members, plain_str, top_value};
use super::json_array::{Elem, FIELD_MIN, compress_array, compress_container};
use super::json_delta::{Reference, reduce_row};
use super::json_fold;
use super::json_seen::{Look, Step};
use super::relevance::{has_floor_word, is_error_line, is_floor_line};
use super::truncate::{shorten_armored, shorten_to};
use super::{Ctx, Kind, Tally, Unit, compress_kind, detect};

/// Nesting levels of containers compressed inside one another; deeper values are copied.
const MAX_NEST: usize = 6;
/// Objects with more members than this (and large enough) are maps: members are rows.
const MAP_MIN_MEMBERS: usize = 16;
/// Objects of records need only this many members to count as maps when every record has the same keys
/// ([`same_records`]).
const MAP_MIN_RECORDS: usize = 6;
/// Keys a record of such a map has at least: two objects that share one key are no table.
const MIN_RECORD_KEYS: usize = 3;
/// Objects of scalars need this many members to count as maps (a record can have dozens of string fields).
const MAP_MIN_SCALARS: usize = 64;
/// Strings whose JSON text is shorter than this stay as they are.
const STRING_MIN: usize = 512;
/// Visible head of a shortened single-line string.
const STRING_HEAD: usize = 300;
/// Members at least this deep (a value inside this many containers) may go behind a marker whole ([`bulky`]).
const DEEP_MIN: usize = 4;
/// A deep member's container still this long after its own compression is bulk: a JSON Schema under a linter
/// rule's metadata, a vulnerability's nested CVSS vectors, a resource's managed-field bookkeeping.
const DEEP_BULK: usize = 1024;

/// Compresses a whole JSON document (`text` is one JSON value with optional surrounding whitespace).
pub(crate) fn compress_document(
    text: &str,
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    let span = top_value(text)?;
    let Some(inner) = compress_value(text, span, ctx, depth, tally) else {
        // Nothing to drop (every row an error the floor keeps whole): the layout alone may still be worth a marker.
        return (depth == 0)
            .then(|| fold_alone(text, span, ctx, tally))
            .flatten();
    };
    let mut out = String::with_capacity(inner.len() + 2);
    out.push_str(text.get(..span.start)?);
    out.push_str(&inner);
    out.push_str(text.get(span.end..)?);
    if depth == 0 {
        if let Some((folded, _)) = json_fold::fold(&out, &ctx.matcher) {
            return Some(folded);
        }
    }
    Some(out)
}

/// A document the compressors left whole, with its small containers folded ([`json_fold`]) and a marker that names
/// the original (whose exact layout expands): an object's first member `"_ctxzip"`, or a list's first element, a
/// string, as a list's compressor writes its markers (a linter's `--output-format json` is a list whose every row
/// is an error).
fn fold_alone(text: &str, span: Span, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let b = text.as_bytes();
    let first = match b.get(span.start) {
        Some(b'{') => {
            let members = object_members(b, span)?;
            if members
                .iter()
                .any(|m| text.get(m.key.start..m.key.end) == Some("\"_ctxzip\""))
            {
                return None;
            }
            members.first()?.key.start
        }
        Some(b'[') => array_items(b, span)?.first()?.start,
        _ => return None,
    };
    let (folded, saved) = json_fold::fold(text, &ctx.matcher)?;
    // The layout between `{` or `[` and the first member (`\n    `) is the same in the folded text: it opens no
    // container.
    let gap = text.get(span.start + 1..first)?;
    let at = span.start + 1 + gap.len();
    if folded.get(span.start + 1..at) != Some(gap) {
        return None;
    }
    let note = serde_json::to_string(&format!(
        "{} (the layout: small objects and lists written on one line)",
        ctx.marker(saved, Unit::Lines)
    ))
    .ok()?;
    let mut out = String::with_capacity(folded.len() + note.len() + gap.len() + 16);
    out.push_str(folded.get(..at)?);
    if b[span.start] == b'{' {
        out.push_str("\"_ctxzip\": ");
    }
    out.push_str(&note);
    out.push(',');
    out.push_str(gap);
    out.push_str(folded.get(at..)?);
    tally.add(Unit::Lines, saved);
    Some(out)
}

/// Compresses the value at `span`, returning its replacement JSON text only when shorter.
pub(crate) fn compress_value(
    text: &str,
    span: Span,
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    if depth > MAX_NEST {
        return None;
    }
    let mut local = Tally::default();
    let out = match text.as_bytes().get(span.start)? {
        b'[' if span.len() >= FIELD_MIN || depth == 0 => {
            compress_array(text, span, ctx, depth, &mut local)
        }
        b'{' if span.len() >= FIELD_MIN || depth == 0 => {
            compress_object(text, span, ctx, depth, &mut local)
        }
        b'"' if span.len() >= STRING_MIN => compress_string(text, span, ctx, depth, &mut local),
        _ => None,
    }?;
    if out.len() >= span.len() {
        return None;
    }
    tally.merge(&local);
    Some(out)
}

fn compress_object(
    text: &str,
    span: Span,
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    let members = object_members(text.as_bytes(), span)?;
    // A notebook read whole: its cells are code to edit against, not rows to sample.
    if depth == 0 && super::notebook::is_notebook(text, &members) {
        return super::notebook::compress(text, span, &members, ctx, depth, tally);
    }
    if span.len() >= 4 * FIELD_MIN && is_map(text.as_bytes(), &members) {
        let elems: Vec<Elem> = members.iter().copied().map(Elem::from).collect();
        if let Some(out) = compress_container(text, span, &elems, true, ctx, depth, tally) {
            return Some(out);
        }
    }
    let mut out = String::new();
    let mut copied_to = span.start;
    // Members that go together, behind one member in the first one's place: an API record's link members, and a
    // record's members that hold nothing.
    let mut groups = [
        Group::new(
            members.iter().map(|m| is_link(text, m)).collect(),
            LINKS_MIN,
            LINKS_KEY,
            false,
        ),
        Group::new(
            members.iter().map(|m| is_empty(text, m, ctx)).collect(),
            EMPTY_MIN,
            EMPTY_KEY,
            true,
        ),
    ];
    let mut prev_end = span.start;
    // An object of objects may be a map of records (versions, packages, dependencies by name) too small for
    // the map rule: its later members are written against its first when they copy most of it.
    let records = members.len() >= 2
        && members
            .iter()
            .all(|m| text.as_bytes().get(m.value.start) == Some(&b'{'));
    let mut reference: Option<(Span, &str)> = None;
    for (i, m) in members.iter().enumerate() {
        if let Some(group) = groups.iter_mut().find(|g| g.applies && g.members[i]) {
            if group.written {
                // Drop the member with the separator before it, so the rest keeps its formatting.
                out.push_str(text.get(copied_to..prev_end.max(copied_to))?);
            } else {
                out.push_str(text.get(copied_to..m.key.start)?);
                out.push_str(group.key);
                out.push_str(text.get(m.key.end..m.value.start)?);
                let mut value = ctx.marker(group.count, Unit::Keys);
                if group.names {
                    value.push_str(&empty_note(text, &members, &group.members));
                }
                out.push_str(&serde_json::to_string(&value).ok()?);
                tally.add(Unit::Keys, group.count);
                group.written = true;
            }
            copied_to = m.value.end;
            prev_end = m.value.end;
            continue;
        }
        prev_end = m.value.end;
        let _step = ctx.seen.enter(Step::key(text, m.key));
        let sighting = match text.as_bytes().get(m.value.start) {
            Some(b'{') => match ctx.seen.look(text, m.value, ctx) {
                Look::Repeat(reference, keys) => {
                    out.push_str(text.get(copied_to..m.value.start)?);
                    out.push_str(&reference);
                    tally.add(Unit::Keys, keys);
                    copied_to = m.value.end;
                    continue;
                }
                Look::First(sighting) => Some(sighting),
            },
            _ => None,
        };
        if let Some((first, key)) = reference
            && !stays_whole(
                text,
                m.value,
                m.value.of(text),
                ctx.matcher.scan(m.value.of(text).as_bytes()).keep,
            )
            && let Some((reduced, keys)) =
                reduce_row(text, m.value, first, Reference::Member(key), ctx)
        {
            out.push_str(text.get(copied_to..m.value.start)?);
            out.push_str(&reduced);
            tally.add(Unit::Keys, keys);
            copied_to = m.value.end;
            continue;
        }
        if records && i == 0 {
            reference = Some((m.value, m.key.of(text)));
        }
        if m.value.len() < FIELD_MIN.min(STRING_MIN) {
            if let Some(sighting) = sighting {
                ctx.seen.shown(sighting);
            }
            continue;
        }
        let mark = ctx.seen.mark();
        let mut local = Tally::default();
        let inner = compress_value(text, m.value, ctx, depth + 1, &mut local);
        let left = inner.as_ref().map_or(m.value.len(), String::len);
        if depth + 1 >= DEEP_MIN
            && left >= DEEP_BULK
            && let Some((n, unit)) = bulky(text, m.value, ctx)
        {
            ctx.seen.forget_since(mark);
            // Behind a marker, the first member is no row to be written against.
            reference = None;
            out.push_str(text.get(copied_to..m.value.start)?);
            out.push_str(&serde_json::to_string(&ctx.marker(n, unit)).ok()?);
            tally.add(unit, n);
            copied_to = m.value.end;
            continue;
        }
        if let Some(sighting) = sighting {
            ctx.seen.shown(sighting);
        }
        if let Some(v) = inner {
            tally.merge(&local);
            out.push_str(text.get(copied_to..m.value.start)?);
            out.push_str(&v);
            copied_to = m.value.end;
        }
    }
    if copied_to == span.start {
        return None;
    }
    out.push_str(text.get(copied_to..span.end)?);
    Some(out)
}

/// What a deep container at `span` holds (its members or items) when it may go behind a marker whole: nothing in
/// it has an error word (the floor keeps those lines, and a value that holds one stays in the visible part) or
/// a keep-pattern or query hit. Deep in a document, bulk is bookkeeping the answer's top levels summarise: the
/// marker's count says what it was, and expanding it gives the whole document back.
fn bulky(text: &str, span: Span, ctx: &Ctx) -> Option<(usize, Unit)> {
    let raw = text.get(span.start..span.end)?.as_bytes();
    if has_floor_word(raw) {
        return None;
    }
    if ctx.matcher.scan(raw).holds() {
        return None;
    }
    match raw.first()? {
        b'{' => Some((object_members(text.as_bytes(), span)?.len(), Unit::Keys)),
        b'[' => Some((array_items(text.as_bytes(), span)?.len(), Unit::Items)),
        _ => None,
    }
}

/// Members of one object that go behind a single member ([`LINKS_KEY`], [`EMPTY_KEY`]) when there are enough of
/// them.
struct Group {
    members: Vec<bool>,
    count: usize,
    applies: bool,
    key: &'static str,
    /// Its marker's note names the members (`(null or empty: Binds, ContainerIDFile, …)`).
    names: bool,
    written: bool,
}

impl Group {
    fn new(members: Vec<bool>, min: usize, key: &'static str, names: bool) -> Self {
        let count = members.iter().filter(|m| **m).count();
        Group {
            members,
            count,
            applies: count >= min,
            key,
            names,
            written: false,
        }
    }
}

/// A record with at least this many members that hold nothing has them offloaded.
const EMPTY_MIN: usize = 10;
/// The member that stands for an object's offloaded empty members.
const EMPTY_KEY: &str = "\"ctxzip_empty\"";
/// The empty members' keys its note names at most.
const EMPTY_NAMED: usize = 30;

/// A member that holds nothing: `null`, `""`, `[]` or `{}`. A record of a container's or an image's state (`docker
/// inspect`: `"Cmd": null`, `"Volumes": null`, `"Gateway": ""`, dozens per container) or an API object (GitHub's
/// `"milestone": null`) has many; their keys are all a reader needs of them, and the marker's note names them. A
/// member on a floor line (`"Error": ""`) or holding a keep-pattern or query hit stays.
fn is_empty(text: &str, m: &Member, ctx: &Ctx) -> bool {
    let Some(value) = text.get(m.value.start..m.value.end) else {
        return false;
    };
    let inner = |open: char, close: char| {
        value
            .strip_prefix(open)
            .and_then(|v| v.strip_suffix(close))
            .is_some_and(|v| v.trim().is_empty())
    };
    if !(value == "null" || value == "\"\"" || inner('[', ']') || inner('{', '}')) {
        return false;
    }
    let Some(member) = text.get(m.key.start..m.value.end) else {
        return false;
    };
    if is_floor_line(member) {
        return false;
    }
    !ctx.matcher.scan(member.as_bytes()).holds()
}

/// ` (null or empty: Cmd, Volumes, OnBuild, +3)`: the keys of the members [`is_empty`] took.
fn empty_note(text: &str, members: &[Member], empty: &[bool]) -> String {
    let keys: Vec<&str> = members
        .iter()
        .zip(empty)
        .filter(|(_, e)| **e)
        .map(|(m, _)| plain_str(text, m.key).unwrap_or("?"))
        .collect();
    let mut note = format!(
        " (null or empty: {}",
        keys[..keys.len().min(EMPTY_NAMED)].join(", ")
    );
    if keys.len() > EMPTY_NAMED {
        note.push_str(&format!(", +{}", keys.len() - EMPTY_NAMED));
    }
    note.push(')');
    note
}

/// A record with at least this many link members (`*_url` keys holding URLs) has them offloaded: three URLs cost
/// more tokens than the one member that stands for them.
const LINKS_MIN: usize = 3;
/// The member that stands for an object's offloaded links.
const LINKS_KEY: &str = "\"ctxzip_links\"";

/// A link member: a `*_url` key (not `url`/`html_url`, which name the resource itself) whose value is an
/// absolute URL. API answers (GitHub's above all) repeat dozens of them per object, each derivable from the
/// resource's own URL; a line holding an error word is never one (the error floor).
fn is_link(text: &str, m: &Member) -> bool {
    let Some(key) = plain_str(text, m.key) else {
        return false;
    };
    if !key.ends_with("_url") || key == "html_url" {
        return false;
    }
    let Some(value) = plain_str(text, m.value) else {
        return false;
    };
    (value.starts_with("https://") || value.starts_with("http://"))
        && !text
            .get(m.key.start..m.value.end)
            .is_some_and(is_floor_line)
}

/// Whether an object is a map (keys are data: model names, versions, paths) rather than a record (keys are
/// field names): many members whose values share one JSON type — containers, or scalars in large numbers.
/// Objects and lists count as one type: a map may hold a record for one key and a list of them for another
/// (`npm outdated --json` lists a package installed at two versions as an array of its two records).
fn is_map(b: &[u8], members: &[Member]) -> bool {
    if members.len() <= MAP_MIN_MEMBERS {
        return members.len() >= MAP_MIN_RECORDS && same_records(b, members);
    }
    let mut classes = [0usize; 3];
    for m in members {
        let class = match b.get(m.value.start) {
            Some(b'{' | b'[') => 0,
            Some(b'"') => 1,
            _ => 2,
        };
        classes[class] += 1;
    }
    let (class, &count) = classes
        .iter()
        .enumerate()
        .max_by_key(|(_, c)| **c)
        .unwrap_or((2, &0));
    count * 10 >= members.len() * 9 && (class == 0 || members.len() > MAP_MIN_SCALARS)
}

/// Whether every member's value is an object with the same keys, in the same order, and more than one: a table
/// keyed by name (bandit's `metrics` per file, a test run's stats per suite), whatever its size. A record's own
/// members are of different kinds (its `start` and `end` positions share keys, its `user` and `repo` do not).
fn same_records(b: &[u8], members: &[Member]) -> bool {
    let keys = |m: &Member| -> Option<Vec<&[u8]>> {
        if b.get(m.value.start) != Some(&b'{') {
            return None;
        }
        let inner = object_members(b, m.value)?;
        Some(
            inner
                .iter()
                .filter_map(|k| b.get(k.key.start..k.key.end))
                .collect(),
        )
    };
    let Some(first) = members.first().and_then(keys) else {
        return false;
    };
    first.len() >= MIN_RECORD_KEYS
        && members[1..]
            .iter()
            .all(|m| keys(m).as_ref() == Some(&first))
}

/// A long string: text with lines goes through the text compressors, one long line is shortened.
fn compress_string(
    text: &str,
    span: Span,
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    let raw = span.of(text);
    let decoded: String = match plain_str(text, span) {
        Some(s) => s.to_string(),
        None => serde_json::from_str(raw).ok()?,
    };
    let replaced = if let Some(short) = shorten_armored(&decoded, ctx, tally) {
        short
    } else if decoded.contains('\n') {
        let kind = detect(&decoded);
        let nested_depth = if matches!(kind, Kind::JsonArray | Kind::JsonObject) {
            depth + 1
        } else {
            depth
        };
        if nested_depth > MAX_NEST {
            return None;
        }
        let _apart = ctx.seen.apart();
        compress_kind(&decoded, kind, ctx, nested_depth, tally)?
    } else if is_error_line(&decoded) || is_floor_line(&decoded) {
        return None;
    } else {
        shorten_to(&decoded, STRING_HEAD, ctx, tally)
    };
    let encoded = serde_json::to_string(&replaced).ok()?;
    (encoded.len() < raw.len()).then_some(encoded)
}

#[cfg(test)]
mod tests {
    use super::super::{Options, find_markers};
    use super::*;

    fn run(t: &str) -> Option<String> {
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        compress_document(t, &ctx, 0, &mut Tally::default())
    }

    #[test]
    fn an_object_the_document_showed_before_is_a_reference_to_it() {
        let user = serde_json::json!({"login": "octocat", "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==",
            "gravatar_id": "", "url": "https://api.github.com/users/octocat",
            "html_url": "https://github.com/octocat", "type": "User", "site_admin": false,
            "bio": "There once was an octopus who lived in a repository full of forks.",
            "company": "@github", "blog": "https://github.blog", "location": "San Francisco",
            "public_repos": 8, "followers": 9000, "created_at": "2011-01-25T18:44:36Z"});
        let doc = serde_json::json!({
            "action": "opened",
            "issue": {"number": 1, "title": "Spelling in the README", "user": user.clone(),
                      "assignees": [user.clone()], "body": "It looks like 'commit' has two t's."},
            "repository": {"full_name": "octocat/Hello-World", "owner": user.clone()},
            "sender": user.clone(),
        });
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        // The first copy stays whole; every later one points to it.
        assert_eq!(v["issue"]["user"], user, "{out}");
        for repeat in [
            &v["issue"]["assignees"][0],
            &v["repository"]["owner"],
            &v["sender"],
        ] {
            assert_eq!(repeat["_same_as"], ".issue.user", "{out}");
            assert_eq!(
                repeat["_ctxzip"], "<<ctxzip:0123456789ab 15_keys_offloaded>>",
                "{out}"
            );
        }
        assert_eq!(find_markers(&out).len(), 3, "{out}");
        // A repeated object with an error word is shown again where it stands when its error lines are not lines
        // the first copy shows (nested deeper, they are indented further); at the same depth they are.
        let failing = serde_json::json!({"state": "failure", "description": "The build failed on step 3",
            "target_url": "https://ci.example.com/builds/81234", "context": "ci/build", "id": 9912,
            "creator": "release-bot", "created_at": "2024-03-01T10:00:00Z", "updated_at": "2024-03-01T10:04:12Z"});
        let doc = serde_json::json!({"latest": failing.clone(), "required": {"contexts": [failing.clone()]},
            "again": failing.clone(), "note": "x".repeat(600)});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or(text);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["latest"], failing, "{out}");
        assert_eq!(v["required"]["contexts"][0], failing, "{out}");
        assert_eq!(v["again"]["_same_as"], ".latest", "{out}");
    }

    #[test]
    fn a_row_after_one_run_of_dropped_rows_is_referred_to_by_its_index() {
        // Mocha's JSON reporter: every test under `tests`, each failure again under `failures`.
        let test = |i: usize, failing: bool| {
            let mut t = serde_json::json!({"title": format!("normalizes case {i}"),
                "fullTitle": format!("normalizeLink normalizes case {i} of the table"),
                "file": "/srv/app/test/url.test.js", "duration": i % 3, "currentRetry": 0});
            t["err"] = if failing {
                serde_json::json!({"message": format!("Expected values to be strictly equal: {i} !== 5"),
                    "stack": format!("Expected values to be strictly equal: {i} !== 5\n    at Context.<anonymous> \
                        (test/url.test.js:{i}:12)\n    at process.processImmediate (node:internal/timers:483:21)"),
                    "code": "ERR_ASSERTION", "operator": "strictEqual"})
            } else {
                serde_json::json!({})
            };
            t
        };
        let report = |failing_middle: bool| {
            let tests: Vec<_> = (0..40)
                .map(|i| test(i, i >= 38 || (failing_middle && i == 20)))
                .collect();
            let doc =
                serde_json::json!({"tests": tests, "failures": [test(38, true), test(39, true)]});
            let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            let out = run(&text).unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
            (v, out)
        };
        // Rows dropped from one place: the last test is `.tests[39]` to a reader who counts the rows before the
        // summary element and its `dropped`, so its copy points there.
        let (v, out) = report(false);
        let shown = v["tests"].as_array().map_or(0, Vec::len);
        assert_eq!(v["tests"][shown - 3]["dropped"], 40 - (shown - 1), "{out}");
        assert_eq!(v["failures"][0]["_same_as"], ".tests[38]", "{out}");
        assert_eq!(v["failures"][1]["_same_as"], ".tests[39]", "{out}");
        // Rows dropped before and after a failing row kept between them: no count tells the last rows' indices.
        let (v, out) = report(true);
        assert_eq!(v["failures"][1], test(39, true), "{out}");
        assert!(!out.contains("_same_as"), "{out}");
    }

    /// A container's state as `docker inspect` prints it: the members that hold nothing go behind one member whose
    /// note names them; one on a floor line (`"Error": ""`) and one the task names stay where they are.
    #[test]
    fn a_records_empty_members_go_behind_one_member_that_names_them() {
        let mut host = serde_json::Map::new();
        for key in [
            "Binds",
            "ContainerIDFile",
            "VolumeDriver",
            "VolumesFrom",
            "CapAdd",
            "CapDrop",
            "Dns",
            "DnsOptions",
            "DnsSearch",
            "ExtraHosts",
            "GroupAdd",
            "Links",
        ] {
            host.insert(key.into(), serde_json::Value::Null);
        }
        host.insert("Devices".into(), serde_json::json!([]));
        host.insert("Sysctls".into(), serde_json::json!({}));
        host.insert("Error".into(), serde_json::json!(""));
        host.insert("PortBindings".into(), serde_json::json!({}));
        host.insert("NetworkMode".into(), serde_json::json!("none"));
        host.insert("ShmSize".into(), serde_json::json!(67108864));
        for k in 0..30 {
            host.insert(format!("CpuLimit{k}"), serde_json::json!(k));
        }
        let doc = serde_json::json!({"Id": "616221e74233", "HostConfig": host, "Name": "/worker1",
            "Log": "x".repeat(2000)});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let opts = Options {
            query: vec!["PortBindings".into()],
            ..Options::default()
        };
        let ctx = Ctx::new("0123456789ab".into(), &opts);
        let out = compress_document(&text, &ctx, 0, &mut Tally::default()).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let host = &v["HostConfig"];
        let note = host["ctxzip_empty"].as_str().unwrap_or_default();
        assert!(
            note.starts_with("<<ctxzip:0123456789ab 14_keys_offloaded>> (null or empty: "),
            "{out}"
        );
        for key in ["Binds", "ContainerIDFile", "Links", "Devices", "Sysctls"] {
            assert!(
                note.contains(key) && host.get(key).is_none(),
                "{key}: {out}"
            );
        }
        assert!(out.contains("\n    \"Error\": \"\",\n"), "{out}");
        assert_eq!(host["PortBindings"], serde_json::json!({}), "{out}");
        assert_eq!(host["NetworkMode"], "none", "{out}");
        // A record with a few empty members keeps them.
        let few = serde_json::json!({"milestone": null, "assignee": null, "body": "", "labels": [],
            "title": "x".repeat(2000)});
        let text = serde_json::to_string_pretty(&few).unwrap_or_default();
        let out = run(&text).unwrap_or(text);
        assert!(!out.contains("ctxzip_empty"), "{out}");
    }

    #[test]
    fn a_document_in_a_string_is_compressed_apart_from_the_one_around_it() {
        let user = serde_json::json!({"login": "octocat", "id": 583231, "type": "User",
            "url": "https://api.github.com/users/octocat", "html_url": "https://github.com/octocat",
            "bio": "There once was an octopus who lived in a repository full of forks.",
            "company": "@github", "location": "San Francisco", "created_at": "2011-01-25T18:44:36Z"});
        let inner: Vec<serde_json::Value> = (0..40)
            .map(|i| serde_json::json!({"n": i, "author": user.clone(), "body": format!("report {i}: {}", "the parser drops a token ".repeat(12))}))
            .collect();
        let inner = serde_json::to_string_pretty(&inner).unwrap_or_default();
        let doc = serde_json::json!({"user": user.clone(), "payload": inner});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["user"], user, "{out}");
        // The payload was compressed (rows dropped), but nothing in it points to the outer `.user`.
        let payload = v["payload"].as_str().unwrap_or_default();
        assert!(payload.contains("rows_offloaded"), "{payload}");
        assert!(!payload.contains("_same_as"), "{payload}");
    }

    #[test]
    fn an_armored_signature_keeps_its_begin_line_and_a_few_characters() {
        let sig: String = (0..12)
            .map(|i| {
                format!("wsFcBAABCAAQBQJncUZyCRC1aQ7uu5UhlAAAkqsQAGDitC5DSe3ySbRtmHzPf7iv{i:02}\n")
            })
            .collect();
        let signature =
            format!("-----BEGIN PGP SIGNATURE-----\n\n{sig}=Dn7W\n-----END PGP SIGNATURE-----\n");
        let doc = serde_json::json!({"sha": "588ff18", "verification": {"verified": true, "signature": signature}});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let shown = v["verification"]["signature"].as_str().unwrap_or_default();
        assert!(
            shown.starts_with("-----BEGIN PGP SIGNATURE-----\n\nwsFcBAAB"),
            "{shown}"
        );
        assert!(shown.contains("_chars_offloaded"), "{shown}");
        assert!(shown.len() < 120, "{shown}");
        assert_eq!(v["sha"], "588ff18");
        // A multi-line string that only opens like one stays a text.
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let prose = format!(
            "-----BEGIN NOTES-----\n{}\n-----END NOTES-----",
            "a note, with words. ".repeat(30)
        );
        assert!(shorten_armored(&prose, &ctx, &mut Tally::default()).is_none());
    }

    #[test]
    fn link_members_are_offloaded_behind_one_marker_member() {
        let mut obj = serde_json::Map::new();
        obj.insert("id".into(), 7.into());
        obj.insert("url".into(), "https://api.example.com/repos/a/b".into());
        for k in [
            "forks", "keys", "tags", "hooks", "issues", "pulls", "events", "labels",
        ] {
            obj.insert(
                format!("{k}_url"),
                format!("https://api.example.com/repos/a/b/{k}{{/number}}").into(),
            );
        }
        obj.insert("errors_url".into(), "https://api.example.com/errors".into());
        obj.insert("name".into(), "b".into());
        let text =
            serde_json::to_string_pretty(&serde_json::Value::Object(obj)).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["id"], 7);
        assert_eq!(v["name"], "b");
        assert_eq!(v["url"], "https://api.example.com/repos/a/b");
        assert!(v.get("forks_url").is_none() && v.get("labels_url").is_none());
        // A line with an error word stays (the error floor), whatever its key.
        assert_eq!(v["errors_url"], "https://api.example.com/errors");
        assert_eq!(
            find_markers(v["ctxzip_links"].as_str().unwrap_or_default()),
            vec![("0123456789ab".to_string(), "8_keys_offloaded".to_string())]
        );
        // A package index's record: three links already cost more than the member that stands for them; two stay.
        let record = |links: &[&str]| {
            let mut r = serde_json::json!({"id": 42, "name": "time_cache", "version": "1.19.6",
                "url": "http://127.0.0.1:5055/api/packages/time_cache", "summary": "Time caches for humans",
                "description": "A cache whose entries expire after a time to live. ".repeat(6)});
            for k in links {
                r[format!("{k}_url")] =
                    format!("http://127.0.0.1:8089/{k}/time_cache/1.19.6/index.html").into();
            }
            r
        };
        let doc = serde_json::json!({"three": record(&["docs", "releases", "tarball"]),
            "two": record(&["docs", "tarball"]), "padding": "x".repeat(600)});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert!(v["three"].get("docs_url").is_none(), "{out}");
        assert_eq!(
            find_markers(v["three"]["ctxzip_links"].as_str().unwrap_or_default()).len(),
            1,
            "{out}"
        );
        assert_eq!(v["two"], record(&["docs", "tarball"]), "{out}");
    }

    #[test]
    fn envelope_fields_are_compressed_and_shape_kept() {
        let rows: Vec<String> = (0..100)
            .map(|i| format!("{{\"n\": {i}, \"v\": \"value {i}\"}}"))
            .collect();
        let log: String = (0..300)
            .map(|i| format!("step {i} done\n"))
            .collect::<String>()
            + "fatal: disk full\n";
        let long = "x".repeat(5000);
        let doc = serde_json::json!({"items": serde_json::from_str::<serde_json::Value>(&format!("[{}]", rows.join(","))).unwrap_or_default(), "stdout": log, "blob": long, "ok": true});
        let t = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&t).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["ok"], serde_json::Value::Bool(true));
        assert!(
            v["stdout"]
                .as_str()
                .unwrap_or_default()
                .contains("fatal: disk full\n")
        );
        assert!(v["blob"].as_str().unwrap_or_default().len() < 1000);
        assert!(v["items"].as_array().map_or(0, |a| a.len()) < 20);
        assert!(find_markers(&out).len() >= 3);
    }

    #[test]
    fn deep_bulk_goes_behind_a_marker_unless_it_says_what_went_wrong() {
        // A linter report: its findings at the top, each rule's JSON Schema four levels down.
        let schema = |extra: &str| {
            let props: serde_json::Map<String, serde_json::Value> = (0..30)
                .map(|i| {
                    (
                        format!("option{i}"),
                        serde_json::json!({"type": "boolean", "default": i % 2 == 0, "note": extra}),
                    )
                })
                .collect();
            serde_json::json!({"type": "object", "properties": props, "additionalProperties": false})
        };
        let doc = serde_json::json!({
            "results": [{"filePath": "src/app.js", "messages": [{"ruleId": "semi", "line": 3}]}],
            "metadata": {"rulesMeta": {
                "semi": {"type": "layout", "schema": schema("")},
                "eqeqeq": {"type": "suggestion", "schema": schema("fails on ==")},
            }},
            "settings": schema(""),
        });
        let t = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&t).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["results"], doc["results"]);
        // Deep and still bulky after its own compression: one marker counting its members; what is small
        // around it stays.
        assert_eq!(v["metadata"]["rulesMeta"]["semi"]["type"], "layout");
        let schema = v["metadata"]["rulesMeta"]["semi"]["schema"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(
            find_markers(schema),
            vec![("0123456789ab".to_string(), "3_keys_offloaded".to_string())]
        );
        // The same bulk with an error word in it stays in the visible part.
        assert_eq!(
            v["metadata"]["rulesMeta"]["eqeqeq"]["schema"]["properties"]["option3"]["note"],
            "fails on =="
        );
        // Bulk near the top is the answer itself: not offloaded whole.
        assert!(v["settings"].is_object(), "{out}");
        assert!(out.len() * 2 < t.len());
    }

    #[test]
    fn maps_are_compressed_like_arrays() {
        let members: Vec<String> = (0..200)
            .map(|i| format!("\"k{i}\": {{\"mode\": \"chat\", \"x\": {i}}}"))
            .collect();
        let t = format!("{{{}}}", members.join(", "));
        let out = run(&t).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let obj = v.as_object().cloned().unwrap_or_default();
        assert!(obj.contains_key("k0") && obj.contains_key("k199") && obj.contains_key("_ctxzip"));
        assert!(out.contains("\"mode_counts\": {\"chat\": "), "{out}");
    }

    #[test]
    fn a_small_table_keyed_by_name_is_sampled_like_a_map() {
        // bandit's `metrics`: one record of the same counters per file, fewer than a map needs otherwise.
        let row = |i: usize| {
            format!(
                "\"./src/m{i}.py\": {{\n      \"CONFIDENCE.HIGH\": {},\n      \"CONFIDENCE.LOW\": 0,\n      \"CONFIDENCE.MEDIUM\": 0,\n      \"CONFIDENCE.UNDEFINED\": 0,\n      \"SEVERITY.HIGH\": 0,\n      \"SEVERITY.LOW\": {},\n      \"SEVERITY.MEDIUM\": 0,\n      \"SEVERITY.UNDEFINED\": 0,\n      \"loc\": {},\n      \"nosec\": 0,\n      \"skipped_tests\": 0\n    }}",
                i % 3,
                i % 2,
                40 + 17 * i
            )
        };
        let rows: Vec<String> = (0..14).map(row).collect();
        let t = format!(
            "{{\n  \"metrics\": {{\n    {}\n  }},\n  \"errors\": []\n}}",
            rows.join(",\n    ")
        );
        let out = run(&t).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let metrics = v["metrics"].as_object().cloned().unwrap_or_default();
        assert!(
            metrics.contains_key("./src/m0.py") && metrics.contains_key("./src/m13.py"),
            "{out}"
        );
        assert!(
            metrics.contains_key("_ctxzip") && metrics.len() < 12,
            "{out}"
        );
        // Records whose keys differ are a record's members, not a table's rows.
        let mixed: Vec<String> = (0..8)
            .map(|i| {
                format!(
                    "\"f{i}\": {{\"a{i}\": 1, \"b\": 2, \"c\": \"{}\"}}",
                    "x".repeat(300)
                )
            })
            .collect();
        let t = format!("{{\"o\": {{{}}}}}", mixed.join(", "));
        let out = run(&t).unwrap_or_default();
        assert!(
            !out.contains("rows_offloaded") && !out.contains("keys_offloaded\", \"total"),
            "{out}"
        );
    }

    /// A package registry's answer: versions keyed by their number, each a record copying most of the first.
    fn versions(n: usize) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for i in 0..n {
            map.insert(
                format!("1.{i}.0"),
                serde_json::json!({"name": "left-pad", "version": format!("1.{i}.0"),
                    "description": "String left pad", "main": "index.js", "scripts": {"test": "node test"},
                    "devDependencies": {"tape": "*"}, "keywords": ["leftpad", "left", "pad", "padding", "string"],
                    "repository": {"url": "git@github.com:azer/left-pad.git", "type": "git"},
                    "author": "azer", "license": "BSD", "_id": format!("left-pad@1.{i}.0"),
                    "dist": {"shasum": format!("{i:040x}"),
                             "tarball": format!("https://registry.npmjs.org/left-pad/-/left-pad-1.{i}.0.tgz")}}),
            );
        }
        serde_json::Value::Object(map)
    }

    #[test]
    fn a_small_map_of_records_shows_later_members_as_their_differences_from_the_first() {
        let doc = serde_json::json!({"_id": "left-pad", "versions": versions(5)});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        // The first member is whole; the others keep what differs and name the member the rest is as in.
        assert_eq!(v["versions"]["1.0.0"], doc["versions"]["1.0.0"], "{out}");
        for i in 1..5 {
            let m = &v["versions"][format!("1.{i}.0")];
            assert_eq!(m["version"], format!("1.{i}.0"), "{out}");
            assert_eq!(m["dist"]["shasum"], format!("{i:040x}"), "{out}");
            assert_eq!(m["_keys_not_shown_are_as_in_member"], "1.0.0", "{out}");
            assert!(
                m.get("keywords").is_none() && m.get("repository").is_none(),
                "{out}"
            );
        }
        assert_eq!(find_markers(&out).len(), 4, "{out}");
        // A member holding an error line stays whole.
        let mut failing = doc.clone();
        failing["versions"]["1.3.0"]["deprecated"] = "install fails on node 4: use 1.4.0".into();
        let text = serde_json::to_string_pretty(&failing).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(
            v["versions"]["1.3.0"], failing["versions"]["1.3.0"],
            "{out}"
        );
        assert_eq!(
            v["versions"]["1.4.0"]["_keys_not_shown_are_as_in_member"], "1.0.0",
            "{out}"
        );
    }

    /// pyright's `--outputjson`: every diagnostic is an error row the floor keeps whole, so nothing is dropped, but
    /// each row's `range` goes on one line, and a first member names the original whose layout expands.
    #[test]
    fn a_document_whose_rows_all_stay_is_folded_and_names_its_original() {
        let rows: Vec<serde_json::Value> = (0..60)
            .map(|i| {
                serde_json::json!({"file": format!("/src/pkg/mod{}.py", i % 7), "severity": "error",
                    "message": format!("\"x{i}\" is possibly unbound"),
                    "range": {"start": {"line": i, "character": 4}, "end": {"line": i, "character": 9}},
                    "rule": "reportPossiblyUnbound"})
            })
            .collect();
        let doc = serde_json::json!({"version": "1.1.414", "generalDiagnostics": rows,
            "summary": {"errorCount": 60, "warningCount": 0}});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        assert!(
            out.starts_with("{\n  \"_ctxzip\": \"<<ctxzip:0123456789ab "),
            "{out}"
        );
        let mut v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("_ctxzip");
        }
        assert_eq!(v, doc, "the same document but the marker member");
        assert!(out.contains("\"range\": {\"start\": {\"line\": 7, \"character\": 4}, \"end\": {\"line\": 7, \"character\": 9}},\n"), "{out}");
        assert!(super::super::keeps_floor(&text, &out));
        assert!(
            out.len() * 10 < text.len() * 8,
            "{} of {}",
            out.len(),
            text.len()
        );
        // A list (ruff's `--output-format json`) carries the marker as its first element, a string, as a list's
        // compressor writes its markers; every row follows, folded.
        let list = serde_json::to_string_pretty(&doc["generalDiagnostics"]).unwrap_or_default();
        let out = run(&list).unwrap_or_default();
        assert!(
            out.starts_with("[\n  \"<<ctxzip:0123456789ab ") && out.contains(" (the layout: "),
            "{out}"
        );
        let mut v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        if let Some(rows) = v.as_array_mut() {
            rows.remove(0);
        }
        assert_eq!(
            v, doc["generalDiagnostics"],
            "the same rows after the marker"
        );
        assert!(super::super::keeps_floor(&list, &out));
    }

    /// `npm outdated --json`: one record per package, a list of records for a package installed at several
    /// versions. Objects and lists together make the map; its members are sampled like any map's.
    #[test]
    fn a_map_of_records_and_lists_of_records_is_sampled() {
        let mut doc = serde_json::Map::new();
        for i in 0..120 {
            let record = |dependent: &str| {
                serde_json::json!({"current": format!("1.{i}.0"), "wanted": format!("1.{i}.0"),
                    "latest": format!("2.{i}.1"), "dependent": dependent,
                    "location": format!("/srv/app/node_modules/pkg-{i}")})
            };
            let value = if i % 3 == 0 {
                serde_json::json!([record("express"), record("body-parser")])
            } else {
                record("app")
            };
            doc.insert(format!("pkg-{i}"), value);
        }
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let shown = v.as_object().cloned().unwrap_or_default();
        assert!(shown.contains_key("_ctxzip") && shown.len() < 40, "{out}");
        assert_eq!(shown.get("pkg-0"), doc.get("pkg-0"), "{out}");
        assert!(
            out.len() * 4 < text.len(),
            "{} of {}",
            out.len(),
            text.len()
        );
    }

    #[test]
    fn a_large_map_writes_its_shown_rows_against_its_first_member() {
        let doc = serde_json::json!({"_id": "left-pad", "versions": versions(40)});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let out = run(&text).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let shown = v["versions"].as_object().cloned().unwrap_or_default();
        assert!(shown.contains_key("_ctxzip") && shown.len() < 40, "{out}");
        assert_eq!(shown.get("1.0.0"), doc["versions"].get("1.0.0"), "{out}");
        let reduced: Vec<_> = shown
            .iter()
            .filter(|(k, _)| k.as_str() != "1.0.0" && k.as_str() != "_ctxzip")
            .collect();
        assert!(!reduced.is_empty(), "{out}");
        for (k, m) in reduced {
            assert_eq!(m["version"], k.as_str(), "{out}");
            assert_eq!(m["_keys_not_shown_are_as_in_member"], "1.0.0", "{out}");
        }
    }
}

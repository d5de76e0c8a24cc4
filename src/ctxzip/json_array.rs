//! JSON arrays (and objects used as maps): keep some rows, put the rest behind markers, stay valid JSON.
//!
//! In the request path a JSON list answer keeps its first and last rows, every error-like row verbatim (a row
//! error-like only for a warning, among the first few: a scanner's report of warnings is sampled), keep-pattern rows
//! and the rows most relevant to the query; duplicates of a shown row go too. Rows are copied
//! byte for byte from the original (its formatting survives); a large kept row that is not protected is
//! compressed recursively. All dropped rows are stood for by one element at the place of the first dropped
//! one, e.g. `{"_ctxzip": "<<ctxzip:HASH 38_rows_offloaded>>", "total": 50, "dropped": 38,
//! "status_counts": {"ok": 35, "skipped": 3}}` (a plain marker string for arrays of scalars; a `"_ctxzip"`
//! member for maps), so the result still parses.

use rustc_hash::{FxHashMap as FastMap, FxHashSet as FastSet};

use super::jrows::{Whole, status_key, status_value, whole_for};
use super::jscan::{Member, Span, array_items, scan_string};
use super::json_delta::{Reference, reduce_row};
use super::json_object::compress_value;
use super::json_seen::{Look, Step};
use super::relevance::{MAX_ERROR_LINE_BYTES, selective_terms};
use super::{Ctx, Tally, Unit};

/// Containers smaller than this (bytes) inside a document are left alone.
pub(crate) const FIELD_MIN: usize = 512;
/// Rows whose raw text is at least this long are compressed recursively when they stay visible.
const ROW_RECURSE_MIN: usize = 512;
/// A lone dropped row this small is shown instead (a gap element is about 60–120 bytes).
const CHEAP_ROW: usize = 120;
/// Distinct status values listed per gap; the rest are summed under `(other)`.
const MAX_STATUS_VALUES: usize = 8;

/// One element: the whole text to copy and the value inside it (they differ for map members).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Elem {
    pub whole: Span,
    pub value: Span,
}

impl From<Member> for Elem {
    fn from(m: Member) -> Self {
        Elem {
            whole: Span {
                start: m.key.start,
                end: m.value.end,
            },
            value: m.value,
        }
    }
}

/// Compresses the array at `span`; `None` leaves it as it is.
pub(crate) fn compress_array(
    text: &str,
    span: Span,
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    let items = array_items(text.as_bytes(), span)?;
    let elems: Vec<Elem> = items
        .into_iter()
        .map(|s| Elem { whole: s, value: s })
        .collect();
    compress_container(text, span, &elems, false, ctx, depth, tally)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Drop,
    /// Shown; may be compressed recursively.
    Show,
    /// Error or keep-pattern row: shown verbatim.
    Protect,
}

/// Row selection and rendering shared by arrays (`is_map == false`) and map-like objects.
pub(crate) fn compress_container(
    text: &str,
    span: Span,
    elems: &[Elem],
    is_map: bool,
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    let n = elems.len();
    if n == 0 {
        return None;
    }
    let b = text.as_bytes();
    let avg = span.len() / n;
    // Top-level lists (and the lists of an envelope) show more rows than lists nested inside rows.
    let (head, tail, relevant_max) = match (depth <= 1, avg < 200) {
        (true, true) => (10, 4, 10),
        (true, false) => (4, 2, 8),
        (false, true) => (4, 2, 4),
        (false, false) => (2, 1, 4),
    };
    let mut marks = vec![Mark::Drop; n];
    let mut relevant: Vec<(u32, usize)> = Vec::new();
    // Rows kept for a warning alone: the first few stay whole, as the head would show them; past those they are
    // rows like the others (a scanner's report of forty `"severity": "WARNING"` findings).
    let mut warnings: usize = 0;
    for (i, e) in elems.iter().enumerate() {
        let hits = ctx.matcher.scan(&b[e.whole.start..e.whole.end]);
        let row = &text[e.whole.start..e.whole.end];
        let protect = match whole_for(text, e.value, row, hits.keep) {
            Whole::No => false,
            Whole::Error => true,
            Whole::Warning => {
                warnings += 1;
                warnings <= head
            }
        };
        if protect {
            marks[i] = Mark::Protect;
        } else if hits.query != 0 {
            relevant.push((hits.query, i));
        }
    }
    // A term in most rows picks none out: the key the command names (`SELECT name …` over rows that all have a
    // `name`), a value every row shares (`WHERE section = "golang"`). Only the selective terms rank rows, or every
    // row would be relevant and stay.
    let mask = selective_terms(relevant.iter().map(|r| r.0), n);
    relevant.retain_mut(|r| {
        r.0 = (r.0 & mask).count_ones();
        r.0 > 0
    });
    // The head and tail rows are samples of what a row looks like. When the rows kept for their errors are at
    // least as many as the head, they show that already: half the samples do.
    let protected = marks.iter().filter(|m| **m == Mark::Protect).count();
    let (head, tail) = if protected >= head && n > head + tail {
        (head.div_ceil(2), tail.div_ceil(2))
    } else {
        (head, tail)
    };
    for (i, m) in marks.iter_mut().enumerate() {
        if *m == Mark::Drop && (i < head || i + tail >= n) {
            *m = Mark::Show;
        }
    }
    relevant.retain(|&(_, i)| marks[i] == Mark::Drop);
    relevant.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in relevant.iter().take(relevant_max) {
        marks[i] = Mark::Show;
    }
    // A lone small row between shown ones costs less than the element that would stand for it.
    for i in 1..n.saturating_sub(1) {
        let lone =
            marks[i] == Mark::Drop && marks[i - 1] != Mark::Drop && marks[i + 1] != Mark::Drop;
        if lone && elems[i].whole.len() <= CHEAP_ROW {
            marks[i] = Mark::Show;
        }
    }
    // Drop repeats of a row that is already shown.
    let mut shown: FastSet<&str> = FastSet::default();
    let mut duplicate = vec![false; n];
    for (i, e) in elems.iter().enumerate() {
        if marks[i] != Mark::Drop && !shown.insert(e.whole.of(text)) {
            marks[i] = Mark::Drop;
            duplicate[i] = true;
        }
    }
    let all_objects = elems.iter().all(|e| b.get(e.value.start) == Some(&b'{'));
    let unit = match (is_map, all_objects) {
        (true, _) => Unit::Keys,
        (false, true) => Unit::Rows,
        (false, false) => Unit::Items,
    };
    let count_key = elems
        .iter()
        .zip(&marks)
        .find(|(e, m)| **m == Mark::Drop && b.get(e.value.start) == Some(&b'{'))
        .and_then(|(e, _)| status_key(text, e.value));

    let first_sep = text.get(span.start + 1..elems[0].whole.start).unwrap_or("");
    let sep = if n > 1 {
        text.get(elems[0].whole.end..elems[1].whole.start)
            .unwrap_or(", ")
    } else {
        ", "
    };
    let last_sep = text.get(elems[n - 1].whole.end..span.end - 1).unwrap_or("");
    let close = if is_map { '}' } else { ']' };

    // One summary element, where the first run of dropped rows was, stands for every dropped row: one marker
    // and one census are cheaper than one per gap, and the rows that stay keep their order.
    let dropped: Vec<Elem> = elems
        .iter()
        .zip(&marks)
        .filter(|(_, m)| **m == Mark::Drop)
        .map(|(e, _)| *e)
        .collect();
    let summary = if dropped.is_empty() {
        None
    } else {
        let dups = duplicate.iter().filter(|d| **d).count();
        let element = gap_element(text, &dropped, n, dups, unit, count_key, ctx)?;
        Some(if is_map {
            format!("{}: {element}", summary_key(text, elems))
        } else {
            element
        })
    };
    let mut out = String::with_capacity(span.len() / 4);
    out.push(if is_map { '{' } else { '[' });
    out.push_str(first_sep);
    let mut local = Tally::default();
    local.add(unit, dropped.len());
    let mut first = true;
    let mut summary = summary;
    // The first row, when shown, is the one later shown rows are written against. The note names a list's by its
    // index, which is the same in the original and in what the model sees only while nothing before it went; a
    // map's by its key.
    let reference = if all_objects && marks.first().is_some_and(|m| *m != Mark::Drop) {
        match is_map {
            false => Some((Reference::Element(0), elems[0])),
            true => scan_string(b, elems[0].whole.start)
                .and_then(|end| text.get(elems[0].whole.start..end))
                .map(|key| (Reference::Member(key), elems[0])),
        }
    } else {
        None
    };
    // A row after the summary element keeps its index as a path step only when the dropped rows are one run
    // where that element stands: the model then counts to it (the rows before, plus `dropped`). After rows
    // dropped from several places, the count no longer says which index a row had.
    let one_run = marks
        .iter()
        .skip_while(|m| **m != Mark::Drop)
        .skip_while(|m| **m == Mark::Drop)
        .all(|m| *m != Mark::Drop);
    let mut gap_before = false;
    for (i, e) in elems.iter().enumerate() {
        gap_before |= !one_run && i > 0 && marks[i - 1] == Mark::Drop;
        if marks[i] == Mark::Drop && summary.is_none() {
            continue;
        }
        let piece = match summary.take_if(|_| marks[i] == Mark::Drop) {
            Some(s) => s,
            None => {
                let _step = ctx.seen.enter(match (is_map, gap_before) {
                    (true, _) => scan_string(b, e.whole.start).map_or(Step::Unaddressable, |end| {
                        Step::key(
                            text,
                            Span {
                                start: e.whole.start,
                                end,
                            },
                        )
                    }),
                    (false, false) => Step::Index(i),
                    (false, true) => Step::Unaddressable,
                });
                shown_row(
                    text,
                    e,
                    marks[i],
                    reference.filter(|_| i > 0),
                    ctx,
                    depth,
                    &mut local,
                )
            }
        };
        if !first {
            out.push_str(sep);
        }
        first = false;
        out.push_str(&piece);
    }
    out.push_str(last_sep);
    out.push(close);
    if out.len() >= span.len() {
        return None;
    }
    tally.merge(&local);
    Some(out)
}

/// A row that stays visible: a repeat of an object shown before as a reference to it, a row that copies most of
/// the container's first (`first`: how the note names it, and its element) as its differences from it, a large
/// row compressed (a protected one only when huge), else the row as it is.
fn shown_row(
    text: &str,
    e: &Elem,
    mark: Mark,
    first: Option<(Reference<'_>, Elem)>,
    ctx: &Ctx,
    depth: usize,
    local: &mut Tally,
) -> String {
    let prefix = text.get(e.whole.start..e.value.start).unwrap_or("");
    let is_object = text.as_bytes().get(e.value.start) == Some(&b'{');
    let sighting = match is_object.then(|| ctx.seen.look(text, e.value, ctx)) {
        // A protected row (an error word in it) may be a repeat too: `look` refers to it only when the first copy
        // shows each of its error lines.
        Some(Look::Repeat(reference, keys)) if mark != Mark::Drop => {
            local.add(Unit::Keys, keys);
            return format!("{prefix}{reference}");
        }
        Some(Look::First(sighting)) => Some(sighting),
        _ => None,
    };
    if mark == Mark::Show && is_object {
        if let Some((reduced, keys)) =
            first.and_then(|(r, row)| reduce_row(text, e.value, row.value, r, ctx))
        {
            local.add(Unit::Keys, keys);
            return format!("{prefix}{reduced}");
        }
    }
    let recurse = match mark {
        Mark::Show => e.value.len() >= ROW_RECURSE_MIN,
        _ => e.value.len() > MAX_ERROR_LINE_BYTES,
    };
    let recursed = recurse
        .then(|| compress_value(text, e.value, ctx, depth + 1, local))
        .flatten();
    if let Some(sighting) = sighting {
        ctx.seen.shown(sighting);
    }
    match recursed {
        Some(v) => format!("{prefix}{v}"),
        None => e.whole.of(text).to_string(),
    }
}

/// The member key of a map's summary: `_ctxzip`, unless the map already has that key.
fn summary_key(text: &str, elems: &[Elem]) -> &'static str {
    let taken = elems.iter().any(|e| {
        text.get(e.whole.start..)
            .is_some_and(|t| t.starts_with("\"_ctxzip\""))
    });
    if taken {
        "\"_ctxzip_summary\""
    } else {
        "\"_ctxzip\""
    }
}

/// The element standing for the dropped rows: the marker, counts, and a census of the status-like field.
fn gap_element(
    text: &str,
    gap: &[Elem],
    total: usize,
    duplicates: usize,
    unit: Unit,
    count_key: Option<&str>,
    ctx: &Ctx,
) -> Option<String> {
    let marker = serde_json::to_string(&ctx.marker(gap.len(), unit)).ok()?;
    if unit == Unit::Items {
        return Some(marker);
    }
    let mut out = format!(
        "{{\"_ctxzip\": {marker}, \"total\": {total}, \"dropped\": {}",
        gap.len()
    );
    if duplicates > 0 {
        out.push_str(&format!(", \"duplicates\": {duplicates}"));
    }
    if let Some(key) = count_key {
        let mut counts: FastMap<&str, usize> = FastMap::default();
        for e in gap {
            if let Some(v) = status_value(text, e.value, key) {
                *counts.entry(v).or_insert(0) += 1;
            }
        }
        let mut entries: Vec<(&str, usize)> = counts.into_iter().collect();
        entries.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        if !entries.is_empty() {
            out.push_str(&format!(
                ", {}: {{",
                serde_json::to_string(&format!("{key}_counts")).ok()?
            ));
            for (j, (v, c)) in entries.iter().take(MAX_STATUS_VALUES).enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                out.push_str(&format!("{}: {c}", serde_json::to_string(v).ok()?));
            }
            let other: usize = entries.iter().skip(MAX_STATUS_VALUES).map(|e| e.1).sum();
            if other > 0 {
                out.push_str(&format!(", \"(other)\": {other}"));
            }
            out.push('}');
        }
    }
    out.push('}');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::{Options, find_markers};
    use super::*;

    fn run(t: &str, opts: &Options) -> Option<String> {
        let ctx = Ctx::new("0123456789ab".into(), opts);
        compress_array(
            t,
            Span {
                start: 0,
                end: t.len(),
            },
            &ctx,
            0,
            &mut Tally::default(),
        )
    }

    #[test]
    fn keeps_errors_head_tail_and_counts_statuses() {
        let rows: Vec<String> = (0..200)
            .map(|i| {
                let status = if i == 77 {
                    "failed"
                } else if i % 3 == 0 {
                    "skipped"
                } else {
                    "ok"
                };
                format!("{{\"id\": {i}, \"status\": \"{status}\", \"name\": \"job-{i}\"}}")
            })
            .collect();
        let t = format!("[\n  {}\n]", rows.join(",\n  "));
        let out = run(&t, &Options::default()).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let arr = v.as_array().cloned().unwrap_or_default();
        assert!(out.contains(&rows[77]) && out.contains(&rows[0]) && out.contains(&rows[199]));
        assert!(out.contains("\"status_counts\": {\"ok\": "), "{out}");
        assert!(arr.len() < 20);
        assert_eq!(find_markers(&out).len(), 1);
        assert!(out.contains("\"total\": 200, \"dropped\": "), "{out}");
    }

    #[test]
    fn rows_kept_for_errors_stand_in_for_half_the_samples() {
        // 12 findings whose description has an error word, among 200 rows: the head shows 5 rows, not 10.
        let rows: Vec<String> = (0..200)
            .map(|i| {
                let what = if i % 16 == 8 {
                    "mishandles errors"
                } else {
                    "reads past a buffer"
                };
                format!("{{\"id\": \"CVE-{i}\", \"description\": \"parser {what}\"}}")
            })
            .collect();
        let t = format!("[\n  {}\n]", rows.join(",\n  "));
        let out = run(&t, &Options::default()).unwrap_or_default();
        assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok());
        for i in (8..200).step_by(16) {
            assert!(out.contains(&rows[i]), "row {i}: {out}");
        }
        assert!(out.contains(&rows[4]) && !out.contains(&rows[5]), "{out}");
        assert!(
            out.contains(&rows[198]) && !out.contains(&rows[196]),
            "{out}"
        );
        // Without error rows the head keeps its 10 samples.
        let plain: Vec<String> = rows.iter().map(|r| r.replace("errors", "bytes")).collect();
        let out = run(
            &format!("[\n  {}\n]", plain.join(",\n  ")),
            &Options::default(),
        )
        .unwrap_or_default();
        assert!(out.contains(&plain[9]), "{out}");
    }

    #[test]
    fn a_report_of_warnings_keeps_its_first_few_and_every_error() {
        // A scanner's findings (semgrep's `--json`): forty warnings, one error, and one warning whose message
        // holds a floor word.
        let rows: Vec<String> = (0..42)
            .map(|i| {
                let (severity, message) = match i {
                    20 => ("ERROR", "SQL built from user input"),
                    30 => ("WARNING", "the request may fail open"),
                    _ => ("WARNING", "template built with string formatting"),
                };
                format!(
                    "{{\"check_id\": \"rule-{i}\", \"path\": \"app/r{i}.py\", \"extra\": {{\"message\": \"{message}\", \"severity\": \"{severity}\"}}}}"
                )
            })
            .collect();
        let t = format!("[\n  {}\n]", rows.join(",\n  "));
        let out = run(&t, &Options::default()).unwrap_or_default();
        assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok());
        assert!(out.contains(&rows[20]) && out.contains(&rows[30]), "{out}");
        let warnings = (0..42)
            .filter(|&i| i != 20 && i != 30 && out.contains(&rows[i]))
            .count();
        assert!(warnings < 20, "{warnings} warnings shown: {out}");
        assert!(out.contains("\"total\": 42, \"dropped\": "), "{out}");
        // A status that says only `warn` counts the same way; one that says `error` keeps its row.
        let logs: Vec<String> = (0..60)
            .map(|i| {
                let level = if i == 45 { "error" } else { "warn" };
                format!("{{\"level\": \"{level}\", \"msg\": \"slow query {i}\"}}")
            })
            .collect();
        let t = format!("[\n  {}\n]", logs.join(",\n  "));
        let out = run(&t, &Options::default()).unwrap_or_default();
        assert!(out.contains(&logs[45]) && !out.contains(&logs[30]), "{out}");
    }

    #[test]
    fn later_shown_rows_of_alike_objects_show_what_differs_from_the_first() {
        let row = |i: usize| {
            format!(
                "{{\"name\": \"pod-{i}\", \"spec\": {{\"image\": \"registry.example.com/team/service:1.4.2\", \
                 \"restartPolicy\": \"Always\", \"dnsPolicy\": \"ClusterFirst\", \"schedulerName\": \
                 \"default-scheduler\", \"serviceAccountName\": \"default\", \"nodeSelector\": {{\"pool\": \
                 \"general-purpose-nodes\"}}, \"tolerations\": [{{\"key\": \"node.kubernetes.io/not-ready\", \
                 \"operator\": \"Exists\", \"effect\": \"NoExecute\", \"tolerationSeconds\": 300}}, {{\"key\": \
                 \"node.kubernetes.io/unreachable\", \"operator\": \"Exists\", \"effect\": \"NoExecute\", \
                 \"tolerationSeconds\": 300}}]}}, \
                 \"status\": {{\"phase\": \"Running\", \"podIP\": \"10.1.0.{i}\"}}}}"
            )
        };
        let rows: Vec<String> = (0..3).map(row).collect();
        assert!(rows[0].len() >= super::super::json_delta::MIN_ROW);
        let t = format!("[\n  {}\n]", rows.join(",\n  "));
        let out = run(&t, &Options::default()).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        let arr = v.as_array().cloned().unwrap_or_default();
        assert_eq!(arr.len(), 3, "{out}");
        // The first row is whole; the others keep their name and address, and point back to it.
        assert!(out.contains(&rows[0]), "{out}");
        for (i, r) in arr.iter().enumerate().skip(1) {
            assert_eq!(r["name"], format!("pod-{i}"), "{out}");
            assert_eq!(r["status"]["podIP"], format!("10.1.0.{i}"), "{out}");
            assert!(r.get("spec").is_none(), "{out}");
            assert_eq!(r["_keys_not_shown_are_as_in_element"], 0, "{out}");
        }
        assert_eq!(find_markers(&out).len(), 2, "{out}");
        // A row with an error line is protected: whole, even when it is like the first.
        let failing: Vec<String> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let r = r.replace(", \"status\"", ",\n    \"status\"");
                if i == 2 {
                    r.replace("Running", "Failed")
                } else {
                    r
                }
            })
            .collect();
        let t = format!("[\n  {}\n]", failing.join(",\n  "));
        let out = run(&t, &Options::default()).unwrap_or_default();
        assert!(out.contains(&failing[2]), "{out}");
    }

    #[test]
    fn scalars_and_duplicates() {
        let t = format!("[{}]", vec!["\"same\""; 300].join(","));
        let out = run(&t, &Options::default()).unwrap_or_default();
        assert!(
            out.starts_with("[\"same\",\"<<ctxzip:0123456789ab 299_items_offloaded>>\"]"),
            "{out}"
        );
        let q = Options {
            query: vec!["needle".into()],
            ..Options::default()
        };
        let t = format!(
            "[{}, \"a needle here\", {}]",
            vec!["1"; 100].join(","),
            vec!["2"; 100].join(",")
        );
        assert!(
            run(&t, &q)
                .unwrap_or_default()
                .contains("\"a needle here\"")
        );
    }

    /// `sqlite3 -json … 'SELECT name, version …'`: the query's `name` is a key of every row and `golang` a word of
    /// every row; neither picks rows out, so the rows the query does not single out go as any others would. A
    /// term of a few rows still keeps them.
    #[test]
    fn a_term_in_every_row_picks_none() {
        let rows: Vec<String> = (0..40)
            .map(|k| {
                let name = if k == 23 { "golang-rare".to_owned() } else { format!("golang-pkg-{k}") };
                format!("{{\"name\":\"{name}\",\"version\":\"1.{k}.0-2\",\"maintainer\":\"Debian Go Packaging Team\"}}")
            })
            .collect();
        let t = format!("[{}]", rows.join(",\n"));
        let q = Options {
            query: vec!["name".into(), "golang".into(), "rare".into()],
            ..Options::default()
        };
        let out = run(&t, &q).unwrap_or_default();
        assert!(out.contains("golang-rare"), "{out}");
        let shown = out.matches("\"maintainer\"").count();
        assert!(shown <= 16, "{shown} rows shown: {out}");
    }
}

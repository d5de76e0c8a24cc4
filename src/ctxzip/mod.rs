//! ctxzip: content-aware, reversible compression of bulky tool outputs.
//!
//! In the request path the proxy hands each large tool output to [`compress`]; what comes back is a smaller
//! text in which every dropped part is replaced by a `<<ctxzip:HASH NOTE>>` marker. HASH always names the
//! whole input ([`hash_of`]), which the proxy stores before the request leaves, so `context_expand` returns it
//! byte for byte. This module is pure — no I/O, clock, async or store — and deterministic: the same input and
//! options give the same bytes, which keeps provider prompt caches warm across turns.
//!
//! Dispatch: [`detect`](fn@detect) names the content kind and one compressor per kind shrinks it. Every compressor keeps
//! error lines ([`is_error_line`]), keep-pattern hits and query-relevant lines visible, and the JSON ones
//! return valid JSON.

mod code;
mod config;
mod detect;
mod diff;
mod envelope;
mod jrows;
mod jscan;
mod json_array;
mod json_delta;
mod json_fold;
mod json_object;
mod json_seen;
mod layout;
mod lines;
mod logs;
pub mod marker;
mod notebook;
mod regions;
mod relevance;
pub mod repeats;
pub mod report;
mod search;
mod summary;
mod terms;
mod testxml;
mod truncate;
pub mod verbatim;
pub mod views;

pub use detect::detect;
pub use marker::{contains_marker, find_markers, hash_of, marker};
pub use relevance::{FLOOR_LINE_MAX, MAX_ERROR_LINE_BYTES, is_error_line, is_floor_line};
pub use repeats::compress_in_context;
pub use terms::{MAX_TERMS, call_query_text, output_query_terms, query_terms};

use relevance::Matcher;

/// What shapes one compression besides the text itself. Part of the proxy's cache key for compressed forms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Relevance terms, already lowercase (see [`query_terms`]): lines matching them stay visible.
    pub query: Vec<String>,
    /// Case-insensitive substrings that must never be dropped (the operator's domain vocabulary).
    pub keep_patterns: Vec<String>,
    /// Compress source code (only whole function bodies go behind markers). Off by default: an agent that
    /// viewed a file usually needs it verbatim to edit it.
    pub compress_code: bool,
    /// The text is the model's own notes on its way to a tool call (an assistant message in an agent's loop), not
    /// a tool's output. Prose like this carries its point at the start (what was seen) and the end (what to do
    /// next, leading to the call); the reasoning in between is what a later turn needs least, so only a short head
    /// and tail stay visible (with every error line, as always).
    pub notes: bool,
    /// The output is what the agent's call showed of a source file ([`views::views_source_file`]: `cat src/app.py`,
    /// `sed -n '1,80p' model.py`, an editor's `view`): source, verbatim like any (unless `compress_code`), even where
    /// its text reads like prose — a range cut out of a long docstring.
    pub viewed_source: bool,
    /// The call fetched from the network ([`views::fetches_page`]: `curl -s URL`, `wget -qO- URL`, a fetch tool): a
    /// whole HTML document in its output is a page a server sent — its inline stylesheets and scripts read as source
    /// — not a file to edit.
    pub fetched: bool,
}

/// The content kinds, one compressor each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A JSON array (list answers): rows kept/dropped, result stays valid JSON.
    JsonArray,
    /// A JSON object (API envelopes, maps): large fields compressed inside, result stays valid JSON.
    JsonObject,
    /// A unified diff: headers and changes kept, context trimmed.
    Diff,
    /// `path:line:` search results: a few matches per file and counts.
    Search,
    /// Logs and build output: head, tail, errors with context.
    Log,
    /// JSON Lines event streams (`go test -json`, `dart test --reporter json`, structured logs): one record per
    /// line; head and tail records, every error event and its neighbours.
    JsonLines,
    /// Source code: verbatim unless `compress_code`.
    Code,
    /// A configuration file that is mostly comments (`postgresql.conf`, `/etc/login.defs`): its settings kept,
    /// its commentary offloaded (`ctxzip::config`).
    Config,
    /// Anything else line-shaped: listings, prose, key-value dumps, cut-off JSON.
    Lines,
    /// Runs of lines an earlier output of the conversation already shows ([`repeats`]); never detected from the
    /// text alone.
    Repeats,
}

impl Kind {
    /// Stable lowercase name, for metrics labels and audit events.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::JsonArray => "json_array",
            Kind::JsonObject => "json_object",
            Kind::Diff => "diff",
            Kind::Search => "search",
            Kind::Log => "log",
            Kind::JsonLines => "json_lines",
            Kind::Code => "code",
            Kind::Config => "config",
            Kind::Lines => "lines",
            Kind::Repeats => "repeats",
        }
    }
}

/// A compressed text and what the proxy needs to store and account for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compressed {
    /// The compressed text: strictly shorter than the original, every marker in it carries `hash`.
    pub text: String,
    pub kind: Kind,
    /// `hash_of(original)`: the proxy stores the original under it.
    pub hash: String,
    /// What was dropped overall, e.g. `1204_lines_offloaded` (no spaces).
    pub note: String,
    /// Lines in the original.
    pub lines_before: usize,
    /// Lines in the compressed text (what the model sees).
    pub lines_kept: usize,
}

/// Cheap token estimate (bytes / 4, rounded up): used for accounting on the hot path, where a real
/// tokenizer would cost more than the compression itself.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// Compresses `original`, or `None` to leave it as it is: empty, already carrying a marker, source code
/// without `compress_code`, or nothing smaller could be made.
pub fn compress(original: &str, opts: &Options) -> Option<Compressed> {
    compress_hashed(original, hash_of(original), opts)
}

/// [`compress`] for a caller that already has `hash_of(original)` (the proxy keys its records by it).
pub(crate) fn compress_hashed(original: &str, hash: String, opts: &Options) -> Option<Compressed> {
    if original.trim().is_empty() || original.contains(marker::MARKER_PREFIX) {
        return None;
    }
    debug_assert_eq!(hash, hash_of(original));
    let ctx = Ctx::new(hash, opts);
    let parts = envelope::split(original);
    let body = parts.body;
    let failing = verbatim::looks_like_error_output(original);
    let detected = kind_of(original, &parts, opts);
    let mut tally = Tally::default();
    let mut kind = detected;
    let first = if opts.notes && matches!(detected, Kind::Log | Kind::Lines) {
        kind = Kind::Lines;
        lines::compress_with(body, &ctx, &lines::NOTES, &mut tally)
    } else if matches!(detected, Kind::Log | Kind::Lines) && testxml::is_report(body) {
        testxml::compress(body, &ctx, &mut tally)
    } else if failing && matches!(detected, Kind::Log | Kind::Lines | Kind::JsonLines) {
        kind = Kind::Log;
        logs::compress_failing(body, &ctx, &mut tally)
    } else {
        compress_kind(body, detected, &ctx, 0, &mut tally)
    };
    // The error floor: every short line with an error word stays visible as the exact line. A compressor whose
    // result misses one gives way to the log compressor, which keeps the floor by construction.
    let compressed_body = match first {
        Some(b) if keeps_floor(body, &b) => b,
        Some(_) if !matches!(kind, Kind::Code) => {
            tally = Tally::default();
            kind = Kind::Log;
            logs::compress_failing(body, &ctx, &mut tally).filter(|b| keeps_floor(body, b))?
        }
        // A verbose trace around a body too small to shorten may still be shortened itself.
        None if parts.traced => body.to_string(),
        _ => return None,
    };
    let head = match parts.traced {
        true => envelope::compress_trace(parts.head, &ctx, &mut tally),
        false => None,
    };
    let mut text = String::with_capacity(original.len() / 2);
    text.push_str(parts.exec);
    text.push_str(head.as_deref().unwrap_or(parts.head));
    text.push_str(&compressed_body);
    text.push_str(parts.tail);
    if text.len() >= original.len() || !markers_are_ours(&text, &ctx.hash) {
        return None;
    }
    if matches!(kind, Kind::JsonArray | Kind::JsonObject)
        && serde_json::from_str::<serde::de::IgnoredAny>(&compressed_body).is_err()
    {
        return None;
    }
    Some(Compressed {
        lines_kept: text.lines().count(),
        lines_before: original.lines().count(),
        note: tally.note(kind),
        text,
        kind,
        hash: ctx.hash,
    })
}

/// The kind `original` (cut into `parts` by [`envelope::split`]) is compressed as: what its text looks like, except
/// that a command that failed printed a run — a test session showing its tests' source, a crash — not a file to
/// edit, that the body of an HTTP response (`curl -i` of a page: HTML, its inline CSS and scripts) is what a server
/// sent, not a file to edit either — and so is a whole HTML document a call fetched ([`Options::fetched`]: `curl -s`
/// of a page, a fetch tool's answer) — and that what a call showed of a source file ([`Options::viewed_source`]) is
/// source.
fn kind_of(original: &str, parts: &envelope::Parts<'_>, opts: &Options) -> Kind {
    let exited_with_failure = verbatim::exited_with_failure(original);
    let http_response = !parts.head.is_empty();
    let body = parts.body;
    match detect(body) {
        Kind::Code if exited_with_failure => Kind::Log,
        Kind::Code if http_response => Kind::Lines,
        Kind::Code if opts.fetched && detect::is_html_document(body) => Kind::Lines,
        Kind::Lines | Kind::Log
            if opts.viewed_source && !exited_with_failure && !views::looks_generated(body) =>
        {
            Kind::Code
        }
        kind => kind,
    }
}

/// Whether every floor line of `original` ([`is_floor_line`]) is a whole line of `compressed`.
pub fn keeps_floor(original: &str, compressed: &str) -> bool {
    let mut visible: Option<std::collections::HashSet<&str>> = None;
    for line in original.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if !is_floor_line(line) {
            continue;
        }
        let set = visible.get_or_insert_with(|| {
            compressed
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .collect()
        });
        if !set.contains(line) {
            return false;
        }
    }
    true
}

/// Runs the compressor for `kind`. Also the entry point for text nested in JSON string fields.
pub(crate) fn compress_kind(
    text: &str,
    kind: Kind,
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    match kind {
        Kind::JsonArray | Kind::JsonObject => {
            json_object::compress_document(text, ctx, depth, tally)
        }
        Kind::Diff => diff::compress(text, ctx, tally),
        Kind::Search => search::compress(text, ctx, tally),
        Kind::Log => logs::compress(text, ctx, tally),
        Kind::JsonLines => logs::compress_json_lines(text, ctx, tally),
        Kind::Lines => lines::compress(text, ctx, tally),
        Kind::Code if ctx.compress_code => code::compress(text, ctx, tally),
        Kind::Config => config::compress(text, ctx, tally),
        Kind::Code | Kind::Repeats => None,
    }
}

/// The last guard before a result leaves: it names its original through at least one marker (so the model
/// can always expand it), and every occurrence of the marker prefix begins a well-formed marker carrying this
/// original's hash (JSON re-encoding or a cut could otherwise forge or break one).
fn markers_are_ours(text: &str, hash: &str) -> bool {
    let found = find_markers(text);
    !found.is_empty()
        && found.len() == marker::prefix_count(text)
        && found.iter().all(|(h, _)| h == hash)
}

/// Per-call context shared by all compressors.
pub(crate) struct Ctx {
    /// `hash_of(original)` for the whole input: every marker carries it.
    pub hash: String,
    pub matcher: Matcher,
    pub compress_code: bool,
    /// The JSON objects this compression has shown so far, for repeats to point back to.
    pub seen: json_seen::Seen,
}

impl Ctx {
    pub(crate) fn new(hash: String, opts: &Options) -> Self {
        Self {
            hash,
            matcher: Matcher::new(&opts.query, &opts.keep_patterns),
            compress_code: opts.compress_code,
            seen: json_seen::Seen::default(),
        }
    }

    /// A marker for `n` dropped units at one spot.
    pub(crate) fn marker(&self, n: usize, unit: Unit) -> String {
        marker(&self.hash, &format!("{n}_{}_offloaded", unit.as_str()))
    }
}

/// What a marker's note counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Lines,
    Rows,
    Items,
    Keys,
    Matches,
    Bodies,
    Chars,
}

impl Unit {
    const ALL: [Unit; 7] = [
        Unit::Lines,
        Unit::Rows,
        Unit::Items,
        Unit::Keys,
        Unit::Matches,
        Unit::Bodies,
        Unit::Chars,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Unit::Lines => "lines",
            Unit::Rows => "rows",
            Unit::Items => "items",
            Unit::Keys => "keys",
            Unit::Matches => "matches",
            Unit::Bodies => "bodies",
            Unit::Chars => "chars",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Running totals of what was dropped, for the overall note.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally {
    counts: [usize; 7],
}

impl Tally {
    pub(crate) fn add(&mut self, unit: Unit, n: usize) {
        self.counts[unit.index()] += n;
    }

    pub(crate) fn merge(&mut self, other: &Tally) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
    }

    /// The kind's own unit if anything of it was dropped, else the first unit with a count.
    fn note(&self, kind: Kind) -> String {
        let preferred = match kind {
            Kind::JsonArray | Kind::JsonObject => Unit::Rows,
            Kind::Search => Unit::Matches,
            Kind::Code => Unit::Bodies,
            Kind::Diff
            | Kind::Log
            | Kind::Lines
            | Kind::JsonLines
            | Kind::Config
            | Kind::Repeats => Unit::Lines,
        };
        let unit = std::iter::once(preferred)
            .chain(Unit::ALL)
            .find(|u| self.counts[u.index()] > 0)
            .unwrap_or(Unit::Chars);
        format!("{}_{}_offloaded", self.counts[unit.index()], unit.as_str())
    }
}

#[cfg(test)]
mod tests;

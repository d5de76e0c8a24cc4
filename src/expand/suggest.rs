//! Keep-pattern suggestions: identifiers the model keeps expanding become candidates for `keep_patterns`.
//!
//! In the request path, after the proxy answers a `context_expand` call it hands what it returned to
//! [`SuggestionBook::record`]. Every expansion is a sign that compression dropped something the model needed;
//! a domain identifier (`PoolTimeout`, `ECONNRESET`, `tokio::sync`) that shows up in the expansions of several
//! different originals is worth keeping visible, so once it crosses a threshold it is suggested to the operator
//! (an audit event, the stats CLI). The book is plain data: the proxy loads it from and saves it to the store, and
//! takes its counts from the store's counter sets, which every replica adds to
//! ([`crate::turn::expand::patterns`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Distinct expansions an identifier needs before it is suggested.
pub const DEFAULT_SUGGEST_THRESHOLD: u64 = 3;
/// Most patterns the book tracks; beyond it the least recently seen go first (suggested ones last).
pub const MAX_PATTERNS: usize = 2_000;
/// Most tokens taken from one text: an expansion is one event, not a vocabulary dump.
const MAX_TOKENS: usize = 200;
/// Shortest and longest token considered; longer ones are blobs (base64, minified paths), not names.
const MIN_TOKEN_LEN: usize = 3;
const MAX_TOKEN_LEN: usize = 64;
/// Tool names kept per pattern.
const MAX_TOOLS: usize = 8;
/// Original hashes remembered per pattern to count each once. Older ones are forgotten, so re-expanding a
/// long-forgotten original may count again: the count is a ranking signal, not an audit.
const MAX_HASHES: usize = 32;
/// Words that look like identifiers but appear in nearly every output (log levels, protocol words, our own
/// vocabulary): suggesting them would keep everything. Compared case-insensitively.
const STOP_WORDS: &[&str] = &[
    "error",
    "err",
    "warn",
    "warning",
    "info",
    "debug",
    "trace",
    "fatal",
    "critical",
    "notice",
    "note",
    "todo",
    "fixme",
    "xxx",
    "get",
    "post",
    "put",
    "patch",
    "delete",
    "head",
    "options",
    "http",
    "https",
    "json",
    "xml",
    "html",
    "url",
    "uri",
    "api",
    "null",
    "nil",
    "none",
    "true",
    "false",
    "utc",
    "gmt",
    "pass",
    "passed",
    "fail",
    "failed",
    "skip",
    "skipped",
    "eof",
    "e.g",
    "i.e",
    "etc",
    "context_expand",
];

/// Distinct tokens of `text` that look like domain identifiers, in order of first appearance (first casing kept).
///
/// Kept: CamelCase or camelCase (`HttpClient`, `getUser`, `HTTPServer`), ALLCAPS of 3+ characters (`ECONNRESET`,
/// `OOM`, `E2BIG`), names with an underscore (`max_retries`), dotted or colon paths (`tokio::sync`, `a.b.c`).
/// Skipped: plain words (`timeout`, `Error`), numbers, versions and times (no leading letter), hex hashes, tokens
/// over 64 characters, common log and protocol words, and anything about ctxzip itself. At most 200 tokens.
pub fn candidate_tokens(text: &str) -> Vec<String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let raw = text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':')));
    for token in raw.map(|t| t.trim_matches(|c| c == '.' || c == ':')) {
        if out.len() >= MAX_TOKENS {
            break;
        }
        if is_identifier(token) && seen.insert(token.to_ascii_lowercase()) {
            out.push(token.to_owned());
        }
    }
    out
}

fn is_identifier(token: &str) -> bool {
    let bytes = token.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&bytes.len())
        || !(first.is_ascii_alphabetic() || first == b'_')
    {
        return false;
    }
    // The shape first: most tokens of a text are plain words, and they fail here without the checks below.
    let uppers = bytes.iter().filter(|b| b.is_ascii_uppercase()).count();
    let has_lower = bytes.iter().any(u8::is_ascii_lowercase);
    let letters = bytes.iter().any(u8::is_ascii_alphabetic);
    let camel = has_lower && uppers > usize::from(first.is_ascii_uppercase());
    let caps = !has_lower && uppers >= 2;
    let path = token.contains('.') || token.contains(':');
    if !(letters && (camel || caps || path || token.contains('_'))) {
        return false;
    }
    let hex = bytes.iter().all(u8::is_ascii_hexdigit) && bytes.iter().any(u8::is_ascii_digit);
    // Version numbers (`v0.1.99`, `V2`) change with every build: never a domain word.
    let version = matches!(first, b'v' | b'V') && bytes.get(1).is_some_and(u8::is_ascii_digit);
    // A dotted token whose letters are fewer than its digits is a number in disguise (`x1.2.3`, `a1.22.333`).
    let digits = bytes.iter().filter(|b| b.is_ascii_digit()).count();
    let alphas = bytes.iter().filter(|b| b.is_ascii_alphabetic()).count();
    let numeric_path = token.contains('.') && digits > alphas;
    let about_ctxzip = bytes.windows(6).any(|w| w.eq_ignore_ascii_case(b"ctxzip"))
        || bytes.len() >= 10 && bytes[bytes.len() - 10..].eq_ignore_ascii_case(b"_offloaded");
    !(hex
        || version
        || numeric_path
        || about_ctxzip
        || STOP_WORDS.iter().any(|w| w.eq_ignore_ascii_case(token)))
}

/// One tracked candidate, as reported to the operator and stored.
///
/// Deserialization is version-tolerant: missing fields take their defaults, unknown fields are ignored, and
/// numbers or flags written as strings (or a timestamp in another format, which becomes 0) are accepted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PatternStat {
    /// First-seen casing: what the operator would paste into `keep_patterns`.
    pub pattern: String,
    /// Distinct expansions (distinct original hashes) whose content contained it.
    #[serde(deserialize_with = "lenient_u64")]
    pub expansions: u64,
    /// Tools whose outputs it was expanded from, first seen first (at most 8).
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient_strings"
    )]
    pub tools: Vec<String>,
    /// Whether it has crossed the threshold (it is reported once, when it does).
    #[serde(deserialize_with = "lenient_bool")]
    pub suggested: bool,
    /// The `now` of the last expansion that contained it (the caller's clock, e.g. Unix seconds).
    #[serde(deserialize_with = "lenient_u64")]
    pub last_seen: u64,
}

/// A stat plus the hashes already counted for it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
struct Entry {
    #[serde(flatten)]
    stat: PatternStat,
    #[serde(deserialize_with = "lenient_strings")]
    hashes: Vec<String>,
}

/// All tracked candidates of one tenant, keyed case-insensitively.
///
/// Serializes as `{"version":1,"patterns":[…]}`; loading drops nameless entries, merges case duplicates and
/// re-applies the size bound. The configured keep patterns are not stored: the proxy passes them after loading
/// with [`SuggestionBook::set_known_patterns`], so a config change takes effect without rewriting the book.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(from = "BookRecord", into = "BookRecord")]
pub struct SuggestionBook {
    entries: BTreeMap<String, Entry>,
    known: Vec<String>,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct BookRecord {
    version: u32,
    patterns: Vec<Entry>,
}

impl From<BookRecord> for SuggestionBook {
    fn from(record: BookRecord) -> Self {
        let mut book = SuggestionBook::default();
        for entry in record
            .patterns
            .into_iter()
            .filter(|e| !e.stat.pattern.trim().is_empty())
        {
            book.entries
                .entry(entry.stat.pattern.to_ascii_lowercase())
                .or_insert(entry);
        }
        book.evict();
        book
    }
}

impl From<SuggestionBook> for BookRecord {
    fn from(book: SuggestionBook) -> Self {
        BookRecord {
            version: 1,
            patterns: book.entries.into_values().collect(),
        }
    }
}

impl SuggestionBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// The operator's configured `keep_patterns`. A token containing one of them (case-insensitive) is never
    /// tracked nor suggested: lines holding it are already kept, since keep patterns match as substrings.
    pub fn set_known_patterns(&mut self, patterns: &[String]) {
        self.known = patterns
            .iter()
            .map(|p| p.trim().to_ascii_lowercase())
            .filter(|p| !p.is_empty())
            .collect();
    }

    fn is_known(&self, key: &str) -> bool {
        self.known.iter().any(|k| key.contains(k.as_str()))
    }

    /// Counts the identifiers of `text`, which the proxy returned for original `hash` produced by `tool`.
    ///
    /// Each pattern counts each distinct hash once, so the model re-reading one original (or paging through
    /// it) is one expansion. Returns the patterns (first-seen casing) that reached `threshold` (at least 1)
    /// with this call; each is returned once in the book's life. `now` is the caller's clock.
    pub fn record(
        &mut self,
        hash: &str,
        tool: &str,
        text: &str,
        now: u64,
        threshold: u64,
    ) -> Vec<String> {
        self.record_tokens(hash, tool, candidate_tokens(text), now, threshold)
    }

    /// [`Self::record`] for tokens already taken from the text with [`candidate_tokens`] (the caller counted
    /// them in the store too).
    pub fn record_tokens(
        &mut self,
        hash: &str,
        tool: &str,
        tokens: Vec<String>,
        now: u64,
        threshold: u64,
    ) -> Vec<String> {
        let hash = hash.trim().to_ascii_lowercase();
        let threshold = threshold.max(1);
        let mut crossed = Vec::new();
        for token in tokens {
            let key = token.to_ascii_lowercase();
            if self.is_known(&key) {
                continue;
            }
            let entry = self.entries.entry(key).or_insert_with(|| Entry {
                stat: PatternStat {
                    pattern: token,
                    ..PatternStat::default()
                },
                hashes: Vec::new(),
            });
            let stat = &mut entry.stat;
            stat.last_seen = stat.last_seen.max(now);
            if !tool.is_empty()
                && stat.tools.len() < MAX_TOOLS
                && !stat.tools.iter().any(|t| t == tool)
            {
                stat.tools.push(tool.to_owned());
            }
            if entry.hashes.contains(&hash) {
                continue;
            }
            entry.hashes.push(hash.clone());
            if entry.hashes.len() > MAX_HASHES {
                entry.hashes.remove(0);
            }
            stat.expansions = stat.expansions.saturating_add(1);
            if !stat.suggested && stat.expansions >= threshold {
                stat.suggested = true;
                crossed.push(stat.pattern.clone());
            }
        }
        self.evict();
        crossed
    }

    /// Takes the counts kept in the store (lowercase pattern → distinct originals, added to by every replica) as the
    /// book's own: each counted pattern gets that count, and is suggested once it reaches `threshold`. A counted
    /// pattern the book has no entry for (its details lost to a concurrent write) gets one in lower case.
    pub fn apply_counts(&mut self, counts: &[(String, i64)], threshold: u64) {
        let threshold = threshold.max(1);
        for (key, count) in counts {
            let count = u64::try_from(*count).unwrap_or(0);
            let entry = self.entries.entry(key.clone()).or_insert_with(|| Entry {
                stat: PatternStat {
                    pattern: key.clone(),
                    ..PatternStat::default()
                },
                hashes: Vec::new(),
            });
            entry.stat.expansions = count;
            entry.stat.suggested = count >= threshold;
        }
        self.evict();
    }

    /// Drops patterns beyond [`MAX_PATTERNS`]: not-yet-suggested before suggested, least recently seen first.
    fn evict(&mut self) {
        let excess = self.entries.len().saturating_sub(MAX_PATTERNS);
        if excess == 0 {
            return;
        }
        let mut order: Vec<(bool, u64, String)> = self
            .entries
            .iter()
            .map(|(k, e)| (e.stat.suggested, e.stat.last_seen, k.clone()))
            .collect();
        order.sort();
        for (_, _, key) in order.into_iter().take(excess) {
            self.entries.remove(&key);
        }
    }

    /// Suggested patterns not already configured, most expansions first (then most recent, then by name).
    pub fn suggestions(&self) -> Vec<PatternStat> {
        self.sorted(|e| e.stat.suggested && !self.is_known(&e.stat.pattern.to_ascii_lowercase()))
    }

    /// Every tracked pattern, in the same order as [`Self::suggestions`].
    pub fn all(&self) -> Vec<PatternStat> {
        self.sorted(|_| true)
    }

    /// How many patterns are tracked.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is tracked yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn sorted(&self, keep: impl Fn(&Entry) -> bool) -> Vec<PatternStat> {
        let mut out: Vec<PatternStat> = self
            .entries
            .values()
            .filter(|e| keep(e))
            .map(|e| e.stat.clone())
            .collect();
        out.sort_by_key(|s| {
            (
                Reverse(s.expansions),
                Reverse(s.last_seen),
                s.pattern.to_ascii_lowercase(),
            )
        });
        out
    }
}

fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let number = |f: f64| {
        if f.is_finite() && f > 0.0 {
            f as u64
        } else {
            0
        }
    };
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_u64().unwrap_or_else(|| n.as_f64().map_or(0, number)),
        Value::String(s) => s
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| s.trim().parse().map_or(0, number)),
        _ => 0,
    })
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Bool(b) => b,
        Value::String(s) => s.trim().eq_ignore_ascii_case("true"),
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        _ => false,
    })
}

fn lenient_strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Value::String(s) if !s.is_empty() => vec![s],
        _ => Vec::new(),
    })
}

#[cfg(test)]
#[path = "suggest_tests.rs"]
mod tests;

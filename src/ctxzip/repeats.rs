//! Repeats: a new tool output that repeats what an earlier output of the same conversation already shows.
//!
//! Agents re-run the same test, print a file again after a one-line edit, run a reproduction script once more:
//! the new output shares long runs of lines with one the model already has in its context. In the request path
//! the compress stage indexes the conversation's earlier outputs once per turn ([`Seen`]), asks [`find`] which
//! runs of a new output stand there too, and [`render`] replaces each run by one marker line that says where the
//! same lines are (`lines 12-84 repeat lines 5-77 of the output of call_abc`). The whole new output is stored under
//! the marker's hash, as with every other compression, so expanding it gives it back byte for byte.
//!
//! Error lines and keep-pattern lines are never hidden (the error floor): a run goes on through one that stands the
//! same in the earlier output, and it follows the run's marker line, in order, as the exact line.
//! Only outputs *before* the new one count, and only the [`WINDOW`] nearest of them, so an output gets the same
//! bytes whether the transcript is first seen whole or turn by turn: prefix stability depends on it.

use std::borrow::Cow;

use rustc_hash::FxHashMap as FastMap;

use super::relevance::Matcher;
use super::{
    Compressed, Kind, Options, compress_hashed, hash_of, is_floor_line, keeps_floor, marker,
};

/// Earlier outputs a new one may point back to: the nearest this many before it.
pub const WINDOW: usize = 64;
/// Lines of each earlier output that are indexed: bounds the per-turn cost of huge outputs.
const MAX_INDEXED_LINES: usize = 4000;
/// A run is replaced only from this many lines and bytes on: its marker line costs about 25 tokens.
const MIN_RUN_LINES: usize = 4;
const MIN_RUN_BYTES: usize = 240;
/// Earlier occurrences of a line tried as the start of a run (the nearest first): bounds the work on lines that
/// occur everywhere (`}`, `----`).
const MAX_CANDIDATES: usize = 16;
/// A label (a call id) is quoted in notes only when it is this short and made of id characters.
const MAX_LABEL: usize = 64;

/// One earlier output: its position among the request's outputs, what names it to the model, its text.
#[derive(Clone, Copy, Debug)]
pub struct Earlier<'a> {
    pub ordinal: usize,
    pub label: &'a str,
    pub text: &'a str,
}

/// The lines of a request's earlier outputs, indexed by content; built once per turn.
pub struct Seen<'a> {
    texts: Vec<Earlier<'a>>,
    lines: Vec<Vec<&'a str>>,
    /// Each line's occurrences as (text, line number), in transcript order.
    index: FastMap<&'a str, Vec<(u32, u32)>>,
}

impl<'a> Seen<'a> {
    /// Indexes `texts` (in transcript order, ordinals ascending).
    pub fn new(texts: Vec<Earlier<'a>>) -> Self {
        let mut lines = Vec::with_capacity(texts.len());
        let mut index: FastMap<&'a str, Vec<(u32, u32)>> = FastMap::default();
        for (t, earlier) in texts.iter().enumerate() {
            let ls: Vec<&'a str> = earlier.text.split('\n').take(MAX_INDEXED_LINES).collect();
            for (j, line) in ls.iter().enumerate() {
                if !line.trim().is_empty() {
                    index.entry(*line).or_default().push((to_u32(t), to_u32(j)));
                }
            }
            lines.push(ls);
        }
        Seen {
            texts,
            lines,
            index,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Whether text `t` may be pointed back to from the output at `ordinal`.
    fn allowed(&self, t: usize, ordinal: usize) -> bool {
        self.texts
            .get(t)
            .is_some_and(|e| e.ordinal < ordinal && e.ordinal + WINDOW >= ordinal)
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A run of a new output's lines that stands, the same, in an earlier output.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Run {
    start: usize,
    len: usize,
    source: usize,
    from: usize,
    /// Lines inside the run that stay visible (error and keep-pattern lines), by line number: the run goes on
    /// through them, so a file whose identifiers hold an error word (`violation_error_message`) every few lines
    /// is still one run, not pieces too short for a marker.
    shown: Vec<usize>,
}

/// What [`find`] found in one new output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repeats {
    runs: Vec<Run>,
    /// Names the earlier outputs the runs point to (label and content hash of each): with the new output's own
    /// hash, it identifies the compressed form, which is only valid where those outputs stand before it.
    context: String,
}

impl Repeats {
    /// See the field: part of the key a conversation remembers this form under.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The earlier outputs the runs point to, by ordinal, each once, in order.
    pub fn sources(&self, seen: &Seen<'_>) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for run in &self.runs {
            if let Some(e) = seen.texts.get(run.source) {
                if !out.contains(&e.ordinal) {
                    out.push(e.ordinal);
                }
            }
        }
        out
    }
}

/// The runs of `text` (the output at `ordinal`) that repeat an earlier output, or `None` when there is none
/// worth a marker. Lines that are error lines or match a keep pattern never belong to a run.
pub fn find(text: &str, ordinal: usize, seen: &Seen<'_>, opts: &Options) -> Option<Repeats> {
    if seen.is_empty() || text.contains(super::marker::MARKER_PREFIX) {
        return None;
    }
    let keep = Matcher::new(&[], &opts.keep_patterns);
    let lines: Vec<&str> = text.split('\n').collect();
    // The empty piece after a final newline is not a line: a run never swallows the text's last newline.
    let end = if text.ends_with('\n') {
        lines.len() - 1
    } else {
        lines.len()
    };
    let pinned: Vec<bool> = lines
        .iter()
        .map(|l| {
            is_floor_line(l.strip_suffix('\r').unwrap_or(l))
                || (!keep.is_empty() && keep.scan(l.as_bytes()).keep)
        })
        .collect();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < end {
        if pinned[i] || lines[i].trim().is_empty() {
            i += 1;
            continue;
        }
        // The lines of `len` from `i` that stay shown, when such a run is worth its marker line: enough lines and
        // bytes go, and no fewer than stay shown beside it.
        let worth = |len: usize| -> Option<Vec<usize>> {
            let shown: Vec<usize> = (i..i + len).filter(|&k| pinned[k]).collect();
            let hidden = len - shown.len();
            let hidden_bytes: usize = (i..i + len)
                .filter(|&k| !pinned[k])
                .map(|k| lines[k].len() + 1)
                .sum();
            (hidden >= MIN_RUN_LINES && hidden_bytes >= MIN_RUN_BYTES && hidden >= shown.len())
                .then_some(shown)
        };
        // The longest run worth its marker among the nearest candidates (the nearest on a tie).
        let mut best: Option<Run> = None;
        if let Some(occurrences) = seen.index.get(lines[i]) {
            let nearest = occurrences
                .iter()
                .rev()
                .filter(|(t, _)| seen.allowed(*t as usize, ordinal))
                .take(MAX_CANDIDATES);
            for &(t, j) in nearest {
                let (t, j) = (t as usize, j as usize);
                let source = &seen.lines[t];
                let mut n = 0;
                while i + n < end && j + n < source.len() && lines[i + n] == source[j + n] {
                    n += 1;
                }
                // A run never ends on a line that stays visible: that line follows it as it is.
                while n > 0 && pinned[i + n - 1] {
                    n -= 1;
                }
                if best.as_ref().is_some_and(|b| n <= b.len) {
                    continue;
                }
                if let Some(shown) = worth(n) {
                    best = Some(Run {
                        start: i,
                        len: n,
                        source: t,
                        from: j,
                        shown,
                    });
                }
            }
        }
        match best {
            Some(run) => {
                i += run.len;
                runs.push(run);
            }
            None => i += 1,
        }
    }
    if runs.is_empty() {
        return None;
    }
    let mut context = String::new();
    let mut named: Vec<usize> = Vec::new();
    for run in &runs {
        if !named.contains(&run.source) {
            named.push(run.source);
            let e = &seen.texts[run.source];
            context.push_str(&format!("{}\u{0}{}\u{0}", e.label, hash_of(e.text)));
        }
    }
    Some(Repeats {
        runs,
        context: hash_of(&context),
    })
}

/// `text` with each run of `repeats` replaced by a marker line naming where the same lines stand; `None` when that
/// is not shorter or would hide an error line.
pub fn render(original: &str, repeats: &Repeats, seen: &Seen<'_>) -> Option<Compressed> {
    render_hashed(original, hash_of(original), repeats, seen)
}

fn render_hashed(
    original: &str,
    hash: String,
    repeats: &Repeats,
    seen: &Seen<'_>,
) -> Option<Compressed> {
    let lines: Vec<&str> = original.split('\n').collect();
    let mut pieces: Vec<Cow<'_, str>> = Vec::with_capacity(lines.len());
    let mut next = 0;
    let mut hidden = 0;
    for run in &repeats.runs {
        let source = seen.texts.get(run.source)?;
        if run.start < next || run.start + run.len > lines.len() {
            return None;
        }
        pieces.extend(lines[next..run.start].iter().map(|l| Cow::Borrowed(*l)));
        let name = if is_id(source.label) {
            format!("the output of {}", source.label)
        } else {
            "an earlier output".to_owned()
        };
        let offloaded = run.len - run.shown.len();
        let among = match run.shown.len() {
            0 => String::new(),
            1 => "; the line below is one of them".to_owned(),
            k => format!("; the {k} lines below are among them"),
        };
        pieces.push(Cow::Owned(format!(
            "{} lines {}-{} repeat lines {}-{} of {name}{among}",
            marker(&hash, &format!("{offloaded}_lines_offloaded")),
            run.start + 1,
            run.start + run.len,
            run.from + 1,
            run.from + run.len,
        )));
        for &k in &run.shown {
            pieces.push(Cow::Borrowed(*lines.get(k)?));
        }
        hidden += offloaded;
        next = run.start + run.len;
    }
    pieces.extend(lines[next..].iter().map(|l| Cow::Borrowed(*l)));
    let text = pieces.join("\n");
    if text.len() >= original.len() || !keeps_floor(original, &text) {
        return None;
    }
    Some(Compressed {
        lines_kept: text.lines().count(),
        lines_before: original.lines().count(),
        note: format!("{hidden}_lines_offloaded"),
        text,
        kind: Kind::Repeats,
        hash,
    })
}

/// [`compress`](super::compress) for a tool output that may repeat earlier outputs of its conversation: the shorter of the form by
/// kind (when `by_kind`: the text is large enough for it) and the form that points back to the earlier outputs.
/// `hash` is `hash_of(original)`, which the caller already has (the proxy keys its records by it).
pub fn compress_in_context(
    (original, hash): (&str, &str),
    opts: &Options,
    by_kind: bool,
    repeats: Option<(&Repeats, &Seen<'_>)>,
) -> Option<Compressed> {
    let own = if by_kind {
        compress_hashed(original, hash.to_owned(), opts)
    } else {
        None
    };
    let pointing = repeats.and_then(|(r, seen)| render_hashed(original, hash.to_owned(), r, seen));
    match (own, pointing) {
        (Some(a), Some(b)) => Some(if b.text.len() < a.text.len() { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// A call id safe to quote: short, made of the characters ids are made of.
fn is_id(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= MAX_LABEL
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_log(n: usize, extra: &str) -> String {
        let mut s = String::from("<returncode>0</returncode>\n<output>\n");
        for i in 0..n {
            s.push_str(&format!(
                "tests/test_models.py::test_case_{i} PASSED   [{i:3}%]\n"
            ));
        }
        s.push_str(extra);
        s.push_str("</output>\n");
        s
    }

    #[test]
    fn a_rerun_points_back_to_the_earlier_output_and_keeps_what_changed() {
        let first = run_log(40, "== 40 passed in 1.20s ==\n");
        let second = run_log(40, "== 40 passed in 1.31s ==\n");
        let seen = Seen::new(vec![Earlier {
            ordinal: 0,
            label: "call_1",
            text: &first,
        }]);
        let opts = Options::default();
        let r = find(&second, 1, &seen, &opts);
        assert!(r.is_some());
        let Some(r) = r else { return };
        let c = render(&second, &r, &seen);
        assert!(c.is_some());
        let Some(c) = c else { return };
        assert!(c.text.contains("40 passed in 1.31s"), "{}", c.text);
        assert!(
            c.text.contains(
                "> lines 1-42 repeat lines 1-42 of the output of call_1\n== 40 passed in 1.31s"
            ),
            "{}",
            c.text
        );
        assert!(c.text.len() * 4 < second.len());
        assert!(c.text.ends_with("</output>\n"));
        assert_eq!(r.sources(&seen), vec![0]);
        // Deterministic, and the same from a later turn's index (more outputs after it change nothing).
        let later = Seen::new(vec![
            Earlier {
                ordinal: 0,
                label: "call_1",
                text: &first,
            },
            Earlier {
                ordinal: 1,
                label: "call_2",
                text: &second,
            },
        ]);
        assert_eq!(find(&second, 1, &later, &opts), Some(r));
    }

    #[test]
    fn error_lines_and_keep_patterns_stay_visible_inside_a_repeat() {
        let body: String = (0..30)
            .map(|i| {
                if i == 12 {
                    "E   AssertionError: expected 3, got 4\n".to_owned()
                } else if i == 20 {
                    "checkpoint TENANT-7 reached\n".to_owned()
                } else {
                    format!("some ordinary line of output number {i}\n")
                }
            })
            .collect();
        let seen = Seen::new(vec![Earlier {
            ordinal: 3,
            label: "call_x",
            text: &body,
        }]);
        let opts = Options {
            keep_patterns: vec!["tenant-7".into()],
            ..Options::default()
        };
        let r = find(&body, 4, &seen, &opts);
        assert!(r.is_some());
        let Some(r) = r else { return };
        let c = render(&body, &r, &seen);
        assert!(c.is_some());
        let Some(c) = c else { return };
        assert!(c.text.contains("\nE   AssertionError: expected 3, got 4\n"));
        assert!(c.text.contains("\ncheckpoint TENANT-7 reached\n"));
        assert!(keeps_floor(&body, &c.text));
    }

    #[test]
    fn a_repeat_goes_on_through_lines_that_stay_visible() {
        // Source whose identifiers hold an error word every third line: before, each piece between two such
        // lines was too short for a marker and the whole repeat stayed.
        let body: String = (0..60)
            .map(|i| {
                if i % 3 == 2 {
                    format!("        self.violation_error_message = message_{i}\n")
                } else {
                    format!("        value_{i} = compute(value_{i}, other_{i})\n")
                }
            })
            .collect();
        let seen = Seen::new(vec![Earlier {
            ordinal: 0,
            label: "call_view",
            text: &body,
        }]);
        let r = find(&body, 1, &seen, &Options::default());
        let c = r.as_ref().and_then(|r| render(&body, r, &seen));
        assert!(c.is_some());
        let Some(c) = c else { return };
        assert_eq!(r.map(|r| r.runs.len()), Some(1));
        assert!(
            c.text.contains(
                "_lines_offloaded>> lines 1-59 repeat lines 1-59 of the output of call_view; the 19 lines below \
                 are among them\n        self.violation_error_message = message_2\n"
            ),
            "{}",
            c.text
        );
        assert!(c.text.contains("40_lines_offloaded"));
        assert!(keeps_floor(&body, &c.text));
        assert!(c.text.len() * 2 < body.len());
        // Kept lines never outnumber the lines that go: a run of mostly error lines is not worth its marker.
        let dense: String = (0..30)
            .map(|i| {
                if i % 3 == 0 {
                    format!("ordinary line number {i} of the run output\n")
                } else {
                    format!("error: step {i} failed to converge within its limit\n")
                }
            })
            .collect();
        let seen = Seen::new(vec![Earlier {
            ordinal: 0,
            label: "c",
            text: &dense,
        }]);
        assert!(find(&dense, 1, &seen, &Options::default()).is_none());
    }

    #[test]
    fn a_shorter_run_worth_its_marker_wins_over_a_longer_one_that_is_not() {
        let ordinary: Vec<String> = (0..5)
            .map(|i| format!("collecting module number {i} of the package under test\n"))
            .collect();
        let mut dense = String::new();
        for i in 0..30 {
            if i % 3 == 2 {
                dense.push_str(&format!("plain line {i}\n"));
            } else {
                dense.push_str(&format!("ERROR: case {i} failed\n"));
            }
        }
        let new = format!("{}{dense}", ordinary.concat());
        // The older output shares only the five ordinary lines; the nearer one shares everything, but a run over
        // it would show twenty error lines for fifteen it hides.
        let older = format!("{}something else entirely\n", ordinary.concat());
        let seen = Seen::new(vec![
            Earlier {
                ordinal: 0,
                label: "call_a",
                text: &older,
            },
            Earlier {
                ordinal: 1,
                label: "call_b",
                text: &new,
            },
        ]);
        let r = find(&new, 2, &seen, &Options::default());
        let c = r.as_ref().and_then(|r| render(&new, r, &seen));
        assert!(c.is_some());
        let Some(c) = c else { return };
        assert!(
            c.text
                .contains("lines 1-5 repeat lines 1-5 of the output of call_a\n"),
            "{}",
            c.text
        );
        assert!(keeps_floor(&new, &c.text));
    }

    #[test]
    fn only_the_nearest_earlier_outputs_count_and_short_runs_stay() {
        let text = run_log(20, "");
        let seen = Seen::new(vec![Earlier {
            ordinal: 0,
            label: "call_1",
            text: &text,
        }]);
        let opts = Options::default();
        // An output after it, within the window: found; too far, or not before it: not.
        assert!(find(&text, 1, &seen, &opts).is_some());
        assert!(find(&text, WINDOW, &seen, &opts).is_some());
        assert!(find(&text, WINDOW + 1, &seen, &opts).is_none());
        assert!(find(&text, 0, &seen, &opts).is_none());
        // Three repeated lines are not worth a marker.
        let short = "alpha one two three\nbeta one two three\ngamma one two three\n";
        let seen = Seen::new(vec![Earlier {
            ordinal: 0,
            label: "c",
            text: short,
        }]);
        assert!(find(short, 1, &seen, &opts).is_none());
        assert!(find(short, 1, &Seen::new(Vec::new()), &opts).is_none());
    }

    #[test]
    fn odd_labels_are_not_quoted() {
        assert!(is_id("call_msa_002"));
        assert!(is_id("fc-1.a:2"));
        assert!(!is_id(""));
        assert!(!is_id("call 1"));
        assert!(!is_id("x\ny"));
        assert!(!is_id(&"a".repeat(65)));
        let text = run_log(20, "");
        let seen = Seen::new(vec![Earlier {
            ordinal: 0,
            label: "call <1>",
            text: &text,
        }]);
        let r = find(&text, 1, &seen, &Options::default());
        let c = r.and_then(|r| render(&text, &r, &seen));
        assert!(c.is_some_and(|c| c.text.contains("of an earlier output")));
    }
}

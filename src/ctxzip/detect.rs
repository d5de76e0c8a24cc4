//! Content detection: which compressor a tool output gets.
//!
//! In the request path this runs once per large output. JSON is recognised by a full validating scan (a value
//! cut off mid-way is not JSON and goes to the line compressors); everything else is classified from a bounded
//! sample of lines (the first 300 and the last 100, each looked at for at most 512 bytes), so detection costs
//! the same for a 3 KB and a 30 MB output.

use std::collections::HashSet;

use super::Kind;
use super::jscan;
use super::lines;
use super::relevance::is_error_line;

const SAMPLE_HEAD: usize = 300;
const SAMPLE_TAIL: usize = 100;
const SAMPLE_LINE_BYTES: usize = 512;

/// Names the content kind of `text`.
pub fn detect(text: &str) -> Kind {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        match jscan::validate(text) {
            Some(b'[') => return Kind::JsonArray,
            Some(b'{') => return Kind::JsonObject,
            _ => {}
        }
    }
    let (sample, closed) = sample_lines(text);
    // A multi-container log (`docker compose up`, `docker compose logs`) prints each line after its service's name
    // (`web-1  | {"level": "INFO", …}`): what the lines are is read from what follows the name, and a service's
    // output is no file to edit, whatever its lines look like.
    let services = service_prefixed(&sample);
    let f = if services {
        let payloads: Vec<&str> = sample.iter().map(|l| after_service(l)).collect();
        Features::of(&payloads, &closed)
    } else {
        Features::of(&sample, &closed)
    };
    // A diff is a text that opens as one (a wrapper line or two may come first); a log that merely contains a
    // patch — an evaluation run printing `git diff` before its tests — is a log.
    if (f.diff_files > 0 || (f.hunks > 0 && f.minus_plus_headers > 0))
        && (f.first_diff_header.is_some_and(|at| at < 4) || f.opens_with_commit)
    {
        return Kind::Diff;
    }
    if f.nonempty >= 3 && f.search * 10 >= f.nonempty * 6 {
        return Kind::Search;
    }
    if f.nonempty >= 3 && f.json_records * 10 >= f.nonempty * 8 {
        return Kind::JsonLines;
    }
    // A default configuration is mostly comments, which read as source: its settings are what a reader wants.
    if super::config::is_config(text) {
        return Kind::Config;
    }
    // A file view holds no patch: a log that prints one (an evaluation run's `git diff`) shows source in its hunks
    // but is no file to edit. Nor do four lines in five open with one label: that is a program's report
    // (`python -X importtime`'s `import time:` reads as an import statement), not source.
    // Nor is a TAP stream (`prove -v`), whose `# …` diagnostics under each `ok 12 - name` read as comments.
    // Nor is an Erlang node's log, whose reports are Erlang terms.
    // Nor is an Ansible run, whose `ok: [web-1] => {"changed": false, …}` results read as object literals.
    // Nor are a one-file search's hits (`grep -n indent src/emitter.c`): numbered source lines, but numbers that
    // jump from hit to hit, where a view's follow each other. Its hits go as a log's lines do, head, tail and the
    // lines the query picks.
    // Nor is a value printed by its runtime (`console.log` of a nested object, whose keys and literals read as a JS
    // object literal): what it shows of nested values (`[Object]`, `Map(25) {`) no source holds.
    let not_source = services
        || f.diff_files > 0
        || f.hunks > 0
        || (f.nonempty >= 5 && f.labelled * 10 >= f.nonempty * 8)
        || reads_as_printout(f.inspected, f.nonempty)
        || (f.tap >= 3 && f.tap * 10 >= f.nonempty)
        || f.otp_reports >= 2
        || f.play_banners >= 2
        || (f.grep_numbered * 10 >= f.nonempty * 6 && f.grep_jumps * 5 >= f.grep_numbered);
    if f.numbered * 10 >= f.nonempty * 6
        && f.code * 10 >= f.nonempty * 3
        && f.errors * 10 < f.nonempty
        && !not_source
    {
        return Kind::Code;
    }
    if f.nonempty >= 5
        && f.code * 2 >= f.nonempty
        && f.log * 10 < f.nonempty
        && f.errors * 10 < f.nonempty
        && !not_source
    {
        return Kind::Code;
    }
    // A table of records with error words in some rows (`failed` orders, pods in `Error`) is still a table: the
    // log compressor's context around each error line would keep their neighbours for nothing.
    if (f.log * 100 >= f.nonempty * 15 || f.errors >= 2.max(f.nonempty / 50))
        && !lines::is_table(text, f.nonempty, f.log)
    {
        return Kind::Log;
    }
    Kind::Lines
}

/// Whether a text of `lines` lines, `inspected` of them [`is_inspected`], is a value a runtime printed: two such
/// lines at least, and one in twenty.
pub(crate) fn reads_as_printout(inspected: usize, lines: usize) -> bool {
    inspected >= 2 && inspected * 20 >= lines
}

/// A line of Node's `util.inspect` (what `console.log` prints of a value) that no source has: a nested value it
/// did not descend into (`roles: [Array]`, `[Object]`, `[Function: save]`, `[Getter]`, `[Circular *1]`), a
/// collection's header (`index: Map(25) {`, `Set(3) {`), the count of items left out (`... 12 more items`).
pub(crate) fn is_inspected(t: &str) -> bool {
    let t = t.trim_end_matches(',');
    let nested = [
        "[Array]",
        "[Object]",
        "[Getter]",
        "[Setter]",
        "[Getter/Setter]",
    ];
    if nested.iter().any(|n| t.ends_with(n))
        || t.contains("[Function: ")
        || t.contains("[Circular *")
        || t.contains("[class ")
    {
        return true;
    }
    if let Some(rest) = t.strip_prefix("... ") {
        return rest.ends_with(" more items") || rest.ends_with(" more item");
    }
    // `Map(25) {` or `key: Set(3) {`: the collection's size in parentheses before its brace.
    t.ends_with(") {")
        && ["Map(", "Set(", "Array(", "Buffer("].iter().any(|c| {
            t.find(c).is_some_and(|at| {
                let digits = &t[at + c.len()..t.len() - 3];
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            })
        })
}

/// Fewer lines than this read as one service's log, however they look.
const MIN_SERVICE_LINES: usize = 3;
/// A multi-container log names few services: a column of many distinct values before a `|` is a table's.
const MAX_SERVICES: usize = 8;

/// The length of a container log's service prefix on `line`: a compose service's name (`web-1`, `db_1`,
/// `backend_theater`), the spaces that pad it to the longest name, and `| ` (or a bare `|` ending an empty line).
fn service_prefix_len(line: &str) -> Option<usize> {
    let name = line
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        .count();
    if name == 0 || name > 64 {
        return None;
    }
    let rest = &line[name..];
    let pad = rest.bytes().take_while(|&b| b == b' ').count();
    let after = rest[pad..].strip_prefix('|')?;
    if pad == 0 || !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    Some(line.len() - after.strip_prefix(' ').unwrap_or(after).len())
}

/// What a container log's line says after its service prefix; the line itself when it has none.
fn after_service(line: &str) -> &str {
    service_prefix_len(line).map_or(line, |n| &line[n..])
}

/// Whether four in five of the sampled non-empty lines carry a service prefix ([`service_prefix_len`]) with the
/// `|` in one column (compose pads every name to the longest), naming at most [`MAX_SERVICES`] services.
fn service_prefixed(sample: &[&str]) -> bool {
    let mut nonempty = 0;
    let mut prefixed = 0;
    let mut column = None;
    let mut names: HashSet<&str> = HashSet::new();
    for line in sample {
        if line.trim().is_empty() {
            continue;
        }
        nonempty += 1;
        let Some(len) = service_prefix_len(line) else {
            continue;
        };
        let bar = line[..len].trim_end().len() - 1;
        if *column.get_or_insert(bar) != bar {
            return false;
        }
        names.insert(line[..bar].trim_end());
        if names.len() > MAX_SERVICES {
            return false;
        }
        prefixed += 1;
    }
    prefixed >= MIN_SERVICE_LINES && prefixed * 5 >= nonempty * 4
}

/// The sampled lines, each cut to its first [`SAMPLE_LINE_BYTES`], and whether each whole line ends with `}` (a
/// JSON Lines record longer than the cut still counts as one).
fn sample_lines(text: &str) -> (Vec<&str>, Vec<bool>) {
    let mut out: Vec<&str> = text.split('\n').take(SAMPLE_HEAD).collect();
    let head_bytes: usize = out.iter().map(|l| l.len() + 1).sum();
    if head_bytes < text.len() {
        let tail: Vec<&str> = text[head_bytes..].rsplit('\n').take(SAMPLE_TAIL).collect();
        out.extend(tail.into_iter().rev());
    }
    let closed = out.iter().map(|l| l.trim_end().ends_with('}')).collect();
    let cut = out
        .into_iter()
        .map(|l| &l[..super::truncate::floor_boundary(l, SAMPLE_LINE_BYTES)])
        .collect();
    (cut, closed)
}

#[derive(Default, Debug)]
struct Features {
    nonempty: usize,
    diff_files: usize,
    hunks: usize,
    minus_plus_headers: usize,
    search: usize,
    numbered: usize,
    code: usize,
    log: usize,
    errors: usize,
    /// Lines that are one JSON object each (`{…}`): a JSON Lines stream.
    json_records: usize,
    /// Lines that open with the sample's most common label ([`label`]: `import time:`, `debug1:`).
    labelled: usize,
    /// Lines that open as a one-file `grep -n` prints them ([`grep_line_number`]: `86:yaml_emitter_…`, and `87-…`
    /// for `-A`/`-B` context), and of those the ones whose number does not follow the previous one's.
    grep_numbered: usize,
    grep_jumps: usize,
    /// A TAP stream's result and plan lines ([`is_tap_line`]: Perl's `prove`, node-tap, Bats).
    tap: usize,
    /// Erlang/OTP logger report headers ([`is_otp_report_header`]).
    otp_reports: usize,
    /// Ansible's banners ([`is_play_banner`]: `TASK [Render environment file] ****`).
    play_banners: usize,
    /// Lines only a runtime's printout of a value has ([`is_inspected`]: Node's `roles: [Array]`, `Map(25) {`).
    inspected: usize,
    /// How many non-empty lines came before the first diff header (`diff --git`, `--- `, `Index: `).
    first_diff_header: Option<usize>,
    /// The first non-empty line names a commit (`git show`, `git log -p`: `commit 3f2a9c1…`; `git format-patch`:
    /// `From 3f2a9c1… Mon Sep 17 00:00:00 2001`): its author, date and message come before the patch.
    opens_with_commit: bool,
}

impl Features {
    fn of(lines: &[&str], closed: &[bool]) -> Self {
        let mut f = Features::default();
        let docstring = docstring_lines(lines);
        // Inside an agent harness's `<warning>…</warning>` note around a long output: the harness's words, not
        // the output's.
        let mut in_harness_note = false;
        let mut labels: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut last_grep_number: Option<u32> = None;
        for (i, line) in lines.iter().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let t = line.trim();
            if t == "<warning>" {
                in_harness_note = true;
            }
            if in_harness_note || is_harness_tag(t) {
                in_harness_note = in_harness_note && !t.starts_with("</warning>");
                continue;
            }
            f.nonempty += 1;
            if f.nonempty == 1 {
                f.opens_with_commit = names_commit(line);
            }
            if f.first_diff_header.is_none()
                && (line.starts_with("diff --git ")
                    || line.starts_with("diff -")
                    || line.starts_with("--- ")
                    || line.starts_with("Index: "))
            {
                f.first_diff_header = Some(f.nonempty - 1);
            }
            let t = line.trim();
            if t.starts_with('{') && closed.get(i).copied().unwrap_or(false) && t.len() >= 2 {
                f.json_records += 1;
            }
            if line.starts_with("diff --git ") {
                f.diff_files += 1;
            } else if line.starts_with("@@ -") && line[4..].contains(" @@") {
                f.hunks += 1;
            } else if line.starts_with("+++ ") || line.starts_with("--- ") {
                f.minus_plus_headers += 1;
            }
            if search_path(line).is_some() {
                f.search += 1;
            }
            let content = match strip_line_number(line) {
                Some(rest) => {
                    f.numbered += 1;
                    rest
                }
                None => line,
            };
            if let Some(n) = grep_line_number(line) {
                f.grep_numbered += 1;
                f.grep_jumps += usize::from(last_grep_number.is_some_and(|last| n != last + 1));
                last_grep_number = Some(n);
            }
            if docstring.get(i).copied().unwrap_or(false) || is_code_like(content) {
                f.code += 1;
            }
            if is_log_like(line) {
                f.log += 1;
            }
            if is_error_line(line) {
                f.errors += 1;
            }
            if let Some(l) = label(line) {
                *labels.entry(l).or_insert(0) += 1;
            }
            if is_inspected(t) {
                f.inspected += 1;
            }
            if is_tap_line(t) {
                f.tap += 1;
            }
            if is_play_banner(t) {
                f.play_banners += 1;
            }
            if is_otp_report_header(t) {
                f.otp_reports += 1;
            }
        }
        f.labelled = labels.values().copied().max().unwrap_or(0);
        f
    }
}

/// A line of the Test Anything Protocol a test harness prints: a result (`ok 12 - parses fail10.json`, `not ok 3`)
/// or the plan (`1..38`).
fn is_tap_line(t: &str) -> bool {
    if super::regions::tap_number(t, "ok ") || super::regions::tap_number(t, "not ok ") {
        return true;
    }
    t.strip_prefix("1..")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
}

/// A line's label: what comes before its first `: ` (or a final `:`) when that is short and plain — words, no
/// brackets, quotes or operators (`import time`, `debug1`, `npm WARN deprecated`). Source lines rarely share one.
fn label(line: &str) -> Option<&str> {
    let end = line
        .find(": ")
        .or_else(|| line.strip_suffix(':').map(str::len))?;
    let head = &line[..end];
    (!head.is_empty()
        && head.len() <= 24
        && head
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b' ' || b == b'_' || b == b'-' || b == b'.'))
    .then_some(head)
}

/// Whether `text` is a whole HTML document: it opens (after whitespace and a byte-order mark) with a doctype or an
/// `<html>` tag, in any case.
pub(crate) fn is_html_document(text: &str) -> bool {
    let t = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    let head = t.get(..14).unwrap_or(t);
    head.eq_ignore_ascii_case("<!doctype html")
        || t.get(..5).is_some_and(|h| h.eq_ignore_ascii_case("<html"))
}

/// Whether `line` opens a commit as git prints it before its patch: `commit <hash>` (with `git log`'s
/// decorations after it) or, in a `git format-patch` mail, `From <hash> <date>`.
fn names_commit(line: &str) -> bool {
    let rest = line
        .strip_prefix("commit ")
        .or_else(|| line.strip_prefix("From "));
    rest.and_then(|r| r.split_whitespace().next())
        .is_some_and(|h| (7..=64).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `path:line:` (grep -n, ripgrep): the path has no whitespace, the line number is followed by `:`.
/// Returns the path.
pub(crate) fn search_prefix(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b':' if i > 0 => {
                let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits > 0 && b.get(i + 1 + digits) == Some(&b':') {
                    let path = &line[..i];
                    // Timestamps (`12:34:56`, `2024-01-01T10:00:00`) start with a digit; paths rarely do.
                    return (!b[0].is_ascii_digit()).then_some(path);
                }
                // Windows drive letters (`C:\`) and URLs keep going; anything else ends the path.
                if !(i == 1 || b.get(i + 1) == Some(&b'\\')) {
                    return None;
                }
            }
            c if c.is_ascii_whitespace() || c == b'"' || c == b'\'' || c == b'{' || c == b'[' => {
                return None;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The path of a search hit: `path:line:` ([`search_prefix`]), or `path:` when the search printed no line numbers
/// (`grep -r pattern dir`, `grep pattern a.py b.py`). Without a line number the path must look like a file's: no
/// whitespace, a `/` in it, and an extension on its last part (`sklearn/svm/libsvm.pyx:`), so `key: value` and
/// `Note: …` lines are not hits, and no second colon after it (`tests/test_a.py::test_b PASSED` is a pytest node).
pub(crate) fn search_path(line: &str) -> Option<&str> {
    if let Some(p) = search_prefix(line) {
        return Some(p);
    }
    let colon = line.find(':')?;
    let path = &line[..colon];
    let name = &path[path.rfind('/')? + 1..];
    let ext = &name[name.rfind('.')? + 1..];
    let plain =
        |c: char| !c.is_whitespace() && !matches!(c, '"' | '\'' | '{' | '[' | '(' | '<' | '=');
    (path.chars().all(plain)
        && !path.starts_with(|c: char| c.is_ascii_digit())
        && (1..=8).contains(&ext.len())
        && ext.bytes().all(|b| b.is_ascii_alphanumeric())
        && !line[colon..].starts_with("://")
        && !line[colon..].starts_with("::"))
    .then_some(path)
}

/// The content after a `cat -n` / `nl` style line number (`   12\t…`, `12: …`, `12| …`).
/// The line number a one-file `grep -n` opens a line with: digits, then `:` for a hit or `-` for a context line.
fn grep_line_number(line: &str) -> Option<u32> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 7 || !matches!(line.as_bytes().get(digits), Some(b':' | b'-')) {
        return None;
    }
    line[..digits].parse().ok()
}

pub(crate) fn strip_line_number(line: &str) -> Option<&str> {
    let t = line.trim_start_matches(' ');
    let digits = t.bytes().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 7 {
        return None;
    }
    let rest = &t[digits..];
    if let Some(r) = rest.strip_prefix('\t') {
        return Some(r);
    }
    for sep in [": ", "| ", "→"] {
        if let Some(r) = rest.strip_prefix(sep) {
            return Some(r);
        }
    }
    if rest.is_empty() || rest == ":" || rest == "|" {
        return Some("");
    }
    None
}

const CODE_STARTS: [&str; 54] = [
    "fn ",
    "pub ",
    "let ",
    "use ",
    "mod ",
    "impl ",
    "impl<",
    "struct ",
    "enum ",
    "trait ",
    "match ",
    "if ",
    "else",
    "for ",
    "while ",
    "loop ",
    "return",
    "def ",
    "class ",
    "import ",
    "from ",
    "async ",
    "await ",
    "const ",
    "static ",
    "var ",
    "function ",
    "package ",
    "func ",
    "type ",
    "interface ",
    "#include",
    "#define",
    "#[",
    "//",
    "/*",
    "* ",
    "try",
    "except",
    "raise ",
    "switch ",
    "case ",
    "assert ",
    "elif ",
    "with ",
    "yield",
    "del ",
    "global ",
    "nonlocal ",
    "lambda",
    "self.",
    "super(",
    "export ",
    "@",
];

fn is_code_like(content: &str) -> bool {
    let t = content.trim();
    if t.is_empty() || t.starts_with('"') {
        return false;
    }
    if CODE_STARTS.iter().any(|s| t.starts_with(s)) {
        return true;
    }
    // A comment (`# …`, `#!`), a closing bracket, a statement that is a keyword alone (`else:`, `try:`, `pass`);
    // RSpec's `# ./spec/cart_spec.rb:12:in …` is a backtrace frame, not a comment.
    if t == "#"
        || (t.starts_with("# ") && !super::regions::is_ruby_frame(t))
        || t.starts_with("#!")
        || t.starts_with([')', ']', '}'])
        || CODE_WORDS.contains(&t.trim_end_matches(':'))
    {
        return true;
    }
    let ends = [
        ";", "{", "}", "};", "(", "=>", "->", "*/", "):", "),", "[", "],", "},",
    ];
    ends.iter().any(|e| t.ends_with(e))
        || (t.ends_with(':') && t.contains('(') && !t.contains(": "))
}

/// A docstring (or other triple-quoted string) is closed within this many lines, or its lines are not counted as
/// source: a lone `"""` in a diff hunk or a log must not make the rest of a sample look like code.
const MAX_DOCSTRING: usize = 60;

/// Which of `lines` stand in a triple-quoted string that opens and closes within [`MAX_DOCSTRING`] lines,
/// delimiters included: a docstring's prose is part of the source.
fn docstring_lines(lines: &[&str]) -> Vec<bool> {
    let odd = |l: &str| (l.matches("\"\"\"").count() + l.matches("'''").count()) % 2 == 1;
    let mut inside = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if !odd(lines[i]) {
            if lines[i].contains("\"\"\"") || lines[i].contains("'''") {
                inside[i] = true;
            }
            i += 1;
            continue;
        }
        let close = (i + 1..lines.len().min(i + 1 + MAX_DOCSTRING)).find(|&j| odd(lines[j]));
        match close {
            Some(j) => {
                inside[i..=j].iter_mut().for_each(|x| *x = true);
                i = j + 1;
            }
            None => i += 1,
        }
    }
    inside
}

/// Statements that are one keyword.
const CODE_WORDS: [&str; 8] = [
    "else", "try", "finally", "pass", "break", "continue", "return", "default",
];

/// A line that is only an agent harness's markup around an output: `<returncode>0</returncode>`, `<output>`,
/// `</output>`, `</warning><output_head>`.
fn is_harness_tag(t: &str) -> bool {
    t.starts_with('<') && t.ends_with('>') && !t.contains(char::is_whitespace) && t.len() <= 64
}

const LOG_WORDS: [&str; 24] = [
    "Compiling",
    "Running",
    "Downloaded",
    "Downloading",
    "Checking",
    "Finished",
    "Building",
    "Installing",
    "Collecting",
    "Updating",
    "Fresh",
    "Locking",
    "Adding",
    "Step",
    "INFO",
    "DEBUG",
    "TRACE",
    "WARN",
    "ERROR",
    "npm",
    "Traceback",
    "Successfully",
    "Processing",
    "Setting",
];

pub(crate) fn is_log_like(line: &str) -> bool {
    let t = line.trim_start();
    let first = t
        .split([' ', '\t', ':', ']'])
        .next()
        .unwrap_or("")
        .trim_start_matches('[');
    if LOG_WORDS.contains(&first) {
        return true;
    }
    if t.starts_with("warning:")
        || t.starts_with("error:")
        || t.starts_with("error[")
        || t.starts_with("==>")
    {
        return true;
    }
    starts_with_timestamp(t)
        || [" INFO ", " WARN ", " ERROR ", " DEBUG ", "[info]", "[warn]"]
            .iter()
            .any(|w| t.contains(w))
}

/// The header of an Erlang/OTP logger report (`=CRASH REPORT==== 5-Dec-2026::07:37:03.711030 ===`, `=ERROR
/// REPORT====`, `=PROGRESS REPORT====`): what an Erlang or Elixir node logs, each report's body an Erlang term
/// whose brackets and commas read as source.
/// A banner of an Ansible run: `PLAY [Web servers] ****…`, `TASK [Create release directories] ****…`,
/// `RUNNING HANDLER [restart nginx] ****…`, `PLAY RECAP ****…`.
fn is_play_banner(t: &str) -> bool {
    ["PLAY [", "TASK [", "RUNNING HANDLER [", "PLAY RECAP "]
        .iter()
        .any(|p| t.starts_with(p))
        && t.ends_with("***")
}

fn is_otp_report_header(t: &str) -> bool {
    t.strip_prefix('=')
        .and_then(|rest| rest.split_once(" REPORT===="))
        .is_some_and(|(kind, _)| {
            !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_uppercase() || b == b' ')
        })
}

/// Whether a line opens with a timestamp: a date (`2024-01-31…`, `2024/01/31 …`) or a time of day (`12:34:56`),
/// bare, in brackets (`[2024-01-31 12:34:56,789]`, Python's and Java's loggers), as logfmt's first field
/// (`time="2024-01-31T…"`, `ts=2024-…`: Docker, containerd, Go services), or after glog's and klog's severity letter
/// (`I0131 12:34:56.789012`: Kubernetes components) or Ruby's `Logger` (`E, [2026-06-11T21:47:17.090216 #1] ERROR
/// -- : …`: Rails and any Ruby program's log).
pub(crate) fn starts_with_timestamp(line: &str) -> bool {
    let stamp = line.strip_prefix('[').unwrap_or(line);
    let stamp = ["time=", "ts=", "timestamp=", "t="]
        .iter()
        .find_map(|key| stamp.strip_prefix(key))
        .map_or(stamp, |value| value.strip_prefix('"').unwrap_or(value));
    bare_timestamp(stamp) || glog_timestamp(line) || ruby_logger_timestamp(line)
}

/// Whether `line` stays visible like the error floor's lines: a floor line
/// ([`is_floor_line`](super::relevance::is_floor_line)) or a linter's error
/// finding that no error word marks ([`reports_lint_error`]).
pub(crate) fn holds_floor(line: &str) -> bool {
    super::relevance::is_floor_line(line) || reports_lint_error(line)
}

/// Whether a line is a linter's finding of error severity whose words need not say so: pylint's `E` (error) and `F`
/// (fatal) messages — `E:197,41: Undefined variable 'phase' (undefined-variable)` in its older format,
/// `pkg/mod.py:197:41: E0602: Undefined variable 'phase' (undefined-variable)` in its current one. They are what a
/// pylint report is read for, and stay like floor lines. Only pylint's codes have a letter and four digits: flake8's
/// and ruff's `E501` (style) and `F401` (an unused import) are not errors.
pub(crate) fn reports_lint_error(line: &str) -> bool {
    let number = |s: &str| !s.is_empty() && s.bytes().all(|d| d.is_ascii_digit());
    if let Some(rest) = line.strip_prefix("E:").or_else(|| line.strip_prefix("F:")) {
        // The older format: `E:197,41: `, `F:  1, 0: `.
        return rest.split_once(": ").is_some_and(|(loc, _)| {
            loc.split_once(',')
                .is_some_and(|(l, c)| number(l.trim()) && number(c.trim()))
        });
    }
    // The current format: `path:line:col: E0602: ` — the code after the location.
    let mut fields = line.split(": ");
    let (Some(loc), Some(code)) = (fields.next(), fields.next()) else {
        return false;
    };
    code.len() == 5
        && code.starts_with(['E', 'F'])
        && number(&code[1..])
        && loc.rsplit(':').take(2).all(number)
}

/// `E, [2026-06-11T21:47:17.090216 #1]`: a severity letter, a comma, the time in brackets.
fn ruby_logger_timestamp(line: &str) -> bool {
    line.get(..4).is_some_and(|head| {
        let b = head.as_bytes();
        matches!(b[0], b'D' | b'I' | b'W' | b'E' | b'F' | b'A') && &b[1..] == b", ["
    }) && line.get(4..).is_some_and(bare_timestamp)
}

/// `I0131 12:34:56.789012`: a severity letter, the month and day, a time of day.
fn glog_timestamp(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() >= 14
        && matches!(b[0], b'I' | b'W' | b'E' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
        && bare_timestamp(&line[6..])
}

fn bare_timestamp(line: &str) -> bool {
    let b = line.as_bytes();
    let date = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && matches!(b[4], b'-' | b'/')
        && b[7] == b[4];
    let time =
        b.len() >= 8 && b[..2].iter().all(u8::is_ascii_digit) && b[2] == b':' && b[5] == b':';
    date || time
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Erlang node's log: each report's body is an Erlang term (`{restart_type,permanent},`), which reads as
    /// source line by line; the report headers say it is a log.
    #[test]
    fn an_erlang_nodes_reports_are_no_source() {
        let mut log = String::new();
        for k in 0..6 {
            log.push_str(&format!(
                "=PROGRESS REPORT==== 5-Dec-2026::07:37:04.02{k} ===\n    supervisor: {{local,httpc_sup}}\n    started: [{{pid,<0.9{k}.0>}},\n              {{id,httpc_profile_sup}},\n              {{mfargs,{{httpc_profile_sup,start_link,[]}}}},\n              {{restart_type,permanent}},\n              {{shutdown,infinity}},\n              {{child_type,supervisor}}]\n\n"
            ));
        }
        assert_ne!(detect(&log), Kind::Code);
        // One header alone in a source file (a string in a test of a log parser) does not make it a log.
        let source = "fn parse() {\n    let header = 1;\n}\n// =INFO REPORT==== 1-Jan-2024::00:00:00 ===\nfn other() {\n    work();\n}\n";
        assert_eq!(detect(source), Kind::Code);
    }

    /// `prove -v`: each `ok N - name` is followed by `# …` diagnostics, which read as comments; a TAP stream is a
    /// test run, not source. Comments in a script stay code.
    #[test]
    fn a_tap_stream_is_no_source() {
        let mut tap = String::from("t/18_json_checker.t .. \n1..38\n");
        for k in 1..30 {
            tap.push_str(&format!(
                "ok {k} - case{k}.json\n#  (garbage after JSON object, at character offset {k} (before \"x\") at t/18.t line 32.\n# )\n"
            ));
        }
        assert_ne!(detect(&tap), Kind::Code);
        let script = "# Build the docs.\n# Usage: make docs\nset -e\n# clean first\nrm -rf build\n# then build\nsphinx-build -b html docs build\n";
        assert_eq!(detect(script), Kind::Code);
        assert!(
            is_tap_line("not ok 3 - rejects fail3.json")
                && is_tap_line("ok 12")
                && is_tap_line("1..38")
        );
        assert!(!is_tap_line("ok then") && !is_tap_line("1..") && !is_tap_line("okay 3"));
    }

    /// `console.log` of a nested object reads as a JS object literal line by line, but what it shows of the values
    /// it did not descend into is no source: it is a program's output, compressed as one.
    #[test]
    fn a_value_printed_by_node_is_no_source() {
        let mut text =
            String::from("{\n  fetchedAt: 2026-12-05T01:40:00.000Z,\n  index: Map(25) {\n");
        for i in 0..25 {
            text.push_str(&format!("    'user{i}@example.test' => {{\n      id: {i},\n      name: 'User {i}',\n      roles: [Array],\n      profile: [Object]\n    }},\n"));
        }
        text.push_str("  },\n  save: [Function: save],\n  ... 3 more items\n}\n");
        assert_ne!(detect(&text), Kind::Code);
        // The same object as source (a module's literal) stays code.
        let source = text
            .replace("Map(25) {", "new Map([")
            .replace("[Array]", "[]")
            .replace("[Object]", "{}")
            .replace("[Function: save]", "save")
            .replace("  ... 3 more items\n", "");
        assert_eq!(detect(&source), Kind::Code);
        for line in [
            "roles: [Array],",
            "index: Map(25) {",
            "tags: Set(3) {",
            "... 12 more items",
            "self: [Circular *1]",
        ] {
            assert!(is_inspected(line), "{line}");
        }
        for line in [
            "const m = new Map();",
            "if (x) {",
            "items(3) {",
            "// [Array] of users",
        ] {
            assert!(!is_inspected(line), "{line}");
        }
    }

    #[test]
    fn pylints_errors_are_told_from_style_findings() {
        for error in [
            "E:197,41: Undefined variable 'phase' (undefined-variable)",
            "F:  1, 0: Unable to import 'serial' (import-error)",
            "openhtf/exe/__init__.py:197:41: E0602: Undefined variable 'phase' (undefined-variable)",
            "src/app.py:3:0: F0401: Unable to import 'yaml' (import-error)",
        ] {
            assert!(reports_lint_error(error), "{error}");
        }
        for other in [
            "C:159, 2: Missing method docstring (missing-docstring)",
            "W:244,17: Catching too general exception Exception (broad-except)",
            "openhtf/exe/__init__.py:12:0: C0114: Missing module docstring (missing-module-docstring)",
            // flake8's and ruff's codes: style and unused names, not errors.
            "src/app.py:12:80: E501 line too long (88 > 79 characters)",
            "src/app.py:1:1: F401 'os' imported but unused",
            "E: the letter alone",
            "Error: something",
        ] {
            assert!(!reports_lint_error(other), "{other}");
        }
    }

    #[test]
    fn timestamps_open_log_records() {
        for line in [
            "2026-12-04T23:16:07.123Z INFO started",
            "2026/12/04 23:16:07 [notice] 14141#14141: nginx/1.22.1",
            "23:16:07 WARN slow",
            "[2026-12-05 07:38:54,066] ERROR ingest: bad row",
            "time=\"2026-12-05T07:44:42.939178486Z\" level=info msg=\"Starting up\"",
            "ts=2026-12-05T07:44:42.939Z caller=main.go:12 level=info",
            "I1205 07:44:42.939178   20528 server.go:155] Version: v1.28.2",
            "E, [2026-06-11T21:47:17.090216 #1] ERROR -- : Failed to read data from file",
        ] {
            assert!(starts_with_timestamp(line), "{line}");
        }
        for line in [
            "2026 was a year",
            "12:3:45 not a time",
            "  2026-12-04 indented",
            "1234-56",
            "time=later",
            "[x] 2026-12-04",
            "I1205 is no time",
            "E, [x] not a time",
            "I, [",
        ] {
            assert!(!starts_with_timestamp(line), "{line}");
        }
    }

    #[test]
    fn a_report_whose_lines_share_one_label_is_no_source() {
        // `python -X importtime`: every line opens with `import time:`, which reads as an import statement.
        let mut report = String::from("import time: self [us] | cumulative | imported package\n");
        for (i, m) in [
            "_io",
            "marshal",
            "posix",
            "encodings",
            "codecs",
            "requests",
            "urllib3",
        ]
        .iter()
        .cycle()
        .take(60)
        .enumerate()
        {
            report.push_str(&format!(
                "import time: {:>9} | {:>10} | {}{m}\n",
                20 + i,
                300 + 7 * i,
                "  ".repeat(i % 4)
            ));
        }
        assert_ne!(detect(&report), Kind::Code);
        // Source whose lines are imports is still source.
        let mut module = String::new();
        for m in [
            "os", "re", "sys", "json", "time", "typing", "pathlib", "logging",
        ] {
            module.push_str(&format!("import {m}\n"));
        }
        module.push_str("\n\ndef main():\n    return run()\n");
        assert_eq!(detect(&module), Kind::Code);
    }

    #[test]
    fn html_documents() {
        assert!(is_html_document("<!DOCTYPE html>\n<html>"));
        assert!(is_html_document(
            "\u{feff}\n  <!doctype HTML><title>x</title>"
        ));
        assert!(is_html_document("<HTML>\n<body>"));
        assert!(!is_html_document("<div>fragment</div>"));
        assert!(!is_html_document("<!DOCTYPE svg>"));
        assert!(!is_html_document("<htm"));
    }

    #[test]
    fn a_multi_container_log_is_read_from_what_follows_each_service_name() {
        // `docker compose logs`: a service's JSON records after its padded name, and uvicorn's plain lines.
        let mut lines = vec![
            "web-1     | INFO:     Started server process [1]".to_string(),
            "worker-1  | starting".to_string(),
            "web-1     |".to_string(),
        ];
        for i in 0..20 {
            lines.push(format!(
                r#"web-1     | {{"timestamp": "2026-02-17T13:26:{i:02}", "level": "INFO", "message": "step {i}", "module": "main", "lineNo": {i}}}"#
            ));
        }
        assert_eq!(detect(&lines.join("\n")), Kind::JsonLines);
        // Lines that would read as source on their own (a dev server echoing what it evaluates) are a service's
        // output all the same.
        let echoed: Vec<String> = (0..20)
            .map(|i| format!("app_1  | const handler{i} = require('./routes/{i}');"))
            .collect();
        assert_ne!(detect(&echoed.join("\n")), Kind::Code);
        // The same lines without the names read as source, as before.
        let source: Vec<&str> = echoed.iter().map(|l| after_service(l)).collect();
        assert_eq!(detect(&source.join("\n")), Kind::Code);
    }

    #[test]
    fn a_table_is_no_multi_container_log() {
        // A first column of many values before `|` (a report's table), or bars in different columns.
        let table: Vec<String> = (0..20).map(|i| format!("row{i}  | {i}")).collect();
        let table: Vec<&str> = table.iter().map(String::as_str).collect();
        assert!(!service_prefixed(&table));
        assert!(!service_prefixed(&[
            "a  | x", "bb  | y", "a  | z", "a  | w"
        ]));
        assert!(service_prefixed(&[
            "a   | x", "bb  | y", "a   | z", "a   |"
        ]));
        // A psql row opens with a space; a shell pipe has no padding before the bar.
        assert_eq!(service_prefix_len("  1 | alice"), None);
        assert_eq!(service_prefix_len("cat| grep x"), None);
        assert_eq!(service_prefix_len("web-1  | hello"), Some(9));
        assert_eq!(after_service("web-1  | hello"), "hello");
    }

    #[test]
    fn json_lines_with_records_longer_than_the_sample_cut() {
        // A package index's records (`index.crates.io`): some far longer than the 512 bytes a sampled line keeps.
        let record = |i: usize, deps: usize| {
            let dep = r#"{"name": "serde_derive", "req": "^1", "features": [], "optional": true, "kind": "normal"}"#;
            format!(
                r#"{{"name": "serde", "vers": "1.0.{i}", "deps": [{}], "cksum": "{i:064x}", "yanked": false}}"#,
                vec![dep; deps].join(", ")
            )
        };
        let text: Vec<String> = (0..50).map(|i| record(i, i % 12)).collect();
        assert!(text.iter().any(|l| l.len() > SAMPLE_LINE_BYTES));
        assert_eq!(detect(&text.join("\n")), Kind::JsonLines);
    }

    #[test]
    fn detects_kinds() {
        assert_eq!(detect("[1, 2, 3]"), Kind::JsonArray);
        assert_eq!(detect(" {\"a\": [1]}\n"), Kind::JsonObject);
        assert_eq!(detect("{\"a\": [1"), Kind::Lines);
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n";
        assert_eq!(detect(diff), Kind::Diff);
        let wrapped = format!("<returncode>0</returncode>\n<output>\n{diff}</output>");
        assert_eq!(detect(&wrapped), Kind::Diff);
        let mut run = String::from("+ cd /testbed\n+ git status\nOn branch main\n+ git diff\n");
        run.push_str(diff);
        run.push_str("+ ./tests/runtests.py\ntest_a (x.T) ... ok\ntest_b (x.T) ... ok\n");
        assert_ne!(detect(&run), Kind::Diff);
        let grep = "src/a.rs:1:fn a() {}\nsrc/a.rs:9:fn b() {}\nsrc/b.rs:3:  let x = 1;\n";
        assert_eq!(detect(grep), Kind::Search);
        let code = "use std::io;\n\nfn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        assert_eq!(detect(code), Kind::Code);
        let numbered =
            "     1\tuse std::io;\n     2\t\n     3\tfn main() {\n     4\t    run();\n     5\t}\n";
        assert_eq!(detect(numbered), Kind::Code);
        // One file's search hits: numbered source lines whose numbers jump from hit to hit. The whole file printed
        // with grep's numbers (`grep -n '' f`) is still a view.
        let hits = "86:yaml_emitter_increase_indent(yaml_emitter_t *emitter,\n87-        int flow, int indentless);\n\
                    220:yaml_emitter_write_indent(yaml_emitter_t *emitter);\n\
                    225:        int is_whitespace, int is_indention);\n\
                    403:yaml_emitter_increase_indent(yaml_emitter_t *emitter,\n404-        int flow, int indentless)\n\
                    406:    if (!PUSH(emitter, emitter->indents, emitter->indent))\n\
                    412:        emitter->indent = (flow ? emitter->best_indent : 0);\n";
        assert_ne!(detect(hits), Kind::Code);
        let whole: String = (1..=8)
            .map(|n| format!("{n}:    let x{n} = compute({n});\n"))
            .collect();
        assert_eq!(detect(&format!("fn main() {{\n{whole}}}\n")), Kind::Code);
        // An Ansible run: its results read as object literals, its banners say what it is.
        let mut play =
            String::from("PLAY [Prepare shelf hosts] ***********************************\n\n");
        for task in [
            "Create release directories",
            "Render environment file",
            "Install health check script",
        ] {
            play.push_str(&format!(
                "TASK [{task}] ***********************************\n"
            ));
            for host in ["web-1", "web-2", "db-1"] {
                play.push_str(&format!(
                    "ok: [{host}] => {{\"changed\": false, \"gid\": 0, \"group\": \"root\", \"mode\": \"0755\"}}\n"
                ));
            }
            play.push('\n');
        }
        assert_ne!(detect(&play), Kind::Code);
        let log = "   Compiling a v1\n   Compiling b v1\n    Finished dev\n";
        assert_eq!(detect(log), Kind::Log);
        assert_eq!(detect("alpha\nbeta\ngamma\n"), Kind::Lines);
        // `git show`, `git log -p`, `git format-patch`: the commit's header and message before the patch.
        let show = format!(
            "commit 3f2a9c1b7d5e8f0a1b2c3d4e5f60718293a4b5c6 (HEAD -> main)\nAuthor: A <a@b.c>\nDate:   Mon Nov 30 10:00:00 2026\n\n    Fix retries\n\n    Long message.\n\n{diff}"
        );
        assert_eq!(detect(&show), Kind::Diff);
        let patch = format!(
            "From 3f2a9c1b7d5e8f0a1b2c3d4e5f60718293a4b5c6 Mon Sep 17 00:00:00 2001\nFrom: A <a@b.c>\nDate: Mon, 30 Nov 2026 10:00:00 +0100\nSubject: [PATCH] Fix retries\n\n---\n x | 2 +-\n\n{diff}"
        );
        assert_eq!(detect(&patch), Kind::Diff);
        let log = "commit 3f2a9c1b7d5e8f0a1b2c3d4e5f60718293a4b5c6\nAuthor: A <a@b.c>\nDate:   Mon Nov 30 10:00:00 2026\n\n    Fix retries\n";
        assert_ne!(detect(log), Kind::Diff);
        let events = "{\"Action\":\"run\",\"Test\":\"A\"}\n{\"Action\":\"pass\",\"Test\":\"A\"}\n{\"Action\":\"run\",\"Test\":\"B\"}\n";
        assert_eq!(detect(events), Kind::JsonLines);
    }

    /// Python source is mostly docstrings, comments and assignments, which no line rule calls code alone: a
    /// docstring's lines count as the source's, and an agent harness's envelope (`<returncode>`, its `<warning>`
    /// note about a long output) is not the output's. A log that prints a patch with docstrings in it is no source.
    #[test]
    fn python_source_with_docstrings_is_code() {
        let mut source = String::from(
            "\"\"\"HTML utilities suitable for global use.\"\"\"\n\nimport json\nimport re\n\n",
        );
        for i in 0..12 {
            source.push_str(&format!(
                "# Configuration for step {i}.\nLIMIT_{i} = {i}\n\n\n@keep_lazy(str)\ndef escape_{i}(text):\n    \"\"\"\n    Return the given text with ampersands, quotes and angle brackets encoded\n    for use in HTML.\n\n    Always escape input, even if it's already escaped and marked as such.\n    \"\"\"\n    return mark_safe(str(text).translate(_html_escapes))\n\n"
            ));
        }
        assert_eq!(detect(&source), Kind::Code);
        let note = "<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\nPlease try a different command that produces less output.\nIf you're looking at a file you can try use head, tail or sed to view a smaller number of lines selectively.\n</warning><output_head>\n";
        assert_eq!(detect(&format!("{note}{source}")), Kind::Code);
        // A docstring that never closes does not make what follows it source.
        let prose = "a sentence of program output, with words\n".repeat(40);
        assert_ne!(detect(&format!("print(\"\"\"\n{prose}")), Kind::Code);
        // An evaluation run printing the patch it applies: source in its hunks, but a log.
        let mut run = String::from(
            "+ git diff\ndiff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,40 +1,40 @@\n",
        );
        for line in source.lines().take(60) {
            run.push_str(&format!(" {line}\n"));
        }
        assert_ne!(detect(&run), Kind::Code);
    }

    /// Rows with error words (`failed` orders, pods in `Error`) do not make a table a log; a log whose lines have
    /// the same number of words, and a numbered file view (`nl -ba`: one tab per line), are not tables.
    #[test]
    fn a_table_with_error_rows_is_a_table() {
        let csv: String = std::iter::once("id,customer,amount,status\n".to_owned())
            .chain((0..60).map(|i| {
                let status = if i % 7 == 3 { "failed" } else { "paid" };
                format!("{i},customer{i},{}.50,{status}\n", i * 3)
            }))
            .collect();
        assert_eq!(detect(&csv), Kind::Lines);
        let tsv = csv.replace(',', "\t");
        assert_eq!(detect(&tsv), Kind::Lines);
        let pods: String = std::iter::once("NAME READY STATUS RESTARTS AGE\n".to_owned())
            .chain((0..40).map(|i| {
                let status = if i % 9 == 4 { "Error" } else { "Running" };
                format!("api-{i:04x} 1/1 {status} {} {i}d\n", i % 5)
            }))
            .collect();
        assert_eq!(detect(&pods), Kind::Lines);
        // The same rows with a timestamp in front are a log, each line a moment of one run.
        let log: String = (0..40)
            .map(|i| {
                format!(
                    "2026-11-30T10:00:{i:02}Z worker-{i} batch {} failed\n",
                    i % 5
                )
            })
            .collect();
        assert_eq!(detect(&log), Kind::Log);
        let view: String = (1..60)
            .map(|i| format!("{i:6}\t    raise ValueError(\"bad value {i}\")  # error path\n"))
            .collect();
        assert!(!lines::is_delimited_table(&view));
        let grep_of_view = view.replace("     ", "12:  ");
        assert!(!lines::is_delimited_table(&grep_of_view));
    }

    /// JVM frames start with a tab and have two words: neither makes a test run's failures a table.
    #[test]
    fn a_test_run_of_stack_frames_is_a_log_not_a_table() {
        let mut run = String::from("[INFO] Running com.acme.CartTest\n");
        for t in 0..6 {
            run.push_str(&format!(
                "[ERROR] test{t}(com.acme.CartTest)  Time elapsed: 0.01 s  <<< FAILURE!\n\
                 java.lang.AssertionError: expected:<{t}> but was:<7>\n"
            ));
            for k in 0..30 {
                run.push_str(&format!(
                    "\tat org.junit.Runner$R{k}.run(Runner.java:{k})\n"
                ));
            }
        }
        assert!(!lines::is_delimited_table(&run));
        assert!(!lines::is_listing(&run));
        assert_eq!(detect(&run), Kind::Log);
        // A TSV dump is still a table.
        let tsv: String = (0..30).map(|i| format!("id{i}\tname {i}\t{i}\n")).collect();
        assert!(lines::is_delimited_table(&tsv));
    }

    #[test]
    fn an_rspec_run_with_its_backtraces_is_a_log_not_code() {
        let mut run = String::from("Cart\n  applies the coupon (FAILED - 1)\n\nFailures:\n\n");
        for t in 1..=4 {
            run.push_str(&format!(
                "  {t}) Cart applies coupon {t}\n     Failure/Error: expect(total).to eq(90)\n\n"
            ));
            for k in 0..9 {
                run.push_str(&format!("     # ./lib/runner_{k}.rb:{k}:in `step_{k}'\n"));
            }
            run.push('\n');
        }
        run.push_str("4 examples, 4 failures\n");
        assert_eq!(detect(&run), Kind::Log);
        // A Ruby source file's comments still make it code.
        let ruby = "# A cart.\n# It totals.\nclass Cart\n  # The sum.\n  def total\n    items.sum(&:price)\n  end\nend\n";
        assert_eq!(detect(ruby), Kind::Code);
    }

    #[test]
    fn a_search_path_without_line_numbers_must_look_like_a_file() {
        assert_eq!(
            search_path("sklearn/svm/libsvm.pyx:        Type of SVM"),
            Some("sklearn/svm/libsvm.pyx")
        );
        assert_eq!(search_path("./a/b.rs:12:  x"), Some("./a/b.rs"));
        assert_eq!(search_path("Package: python3"), None);
        assert_eq!(search_path("Note: see docs/guide.md: section"), None);
        assert_eq!(search_path("https://example.com/a.html: ok"), None);
        assert_eq!(search_path("src/module: no extension"), None);
        assert_eq!(search_path("tests/test_a.py::test_b PASSED  [ 50%]"), None);
        assert_eq!(
            search_path("\t/usr/lib/go/src/runtime/panic.go:1038 +0x215"),
            None
        );
        let grep = "sympy/printing/tests/test_repr.py:from sympy import srepr\nsympy/printing/tests/test_repr.py:    assert srepr(x) == 'x'\nsympy/printing/tests/test_str.py:    assert sstr(x) == 'x'\n";
        assert_eq!(detect(grep), Kind::Search);
    }

    #[test]
    fn search_prefix_needs_line_numbers() {
        assert_eq!(search_prefix("./a/b.rs:12:  x"), Some("./a/b.rs"));
        assert_eq!(search_prefix("C:\\x\\y.rs:3:z"), Some("C:\\x\\y.rs"));
        assert_eq!(search_prefix("Package: python3"), None);
        assert_eq!(search_prefix("warning: x:1:2"), None);
        assert_eq!(search_prefix("12:34:56 INFO"), None);
        assert_eq!(search_prefix("2024-01-01T00:00:12 INFO step"), None);
    }
}

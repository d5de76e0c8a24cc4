//! Query terms: the words that make a line "relevant" to the conversation.
//!
//! The proxy pins the query to the arguments of the tool call that produced an output, then the code-like words of
//! the conversation's first user message with words of the user's own (not a harness's scene, see
//! [`crate::responses::shape::is_harness_context`]; [`output_query_terms`]), never to the latest turn: the same
//! historic output must always compress to the same bytes or provider prompt caches miss. So extraction is deterministic — first-appearance order, dedup,
//! bounded count — and independent of anything but the text.

/// At most this many terms: more would make "relevant" mean "everything" and slow the scan.
pub const MAX_TERMS: usize = 24;
/// Longer tokens are blobs (hashes, base64), not something a user asks about.
const MAX_TERM_LEN: usize = 80;

/// Programs whose next word is what they look for (`grep TODO src/`), not a subcommand.
const SEARCHERS: [&str; 7] = ["grep", "egrep", "fgrep", "rg", "ag", "ack", "findstr"];

/// The part of a tool call's `arguments` (JSON) that says what the agent looks for, as text for [`query_terms`]:
/// the arguments' values, with each stage of a shell command (`command`/`cmd`, a string or Codex's `["bash",
/// "-lc", …]`) stripped of the program and subcommand words it opens with. `aws ec2 describe-instances` or
/// `kubectl get nodes` says which tool printed the output, and its words stand all over that output (`ec2-54-…`
/// host names): as query terms they made every part of it "relevant", and none could be offloaded. Flags go too
/// (`-rn`); paths, patterns, test names and flags' values stay (`pytest tests/test_api.py -k timeout`,
/// `--include=*.py`).
/// Arguments that are not a JSON object are returned as they are.
pub fn call_query_text(arguments: &str) -> String {
    use serde_json::Value;
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return arguments.to_owned();
    };
    let mut out = String::new();
    for (key, value) in &args {
        let command = matches!(key.as_str(), "command" | "cmd")
            .then(|| super::views::command_text(value))
            .flatten();
        match (command, value) {
            (Some(c), _) => out.push_str(&without_program_words(c)),
            (None, Value::String(v)) => out.push_str(v),
            (None, other) => out.push_str(&other.to_string()),
        }
        out.push('\n');
    }
    out
}

/// The stages of a shell command line: split at `|`, `;`, `&` and line ends outside quotes (`grep -E "a|b"` is
/// one stage).
fn stages(command: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quote = None;
    let mut start = 0;
    for (i, c) in command.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '|' | ';' | '&' | '\n') => {
                out.push(&command[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&command[start..]);
    out
}

/// A shell command line without the words each stage opens with that name the program and its subcommands:
/// bare words (letters, digits, `-`, `_`, `:`; not a flag) from the stage's start, up to the first other word,
/// or through a searcher's name ([`SEARCHERS`]), whose next word is its pattern. Three more say how and where a
/// program runs, not what the agent looks for, and their words stand all over what it prints: a stage that only
/// changes directory (`cd /testbed`: every path of a traceback under it), the environment set before a program
/// (`RUST_BACKTRACE=1 cargo test`), and the program named another way — by its path (`venv/bin/python`) or as a
/// Python module (`python -m pytest`: `_pytest` frames, `@pytest.mark` lines).
fn without_program_words(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    for stage in stages(command) {
        let mut words = stage.split_whitespace().peekable();
        if words.peek().is_some_and(|w| matches!(*w, "cd" | "pushd")) {
            out.push('\n');
            continue;
        }
        let mut skipping = true;
        let mut first = true;
        let mut python = false;
        while let Some(word) = words.next() {
            let at_start = std::mem::replace(&mut first, false);
            if skipping && is_assignment(word) {
                first = at_start;
                continue;
            }
            if at_start {
                let program = word.rsplit('/').next().unwrap_or(word);
                python = is_python(program);
                if word.contains('/') && (python || is_bare(program)) {
                    // A searcher named by its path still looks for its next word (`/usr/bin/grep -rn poll_frame`).
                    skipping = !SEARCHERS.contains(&program);
                    continue;
                }
            }
            if python && word == "-m" {
                // The module is the program; its subcommands follow (`python -m pip install`).
                words.next();
                skipping = true;
                continue;
            }
            if skipping && is_bare(word) {
                skipping = !SEARCHERS.contains(&word);
                continue;
            }
            skipping = false;
            // A flag says how, not what (`-rn`); a flag's own value does (`--include=*.py`).
            let word = match word.strip_prefix('-') {
                Some(flag) => match flag.split_once('=') {
                    Some((_, value)) => value,
                    None => continue,
                },
                None => word,
            };
            out.push_str(word);
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

/// A word that may name a program or subcommand: letters, digits, `-`, `_`, `:`, and not a flag.
fn is_bare(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('-')
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'))
}

/// An environment variable set for the program (`RUST_BACKTRACE=1`, `PYTHONPATH=src`): a name of capitals,
/// digits and `_`, then `=`.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        name.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// A Python interpreter's name: `python`, `python3`, `python3.11`, `pypy3`.
fn is_python(program: &str) -> bool {
    ["python", "pypy"].iter().any(|p| {
        program
            .strip_prefix(p)
            .is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
    })
}

/// Terms from a user message or tool arguments: lowercase words of at least 3 characters, identifiers
/// (`poll_frame`, `tokio::sync`) and paths (`src/main.rs`) whole plus their last component; stop words
/// dropped; deduplicated in first-appearance order; at most [`MAX_TERMS`].
pub fn query_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    push_terms(&mut out, text, |_, _| true);
    out
}

/// The query of a tool output: the terms of its call's words ([`call_query_text`]), then the code-like terms of
/// the conversation's task (`is_code_like`).
///
/// A task is prose, and its plain words (`types`, `templates`, `missing`, `class`) stand in outputs that have
/// nothing to do with it: a linter's JSON report, a build log. As terms they kept such lines by the dozen. Its
/// identifiers, paths, error codes and `code spans` name what the user is after, and pick the lines about it.
/// The call's words are all terms: the agent chose them for this output.
pub fn output_query_terms(call_text: &str, task: &str) -> Vec<String> {
    let mut out = Vec::new();
    push_terms(&mut out, call_text, |_, _| true);
    push_terms(&mut out, task, is_code_like);
    out
}

/// Whether a word of a task (as written, `in_code` inside a markdown `code span`) names something in code: an
/// identifier with an underscore, a dot, a slash or `::` (`year_in_school`, `models.py`, `django/db`), a word mixing
/// letters and digits (`E0308`, `arm64`), a camel-case name (`YearInSchool`, `HTTPError`), or any word in a code
/// span.
fn is_code_like(word: &str, in_code: bool) -> bool {
    let has = |f: fn(char) -> bool| word.chars().any(f);
    if in_code {
        return true;
    }
    let letters = has(char::is_alphabetic);
    let camel = word.chars().skip(1).any(char::is_uppercase) && has(char::is_lowercase);
    let joined = word.contains(['_', '/']) || word.contains("::") || dotted_name(word);
    letters && (joined || camel || has(|c| c.is_ascii_digit()))
}

/// `models.py`, `obj.attr`: a dot between two parts of two or more characters each (not `e.g`, `i.e`; a version
/// like `3.12` has no letter, which [`is_code_like`] also asks for).
fn dotted_name(word: &str) -> bool {
    let mut parts = word.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let mut prev = first;
    for part in parts {
        if prev.chars().count() >= 2 && part.chars().count() >= 2 {
            return true;
        }
        prev = part;
    }
    false
}

/// Appends the terms of `text` whose token `keep` accepts (given whether it stands inside a `code span`) to `out`,
/// up to [`MAX_TERMS`].
fn push_terms(out: &mut Vec<String>, text: &str, keep: fn(&str, bool) -> bool) {
    let text = without_tags(text);
    // Backticks open and close code spans (a fence's three toggle three times: inside once opened).
    'pieces: for (span, piece) in text.split('`').enumerate() {
        let in_code = span % 2 == 1;
        for raw in piece
            .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':')))
        {
            if out.len() >= MAX_TERMS {
                // A compound term brings two: the cut below keeps the bound.
                break 'pieces;
            }
            let token = raw.trim_matches(|c: char| matches!(c, '.' | '/' | '-' | ':'));
            if token.is_empty() || token.len() > MAX_TERM_LEN || !keep(token, in_code) {
                continue;
            }
            let lower = token.to_lowercase();
            let compound = lower.contains(['/', '.', ':']);
            if compound {
                push_term(out, &lower);
                let last = lower.rsplit(['/', ':']).next().unwrap_or("");
                if last != lower {
                    push_term(out, last);
                }
            } else {
                push_term(out, &lower);
            }
        }
    }
    out.truncate(MAX_TERMS);
}

/// `text` without its markup tags (`<pr_description>`, `</instructions>`, `<cwd>`): a harness wraps the task in
/// them, and their names, the same in every conversation, would take the first places among the terms.
fn without_tags(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('<') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name = after.strip_prefix('/').unwrap_or(after);
        let len = name
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            .count();
        let closed = len > 0
            && name.as_bytes()[0].is_ascii_alphabetic()
            && name.as_bytes().get(len) == Some(&b'>');
        if closed {
            out.push(' ');
            rest = &name[len + 1..];
        } else {
            out.push('<');
            rest = after;
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

fn push_term(out: &mut Vec<String>, term: &str) {
    let term = term.trim_matches(|c: char| matches!(c, '.' | '/' | '-' | ':'));
    if term.chars().count() < 3 || is_stop_word(term) || out.iter().any(|t| t == term) {
        return;
    }
    if term.chars().all(|c| !c.is_alphanumeric()) {
        return;
    }
    out.push(term.to_string());
}

/// Words too common in a task's prose to single out a line of an output: function words, and the words every bug
/// report and request is written with (`consider`, `expected`, `problem`, `work`). Kept sorted ([`is_stop_word`]
/// searches it); `true`, `false`, `null` and `none` are values every output prints.
const STOP_WORDS: &[&str] = &[
    "able",
    "about",
    "above",
    "across",
    "actual",
    "actually",
    "add",
    "added",
    "additionally",
    "affect",
    "after",
    "again",
    "ago",
    "all",
    "along",
    "already",
    "also",
    "although",
    "always",
    "and",
    "another",
    "any",
    "anyone",
    "anything",
    "anyway",
    "appear",
    "appears",
    "apply",
    "are",
    "around",
    "ask",
    "asked",
    "away",
    "back",
    "bad",
    "based",
    "became",
    "because",
    "become",
    "been",
    "before",
    "behavior",
    "behaviour",
    "being",
    "below",
    "best",
    "better",
    "between",
    "big",
    "bit",
    "both",
    "bug",
    "bugs",
    "but",
    "came",
    "can",
    "cannot",
    "case",
    "cases",
    "cause",
    "caused",
    "causes",
    "certain",
    "certainly",
    "change",
    "changed",
    "changes",
    "check",
    "clear",
    "clearly",
    "code",
    "come",
    "consider",
    "considered",
    "correct",
    "correctly",
    "could",
    "currently",
    "describe",
    "described",
    "description",
    "detail",
    "details",
    "did",
    "didn",
    "different",
    "does",
    "doesn",
    "doing",
    "don",
    "done",
    "due",
    "during",
    "each",
    "easily",
    "easy",
    "either",
    "else",
    "enough",
    "etc",
    "even",
    "ever",
    "every",
    "everything",
    "example",
    "examples",
    "expect",
    "expected",
    "explain",
    "fact",
    "fail",
    "fairly",
    "false",
    "far",
    "feel",
    "few",
    "find",
    "fine",
    "first",
    "fix",
    "fixed",
    "fixes",
    "following",
    "for",
    "found",
    "four",
    "from",
    "full",
    "fully",
    "further",
    "get",
    "getting",
    "give",
    "given",
    "gives",
    "giving",
    "goes",
    "going",
    "gone",
    "good",
    "got",
    "great",
    "guess",
    "had",
    "happen",
    "happened",
    "happens",
    "has",
    "have",
    "hello",
    "help",
    "her",
    "here",
    "him",
    "his",
    "how",
    "however",
    "idea",
    "ideally",
    "important",
    "include",
    "included",
    "including",
    "indeed",
    "instead",
    "into",
    "isn",
    "issue",
    "issues",
    "its",
    "just",
    "keep",
    "kind",
    "know",
    "last",
    "later",
    "least",
    "less",
    "let",
    "like",
    "likely",
    "little",
    "long",
    "look",
    "looks",
    "lot",
    "made",
    "main",
    "make",
    "makes",
    "making",
    "many",
    "may",
    "maybe",
    "mean",
    "means",
    "might",
    "mine",
    "more",
    "moreover",
    "most",
    "much",
    "must",
    "myself",
    "near",
    "nearly",
    "need",
    "needed",
    "needs",
    "never",
    "new",
    "next",
    "nice",
    "none",
    "not",
    "note",
    "nothing",
    "now",
    "null",
    "often",
    "okay",
    "old",
    "once",
    "one",
    "only",
    "other",
    "others",
    "otherwise",
    "our",
    "out",
    "over",
    "own",
    "part",
    "per",
    "please",
    "possible",
    "possibly",
    "pretty",
    "probably",
    "problem",
    "problems",
    "properly",
    "put",
    "quite",
    "rather",
    "real",
    "really",
    "reason",
    "related",
    "repo",
    "reported",
    "repository",
    "result",
    "results",
    "right",
    "run",
    "same",
    "say",
    "see",
    "seem",
    "seemed",
    "seems",
    "seen",
    "several",
    "shall",
    "she",
    "short",
    "should",
    "show",
    "shown",
    "shows",
    "simple",
    "simply",
    "since",
    "small",
    "solution",
    "some",
    "someone",
    "something",
    "sometimes",
    "soon",
    "sort",
    "still",
    "stuff",
    "such",
    "suggest",
    "suppose",
    "sure",
    "take",
    "task",
    "tasks",
    "tell",
    "than",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "though",
    "three",
    "through",
    "thus",
    "time",
    "together",
    "too",
    "tried",
    "true",
    "try",
    "trying",
    "two",
    "under",
    "unfortunately",
    "unless",
    "unlike",
    "until",
    "upon",
    "use",
    "used",
    "using",
    "usually",
    "various",
    "very",
    "via",
    "want",
    "was",
    "wasn",
    "way",
    "well",
    "went",
    "were",
    "what",
    "whatever",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "why",
    "will",
    "wish",
    "with",
    "within",
    "without",
    "won",
    "work",
    "worked",
    "working",
    "works",
    "would",
    "wouldn",
    "wrong",
    "yes",
    "yet",
    "you",
    "your",
];

fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_words_are_sorted_for_the_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_tasks_prose_and_markup_leave_its_particular_words() {
        let task = "<pr_description>\nConsider the following PR description:\nEnumeration types are not \
                    usable in templates. The call fails because the value is missing.\n</pr_description>";
        assert_eq!(
            query_terms(task),
            vec![
                "enumeration",
                "types",
                "usable",
                "templates",
                "call",
                "fails",
                "value",
                "missing"
            ]
        );
        // A comparison is no tag; a tag's name is no term.
        assert_eq!(
            query_terms("a<b and c > d <cwd>/srv/app</cwd>"),
            vec!["srv/app", "app"]
        );
    }

    #[test]
    fn a_tasks_plain_words_are_no_terms_of_an_output_but_its_code_is() {
        let task = "<pr_description>\nEnumeration types are not usable in templates: \
                    `{% if student.year_in_school == YearInSchool.FRESHMAN %}` fails with E0308 on arm64, \
                    e.g. in django/template/base.py, and the `callable` check is missing.\n</pr_description>";
        assert_eq!(
            output_query_terms("tests/test_enums.py -k choices", task),
            vec![
                "tests/test_enums.py",
                "test_enums.py",
                "choices",
                "student.year_in_school",
                "yearinschool.freshman",
                "e0308",
                "arm64",
                "django/template/base.py",
                "base.py",
                "callable",
            ]
        );
        // Prose alone gives no term, whatever its words.
        assert!(output_query_terms("", "Users say the session token expires early.").is_empty());
        for (word, code) in [
            ("year_in_school", true),
            ("YearInSchool", true),
            ("HTTPError", true),
            ("models.py", true),
            ("tokio::sync", true),
            ("py311", true),
            ("e.g", false),
            ("3.2", false),
            ("12304", false),
            ("PR", false),
            ("built-in", false),
            ("Enumeration", false),
        ] {
            assert_eq!(is_code_like(word, false), code, "{word}");
        }
        assert!(is_code_like("callable", true));
    }

    #[test]
    fn a_commands_program_and_subcommands_are_no_query_terms() {
        let terms = |args: &str| query_terms(&call_query_text(args));
        assert!(terms(r#"{"command": "aws ec2 describe-instances"}"#).is_empty());
        assert_eq!(
            terms(r#"{"command": "kubectl get nodes -o json"}"#),
            vec!["json"]
        );
        assert_eq!(
            terms(r#"{"command": "cd /testbed && python -m pytest tests/test_api.py -k timeout"}"#),
            vec!["tests/test_api.py", "test_api.py", "timeout"]
        );
        // How and where a program runs: its directory, its environment, its path, Python's `-m`.
        assert_eq!(
            terms(r#"{"command": "cd /testbed; RUST_BACKTRACE=1 cargo test --test parse_header"}"#),
            vec!["parse_header"]
        );
        assert_eq!(
            terms(r#"{"command": "/srv/venv/bin/python3.11 -m pip install -e src/pkg"}"#),
            vec!["src/pkg", "pkg"]
        );
        assert_eq!(
            terms(r#"{"command": "PYTHONPATH=src python -X importtime reproduce.py"}"#),
            vec!["importtime", "reproduce.py"]
        );
        assert_eq!(
            terms(r#"{"command": "/usr/bin/grep poll_frame src/"}"#),
            vec!["poll_frame", "src"]
        );
        // A script the agent runs by its path is what it looks at; a lowercase `name=value` is an argument.
        assert_eq!(
            terms(r#"{"command": "./reproduce.py level=debug"}"#),
            vec!["reproduce.py", "level", "debug"]
        );
        // A searcher's pattern is what the agent looks for.
        assert_eq!(
            terms(r#"{"command": "grep poll_frame src/"}"#),
            vec!["poll_frame", "src"]
        );
        assert_eq!(
            terms(r#"{"command": "git grep poll_frame"}"#),
            vec!["poll_frame"]
        );
        assert_eq!(
            terms(r#"{"command": "grep -rnE 'poll_frame|tick_once' src | head -50"}"#),
            vec!["poll_frame", "tick_once", "src"]
        );
        // Codex's argv form; other arguments' values count as they are.
        assert_eq!(
            terms(r#"{"command": ["bash", "-lc", "go test ./store/..."], "workdir": "/srv/app"}"#),
            vec!["store", "srv/app", "app"]
        );
        assert_eq!(
            terms(r#"{"pattern": "ErrorHandler", "path": "src"}"#),
            vec!["errorhandler", "src"]
        );
        assert_eq!(call_query_text("not json"), "not json");
    }

    #[test]
    fn extracts_words_identifiers_and_paths() {
        let t = query_terms(
            "Why does poll_frame in src/body.rs fail with the Tokio runtime? Fix tokio::sync::mpsc.",
        );
        assert_eq!(
            t,
            vec![
                "poll_frame",
                "src/body.rs",
                "body.rs",
                "tokio",
                "runtime",
                "tokio::sync::mpsc",
                "mpsc"
            ]
        );
    }

    #[test]
    fn bounded_deduped_deterministic() {
        let text: String = (0..100).map(|i| format!("word{i} word{i} ")).collect();
        let a = query_terms(&text);
        assert_eq!(a.len(), MAX_TERMS);
        assert_eq!(a, query_terms(&text));
        assert_eq!(a[0], "word0");
        assert!(query_terms("a an the to of -- ...").is_empty());
    }

    proptest::proptest! {
        /// Any text, markup-like or not, gives at most the bound of distinct lowercase terms and never a tag's
        /// name left half-read.
        #[test]
        fn any_text_gives_bounded_terms(text in "[<>/a-zA-Z_é:. -]{0,200}") {
            let terms = query_terms(&text);
            proptest::prop_assert!(terms.len() <= MAX_TERMS);
            for t in &terms {
                proptest::prop_assert!(!t.contains(['<', '>']));
                proptest::prop_assert_eq!(t.to_lowercase(), t.clone());
            }
        }

        /// An output's query is the call's terms, then words of the task, none twice, within the bound; a task of
        /// plain words adds nothing.
        #[test]
        fn an_outputs_query_is_the_calls_terms_then_some_of_the_tasks(
            call in "[a-z_/. -]{0,80}",
            task in "[`a-zA-Z0-9_/.: -]{0,200}",
            plain in "[a-z ]{0,200}",
        ) {
            let terms = output_query_terms(&call, &task);
            let own = query_terms(&call);
            proptest::prop_assert!(terms.len() <= MAX_TERMS);
            proptest::prop_assert_eq!(&terms[..own.len()], &own[..]);
            let lower = task.to_lowercase();
            for t in &terms[own.len()..] {
                proptest::prop_assert!(lower.contains(t.as_str()), "{t}");
            }
            let mut seen = terms.clone();
            seen.sort();
            seen.dedup();
            proptest::prop_assert_eq!(seen.len(), terms.len());
            proptest::prop_assert_eq!(output_query_terms(&call, &plain), own);
        }
    }
}

//! Query terms: the words that make a line "relevant" to the conversation.
//!
//! The proxy pins the query to the conversation's first user message (and the arguments of the tool call that
//! produced an output), never to the latest turn: the same historic output must always compress to the same
//! bytes or provider prompt caches miss. So extraction is deterministic — first-appearance order, dedup,
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
/// or through a searcher's name ([`SEARCHERS`]), whose next word is its pattern.
fn without_program_words(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    for stage in stages(command) {
        let mut skipping = true;
        for word in stage.split_whitespace() {
            let bare = !word.starts_with('-')
                && word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'));
            if skipping && bare {
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

/// Terms from a user message or tool arguments: lowercase words of at least 3 characters, identifiers
/// (`poll_frame`, `tokio::sync`) and paths (`src/main.rs`) whole plus their last component; stop words
/// dropped; deduplicated in first-appearance order; at most [`MAX_TERMS`].
pub fn query_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in
        text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':')))
    {
        if out.len() >= MAX_TERMS {
            break;
        }
        let token = raw.trim_matches(|c: char| matches!(c, '.' | '/' | '-' | ':'));
        if token.is_empty() || token.len() > MAX_TERM_LEN {
            continue;
        }
        let lower = token.to_lowercase();
        let compound = lower.contains(['/', '.', ':']);
        if compound {
            push_term(&mut out, &lower);
            let last = lower.rsplit(['/', ':']).next().unwrap_or("");
            if last != lower {
                push_term(&mut out, last);
            }
        } else {
            push_term(&mut out, &lower);
        }
    }
    out.truncate(MAX_TERMS);
    out
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

fn is_stop_word(w: &str) -> bool {
    matches!(
        w,
        "the"
            | "and"
            | "for"
            | "are"
            | "but"
            | "not"
            | "you"
            | "all"
            | "any"
            | "can"
            | "had"
            | "her"
            | "was"
            | "one"
            | "our"
            | "out"
            | "get"
            | "has"
            | "him"
            | "his"
            | "how"
            | "new"
            | "now"
            | "see"
            | "two"
            | "way"
            | "who"
            | "did"
            | "its"
            | "let"
            | "put"
            | "say"
            | "she"
            | "too"
            | "use"
            | "that"
            | "with"
            | "have"
            | "this"
            | "will"
            | "your"
            | "from"
            | "they"
            | "know"
            | "want"
            | "been"
            | "good"
            | "much"
            | "some"
            | "time"
            | "very"
            | "when"
            | "come"
            | "here"
            | "just"
            | "like"
            | "long"
            | "make"
            | "many"
            | "over"
            | "such"
            | "take"
            | "than"
            | "them"
            | "well"
            | "were"
            | "what"
            | "where"
            | "which"
            | "while"
            | "would"
            | "there"
            | "their"
            | "these"
            | "those"
            | "then"
            | "into"
            | "also"
            | "only"
            | "about"
            | "could"
            | "should"
            | "does"
            | "done"
            | "please"
            | "need"
            | "help"
            | "show"
            | "find"
            | "look"
            | "check"
            | "give"
            | "tell"
            | "using"
            | "used"
            | "why"
            | "yes"
            | "each"
            | "other"
            | "more"
            | "most"
            | "same"
            | "able"
            | "after"
            | "before"
            | "because"
            | "being"
            | "both"
            | "every"
            | "first"
            | "last"
            | "next"
            | "still"
            | "through"
            | "until"
            | "within"
            | "without"
            | "again"
            | "maybe"
            | "thanks"
            | "thank"
            | "okay"
            | "sure"
            | "via"
            | "per"
            | "etc"
            | "something"
            | "anything"
            | "everything"
            | "things"
            | "thing"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
            vec![
                "testbed",
                "pytest",
                "tests/test_api.py",
                "test_api.py",
                "timeout"
            ]
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
            terms(r#"{"command": ["bash", "-lc", "go test ./store/..."], "workdir": "/repo"}"#),
            vec!["store", "repo"]
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
                "fail",
                "tokio",
                "runtime",
                "fix",
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
}

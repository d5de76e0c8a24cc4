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

//! Folding: the small containers of a pretty-printed JSON document written on one line.
//!
//! A pretty-printer gives every member its own line: a linter's `"range": {"start": {"line": 272, "character": 23},
//! "end": {…}}` takes ten lines and their indentation, and a report whose rows all stay (pyright's `--outputjson`,
//! each diagnostic a `"severity": "error"` row the error floor keeps whole) is mostly such layout. In the request
//! path the JSON compressor's result — or, when it dropped nothing, the document itself — goes through [`fold`]:
//! each container that spans several lines, fits on one line of [`FOLD_WIDTH`] bytes and holds no line the error
//! floor or a keep pattern must show as the exact line is written as `{"line": 272, "character": 23}`. The value is
//! the same JSON, every key and string byte for byte; only whitespace between tokens changes.

use super::jscan::{Span, array_items, lines_around, object_members, scan_string, top_value};
use super::relevance::{Matcher, is_floor_line};

/// The longest one-line form a container is folded into: about what fits on a reader's line.
pub(crate) const FOLD_WIDTH: usize = 100;

/// `text` (a JSON document) with its small multi-line containers on one line each, and how many lines that saved;
/// `None` when nothing folds.
pub(crate) fn fold(text: &str, matcher: &Matcher) -> Option<(String, usize)> {
    let span = top_value(text)?;
    let mut out = String::with_capacity(text.len());
    out.push_str(text.get(..span.start)?);
    let mut saved = 0;
    write_value(text, span, matcher, &mut out, &mut saved)?;
    out.push_str(text.get(span.end..)?);
    (saved > 0).then_some((out, saved))
}

/// Appends the value at `span`: folded when it may be, else as it stands with its children folded where they may.
fn write_value(
    text: &str,
    span: Span,
    matcher: &Matcher,
    out: &mut String,
    saved: &mut usize,
) -> Option<()> {
    let raw = text.get(span.start..span.end)?;
    let b = text.as_bytes();
    let container = matches!(b.get(span.start), Some(b'{' | b'['));
    if !container || !raw.contains('\n') {
        out.push_str(raw);
        return Some(());
    }
    if let Some(line) = one_line(text, span).filter(|_| may_fold(text, span, matcher)) {
        out.push_str(&line);
        *saved += raw.matches('\n').count();
        return Some(());
    }
    // Too wide, or it holds a line that must stay as it is: its own layout stays, its children may fold.
    let children: Vec<Span> = if b[span.start] == b'{' {
        object_members(b, span)?
            .into_iter()
            .map(|m| m.value)
            .collect()
    } else {
        array_items(b, span)?
    };
    let mut at = span.start;
    for child in children {
        out.push_str(text.get(at..child.start)?);
        write_value(text, child, matcher, out, saved)?;
        at = child.end;
    }
    out.push_str(text.get(at..span.end)?);
    Some(())
}

/// Whether the lines a container touches may change: none is a floor line or a keep-pattern hit, each of which must
/// stay a whole line of the result. That is the whole lines, from the start of the one its `{` stands on (the key
/// before it: `"error-ex": {`) to the end of the one its `}` closes (`},`).
fn may_fold(text: &str, span: Span, matcher: &Matcher) -> bool {
    let Some(lines) = lines_around(text, span) else {
        return false;
    };
    !lines.split('\n').any(is_floor_line) && !matcher.scan(lines.as_bytes()).keep
}

/// The container at `span` written on one line (`{"a": 1, "b": [2, 3]}`), when that is at most [`FOLD_WIDTH`]
/// bytes: strings copied as they are, whitespace between tokens dropped, a space after each `:` and `,`.
fn one_line(text: &str, span: Span) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(FOLD_WIDTH);
    let mut i = span.start;
    while i < span.end {
        match b[i] {
            b'"' => {
                let end = scan_string(b, i)?;
                out.push_str(text.get(i..end)?);
                i = end;
            }
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            c @ (b':' | b',') => {
                out.push(char::from(c));
                out.push(' ');
                i += 1;
            }
            _ => {
                // A number, a literal or a bracket: ASCII, copied up to the next token boundary.
                let end = (i + 1..span.end)
                    .find(|&j| matches!(b[j], b'"' | b' ' | b'\t' | b'\n' | b'\r' | b':' | b','))
                    .unwrap_or(span.end);
                out.push_str(text.get(i..end)?);
                i = end;
            }
        }
        if out.len() > FOLD_WIDTH {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Option<(String, usize)> {
        fold(text, &Matcher::new(&[], &[]))
    }

    #[test]
    fn small_containers_go_on_one_line_and_the_value_stays_the_same() {
        let doc = serde_json::json!({
            "version": "1.1.414",
            "generalDiagnostics": [{
                "file": "/src/flow/boykovkolmogorov.py",
                "severity": "error",
                "message": "No overloads for \"sorted\" match the provided arguments",
                "range": {"start": {"line": 272, "character": 23}, "end": {"line": 272, "character": 58}},
                "rule": "reportCallIssue"
            }],
            "empty": {},
            "list": [1, 2, 3]
        });
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let (out, saved) = run(&text).unwrap_or_default();
        assert!(saved > 10, "{out}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&out).ok(),
            Some(doc),
            "{out}"
        );
        assert!(
            out.contains(
                "\n      \"range\": {\"start\": {\"line\": 272, \"character\": 23}, \"end\": {\"line\": 272, \"character\": 58}},\n"
            ),
            "{out}"
        );
        assert!(out.contains("\n  \"list\": [1, 2, 3]\n"), "{out}");
        // The row holding the floor line is not folded: that line stays whole.
        assert!(out.contains("\n      \"severity\": \"error\",\n"), "{out}");
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// The line a container opens on holds its key: `"error-ex": {` is a floor line, so that container stays.
    #[test]
    fn a_container_whose_key_line_holds_an_error_word_keeps_its_lines() {
        let text = "{\n  \"error-ex\": {\n    \"version\": \"1.3.2\"\n  },\n  \"is-arrayish\": {\n    \"version\": \"0.2.1\"\n  }\n}";
        let (out, saved) = run(text).unwrap_or_default();
        assert_eq!(saved, 2, "{out}");
        assert!(
            out.contains("\n  \"error-ex\": {\n    \"version\": \"1.3.2\"\n  },\n"),
            "{out}"
        );
        assert!(
            out.contains("\n  \"is-arrayish\": {\"version\": \"0.2.1\"}\n"),
            "{out}"
        );
        assert!(super::super::keeps_floor(text, &out));
    }

    #[test]
    fn a_container_too_wide_keeps_its_lines() {
        let doc = serde_json::json!({"a": {"description": "x".repeat(120), "n": 1}});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        assert_eq!(run(&text), None);
        assert_eq!(
            run("{\"a\": [1, 2]}"),
            None,
            "a one-line document has nothing to fold"
        );
        assert_eq!(run("not json"), None);
    }

    #[test]
    fn a_keep_pattern_hit_stays_a_line_of_its_own() {
        let text = "{\n  \"a\": {\n    \"id\": 7,\n    \"owner\": \"release-bot\"\n  },\n  \"b\": {\n    \"id\": 8\n  }\n}";
        let keep = ["release-bot".to_string()];
        let (out, _) = fold(text, &Matcher::new(&[], &keep)).unwrap_or_default();
        assert!(out.contains("\n    \"owner\": \"release-bot\"\n"), "{out}");
        assert!(out.contains("\"b\": {\"id\": 8}"), "{out}");
    }
}

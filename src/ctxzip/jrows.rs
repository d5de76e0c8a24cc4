//! What a JSON row says: is it an error record, and what is its status.
//!
//! In the request path the JSON compressors keep every error-like row of an array (or member of a map) and
//! summarise dropped rows by a status-like field. A row is error-like when an error key holds something
//! (`"error": {…}`), an exit code is non-zero, an HTTP status is 4xx/5xx, a status-like key holds an error
//! word (`"status": "failed"`, `"level": "WARN"`), or a message string has an error line. Single-word strings
//! elsewhere are identifiers (a feature named `"timeout"`), and descriptive metadata (`description`,
//! `homepage`, …) documents rather than reports, so neither counts.

use super::jscan::{Span, object_members, plain_str, scan_string};
use super::relevance::{
    find_error_word, is_error_line, is_error_line_past_warnings, is_floor_line, is_warning_word,
};

/// Keys whose non-empty value marks an error record.
const ERROR_KEYS: [&str; 13] = [
    "error",
    "errors",
    "err",
    "exception",
    "exceptions",
    "failure",
    "failures",
    "fault",
    "traceback",
    "stacktrace",
    "stack_trace",
    "error_message",
    "errormessage",
];
/// Keys holding a process exit status: non-zero is an error.
const EXIT_KEYS: [&str; 6] = [
    "exit_code",
    "exitcode",
    "returncode",
    "return_code",
    "exit_status",
    "exitstatus",
];
/// Keys holding an HTTP status: 4xx/5xx is an error.
const HTTP_KEYS: [&str; 5] = ["status", "status_code", "statuscode", "http_status", "code"];
/// Keys whose one-word value is a state; also the keys dropped rows are counted by, in this priority.
pub(crate) const STATUS_KEYS: [&str; 12] = [
    "status",
    "state",
    "level",
    "severity",
    "result",
    "outcome",
    "conclusion",
    "kind",
    "type",
    "mode",
    "category",
    "log_level",
];
/// Descriptive metadata: prose there documents a thing, it does not report a failure.
const DOC_KEYS: [&str; 16] = [
    "description",
    "summary",
    "readme",
    "documentation",
    "docs",
    "doc",
    "help",
    "title",
    "about",
    "comment",
    "keywords",
    "license",
    "homepage",
    "repository",
    "url",
    "name",
];

fn key_in(key: &str, set: &[&str]) -> bool {
    set.iter().any(|k| k.eq_ignore_ascii_case(key))
}

/// Whether a JSON row (the value at `value`, written as `row`, with its key for a map's member) must be shown
/// whole — never dropped, sampled away or written as its differences from another row: it reads as an error record,
/// holds an error line, or holds a keep-pattern hit (`keep`).
pub(crate) fn stays_whole(text: &str, value: Span, row: &str, keep: bool) -> bool {
    whole_for(text, value, row, keep) != Whole::No
}

/// Why a JSON row must be shown whole, if it must ([`whole_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Whole {
    No,
    /// Only for a warning: a status like `"severity": "WARNING"` or `"level": "warn"`, or a message with a warning
    /// word, and no keep-pattern hit, floor line or other sign of an error. A scanner's or linter's report (semgrep,
    /// SARIF) is all such rows: like a flood of warning lines, its first few show what they are, and the rest may be
    /// sampled.
    Warning,
    /// It reads as an error record, holds an error line, or holds a keep-pattern hit (`keep`).
    Error,
}

/// Why the row at `value` (written as `row`) must be shown whole. The value is read once for any error sign, and
/// a second time, without warnings, only when it has one.
pub(crate) fn whole_for(text: &str, value: Span, row: &str, keep: bool) -> Whole {
    if keep || row.split('\n').any(is_floor_line) {
        return Whole::Error;
    }
    match error_value(text, value, true) {
        false => Whole::No,
        true if error_value(text, value, false) => Whole::Error,
        true => Whole::Warning,
    }
}

/// Whether the JSON value at `span` (already validated) reads like an error record; with `warnings`, a warning's
/// status or words count as an error too.
fn error_value(text: &str, span: Span, warnings: bool) -> bool {
    let b = text.as_bytes();
    // Per open container: the key that governs values directly inside it.
    let mut governing: Vec<Option<&str>> = Vec::new();
    let mut in_object: Vec<bool> = Vec::new();
    let mut expect_key = false;
    let mut i = span.start;
    while i < span.end {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b':' => i += 1,
            b',' => {
                expect_key = in_object.last() == Some(&true);
                i += 1;
            }
            b'{' | b'[' => {
                let key = governing.last().copied().flatten();
                if let Some(k) = key {
                    let next = super::jscan::skip_ws(b, i + 1);
                    let empty = matches!(b.get(next), Some(b'}' | b']'));
                    if !empty && key_in(k, &ERROR_KEYS) {
                        return true;
                    }
                }
                governing.push(key);
                in_object.push(c == b'{');
                expect_key = c == b'{';
                i += 1;
            }
            b'}' | b']' => {
                governing.pop();
                in_object.pop();
                i += 1;
            }
            b'"' => {
                let Some(end) = scan_string(b, i) else {
                    return false;
                };
                let s = Span { start: i, end };
                if expect_key {
                    if let Some(top) = governing.last_mut() {
                        *top = plain_str(text, s);
                    }
                    expect_key = false;
                } else if string_is_error(text, s, governing.last().copied().flatten(), warnings) {
                    return true;
                }
                i = end;
            }
            _ => {
                let start = i;
                while i < span.end
                    && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    i += 1;
                }
                let token = text.get(start..i).unwrap_or("");
                if scalar_is_error(token, governing.last().copied().flatten()) {
                    return true;
                }
            }
        }
    }
    false
}

fn scalar_is_error(token: &str, key: Option<&str>) -> bool {
    let Some(key) = key else {
        return false;
    };
    let nonzero = token.bytes().any(|c| matches!(c, b'1'..=b'9'));
    if key_in(key, &ERROR_KEYS) {
        return token == "true"
            || (token
                .bytes()
                .all(|c| c.is_ascii_digit() || c == b'-' || c == b'.')
                && nonzero);
    }
    if key_in(key, &EXIT_KEYS) {
        return nonzero;
    }
    if key_in(key, &HTTP_KEYS) {
        return token.parse::<u32>().is_ok_and(|n| (400..=599).contains(&n));
    }
    false
}

fn string_is_error(text: &str, s: Span, key: Option<&str>, warnings: bool) -> bool {
    if s.len() <= 2 {
        return false;
    }
    if key.is_some_and(|k| key_in(k, &ERROR_KEYS)) {
        return true;
    }
    if key.is_some_and(|k| key_in(k, &DOC_KEYS)) {
        return false;
    }
    let owned;
    let content = match plain_str(text, s) {
        Some(c) => c,
        None => {
            owned = serde_json::from_str::<String>(s.of(text)).unwrap_or_default();
            owned.as_str()
        }
    };
    let error_line = |line: &str| match warnings {
        true => is_error_line(line),
        false => is_error_line_past_warnings(line),
    };
    if !content.contains(char::is_whitespace) {
        let status = key.is_some_and(|k| key_in(k, &STATUS_KEYS));
        return status
            && (error_line(content)
                || (is_error_token(content)
                    && (warnings || !is_warning_word(content.as_bytes()))));
    }
    content.split('\n').any(error_line)
}

/// Status values that are errors without being error words (`"level": "err"`).
fn is_error_token(t: &str) -> bool {
    [
        "err", "warn", "ko", "crit", "alert", "emerg", "killed", "oom",
    ]
    .iter()
    .any(|w| w.eq_ignore_ascii_case(t))
        || find_error_word(t.as_bytes(), 0).is_some()
}

/// The status-like key to count dropped rows by: the first of [`STATUS_KEYS`] present in `row` with a scalar
/// value.
pub(crate) fn status_key(text: &str, row: Span) -> Option<&'static str> {
    let members = object_members(text.as_bytes(), row)?;
    STATUS_KEYS.into_iter().find(|k| {
        members
            .iter()
            .any(|m| plain_str(text, m.key) == Some(*k) && is_scalar(text, m.value))
    })
}

fn is_scalar(text: &str, v: Span) -> bool {
    !matches!(text.as_bytes().get(v.start), Some(b'{' | b'[') | None)
}

/// The value of `key` in the object `row` as a short label (string content or scalar spelling).
pub(crate) fn status_value<'t>(text: &'t str, row: Span, key: &str) -> Option<&'t str> {
    let members = object_members(text.as_bytes(), row)?;
    let m = members
        .iter()
        .find(|m| plain_str(text, m.key) == Some(key))?;
    if !is_scalar(text, m.value) || m.value.len() > 64 {
        return None;
    }
    match text.as_bytes().get(m.value.start) {
        Some(b'"') => plain_str(text, m.value),
        _ => Some(m.value.of(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(t: &str) -> bool {
        error_value(
            t,
            Span {
                start: 0,
                end: t.len(),
            },
            true,
        )
    }

    #[test]
    fn error_rows() {
        assert!(err(r#"{"id": 1, "status": "failed"}"#));
        assert!(err(r#"{"id": 1, "level": "WARN"}"#));
        assert!(err(r#"{"error": {"code": 5}}"#));
        assert!(err(r#"{"error": "boom"}"#));
        assert!(err(r#"{"exit_code": 2}"#));
        assert!(err(r#"{"status": 503}"#));
        assert!(err(r#"{"msg": "line one\nerror: could not compile"}"#));
        assert!(err(r#"["ok", "Connection refused by peer"]"#));
        assert!(!err(
            r#"{"error": null, "errors": [], "exit_code": 0, "status": 200}"#
        ));
        assert!(!err(
            r#"{"features": ["timeout", "catch-panic"], "name": "tower"}"#
        ));
        assert!(!err(r#"{"description": "Flexible concrete Error type"}"#));
        assert!(!err(r#"{"status": "ok", "msg": "all good"}"#));
    }

    #[test]
    fn status_fields() {
        let t = r#"{"model": "x", "mode": "chat", "n": 2}"#;
        let s = Span {
            start: 0,
            end: t.len(),
        };
        assert_eq!(status_key(t, s), Some("mode"));
        assert_eq!(status_value(t, s, "mode"), Some("chat"));
        assert_eq!(status_value(t, s, "n"), Some("2"));
    }
}

//! Tool outputs that report a failure.
//!
//! Dropping part of an error the user is about to debug is the worst thing compression can do, so an output that
//! says its command failed — a non-zero exit code in the agent's output header (Codex's `Process exited with
//! code N`, mini-swe-agent's `<returncode>N</returncode>`), a Python traceback, a JSON result with a failing
//! `exit_code` — is compressed around its error regions only (`ctxzip::regions`), or left whole when the
//! operator asks for the old behaviour (`[compress] failures = "verbatim"`).

/// How far into an output the failure signs are looked for (headers come first).
const HEAD_BYTES: usize = 4096;

fn head(text: &str) -> &str {
    let mut end = text.len().min(HEAD_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The number after `label` (spaces, `:` or `"` skipped), if any.
fn code_after(text: &str, label: &str) -> Option<i64> {
    let at = text.find(label)? + label.len();
    let rest = text[at..].trim_start_matches([' ', ':', '"', '=']);
    let end = rest
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-')))
        .map(|(i, _)| i)
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Whether a tool output reports a failure.
pub fn looks_like_error_output(text: &str) -> bool {
    exited_with_failure(text) || text.contains("Traceback (most recent call last):")
}

/// Whether the harness's header says the command exited non-zero (`Process exited with code 1`, `Exit code: 2`,
/// `"exit_code": 1`, `<returncode>1</returncode>`).
pub fn exited_with_failure(text: &str) -> bool {
    let h = head(text);
    let failing = |label: &str| code_after(h, label).is_some_and(|c| c != 0);
    failing("Process exited with code")
        || failing("Exit code")
        || failing("exit code")
        || failing("\"exit_code\"")
        || failing("<returncode>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_outputs_are_recognised() {
        assert!(looks_like_error_output(
            "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 101\nOutput:\nerror[E0308]"
        ));
        assert!(!looks_like_error_output(
            "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nok"
        ));
        assert!(looks_like_error_output("Exit code: 2\nWall time: 1s\n"));
        assert!(looks_like_error_output(
            "<returncode>1</returncode>\n<output>\nboom"
        ));
        assert!(!looks_like_error_output(
            "<returncode>0</returncode>\n<output>\nfine"
        ));
        assert!(looks_like_error_output(
            r#"{"output":"boom","metadata":{"exit_code":1}}"#
        ));
        assert!(!looks_like_error_output(
            r#"{"output":"ok","metadata":{"exit_code":0}}"#
        ));
        assert!(looks_like_error_output(
            "x\nTraceback (most recent call last):\n  File \"a.py\""
        ));
        assert!(!looks_like_error_output("plain listing\nsrc/main.rs\n"));
    }
}

//! Source code an agent viewed (`cat`, `sed -n`, `nl -ba`, an editor tool).
//!
//! In the request path code stays verbatim unless the operator enables `compress_code`: an agent that read a
//! file usually edits it next and needs its exact text. When enabled, only whole function bodies go behind
//! markers — signatures, types, imports and the closing brace stay, so the file's outline survives — and a
//! body with an error, keep-pattern or relevant line stays visible. Brace languages are matched by brace
//! depth, Python by indentation; line-number prefixes (`cat -n`) are looked through.

use super::detect::strip_line_number;
use super::relevance::is_error_line;
use super::{Ctx, Tally, Unit};

/// Bodies shorter than this many lines stay: a marker would save little.
const MIN_BODY: usize = 5;
/// A Python body is looked for over at most this many lines (bounds nested scans).
const MAX_PY_BODY: usize = 5000;

pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let (body, trailing_newline) = match text.strip_suffix('\n') {
        Some(b) => (b, true),
        None => (text, false),
    };
    let lines: Vec<&str> = body.split('\n').collect();
    let content: Vec<&str> = lines
        .iter()
        .map(|l| strip_line_number(l).unwrap_or(l))
        .collect();
    let n = lines.len();
    let mut hidden = vec![false; n];
    let mut marker_at: Vec<Option<(usize, &str)>> = vec![None; n];
    let mut bodies = 0;
    let matches = brace_matches(&content);
    let mut i = 0;
    while i < n {
        let Some((start, end)) = function_body(&content, &matches, i) else {
            i += 1;
            continue;
        };
        let len = end - start;
        let visible = (start..end)
            .any(|j| ctx.matcher.scan(lines[j].as_bytes()).holds() || is_error_line(lines[j]));
        if len >= MIN_BODY && !visible {
            hidden[start..end].iter_mut().for_each(|h| *h = true);
            marker_at[start] = Some((len, indent_of(content[start])));
            bodies += 1;
            i = end;
        } else {
            i += 1;
        }
    }
    if bodies == 0 {
        return None;
    }
    let mut out = String::with_capacity(text.len() / 2);
    for j in 0..n {
        if let Some((len, indent)) = marker_at[j] {
            out.push_str(indent);
            out.push_str(&ctx.marker(len, Unit::Lines));
            out.push('\n');
            tally.add(Unit::Lines, len);
        }
        if !hidden[j] {
            out.push_str(lines[j]);
            out.push('\n');
        }
    }
    tally.add(Unit::Bodies, bodies);
    if !trailing_newline {
        out.pop();
    }
    (out.len() < text.len()).then_some(out)
}

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// For each line whose last `{` is closed later, the line of the matching `}` (one stack pass over all braces
/// outside strings and line comments, so finding every body is linear in the text).
fn brace_matches(content: &[&str]) -> Vec<Option<usize>> {
    let mut matches = vec![None; content.len()];
    let mut last_open: Vec<Option<usize>> = vec![None; content.len()];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut next_id = 0;
    for (j, line) in content.iter().enumerate() {
        let mut in_str = false;
        let mut prev = 0u8;
        for &c in line.as_bytes() {
            match c {
                b'"' if prev != b'\\' => in_str = !in_str,
                b'/' if !in_str && prev == b'/' => break,
                b'{' if !in_str => {
                    stack.push((next_id, j));
                    last_open[j] = Some(next_id);
                    next_id += 1;
                }
                b'}' if !in_str => {
                    if let Some((id, open_line)) = stack.pop() {
                        if last_open[open_line] == Some(id) && open_line != j {
                            matches[open_line] = Some(j);
                        }
                    }
                }
                _ => {}
            }
            prev = c;
        }
    }
    matches
}

/// If line `i` starts a function, the range of its body lines (exclusive of signature and closing line).
fn function_body(content: &[&str], matches: &[Option<usize>], i: usize) -> Option<(usize, usize)> {
    let t = content[i].trim_start();
    if (t.starts_with("def ") || t.starts_with("async def ")) && t.trim_end().ends_with(':') {
        return python_body(content, i);
    }
    if !looks_like_fn_signature(t) {
        return None;
    }
    // The opening brace is on this line or alone on the next one.
    let open_line = if t.trim_end().ends_with('{') {
        i
    } else if content.get(i + 1).is_some_and(|l| l.trim() == "{") {
        i + 1
    } else {
        return None;
    };
    let close = matches.get(open_line).copied().flatten()?;
    content[close]
        .trim_start()
        .starts_with('}')
        .then_some((open_line + 1, close))
}

fn looks_like_fn_signature(t: &str) -> bool {
    const CONTROL: [&str; 9] = [
        "if ", "for ", "while ", "switch ", "match ", "else", "loop", "do ", "} else",
    ];
    if CONTROL.iter().any(|c| t.starts_with(c)) || !t.contains('(') {
        return false;
    }
    let before = t.split('(').next().unwrap_or("");
    let keyword = t
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| matches!(w, "fn" | "function" | "func" | "def"));
    // C-like: `type name(args) {` with no assignment before the parenthesis.
    keyword
        || (before.split_whitespace().count() >= 2
            && !before.contains('=')
            && !t.trim_end().ends_with(';'))
}

fn python_body(content: &[&str], i: usize) -> Option<(usize, usize)> {
    let base = indent_of(content[i]).len();
    let mut end = i + 1;
    let mut last_nonblank = i;
    while end < content.len() && end - i <= MAX_PY_BODY {
        let l = content[end];
        if !l.trim().is_empty() {
            if indent_of(l).len() <= base {
                break;
            }
            last_nonblank = end;
        }
        end += 1;
    }
    (last_nonblank > i).then_some((i + 1, last_nonblank + 1))
}

#[cfg(test)]
mod tests {
    use super::super::{Options, find_markers};
    use super::*;

    fn run(t: &str) -> Option<String> {
        let ctx = Ctx::new(
            "0123456789ab".into(),
            &Options {
                compress_code: true,
                ..Options::default()
            },
        );
        compress(t, &ctx, &mut Tally::default())
    }

    #[test]
    fn rust_bodies_offloaded_signatures_kept() {
        let body: String = (0..10)
            .map(|i| format!("        let x{i} = {i};\n"))
            .collect();
        let t = format!(
            "impl A {{\n    pub(crate) fn a(&self) -> u32 {{\n{body}        0\n    }}\n\n    fn b() {{\n        panic!(\"invalid\");\n    }}\n}}\n"
        );
        let out = run(&t).unwrap_or_default();
        assert!(out.contains("    pub(crate) fn a(&self) -> u32 {\n        <<ctxzip:0123456789ab 11_lines_offloaded>>\n    }\n"), "{out}");
        assert!(out.contains("panic!(\"invalid\")"));
        assert_eq!(find_markers(&out).len(), 1);
    }

    #[test]
    fn python_and_numbered() {
        let body: String = (0..8).map(|i| format!("    x{i} = {i}\n")).collect();
        let t = format!("import os\n\ndef f(a):\n{body}\nclass C:\n    pass\n");
        let out = run(&t).unwrap_or_default();
        assert!(
            out.starts_with(
                "import os\n\ndef f(a):\n    <<ctxzip:0123456789ab 8_lines_offloaded>>\n\nclass C:"
            ),
            "{out}"
        );
        let numbered: String = t
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
            .collect();
        assert!(
            run(&numbered)
                .unwrap_or_default()
                .contains("8_lines_offloaded")
        );
    }
}

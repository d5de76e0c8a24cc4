//! What surrounds a tool output's body, taken off so the body alone is detected and compressed.
//!
//! In the request path [`super::compress`] first takes off what a harness or a client printed around the text a
//! compressor can read: a Codex `exec_command` header, an HTTP response's status line and headers (`curl -i`), or a
//! verbose client's whole trace — connection, TLS handshake, request and response headers before the body and its
//! closing lines after it (`curl -v URL 2>&1`). Headers and closing lines stay verbatim; a trace keeps its request
//! and response lines and puts its chatter behind markers ([`compress_trace`]). Without this a JSON answer behind a
//! trace is no JSON to the detector, and a trace full of braces (`{ [5 bytes data]`) reads as source code, which
//! stays verbatim.

use super::relevance::is_floor_line;
use super::{Ctx, Tally, Unit};

/// Most lines a verbose client's trace before the body may have (a TLS handshake and a few redirects take ~100).
const MAX_TRACE_LINES: usize = 400;

/// A tool output cut into what surrounds its body and the body itself; the pieces joined are the output.
pub(super) struct Parts<'a> {
    /// A harness's header (Codex's `exec_command` lines down to `Output:`).
    pub exec: &'a str,
    /// An HTTP response's status line and headers, or a verbose client's trace before the body; empty when the
    /// output is no HTTP response.
    pub head: &'a str,
    /// Whether `head` is a verbose trace ([`split_trace`]), whose chatter may be shortened ([`compress_trace`]).
    pub traced: bool,
    pub body: &'a str,
    /// A verbose trace's closing lines after the body.
    pub tail: &'a str,
}

/// Cuts `original` into its [`Parts`].
pub(super) fn split(original: &str) -> Parts<'_> {
    let (exec, rest) = split_exec_header(original);
    let ((head, body), traced) = match split_trace(rest) {
        Some(split) => (split, true),
        None => (split_http_head(rest), false),
    };
    let tail = if traced { trace_tail(body) } else { "" };
    Parts {
        exec,
        head,
        traced,
        body: &body[..body.len() - tail.len()],
        tail,
    }
}

/// A verbose trace with its chatter behind markers: the request and response lines (`> `, `< `), the line that
/// names the host connected to, and every line with an error word stay; each run of the rest (the TLS handshake,
/// ALPN and certificate notes, `{ [5 bytes data]`) becomes one marker line. `None` when nothing would be left out.
pub(super) fn compress_trace(head: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let mut out = String::with_capacity(head.len() / 2);
    let mut run = 0;
    let mut left_out = 0;
    let flush = |out: &mut String, run: &mut usize| {
        if *run > 0 {
            out.push_str(&ctx.marker(*run, Unit::Lines));
            out.push('\n');
            *run = 0;
        }
    };
    for line in head.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        let stays = bare.starts_with('>')
            || bare.starts_with('<')
            || bare.starts_with("* Connected to")
            || is_floor_line(bare)
            || ctx.matcher.scan(bare.as_bytes()).keep;
        if stays {
            flush(&mut out, &mut run);
            out.push_str(line);
        } else {
            run += 1;
            left_out += 1;
        }
    }
    flush(&mut out, &mut run);
    if left_out == 0 || out.len() >= head.len() {
        return None;
    }
    tally.add(Unit::Lines, left_out);
    Some(out)
}

/// Codex `exec_command` outputs start with a small header (`Chunk ID…`, `Wall time…`, `Process exited with
/// code N`, `Original token count…`, `Output:`). It is kept verbatim and only the body is compressed, so the
/// body's kind (e.g. JSON) is detected on the body alone.
pub(super) fn split_exec_header(text: &str) -> (&str, &str) {
    const PREFIXES: [&str; 7] = [
        "Chunk ID",
        "Wall time",
        "Process exited",
        "Process running",
        "Original token count",
        "Total output lines",
        "Exit code",
    ];
    let mut pos = 0;
    for _ in 0..8 {
        let Some(nl) = text[pos..].find('\n') else {
            break;
        };
        let line = text[pos..pos + nl].trim_end_matches('\r');
        if line == "Output:" && pos > 0 {
            return text.split_at(pos + nl + 1);
        }
        if !PREFIXES.iter().any(|p| line.starts_with(p)) {
            break;
        }
        pos += nl + 1;
    }
    ("", text)
}

/// An HTTP response printed whole (`curl -i`, `http --print=hb`): the status line and headers stay verbatim and
/// the body is compressed as what it is (JSON, HTML, a log), so a large body no longer hides behind a head that
/// no compressor recognises. A verbose client's trace before the body is cut off by [`split_trace`] instead.
pub(super) fn split_http_head(text: &str) -> (&str, &str) {
    if !text.starts_with("HTTP/") {
        return ("", text);
    }
    for sep in ["\r\n\r\n", "\n\n"] {
        if let Some(at) = text.find(sep) {
            let head = &text[..at + sep.len()];
            if head.lines().count() <= 100 {
                return text.split_at(at + sep.len());
            }
        }
    }
    ("", text)
}

/// A line of a verbose client's trace: curl's informational (`* `), request (`> `) and response (`< `) lines and
/// its data notes (`{ [512 bytes data]`, `} [5 bytes data]`).
fn is_trace_line(line: &str) -> bool {
    let line = line.strip_suffix('\r').unwrap_or(line);
    matches!(line, "*" | ">" | "<" | "> " | "< ")
        || ["* ", "> ", "< ", "{ [", "} ["]
            .iter()
            .any(|p| line.starts_with(p))
}

/// The trace `curl -v` prints before the body (`text` opening with it): every line up to the body is a trace line,
/// and among them a response's status line (`< HTTP/…`) and the blank line that ends its headers (`<`). Redirects
/// followed with `-L` are part of the trace.
fn split_trace(text: &str) -> Option<(&str, &str)> {
    if !(text.starts_with("* ") || text.starts_with("> ")) {
        return None;
    }
    let mut offset = 0;
    let mut status = false;
    let mut answered = false;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        if n >= MAX_TRACE_LINES || !line.ends_with('\n') || !is_trace_line(bare) {
            break;
        }
        status |= bare.starts_with("< HTTP/");
        answered |= status && matches!(bare, "<" | "< ");
        offset += line.len();
    }
    answered.then(|| text.split_at(offset))
}

/// The closing lines of a verbose trace at the end of `body` (`* Connection #0 to host … left intact`), which
/// follow the body's last byte on its own line when the body does not end with a newline; `""` when there are none.
fn trace_tail(body: &str) -> &str {
    let Some(at) = ["* Connection #", "* Closing connection"]
        .iter()
        .filter_map(|p| body.rfind(p))
        .max()
    else {
        return "";
    };
    let tail = &body[at..];
    if tail
        .split_inclusive('\n')
        .all(|l| is_trace_line(l.trim_end_matches('\n')))
    {
        tail
    } else {
        ""
    }
}

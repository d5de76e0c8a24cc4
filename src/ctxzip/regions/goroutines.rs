//! Go's stack dumps: a panic's goroutine, and the goroutines a timeout or a deadlock prints.
//!
//! A Go program that panics prints `panic: …`, then `goroutine 34 [running]:` and the goroutine's frames — a
//! function line and a tab-indented `file.go:88 +0x4c` line each — which is where the fault is; the log around it
//! goes on without a blank line. A test that times out (`panic: test timed out after 10m0s`) or a deadlock
//! (`fatal error: all goroutines are asleep`) prints every goroutine, often hundreds, most parked on the same
//! stack (a worker pool's `select`). None of these lines carries an error word, so without this the floor kept
//! the `panic:` line and the frames that say where went behind the marker. Here a goroutine's block is a region:
//! the first one printed whole (Go prints the failing goroutine first), then a few more whose stacks differ,
//! and a block whose stack an earlier block already showed (the same functions and files, whatever the argument
//! values and offsets) is left to the marker as a traceback printed again is.

/// Goroutine blocks kept besides the first: a deadlock's few parked goroutines; a pool of identical ones is one.
pub(super) const MAX_OTHERS: usize = 6;
/// Lines kept of a goroutine block after the first: its header and the innermost frames, where it is parked.
pub(super) const MAX_OTHER_LINES: usize = 24;
/// How far above a goroutine's header its panic's message is looked for (`panic: …`, `[signal SIGSEGV …]`, a
/// `[recovered]` line, a blank line).
const MESSAGE_LINES: usize = 8;

/// Whether `line` opens a goroutine's block: `goroutine 34 [running]:`, `goroutine 7 [chan receive, 9 minutes]:`.
pub(super) fn is_header(line: &str) -> bool {
    line.strip_prefix("goroutine ")
        .and_then(|rest| rest.split_once(" ["))
        .is_some_and(|(id, state)| {
            !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && state.ends_with("]:")
        })
}

/// Whether the block whose header is `line` is a running goroutine's (`goroutine 1 [running]:`): the one a panic
/// stopped, which Go prints first in its dump.
pub(super) fn is_running(line: &str) -> bool {
    line.split_once(" [")
        .is_some_and(|(_, state)| state.starts_with("running"))
}

/// One past the last line of the block whose header is at `start`: its frames run while a line is a frame's
/// file line (tab-indented), a function line followed by one, or Go's `...additional frames elided...`; a blank
/// line or anything else (the log going on) ends it.
pub(super) fn block_end(lines: &[&str], start: usize) -> usize {
    let indented = |j: usize| lines.get(j).is_some_and(|l| l.starts_with('\t'));
    let mut j = start + 1;
    while j < lines.len() {
        let l = lines[j].trim_end_matches('\r');
        let function = !l.is_empty() && !l.starts_with(char::is_whitespace) && indented(j + 1);
        if !(l.starts_with('\t') || function || l.starts_with("...additional frames elided")) {
            break;
        }
        j += 1;
    }
    j
}

/// Where the message of the panic that printed the block at `header` starts: the nearest `panic: ` or
/// `fatal error: ` line at most [`MESSAGE_LINES`] above it, if any.
pub(super) fn message_start(lines: &[&str], header: usize) -> Option<usize> {
    (header.saturating_sub(MESSAGE_LINES)..header)
        .rev()
        .find(|&j| {
            let l = lines[j].trim_start();
            l.starts_with("panic: ") || l.starts_with("fatal error: ")
        })
}

/// What makes two blocks the same stack: each frame's function without its arguments and its file line without
/// the program-counter offset (`/src/loop.go:141`), the header (goroutine id, state, minutes) left out.
pub(super) fn stack_key(frames: &[&str]) -> String {
    let mut key = String::new();
    for line in frames {
        let line = line.trim_end_matches('\r');
        let part = if line.starts_with('\t') {
            line.split_once(" +0x").map_or(line, |(file, _)| file)
        } else {
            line.rfind('(').map_or(line, |at| &line[..at])
        };
        key.push_str(part);
        key.push('\n');
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "goroutine 34 [running]:\n\
        github.com/acme/store.(*Cache).Put(0x0, {0xc00012c0a0, 0x8})\n\
        \t/src/store/cache.go:88 +0x4c\n\
        github.com/acme.(*Loop).apply(0xc0000b6000)\n\
        \t/src/loop.go:141 +0x1b2\n\
        created by github.com/acme.(*Loop).Run in goroutine 1\n\
        \t/src/loop.go:90 +0x145";

    #[test]
    fn headers_are_recognised() {
        assert!(is_header("goroutine 34 [running]:"));
        assert!(is_header("goroutine 7 [chan receive, 9 minutes]:"));
        assert!(!is_header("goroutine leak detected [warn]"));
        assert!(!is_header("goroutine x [running]:"));
        assert!(!is_header("the goroutine 3 [running]:"));
    }

    #[test]
    fn a_block_ends_where_the_log_goes_on_or_at_a_blank_line() {
        let text = format!("{BLOCK}\n2026/12/01 10:02:31 supervisor: restarting\nnext");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(block_end(&lines, 0), 7);
        let text = format!("{BLOCK}\n\ngoroutine 1 [select]:");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(block_end(&lines, 0), 7);
        let elided =
            "goroutine 1 [running]:\nmain.f(0x1)\n\t/a.go:3 +0x1\n...additional frames elided...\n";
        let lines: Vec<&str> = elided.lines().collect();
        assert_eq!(block_end(&lines, 0), 4);
    }

    #[test]
    fn the_panic_message_is_found_above_the_header() {
        let text =
            format!("log line\npanic: boom\n[signal SIGSEGV: segmentation violation]\n\n{BLOCK}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(message_start(&lines, 4), Some(1));
        assert_eq!(message_start(&lines, 0), None);
    }

    #[test]
    fn the_same_stack_with_other_arguments_has_the_same_key() {
        let other = BLOCK
            .replace("0xc0000b6000", "0xc0000b7000")
            .replace("+0x1b2", "+0x1b9");
        let frames = |b: &str| b.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
        let key = |b: &str| stack_key(&frames(b).iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(key(BLOCK), key(&other));
        assert_ne!(
            key(BLOCK),
            key(&BLOCK.replace("loop.go:141", "loop.go:142"))
        );
    }
}

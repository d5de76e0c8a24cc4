//! Go's stack dumps: a panic's goroutine, and the goroutines a timeout or a deadlock prints.
//!
//! A Go program that panics prints `panic: …`, then `goroutine 34 [running]:` and the goroutine's frames — a
//! function line and a tab-indented `file.go:88 +0x4c` line each — which is where the fault is; the log around it
//! goes on without a blank line. A test that times out (`panic: test timed out after 10m0s`) or a deadlock
//! (`fatal error: all goroutines are asleep`) prints every goroutine, often hundreds, most parked on the same
//! stack (a worker pool's `select`). None of these lines carries an error word, so without this the floor kept
//! the `panic:` line and the frames that say where went behind the marker. Here a goroutine's block is a region:
//! the first one printed whole (Go prints the failing goroutine first), then a few more whose stacks differ, each
//! told by where it waits, the program's frames and who started it ([`telling_lines`]),
//! and a block whose stack an earlier block already showed (the same functions and files, whatever the argument
//! values and offsets) is left to the marker as a traceback printed again is.

/// Goroutine blocks kept besides the first: a deadlock's few parked goroutines; a pool of identical ones is one.
pub(super) const MAX_OTHERS: usize = 6;
/// Lines kept of a goroutine block after the first, at most ([`telling_lines`]).
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

/// Top-level packages of Go's standard library: a frame whose function is in one of them (`testing.(*T).Run`,
/// `os/exec.(*Cmd).Wait`, `internal/poll.(*FD).Read`) is the runtime's, not the program's.
const STD_PACKAGES: [&str; 43] = [
    "archive",
    "bufio",
    "bytes",
    "cmp",
    "compress",
    "container",
    "context",
    "crypto",
    "database",
    "debug",
    "embed",
    "encoding",
    "errors",
    "expvar",
    "flag",
    "fmt",
    "go",
    "hash",
    "html",
    "image",
    "internal",
    "io",
    "iter",
    "log",
    "maps",
    "math",
    "mime",
    "net",
    "os",
    "path",
    "reflect",
    "regexp",
    "runtime",
    "slices",
    "sort",
    "strconv",
    "strings",
    "sync",
    "syscall",
    "testing",
    "time",
    "unicode",
    "unsafe",
];

/// Whether a frame's function line (`os/exec.(*Cmd).Wait(0x27874651b380)`, `time.Sleep(...)`) names a function of
/// Go's standard library. A module's path (`github.com/acme/store`) has a dot in its first element, a local
/// module's (`proxyclient/internal/killswitch`) a first element that is no standard package.
fn is_std_frame(function: &str) -> bool {
    let name = function.split('(').next().unwrap_or(function);
    let package = match name.split_once('/') {
        // A path's first element: a module's domain has a dot (`go.uber.org/zap`), the standard library's none.
        Some((first, _)) if first.contains('.') => return false,
        Some((first, _)) => first,
        None => name.split('.').next().unwrap_or(name),
    };
    STD_PACKAGES.contains(&package)
}

/// The lines of a parked goroutine's block (header first) that tell what it is, as offsets into `block`, at most
/// [`MAX_OTHER_LINES`]: the header, the innermost frame (where it waits), every frame of the program or its
/// dependencies, and the `created by` frame (who started it). The standard library's frames between them
/// (`syscall`, `internal/poll`, `os/exec`, `testing`) go.
pub(super) fn telling_lines(block: &[&str]) -> Vec<usize> {
    let mut shown = Vec::new();
    if block.is_empty() {
        return shown;
    }
    shown.push(0);
    let mut j = 1;
    while j < block.len() {
        let line = block[j].trim_end_matches('\r');
        // A frame is its function line and the tab-indented file line under it.
        let end = if block.get(j + 1).is_some_and(|l| l.starts_with('\t')) {
            j + 2
        } else {
            j + 1
        };
        let telling = j == 1
            || line.starts_with("created by ")
            || line.starts_with("...additional frames elided")
            || !is_std_frame(line);
        if telling {
            shown.extend(j..end);
        }
        j = end;
    }
    shown.truncate(MAX_OTHER_LINES);
    shown
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
    fn frames_of_the_standard_library_are_told_from_the_programs() {
        for std in [
            "testing.(*T).Run(0x278745f94200, {0x7ff7c14827af?, 0x278746013b38?}, 0x7ff7c148d1c8)",
            "os/exec.(*Cmd).Wait(0x27874651b380)",
            "internal/poll.(*FD).Read(0x2787462ae240, {0x278746181200, 0x200, 0x200})",
            "syscall.SyscallN(0x1000000000000?, {0x278745fc3c68?, 0x3?, 0x3?})",
            "time.Sleep(0x3b9aca00)",
        ] {
            assert!(is_std_frame(std), "{std}");
        }
        for program in [
            "proxyclient/internal/killswitch.runNetsh({0x278745fc3e40?, 0xb?, 0x7ff7c1479fd0?})",
            "github.com/acme/store.(*Cache).Put(0x0, {0xc00012c0a0, 0x8})",
            "go.uber.org/zap.(*Logger).Info(0xc000132000)",
            "main.main()",
        ] {
            assert!(!is_std_frame(program), "{program}");
        }
    }

    /// A goroutine parked in a system call deep in the standard library: the call it waits in, the program's
    /// frames that made it and who started it stay; the library's frames between them go.
    #[test]
    fn a_parked_goroutine_shows_where_it_waits_and_the_programs_frames() {
        let block = [
            "goroutine 357 [syscall]:",
            "syscall.SyscallN(0x1000000000000?, {0x278745fc3c68?, 0x3?, 0x3?})",
            "\tC:/Program Files/Go/src/syscall/dll_windows.go:99 +0x1e",
            "syscall.WaitForSingleObject(0x3f4, 0xffffffff)",
            "\tC:/Program Files/Go/src/syscall/zsyscall_windows.go:1159 +0x6a",
            "os/exec.(*Cmd).Wait(0x27874651b380)",
            "\tC:/Program Files/Go/src/os/exec/exec.go:930 +0x45",
            "proxyclient/internal/killswitch.runNetsh({0x278745fc3e40?, 0xb?, 0x7ff7c1479fd0?})",
            "\tC:/src/proxy/internal/killswitch/killswitch_windows.go:155 +0x85",
            "testing.tRunner(0x27874663c600, 0x2787461f81b0)",
            "\tC:/Program Files/Go/src/testing/testing.go:2036 +0xc3",
            "created by testing.(*T).Run in goroutine 299",
            "\tC:/Program Files/Go/src/testing/testing.go:2101 +0x4a9",
        ];
        let shown: Vec<&str> = telling_lines(&block)
            .into_iter()
            .map(|k| block[k])
            .collect();
        assert_eq!(
            shown,
            [
                block[0], block[1], block[2], block[7], block[8], block[11], block[12]
            ]
        );
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

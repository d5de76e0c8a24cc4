//! A compiler's notes printed again: GCC's and Clang's `path:line:col: note: …` under each diagnostic.
//!
//! A C or C++ error that recurs at many call sites (a method that lost its `const`, a template that does not
//! match) is printed with the same note each time: `tinyxml2.h:747:17: note: in call to ‘…Value()’` and the
//! declaration it points at, with its caret. Each error line stays (the floor), and so does its own location and
//! source; the note says once where the declaration is, and its later copies say nothing new. Here a note — its
//! line and the source snippet under it — identical to one printed earlier is marked repeated, so it goes behind a
//! marker that says so, and no error line's context keeps it. A template instantiation's `required from …` lines
//! are notes of the same kind.

/// Whether `line` is a note of a GCC/Clang diagnostic: `path:line:col: note: …` (or without the column), or a
/// template instantiation's `path:line:col:   required from …` / `required by substitution of …`.
pub(crate) fn is_note(line: &str) -> bool {
    let Some((place, rest)) = split_place(line) else {
        return false;
    };
    !place.is_empty()
        && (rest.starts_with(" note: ")
            || rest
                .trim_start()
                .strip_prefix("required ")
                .is_some_and(|r| r.starts_with("from ") || r.starts_with("by substitution")))
}

/// `path:line:col` and what follows its last colon, when the line opens with a location (a path without spaces, then
/// one or two numbers).
fn split_place(line: &str) -> Option<(&str, &str)> {
    let (path, mut rest) = line.split_once(':')?;
    if path.is_empty() || path.contains(char::is_whitespace) {
        return None;
    }
    let mut numbers = 0;
    while numbers < 2 {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || rest.as_bytes().get(digits) != Some(&b':') {
            break;
        }
        rest = &rest[digits + 1..];
        numbers += 1;
    }
    (numbers > 0).then(|| (&line[..line.len() - rest.len() - 1], rest))
}

/// One past the note that opens at `start` (see [`is_note`]): its line and the source snippet under it — GCC's
/// numbered lines and caret (`  747 |     const char* Value();`, `      |                 ^~~~~`), or Clang's
/// source line and the caret line under it. `None` when no note opens there.
pub(super) fn note_end(lines: &[&str], start: usize) -> Option<usize> {
    if !is_note(lines.get(start)?.trim_end_matches('\r')) {
        return None;
    }
    let mut end = start + 1;
    while lines
        .get(end)
        .is_some_and(|l| super::is_code_frame_line(l) && !l.trim().is_empty())
    {
        end += 1;
    }
    if end == start + 1
        && lines
            .get(start + 2)
            .is_some_and(|l| is_bare_caret(l.trim_end_matches('\r')))
    {
        end = start + 3;
    }
    Some(end)
}

/// Clang's caret line: spaces, then carets and tildes (and the spaces between two ranges), at least one caret.
fn is_bare_caret(line: &str) -> bool {
    line.starts_with(' ') && super::marks_carets(line.trim(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_and_instantiation_lines_are_told_from_other_diagnostics() {
        assert!(is_note(
            "tinyxml2.h:747:17: note:   in call to ‘const char* tinyxml2::XMLNode::Value()’"
        ));
        assert!(is_note("./tinyxml2.h:747:17: note: 'Value' declared here"));
        assert!(is_note(
            "src/a.c:12: note: each undeclared identifier is reported only once"
        ));
        assert!(is_note("main.cpp:31:15:   required from here"));
        assert!(is_note(
            "/usr/include/c++/12/bits/stl_vector.h:1287:21:   required from ‘void std::vector<_Tp>::push_back()’"
        ));
        assert!(!is_note(
            "tinyxml2.h:1273:21: error: passing ‘const tinyxml2::XMLElement’ as ‘this’ argument"
        ));
        assert!(!is_note(
            "note: run with `RUST_BACKTRACE=1` for a backtrace"
        ));
        assert!(!is_note("see the note: above"));
        assert!(!is_note("a b:12: note: spaced path"));
    }

    #[test]
    fn a_note_takes_its_snippet_in_either_compilers_format() {
        let gcc = [
            "tinyxml2.h:747:17: note:   in call to ‘const char* tinyxml2::XMLNode::Value()’",
            "  747 |     const char* Value();",
            "      |                 ^~~~~",
            "tinyxml2.cpp: In member function ‘bool f()’:",
        ];
        assert_eq!(note_end(&gcc, 0), Some(3));
        let clang = [
            "./tinyxml2.h:747:17: note: 'Value' declared here",
            "    const char* Value();",
            "                ^",
            "tinyxml2.cpp:1233:35: error: 'this' argument to member function 'Value' has type 'const X'",
        ];
        assert_eq!(note_end(&clang, 0), Some(3));
        // A note with no snippet is its line alone; a line that is no note opens none.
        let bare = [
            "a.c:3: note: declared here",
            "a.c:9: error: conflicting types",
        ];
        assert_eq!(note_end(&bare, 0), Some(1));
        assert_eq!(note_end(&bare, 1), None);
    }
}

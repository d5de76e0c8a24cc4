//! Numbered failure blocks: RSpec's, Mocha's and Jasmine's report of each failing example, and Jest's `●` blocks.
//!
//! These runners list their failures after a heading (`Failures:`, `2 failing`) as numbered blocks: `  1) Cart#total
//! applies the coupon`, then, indented and split by blank lines, the failing expectation, `expected: 90` / `got:
//! 100` (or Mocha's `+ expected - actual` diff), and the spec's location. Only the `Failure/Error:` line has an error
//! word, and an error line's context stops at the blank line under it, so the values and the location — what a
//! reader fixes the test from — went behind the marker, with the example's name. Here each block is a region, from
//! its numbered line to the next one or to the first unindented line after it (`Finished in …`, `Failed
//! examples:`), bounded per block and in all.

/// Lines kept of one block: a diff of two large values can run long; its head shows where they differ.
pub(super) const MAX_BLOCK: usize = 40;
/// Lines kept of all blocks of an output together: hundreds of failures are a category the marker's census names,
/// and the floor still shows each one's `Failure/Error` line.
pub(super) const MAX_LINES: usize = 400;

/// Whether `t` (a line, leading spaces trimmed) heads a list of numbered failures: RSpec's and Jasmine's
/// `Failures:`, Mocha's `2 failing`.
pub(super) fn is_heading(t: &str) -> bool {
    let t = t.trim_end();
    t == "Failures:"
        || t.strip_suffix(" failing")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `line` opens a numbered block: `  1) Cart#total applies the coupon` (at most four spaces before the
/// number, something after `) `).
pub(super) fn is_header(line: &str) -> bool {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 4 {
        return false;
    }
    t.split_once(") ").is_some_and(|(n, rest)| {
        !n.is_empty()
            && n.len() <= 4
            && n.bytes().all(|b| b.is_ascii_digit())
            && !rest.trim().is_empty()
    })
}

/// Whether `line` opens one of Jest's failure blocks: `  ● Cart › total applies the coupon` (or `  ●  TCPSERVERWRAP`,
/// an open handle), two spaces in. Jest prints them without a heading, each with the matcher's message, its
/// `Expected:`/`Received:` values, a code frame and the `at …` lines: like a numbered block, only the values are
/// what a reader fixes the test from, and none has an error word.
pub(super) fn is_jest_header(line: &str) -> bool {
    line.strip_prefix("  ● ")
        .is_some_and(|rest| !rest.trim().is_empty())
}

/// One past the last line of the block whose header is at `start`: the next header, or the first unindented line
/// that is not blank; blank lines at its end are not the block's.
pub(super) fn block_end(lines: &[&str], start: usize) -> usize {
    let mut end = start + 1;
    let mut last = start + 1;
    while end < lines.len() {
        let line = lines[end].trim_end_matches('\r');
        if is_header(line)
            || is_jest_header(line)
            || (!line.is_empty() && !line.starts_with([' ', '\t']))
        {
            break;
        }
        end += 1;
        if !line.trim().is_empty() {
            last = end;
        }
    }
    last
}

/// The lines of RSpec's documentation format that name an example or a group (`  returns nil instead of raising
/// an error`, `      accepts a block (FAILED - 5)`): the indented outline before the `Failures:` heading, in an
/// output whose outline marks its failing examples `(FAILED - N)`. A passing example there carries no mark at
/// all, so an example named after an error (`raises KeyError`) reads as an error line, and its neighbours as its
/// context: they are more examples. The failing ones are reported again, whole, under the heading. One flag per
/// line; all `false` for any other output.
pub(crate) fn outline_examples(lines: &[&str]) -> Vec<bool> {
    let mut out = vec![false; lines.len()];
    let Some(heading) = lines
        .iter()
        .position(|l| l.trim_end_matches('\r') == "Failures:")
    else {
        return out;
    };
    if !lines[..heading].iter().any(|l| marks_failure(l)) {
        return out;
    }
    for (flag, line) in out.iter_mut().zip(&lines[..heading]) {
        let t = line.trim_start_matches(' ');
        *flag = line.len() - t.len() >= 2 && !t.is_empty() && !super::is_ruby_frame(t);
    }
    out
}

/// An example RSpec's outline marks as failed: `  clones before a #deep_merge (FAILED - 3)`.
fn marks_failure(line: &str) -> bool {
    line.trim_end()
        .strip_suffix(')')
        .and_then(|l| l.rsplit_once(" (FAILED - "))
        .is_some_and(|(name, n)| {
            !name.trim().is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSPEC: &str = "Failures:\n\n  1) Cart#total applies the coupon\n     Failure/Error: \
                         expect(cart.total).to eq(90)\n\n       expected: 90\n            got: 100\n\n       \
                         (compared using ==)\n     # ./spec/models/cart_spec.rb:41:in `block (3 levels)'\n\n  \
                         2) Cart#total rounds\n     Failure/Error: expect(1).to eq(2)\n\nFinished in 1.2 seconds\n";

    #[test]
    fn headings_and_headers_are_recognised() {
        assert!(is_heading("Failures:"));
        assert!(is_heading("2 failing"));
        assert!(!is_heading("no failing"));
        assert!(!is_heading("failures:"));
        assert!(is_header("  1) Cart#total applies the coupon"));
        assert!(is_header("12) Suite spec"));
        assert!(!is_header("        1) deeply indented"));
        assert!(!is_header("  1)"));
        assert!(!is_header("  a) option"));
        assert!(is_jest_header("  ● Cart › total"));
        assert!(is_jest_header("  ●  TCPSERVERWRAP"));
        assert!(!is_jest_header("● Cart › total"));
        assert!(!is_jest_header("  ● "));
    }

    #[test]
    fn a_block_runs_to_the_next_header_or_an_unindented_line() {
        let lines: Vec<&str> = RSPEC.lines().collect();
        assert_eq!(lines[2], "  1) Cart#total applies the coupon");
        // Through the location line; the blank line after it is not the block's.
        assert_eq!(block_end(&lines, 2), 10);
        assert!(lines[9].contains("cart_spec.rb:41"));
        assert_eq!(lines[11], "  2) Cart#total rounds");
        assert_eq!(block_end(&lines, 11), 13);
    }
}

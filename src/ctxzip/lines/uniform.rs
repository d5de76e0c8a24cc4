//! Odd lines of a uniform output: the few lines unlike the hundreds of the same shape around them.
//!
//! An access log of health checks with one `500`, a progress bar printed 250 times with an epoch's validation
//! line between every fifty, a poll loop with the one answer that differed: most lines share one shape, and the
//! few that do not are what the output is read for. Not every such line has an error word, so the error floor does
//! not keep them, and the head and tail keep only the uniform lines around them. This finds, with no header to go
//! by (a headed table is [`super::outliers`]), the lines whose shape differs from the one most lines have, and,
//! among the lines of that shape, those whose word at some position differs from the word nearly all of them have
//! there (`200` → `500`). It finds nothing in an output that is not uniform, so a build log or a listing of
//! varied lines keeps only what it kept before. Pure: one pass for the shapes, one over the first words of the
//! common shape's lines, and one more when some position has a common word.

use rustc_hash::FxHashMap as FastMap;

use super::Rec;

/// Lines an output needs before one shape can be called common: a short output is shown whole or nearly.
const MIN_LINES: usize = 40;
/// The common shape must stand on at least this share (in %) of the lines.
const COMMON_SHAPE_PERCENT: usize = 80;
/// A shape other than the common one is rare when it stands on at most this share (in %) of the lines.
const RARE_PERCENT: usize = 5;
/// A word is common at its position when at least this share (in %) of the common shape's lines have it there.
const COMMON_WORD_PERCENT: usize = 95;
/// More odd lines than this (of another shape, or under one column) are a category of their own, which the
/// marker's census names, not exceptions: none of them is kept for being odd.
const MAX_ODD: usize = 24;
/// Words compared by position, from the start of a line; later words are a message's tail.
const MAX_COLUMNS: usize = 16;

/// The lines of `recs` unlike the others (see the module documentation), in order; empty when the output is not
/// uniform.
pub(super) fn odd_lines(recs: &[Rec<'_>]) -> Vec<usize> {
    let lines: usize = recs
        .iter()
        .filter(|r| !r.text.trim().is_empty())
        .map(|r| r.count)
        .sum();
    if lines < MIN_LINES {
        return Vec::new();
    }
    let mut buf = Vec::new();
    let shapes: Vec<Option<u64>> = recs.iter().map(|r| shape_of(r.text, &mut buf)).collect();
    let counts = shape_counts(recs, &shapes);
    // Ties go to the smaller hash, so the answer does not depend on the map's order.
    let Some((&common, &(holding, _))) = counts
        .iter()
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| b.0.cmp(a.0)))
    else {
        return Vec::new();
    };
    if holding * 100 < lines * COMMON_SHAPE_PERCENT {
        return Vec::new();
    }
    let mut odd = vec![false; recs.len()];
    for shape in rare_shapes(recs, &shapes, common, lines) {
        for (i, s) in shapes.iter().enumerate() {
            if *s == Some(shape) {
                odd[i] = true;
            }
        }
    }
    let rows: Vec<usize> = (0..recs.len())
        .filter(|&i| shapes[i] == Some(common))
        .collect();
    mark_odd_words(recs, &rows, &mut odd);
    odd.iter()
        .enumerate()
        .filter(|(_, o)| **o)
        .map(|(i, _)| i)
        .collect()
}

/// Each shape's lines and where it first appears.
fn shape_counts(recs: &[Rec<'_>], shapes: &[Option<u64>]) -> FastMap<u64, (usize, usize)> {
    let mut counts: FastMap<u64, (usize, usize)> = FastMap::default();
    for (i, (r, s)) in recs.iter().zip(shapes).enumerate() {
        if let Some(s) = s {
            counts.entry(*s).or_insert((0, i)).0 += r.count;
        }
    }
    counts
}

/// The shapes other than `common` that are rare — each on at most [`RARE_PERCENT`] % of the `lines` (at least
/// one line) — rarest first (then in order of appearance), as many as fit in [`MAX_ODD`] lines together. A
/// shape on more lines is a kind of line of its own (a progress bar's empty redraws), not an exception.
fn rare_shapes(recs: &[Rec<'_>], shapes: &[Option<u64>], common: u64, lines: usize) -> Vec<u64> {
    let most = (lines * RARE_PERCENT / 100).max(1);
    let mut rare: Vec<(usize, usize, u64)> = shape_counts(recs, shapes)
        .into_iter()
        .filter(|&(s, (n, _))| s != common && n <= most)
        .map(|(s, (n, first))| (n, first, s))
        .collect();
    rare.sort_unstable();
    let mut room = MAX_ODD;
    rare.into_iter()
        .take_while(|&(n, _, _)| {
            let fits = n <= room;
            room = room.saturating_sub(n);
            fits
        })
        .map(|(_, _, s)| s)
        .collect()
}

/// Marks the rows whose word at some position (of the first [`MAX_COLUMNS`]) differs from the word nearly all
/// rows have there, unless more than [`MAX_ODD`] rows differ at that position, and at most [`MAX_ODD`] rows over
/// all positions. One pass counts every column's words, each column's count stopping once it shows more words
/// than a common one leaves room for; a second, only when some column has a common word, finds the rows that
/// differ.
fn mark_odd_words(recs: &[Rec<'_>], rows: &[usize], odd: &mut [bool]) {
    let total: usize = rows.iter().map(|&i| recs[i].count).sum();
    let room = total - total * COMMON_WORD_PERCENT / 100;
    // `None`: the column has too many words to hold a common one.
    let mut columns: Vec<Option<FastMap<&str, usize>>> =
        vec![Some(FastMap::default()); MAX_COLUMNS];
    for &i in rows {
        for (column, word) in columns.iter_mut().zip(recs[i].text.split_whitespace()) {
            if let Some(counts) = column {
                *counts.entry(word).or_insert(0) += recs[i].count;
                if counts.len() > room + 1 {
                    *column = None;
                }
            }
        }
    }
    // Rows of one shape have the same number of words, so every column counted every row.
    let common: Vec<Option<&str>> = columns
        .into_iter()
        .map(|counts| {
            let (word, holding) = counts?
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))?;
            (holding * 100 >= total * COMMON_WORD_PERCENT && holding < total).then_some(word)
        })
        .collect();
    if common.iter().all(Option::is_none) {
        return;
    }
    let mut differing: Vec<Vec<usize>> = vec![Vec::new(); MAX_COLUMNS];
    for &i in rows {
        for ((word, common), rows) in recs[i]
            .text
            .split_whitespace()
            .zip(&common)
            .zip(differing.iter_mut())
        {
            if common.is_some_and(|c| c != word) && rows.len() <= MAX_ODD {
                rows.push(i);
            }
        }
    }
    // Columns in order, each whole or not at all, while the rows they mark together stay within MAX_ODD.
    let mut marked: Vec<usize> = Vec::new();
    for rows in differing.into_iter().filter(|rows| rows.len() <= MAX_ODD) {
        let new: Vec<usize> = rows.into_iter().filter(|i| !marked.contains(i)).collect();
        if marked.len() + new.len() <= MAX_ODD {
            marked.extend(new);
        }
    }
    marked.into_iter().for_each(|i| odd[i] = true);
}

/// A line's shape, hashed: every run of digits, or of hex digits holding a digit (`3f2a9c`, `0x1f`), as one `#`;
/// any run of whitespace as one space; a run of one punctuation character (`####`, `====`, `...`) as one; a run of
/// non-ASCII characters (a progress bar's `█████▌`) as one `~`; letters as they are. `None` for a blank line.
/// `buf` is scratch space, reused from line to line.
fn shape_of(line: &str, buf: &mut Vec<u8>) -> Option<u64> {
    use std::hash::Hasher;
    let bytes = line.trim().as_bytes();
    if bytes.is_empty() {
        return None;
    }
    buf.clear();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let run = |same: &dyn Fn(u8) -> bool| {
            bytes[i..]
                .iter()
                .position(|&c| !same(c))
                .map_or(bytes.len(), |n| i + n)
        };
        let end = if b.is_ascii_hexdigit() {
            let end = run(&|c| c.is_ascii_hexdigit());
            if bytes[i..end].iter().any(u8::is_ascii_digit) {
                buf.push(b'#');
            } else {
                buf.extend_from_slice(&bytes[i..end]);
            }
            end
        } else if b.is_ascii_whitespace() {
            buf.push(b' ');
            run(&|c| c.is_ascii_whitespace())
        } else if !b.is_ascii() {
            buf.push(b'~');
            run(&|c| !c.is_ascii())
        } else if b.is_ascii_punctuation() {
            buf.push(b);
            run(&|c| c == b)
        } else {
            buf.push(b);
            i + 1
        };
        i = end;
    }
    let mut hash = rustc_hash::FxHasher::default();
    hash.write(buf);
    Some(hash.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::recs_of as recs;

    fn access_log(odd: &[(usize, &str)]) -> String {
        (0..300)
            .map(|i| {
                let request = odd
                    .iter()
                    .find(|o| o.0 == i)
                    .map_or("\"GET /health HTTP/1.1\" 200", |o| o.1);
                format!(
                    "10.0.{}.{} - - [01/Dec/2026:10:{:02}:{:02} +0000] {request} {} \"-\" \"kube-probe/1.29\"\n",
                    i / 250,
                    i % 250,
                    i / 60,
                    i % 60,
                    12 + i % 3
                )
            })
            .collect()
    }

    #[test]
    fn a_line_of_another_shape_or_with_another_word_is_odd() {
        let text = access_log(&[
            (117, "\"POST /api/orders HTTP/1.1\" 201"),
            (201, "\"GET /health HTTP/1.1\" 500"),
        ]);
        assert_eq!(odd_lines(&recs(&text)), vec![117, 201]);
    }

    #[test]
    fn a_progress_bar_keeps_the_lines_between_its_redraws() {
        let mut text = String::new();
        for epoch in 1..=4 {
            for p in (0..=100).step_by(4) {
                text.push_str(&format!(
                    "Epoch {epoch}/4: {p:3}%|{:<10}| {}/1200 [00:{:02}<00:{:02}, 36.2it/s, loss=0.{:04}]\n",
                    "#".repeat(p / 10),
                    p * 12,
                    p / 4,
                    25 - p / 4,
                    9000 - p * 10 - epoch
                ));
            }
            text.push_str(&format!(
                "Epoch {epoch}: val_loss=0.{epoch}1 val_acc=0.9{epoch}\n"
            ));
        }
        let found = odd_lines(&recs(&text));
        let lines = recs(&text);
        // Each epoch's validation line, and the redraws whose bar is empty or full (another shape: `| |`, `|#|`).
        for summary in [26, 53, 80, 107] {
            assert!(found.contains(&summary), "{found:?}");
            assert!(lines[summary].text.contains("val_loss"));
        }
        for &i in &found {
            let text = lines[i].text;
            assert!(
                text.contains("val_loss")
                    || text.contains("|          |")
                    || text.contains("|##########|"),
                "{text}"
            );
        }
    }

    #[test]
    fn varied_or_short_outputs_have_no_odd_lines() {
        // A build log: every line its own shape.
        let varied: String = (0..100)
            .map(|i| match i % 4 {
                0 => format!("Compiling crate_{i} v0.{i}.0\n"),
                1 => format!("   Checking dependency {i} of the workspace\n"),
                2 => format!("warning: unused variable `x{i}`\n"),
                _ => format!("  --> src/lib.rs:{i}:5\n"),
            })
            .collect();
        assert!(odd_lines(&recs(&varied)).is_empty());
        // Thirty uniform lines and one odd: too short to call anything common.
        let short: String = access_log(&[(3, "\"GET /health HTTP/1.1\" 500")])
            .split_inclusive('\n')
            .take(30)
            .collect();
        assert!(odd_lines(&recs(&short)).is_empty());
        // A listing: one shape, a different name on every line, nothing odd.
        let paths: String = (0..200)
            .map(|i| format!("./src/module_{}/file_{i}.py\n", i / 20))
            .collect();
        assert!(odd_lines(&recs(&paths)).is_empty());
    }

    #[test]
    fn a_minority_too_large_to_be_an_exception_is_not_kept() {
        // One request in five is a POST: a category (the census names it), not thirty exceptions.
        let posts: Vec<(usize, &str)> = (0..300)
            .step_by(5)
            .map(|i| (i, "\"POST /api/orders HTTP/1.1\" 201"))
            .collect();
        assert!(odd_lines(&recs(&access_log(&posts))).is_empty());
        // Status 304 on one line in ten: under the common word's share, so the column has no common word.
        let cached: Vec<(usize, &str)> = (0..300)
            .step_by(10)
            .map(|i| (i, "\"GET /health HTTP/1.1\" 304"))
            .collect();
        assert!(odd_lines(&recs(&access_log(&cached))).is_empty());
    }

    #[test]
    fn the_odd_words_of_all_columns_together_are_bounded() {
        // Sixteen columns of flags (one shape: digits are blanked), each `1` but on two rows of its own that say
        // `0`: 32 rows differ, one column at a time within the bound, so the first twelve columns' rows are kept.
        let text: String = (0..400)
            .map(|i| {
                let flags: Vec<&str> = (0..16)
                    .map(|c| {
                        if i == c * 20 + 3 || i == c * 20 + 7 {
                            "0"
                        } else {
                            "1"
                        }
                    })
                    .collect();
                format!("{}\n", flags.join(" "))
            })
            .collect();
        let found = odd_lines(&recs(&text));
        assert_eq!(found.len(), MAX_ODD, "{found:?}");
        assert_eq!(found[..2], [3, 7]);
    }

    #[test]
    fn shapes_blank_numbers_and_hex_but_not_words() {
        let shape_of = |line: &str| shape_of(line, &mut Vec::new());
        assert_eq!(shape_of("took 12 ms"), shape_of("took 3456 ms"));
        assert_eq!(shape_of("layer 3f2a9c done"), shape_of("layer 0b77e1 done"));
        assert_eq!(shape_of("a  b\tc"), shape_of("a b c"));
        assert_ne!(shape_of("GET /health"), shape_of("GET /orders"));
        assert_ne!(shape_of("deadbeef"), shape_of("cafebabe"));
        assert_eq!(shape_of("[####      ] 40%"), shape_of("[#######   ] 70%"));
        assert_eq!(shape_of("|█████▌    | 55%"), shape_of("|██▏       | 21%"));
        assert_ne!(shape_of("a: b"), shape_of("a- b"));
        assert_eq!(shape_of("   "), None);
    }
}

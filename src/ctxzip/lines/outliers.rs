//! Outlier rows: the rows of a headed table that say something the others do not.
//!
//! `kubectl get pods`, `docker ps -a`, `systemctl list-units`, `helm list`, `gh run list`: a table whose rows are
//! mostly alike (`Running`, `1/1`, `0` restarts, `Up 3 hours`) and whose few odd rows are the point of reading it
//! (`CrashLoopBackOff`, `0/1`, `14` restarts, `Exited (137)`, `failed`). Not every such word is an error word, so
//! the error floor does not keep them, and a listing keeps only a sample of its head and tail. This finds, in each
//! column that holds one value on most rows, the rows that hold another, so the listing compressor keeps them
//! whatever its sample would have kept. Pure: a header line, its columns by position, a count per value.

use rustc_hash::FxHashMap as FastMap;

use super::Rec;

/// Rows a table needs (below the header) before any of its values can be called common.
const MIN_ROWS: usize = 8;
/// A column's common value must stand on at least this share (in %) of the rows: below it, the column is a
/// spread of values (ages, versions), not one value and a few exceptions.
const COMMON_PERCENT: usize = 75;
/// Outlier rows kept at most; the marker's census covers the rest.
const MAX_ROWS: usize = 32;
/// Lines looked at for the header.
const HEADER_WITHIN: usize = 5;

/// The rows of the table in `recs` whose value in some column differs from the value most rows hold there, in
/// order, at most [`MAX_ROWS`]. Empty when `recs` has no header line: three or more words in capitals (`NAME
/// READY STATUS`, `CONTAINER ID IMAGE`, `UNIT LOAD ACTIVE SUB`), the line a columnar CLI prints first.
pub(super) fn outlier_rows(recs: &[Rec<'_>]) -> Vec<usize> {
    let Some((h, starts)) = recs
        .iter()
        .take(HEADER_WITHIN)
        .enumerate()
        .find_map(|(i, r)| header_columns(r.text).map(|s| (i, s)))
    else {
        return Vec::new();
    };
    let rows: Vec<usize> = (h + 1..recs.len())
        .filter(|&i| !recs[i].text.trim().is_empty())
        .collect();
    if rows.len() < MIN_ROWS {
        return Vec::new();
    }
    let mut odd = vec![false; recs.len()];
    // A column whose values take more shapes than this cannot hold one on COMMON_PERCENT of the rows: counting
    // stops there, so a column of names costs one pass however long the table.
    let max_shapes = rows.len() - rows.len() * COMMON_PERCENT / 100 + 1;
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied();
        let Some(common) = common_value(recs, &rows, (start, end), max_shapes) else {
            continue;
        };
        for &i in &rows {
            if cell(recs[i].text, start, end).is_some_and(|v| shape(v) != common) {
                odd[i] = true;
            }
        }
    }
    odd.iter()
        .enumerate()
        .filter(|(_, o)| **o)
        .map(|(i, _)| i)
        .take(MAX_ROWS)
        .collect()
}

/// The shape ([`shape`]) most of `rows` hold in the column from `span.0` to `span.1`, when it stands on at least
/// [`COMMON_PERCENT`] % of them; `None` otherwise, or once the column shows more than `max_shapes` shapes.
fn common_value(
    recs: &[Rec<'_>],
    rows: &[usize],
    (start, end): (usize, Option<usize>),
    max_shapes: usize,
) -> Option<String> {
    let mut counts: FastMap<String, usize> = FastMap::default();
    for &i in rows {
        if let Some(v) = cell(recs[i].text, start, end) {
            *counts.entry(shape(v)).or_insert(0) += 1;
            if counts.len() > max_shapes {
                return None;
            }
        }
    }
    // Ties go to the smallest shape, so the answer does not depend on the map's order.
    let (common, holding) = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))?;
    (holding * 100 >= rows.len() * COMMON_PERCENT).then_some(common)
}

/// Where each column of a header line starts (byte offsets), or `None` when the line is no header: at least three
/// column names — each in capitals, digits and `%/_-().` with a capital among them (`NAME`, `%CPU`, `CONTAINER ID`),
/// or a capitalised word (`Filesystem`, `Use%`, `Recv-Q`, `Address:Port`, as `df`, `ss` and `netstat` print them) —
/// and nothing else but a short lowercase word after the first (`Mounted on`).
fn header_columns(line: &str) -> Option<Vec<usize>> {
    let line = line.trim_end_matches('\r');
    let mut starts = Vec::new();
    let mut at = 0;
    for word in line.split(' ') {
        if !word.is_empty() {
            let capitals = word.bytes().any(|b| b.is_ascii_uppercase())
                && word.bytes().all(|b| {
                    b.is_ascii_uppercase() || b.is_ascii_digit() || b"%/_-().".contains(&b)
                });
            let capitalised = word.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
                && word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"%/_-():+#".contains(&b));
            let connective = !starts.is_empty()
                && word.len() <= 2
                && word.bytes().all(|b| b.is_ascii_lowercase());
            if capitals || capitalised {
                starts.push(at);
            } else if !connective {
                return None;
            }
        }
        at += word.len() + 1;
    }
    (starts.len() >= 3).then_some(starts)
}

/// A row's text under the column from `start` to `end` (the next column's start), trimmed; `None` when the row
/// ends before it or a cut would split a character.
fn cell(row: &str, start: usize, end: Option<usize>) -> Option<&str> {
    let row = row.trim_end_matches('\r');
    let end = end.unwrap_or(row.len()).min(row.len());
    let value = row.get(start..end)?.trim();
    (!value.is_empty()).then_some(value)
}

/// A value with its numbers blanked when it also has letters (`Up 3 hours`, `Exited (137) 5 minutes ago`, `3d`),
/// so times and sizes inside words compare by shape; a bare number or ratio (`0` restarts, `1/1` ready) keeps its
/// digits, since there the number is the value.
fn shape(value: &str) -> String {
    if !value.bytes().any(|b| b.is_ascii_alphabetic()) {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len());
    let mut in_number = false;
    for c in value.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::recs_of as recs;

    fn pods(odd: &[(usize, &str, &str, &str)]) -> String {
        let mut s = String::from(
            "NAME                         READY   STATUS             RESTARTS   AGE\n",
        );
        for i in 0..40 {
            let (ready, status, restarts) = odd
                .iter()
                .find(|o| o.0 == i)
                .map(|o| (o.1, o.2, o.3))
                .unwrap_or(("1/1", "Running", "0"));
            s.push_str(&format!(
                "web-{i:03}-7d9f8c6b5-x{i:03}        {ready:<7} {status:<18} {restarts:<10} 3d\n"
            ));
        }
        s
    }

    #[test]
    fn the_rows_unlike_the_others_are_found_in_any_column() {
        let text = pods(&[
            (7, "0/1", "CrashLoopBackOff", "14"),
            (21, "1/1", "Running", "3"),
            (30, "0/1", "Pending", "0"),
        ]);
        assert_eq!(outlier_rows(&recs(&text)), vec![8, 22, 31]);
    }

    #[test]
    fn numbers_inside_words_compare_by_shape_and_bare_numbers_by_value() {
        assert_eq!(shape("Up 3 hours"), "Up # hours");
        assert_eq!(
            shape("Exited (137) 5 minutes ago"),
            "Exited (#) # minutes ago"
        );
        assert_eq!(shape("45h"), "#h");
        assert_eq!(shape("14"), "14");
        assert_eq!(shape("0/1"), "0/1");
        let mut text =
            String::from("CONTAINER ID   IMAGE          STATUS                       NAMES\n");
        for i in 0..12 {
            let status = if i == 5 {
                "Exited (137) 5 minutes ago".to_owned()
            } else {
                format!("Up {} hours", i + 1)
            };
            text.push_str(&format!(
                "{:012x}   nginx:1.25     {status:<28} web_{i}\n",
                0xabc000 + i
            ));
        }
        assert_eq!(outlier_rows(&recs(&text)), vec![6]);
    }

    #[test]
    fn a_capitalised_header_heads_a_table_too() {
        // `netstat -tn`: established connections and the two that are not, one of them with bytes stuck unread.
        let mut text = String::from(
            "Proto Recv-Q Send-Q Local Address           Foreign Address         State\n",
        );
        for i in 0..20 {
            let (recv, state) = match i {
                4 => ("4096", "CLOSE_WAIT"),
                13 => ("0", "TIME_WAIT"),
                _ => ("0", "ESTABLISHED"),
            };
            let local = format!("10.0.0.5:{}", 40000 + i);
            let remote = format!("10.0.0.{}:443", 20 + i);
            text.push_str(&format!(
                "tcp   {recv:>6} {:>6} {local:<23} {remote:<23} {state}\n",
                0
            ));
        }
        assert_eq!(outlier_rows(&recs(&text)), vec![5, 14]);
    }

    #[test]
    fn no_header_no_common_value_or_too_few_rows_find_nothing() {
        // No capitals header (`ls -l`, `pip list`): nothing.
        let listing: String = (0..30)
            .map(|i| format!("-rw-r--r-- 1 user user {} Dec  3 file_{i}.txt\n", 100 + i))
            .collect();
        assert!(outlier_rows(&recs(&listing)).is_empty());
        // Values spread over the rows (four conditions in turn): no column has a common value.
        let mut spread = String::from("NAME      CONDITION     VERSION\n");
        for i in 0..20 {
            let condition = ["Ready", "NotReady", "Unknown", "Cordoned"][i % 4];
            spread.push_str(&format!("node-{i:02}   {condition:<13} v1.{i}.0\n"));
        }
        assert!(outlier_rows(&recs(&spread)).is_empty());
        // Seven rows: too few to call a value common.
        let short = pods(&[(2, "0/1", "Pending", "0")]);
        let few: String = short.split_inclusive('\n').take(8).collect();
        assert!(outlier_rows(&recs(&few)).is_empty());
        // A header made of two words, or a line of prose in capitals with lower case after: not a header.
        assert!(header_columns("BUILD SUCCESSFUL").is_none());
        assert!(header_columns("NAME STATUS age").is_none());
        assert!(header_columns("Compiling the crate now").is_none());
        assert!(header_columns("See The Docs.").is_none());
        assert_eq!(
            header_columns("Filesystem      Size  Used Avail Use% Mounted on"),
            Some(vec![0, 16, 22, 27, 33, 38])
        );
        assert_eq!(
            header_columns("State  Recv-Q Send-Q Local Address:Port"),
            Some(vec![0, 7, 14, 21, 27])
        );
        assert_eq!(header_columns("NAME   READY STATUS"), Some(vec![0, 7, 13]));
    }

    #[test]
    fn outliers_are_bounded_and_cells_never_split_a_character() {
        let mut text = String::from("NAME     STATUS    NOTE\n");
        for i in 0..200 {
            let status = if i % 5 == 0 { "Failed" } else { "Ok" };
            text.push_str(&format!("job-{i:03}  {status:<9} é\n"));
        }
        let found = outlier_rows(&recs(&text));
        assert_eq!(found.len(), MAX_ROWS);
        assert_eq!(found[0], 1);
        assert_eq!(cell("ab\u{e9}cd", 3, None), None);
    }
}

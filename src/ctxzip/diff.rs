//! Unified diffs (`git diff`, `git show`, patches).
//!
//! In the request path a diff keeps every file header and every hunk header, and every `+`/`-` line of a real
//! change (an agent reviews and applies what it sees); context lines are trimmed to one on each side of a change.
//! Whole hunks go behind markers only where nothing is lost to a reader: a file that is only moved (deleted here,
//! added there with the same lines) and, when the changed lines exceed a budget, lock files and generated files —
//! each leaving its `@@` header and a marker with its churn — and hunks that change only layout (a formatter's
//! diff: the same code on both sides once [`layout`] sets its whitespace, trailing commas and, in
//! Python and JS/TS, its quote style aside), whose marker says `layout only`. Error, keep-pattern and relevant
//! lines stay visible wherever they are.

use super::layout::{self, Lang};
use super::relevance::{is_error_line, is_floor_line};
use super::{Ctx, Tally, Unit};

/// Changed lines shown before whole hunks start being offloaded.
const MAX_CHANGED: usize = 600;
/// Query-relevant lines kept visible beyond the changes (error and keep-pattern lines are unbounded).
const MAX_RELEVANT: usize = 40;
/// Context lines kept on each side of a change.
const CONTEXT: usize = 1;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Header,
    Add,
    Del,
    Context,
}

struct Hunk {
    /// Index of the `@@` line; the hunk's lines follow it up to `end`.
    header: usize,
    end: usize,
    /// The file whose section holds the hunk; `None` for a hunk before any file header.
    file: Option<usize>,
    adds: usize,
    dels: usize,
}

pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let (body, trailing_newline) = match text.strip_suffix('\n') {
        Some(b) => (b, true),
        None => (text, false),
    };
    let lines: Vec<&str> = body.split('\n').collect();
    let (roles, hunks, files) = parse(&lines);
    let n = lines.len();
    let mut relevant_left = MAX_RELEVANT;
    // Why a line must stay: a keep-pattern or query hit; or an error or floor line, which is shown once.
    let (protected, errorish): (Vec<bool>, Vec<bool>) = lines
        .iter()
        .map(|l| {
            let h = ctx.matcher.scan(l.as_bytes());
            let relevant = h.query != 0 && relevant_left > 0;
            if relevant {
                relevant_left -= 1;
            }
            let errorish = is_error_line(l) || is_floor_line(l);
            (
                h.keep || relevant || errorish,
                errorish && !h.keep && !relevant,
            )
        })
        .unzip();
    let mut keep: Vec<bool> = (0..n)
        .map(|i| roles[i] != Role::Context || protected[i])
        .collect();
    let mut shown: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for i in 0..n {
        if roles[i] != Role::Context {
            continue;
        }
        let near = |j: usize| matches!(roles.get(j), Some(Role::Add | Role::Del));
        if (1..=CONTEXT).any(|d| near(i + d) || (i >= d && near(i - d))) {
            keep[i] = true;
        } else if errorish[i] && !shown.insert(lines[i]) {
            // An unchanged line far from any change, kept only for its error word, is already visible above as
            // the exact line (`raise ValidationError(` in every hunk of a validators diff).
            keep[i] = false;
        }
        if keep[i] {
            shown.insert(lines[i]);
        }
    }
    // Every `+`/`-` line of a real change stays. What goes behind markers whole: files that are only moved (one
    // file deleted, another added with exactly its lines) and, while the changed lines exceed the budget, the
    // hunks of lock files and generated artefacts, largest first.
    let moved = moved_files(&lines, &roles, &hunks, files.len());
    // A hunk before any file header (a `---` line alone, a mangled `diff --git`) belongs to no file: not moved.
    let moved_to = |file: Option<usize>| file.and_then(|f| moved[f]);
    let mut offloaded: Vec<bool> = hunks.iter().map(|h| moved_to(h.file).is_some()).collect();
    // A hunk whose code is the same on both sides goes behind its marker too, where the marker is the shorter.
    let layout_only: Vec<bool> = hunks
        .iter()
        .zip(&offloaded)
        .map(|(h, &off)| {
            let lang = h.file.and_then(|f| Lang::of_path(files[f]));
            !off && lang.is_some_and(|lang| same_code(&lines, &roles, h, lang)) && {
                let shown: usize = (h.header + 1..h.end)
                    .filter(|&j| keep[j])
                    .map(|j| lines[j].len() + 1)
                    .sum();
                shown > ctx.marker(h.end - h.header - 1, Unit::Lines).len() + LAYOUT_NOTE_LEN
            }
        })
        .collect();
    for (off, &layout) in offloaded.iter_mut().zip(&layout_only) {
        *off |= layout;
    }
    let changed: usize = hunks
        .iter()
        .zip(&offloaded)
        .filter(|(_, off)| !**off)
        .map(|(h, _)| h.adds + h.dels)
        .sum();
    if changed > MAX_CHANGED {
        let mut order: Vec<usize> = (0..hunks.len())
            .filter(|&h| !offloaded[h] && hunks[h].file.is_some_and(|f| is_bulk_file(files[f])))
            .collect();
        order.sort_by_key(|&h| (std::cmp::Reverse(hunks[h].adds + hunks[h].dels), h));
        let mut remaining = changed;
        for h in order {
            if remaining <= MAX_CHANGED {
                break;
            }
            offloaded[h] = true;
            remaining -= hunks[h].adds + hunks[h].dels;
        }
    }
    for (h, hk) in hunks.iter().enumerate() {
        if offloaded[h] {
            let body = hk.header + 1..hk.end;
            for j in body {
                keep[j] = protected[j] && (!errorish[j] || keep[j] || roles[j] != Role::Context);
            }
        }
    }
    let mut out = String::with_capacity(text.len() / 2);
    let mut trimmed = 0;
    let mut hunk_of_line = vec![usize::MAX; n];
    for (h, hk) in hunks.iter().enumerate() {
        hunk_of_line[hk.header + 1..hk.end]
            .iter_mut()
            .for_each(|x| *x = h);
    }
    let mut i = 0;
    while i < n {
        if keep[i] {
            out.push_str(lines[i]);
            out.push('\n');
            i += 1;
            continue;
        }
        let h = hunk_of_line[i];
        let start = i;
        while i < n && !keep[i] && hunk_of_line[i] == h {
            i += 1;
        }
        if h != usize::MAX && offloaded[h] {
            let (adds, dels) = (hunks[h].adds, hunks[h].dels);
            tally.add(Unit::Lines, i - start);
            out.push_str(&ctx.marker(i - start, Unit::Lines));
            match moved_to(hunks[h].file).map(|other| files[other]) {
                Some(other) if dels > 0 => out.push_str(&format!(" (-{dels}: moved to {other})\n")),
                Some(other) => out.push_str(&format!(" (+{adds}: moved from {other})\n")),
                None if layout_only[h] => {
                    out.push_str(&format!(" (+{adds} -{dels}, layout only)\n"))
                }
                None => out.push_str(&format!(" (+{adds} -{dels})\n")),
            }
        } else {
            trimmed += i - start;
        }
    }
    if trimmed > 0 {
        tally.add(Unit::Lines, trimmed);
        out.push_str(&ctx.marker(trimmed, Unit::Lines));
        out.push_str(" (context lines trimmed)\n");
    }
    if !trailing_newline {
        out.pop();
    }
    (out.len() < text.len()).then_some(out)
}

/// Roles of all lines, the hunks, and the file path of each file's section: one a `diff --git` line opens (its
/// `+++` line is the same file's), or else one a `+++` line opens (`ruff format --diff`, `diff -ru`: no
/// `diff --git` lines, a `+++` per file).
fn parse<'a>(lines: &[&'a str]) -> (Vec<Role>, Vec<Hunk>, Vec<&'a str>) {
    let mut roles = vec![Role::Header; lines.len()];
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut files: Vec<&str> = Vec::new();
    // A `diff --git` line opened the current file and its `+++` line is still to come.
    let mut git_file = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("diff --git ") {
            files.push(line.rsplit(' ').next().unwrap_or(""));
            git_file = true;
        } else if let Some(path) = line.strip_prefix("+++ ") {
            if !git_file {
                // `+++ b/x.py\t2026-01-01 10:00:00`: the path before the timestamp; a deleted file's, or that of a
                // file compared with standard input (`prettier x.js | diff -u x.js -`), is on the `---` line above.
                let path_of = |p: &'a str| p.split('\t').next().unwrap_or(p);
                let path = match (path_of(path), i.checked_sub(1).map(|j| lines[j])) {
                    (new @ ("/dev/null" | "-"), Some(above)) => {
                        above.strip_prefix("--- ").map_or(new, path_of)
                    }
                    (path, _) => path,
                };
                files.push(path);
            }
            git_file = false;
        }
        let Some((mut old, mut new)) = hunk_counts(line) else {
            i += 1;
            continue;
        };
        let header = i;
        let (mut adds, mut dels) = (0, 0);
        i += 1;
        while i < lines.len() && (old > 0 || new > 0 || lines[i].starts_with('\\')) {
            let l = lines[i];
            match l.as_bytes().first() {
                Some(b'+') => {
                    roles[i] = Role::Add;
                    adds += 1;
                    new = new.saturating_sub(1);
                }
                Some(b'-') => {
                    roles[i] = Role::Del;
                    dels += 1;
                    old = old.saturating_sub(1);
                }
                Some(b'\\') => {}
                Some(b' ') | None => {
                    roles[i] = Role::Context;
                    old = old.saturating_sub(1);
                    new = new.saturating_sub(1);
                }
                Some(_) => break,
            }
            i += 1;
        }
        hunks.push(Hunk {
            header,
            end: i,
            file: files.len().checked_sub(1),
            adds,
            dels,
        });
    }
    (roles, hunks, files)
}

/// A moved file is shown as a deletion and an addition of the same lines (a diff without rename detection):
/// below this many lines the move is cheap to show as it is.
const MIN_MOVED_LINES: usize = 8;

/// For each file, the file it was moved to or from: a file whose hunks only delete, and another whose hunks only
/// add exactly the deleted lines.
fn moved_files(
    lines: &[&str],
    roles: &[Role],
    hunks: &[Hunk],
    n_files: usize,
) -> Vec<Option<usize>> {
    let mut content: Vec<(Vec<&str>, Vec<&str>)> = vec![(Vec::new(), Vec::new()); n_files];
    for h in hunks {
        let Some((added, deleted)) = h.file.map(|f| &mut content[f]) else {
            continue;
        };
        for i in h.header + 1..h.end {
            match roles[i] {
                Role::Add => added.push(&lines[i][1..]),
                Role::Del => deleted.push(&lines[i][1..]),
                _ => {}
            }
        }
    }
    let mut moved = vec![None; n_files];
    for from in 0..n_files {
        let (added, deleted) = &content[from];
        if !added.is_empty() || deleted.len() < MIN_MOVED_LINES || moved[from].is_some() {
            continue;
        }
        let to = (0..n_files).find(|&to| {
            to != from
                && moved[to].is_none()
                && content[to].1.is_empty()
                && content[to].0 == *deleted
        });
        if let Some(to) = to {
            moved[from] = Some(to);
            moved[to] = Some(from);
        }
    }
    moved
}

/// The length of a layout-only marker's note beyond the marker: ` (+12 -34, layout only)`.
const LAYOUT_NOTE_LEN: usize = 24;

/// Whether a hunk's old side (its context and `-` lines) and new side (its context and `+` lines) are the same
/// code laid out differently. Both sides are compared whole, context included, so a line moved past its
/// neighbours is a change; a hunk that only adds or only deletes, or that ends one side without a newline and
/// not the other, is never layout only.
fn same_code(lines: &[&str], roles: &[Role], h: &Hunk, lang: Lang) -> bool {
    if h.adds == 0 || h.dels == 0 {
        return false;
    }
    let (mut old, mut new) = (Vec::new(), Vec::new());
    // `\ No newline at end of file` after a side's last line.
    let (mut old_open, mut new_open) = (false, false);
    for j in h.header + 1..h.end {
        let text = lines[j].get(1..).unwrap_or("");
        match roles[j] {
            Role::Add => new.push(text),
            Role::Del => old.push(text),
            Role::Context => {
                old.push(text);
                new.push(text);
            }
            Role::Header => match roles[j - 1] {
                Role::Add => new_open = true,
                Role::Del => old_open = true,
                _ => (old_open, new_open) = (true, true),
            },
        }
    }
    old_open == new_open && layout::same_code(&old, &new, lang)
}

/// `(old_count, new_count)` of a `@@ -a,b +c,d @@` header (a missing count means 1).
fn hunk_counts(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let end = rest.find(" @@")?;
    let mut parts = rest[..end].split(" +");
    let count = |s: &str| -> Option<usize> {
        match s.split_once(',') {
            Some((_, c)) => c.parse().ok(),
            None => s.parse::<usize>().ok().map(|_| 1),
        }
    };
    let old = count(parts.next()?)?;
    let new = count(parts.next()?)?;
    Some((old, new))
}

/// Lock files and generated artefacts: their hunks are bulk, offloaded first.
fn is_bulk_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(
        name,
        "Cargo.lock"
            | "package-lock.json"
            | "yarn.lock"
            | "pnpm-lock.yaml"
            | "poetry.lock"
            | "go.sum"
            | "Gemfile.lock"
            | "composer.lock"
            | "uv.lock"
    ) || [
        ".min.js", ".min.css", ".map", ".snap", ".lock", ".pb.go", "_pb2.py",
    ]
    .iter()
    .any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::super::{Options, find_markers};
    use super::*;

    fn ctx() -> Ctx {
        Ctx::new("0123456789ab".into(), &Options::default())
    }

    #[test]
    fn context_trimmed_changes_kept() {
        let mut d = String::from(
            "diff --git a/src/x.rs b/src/x.rs\nindex 1..2 100644\n--- a/src/x.rs\n+++ b/src/x.rs\n",
        );
        d.push_str("@@ -1,21 +1,21 @@\n");
        for i in 0..10 {
            d.push_str(&format!(" ctx {i}\n"));
        }
        d.push_str("-old line\n+new line\n");
        for i in 10..20 {
            d.push_str(&format!(" ctx {i}\n"));
        }
        let out = compress(&d, &ctx(), &mut Tally::default()).unwrap_or_default();
        assert!(
            out.contains("@@ -1,21 +1,21 @@\n ctx 9\n-old line\n+new line\n ctx 10\n"),
            "{out}"
        );
        assert!(!out.contains("ctx 5"));
        assert!(out.contains("18_lines_offloaded>> (context lines trimmed)"));
    }

    #[test]
    fn a_hunk_before_any_file_header_belongs_to_no_file() {
        // Found by the compress fuzz target: a mangled `diff --git` line and no `+++` header, so the hunk had no
        // file and indexing the per-file table panicked.
        let mut d = String::from("diff -oooo-git a/m.py b/m.py\n--- b/m.py\n@@ -1,40 +1,42 @@\n");
        for i in 0..40 {
            d.push_str(&format!(" unchanged line {i} of the module body\n"));
        }
        d.push_str("+added one\n+added two\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&d, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(out.contains("+added one\n+added two"), "{out}");
        assert!(out.len() < d.len());
    }

    #[test]
    fn an_unchanged_error_line_far_from_changes_is_shown_once() {
        let mut d =
            String::from("diff --git a/v.py b/v.py\nindex 1..2 100644\n--- a/v.py\n+++ b/v.py\n");
        for h in 0..4 {
            d.push_str(&format!("@@ -{0},9 +{0},9 @@\n", h * 20 + 1));
            d.push_str("        except ValidationError:\n");
            for i in 0..3 {
                d.push_str(&format!("        step_{h}_{i}()\n"));
            }
            d.push_str(&format!("-        old_{h}()\n+        new_{h}()\n"));
            for i in 3..6 {
                d.push_str(&format!("        step_{h}_{i}()\n"));
            }
        }
        let out = compress(&d, &ctx(), &mut Tally::default()).unwrap_or_default();
        assert_eq!(
            out.matches("        except ValidationError:\n").count(),
            1,
            "{out}"
        );
        for h in 0..4 {
            assert!(out.contains(&format!("-        old_{h}()\n+        new_{h}()\n")));
        }
    }

    #[test]
    fn every_change_stays_and_moved_files_are_offloaded() {
        let body: Vec<String> = (0..40).map(|i| format!("line {i} of the module")).collect();
        let mut d = String::from(
            "diff --git a/src/old.rs b/src/old.rs\ndeleted file mode 100644\n--- a/src/old.rs\n+++ /dev/null\n@@ -1,40 +0,0 @@\n",
        );
        for l in &body {
            d.push_str(&format!("-{l}\n"));
        }
        d.push_str("diff --git a/src/new.rs b/src/new.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1,40 @@\n");
        for l in &body {
            d.push_str(&format!("+{l}\n"));
        }
        // A big real change: all of it stays, whatever the budget.
        d.push_str("diff --git a/src/big.rs b/src/big.rs\n--- a/src/big.rs\n+++ b/src/big.rs\n@@ -1,700 +1,700 @@\n");
        for i in 0..700 {
            d.push_str(&format!("-old {i}\n+new {i}\n"));
        }
        let out = compress(&d, &ctx(), &mut Tally::default()).unwrap_or_default();
        assert!(out.contains("@@ -1,40 +0,0 @@\n<<ctxzip:0123456789ab 40_lines_offloaded>> (-40: moved to b/src/new.rs)\n"), "{out}");
        assert!(out.contains("@@ -0,0 +1,40 @@\n<<ctxzip:0123456789ab 40_lines_offloaded>> (+40: moved from b/src/old.rs)\n"));
        for i in 0..700 {
            assert!(out.contains(&format!("-old {i}\n+new {i}\n")));
        }
    }

    /// `ruff format --diff`: a `---`/`+++` pair per file and no `diff --git` line.
    fn formatter_diff(first_file: &str) -> String {
        let mut d = format!("--- {first_file}\n+++ {first_file}\n");
        // Layout only: a call split over lines with a trailing comma.
        d.push_str("@@ -1,3 +1,7 @@\n import os\n");
        d.push_str("-result = compute(first_argument, second_argument, third_argument_here)\n");
        d.push_str("+result = compute(\n+    first_argument,\n+    second_argument,\n+    third_argument_here,\n+)\n");
        d.push_str(" print(result)\n");
        // Layout only: quotes, with an error line inside.
        d.push_str("@@ -20,4 +24,4 @@ def report():\n     if not uploaded:\n");
        d.push_str("-        log('error: the upload to the archive failed', code=3)\n");
        d.push_str("-        notify('the operator on duty, by mail and by pager')\n");
        d.push_str("+        log(\"error: the upload to the archive failed\", code=3)\n");
        d.push_str("+        notify(\"the operator on duty, by mail and by pager\")\n");
        d.push_str("     return summary\n");
        // A second file, opened by its own `+++` line: a real change beside a layout-only hunk.
        d.push_str("--- b.py\t2026-01-01 10:00:00.000000 +0000\n+++ b.py\t2026-01-01 10:00:01.000000 +0000\n");
        d.push_str("@@ -5,3 +5,3 @@ def add(a, b):\n     total = prepare(a, b)\n");
        d.push_str("-    return total + compensation_for_the_rounding_error\n");
        d.push_str("+    return total - compensation_for_the_rounding_error\n");
        d.push_str(" \n");
        d.push_str("@@ -30,4 +30,3 @@\n def scale(values):\n");
        d.push_str("-    return [value * factor\n-            for value in values_to_be_scaled_by_the_factor]\n");
        d.push_str("+    return [value * factor for value in values_to_be_scaled_by_the_factor]\n");
        d.push_str(" \n");
        d
    }

    #[test]
    fn layout_only_hunks_go_behind_markers() {
        let d = formatter_diff("a.py");
        let out = compress(&d, &ctx(), &mut Tally::default()).unwrap_or_default();
        // The real change, in the second file, stays whole.
        assert!(
            out.contains("-    return total + compensation_for_the_rounding_error\n+    return total - compensation_for_the_rounding_error\n"),
            "{out}"
        );
        assert!(
            out.contains(
                "@@ -1,3 +1,7 @@\n<<ctxzip:0123456789ab 8_lines_offloaded>> (+5 -1, layout only)\n"
            ),
            "{out}"
        );
        assert!(out.contains("@@ -30,4 +30,3 @@\n<<ctxzip:0123456789ab 5_lines_offloaded>> (+1 -2, layout only)\n"), "{out}");
        // The error line stays visible inside its layout-only hunk, the rest of the hunk behind markers.
        assert!(out.contains("@@ -20,4 +24,4 @@ def report():\n<<ctxzip:0123456789ab 1_lines_offloaded>> (+2 -2, layout only)\n-        log('error: the upload to the archive failed', code=3)\n<<ctxzip:0123456789ab 1_lines_offloaded>> (+2 -2, layout only)\n+        log(\"error: the upload to the archive failed\", code=3)\n<<ctxzip:0123456789ab 2_lines_offloaded>> (+2 -2, layout only)\n"), "{out}");
        assert!(!out.contains("notify("), "{out}");
        assert!(!out.contains("values_to_be_scaled"), "{out}");
        // Every hunk header stays.
        assert_eq!(out.matches("\n@@ ").count(), 4, "{out}");
    }

    #[test]
    fn a_file_of_an_unknown_language_stays_whole() {
        let mut d = String::from("--- run.sh\n+++ run.sh\n@@ -1,3 +1,3 @@\n set -e\n");
        d.push_str("-echo 'deploying the service to the staging cluster now'\n");
        d.push_str("+echo \"deploying the service to the staging cluster now\"\n");
        d.push_str(" exit 0\n");
        d.push_str(&formatter_diff("x.py"));
        let out = compress(&d, &ctx(), &mut Tally::default()).unwrap_or_default();
        assert!(out.contains("@@ -1,3 +1,3 @@\n set -e\n-echo 'deploying the service to the staging cluster now'\n+echo \"deploying the service to the staging cluster now\"\n exit 0\n"), "{out}");
        // The Python file after it is still taken for what it is: its own `+++` line opened it.
        assert!(out.contains("(+5 -1, layout only)"), "{out}");
    }

    #[test]
    fn each_plus_plus_plus_line_opens_a_file() {
        let d = formatter_diff("a.py");
        let lines: Vec<&str> = d.lines().collect();
        let (_, hunks, files) = parse(&lines);
        assert_eq!(files, ["a.py", "b.py"]);
        let owners: Vec<Option<usize>> = hunks.iter().map(|h| h.file).collect();
        assert_eq!(owners, [Some(0), Some(0), Some(1), Some(1)]);
        // A `diff --git` section's `+++` line is its own file's, and a deleted file's path is on its `---` line.
        let git = "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-a\n+b\n--- gone.py\t2026-01-01\n+++ /dev/null\t1970-01-01\n@@ -1 +0,0 @@\n-a\n--- lib/x.js\t2026-01-01\n+++ -\t2026-01-01\n@@ -1 +1 @@\n-a\n+b\n";
        let lines: Vec<&str> = git.lines().collect();
        assert_eq!(parse(&lines).2, ["b/x.rs", "gone.py", "lib/x.js"]);
    }

    #[test]
    fn bulk_hunks_offloaded_first() {
        let mut d = String::from(
            "diff --git a/Cargo.lock b/Cargo.lock\n--- a/Cargo.lock\n+++ b/Cargo.lock\n@@ -1,0 +1,700 @@\n",
        );
        for i in 0..700 {
            d.push_str(&format!("+dep {i}\n"));
        }
        d.push_str("diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-a\n+b\n");
        let out = compress(&d, &ctx(), &mut Tally::default()).unwrap_or_default();
        assert!(out.contains(
            "@@ -1,0 +1,700 @@\n<<ctxzip:0123456789ab 700_lines_offloaded>> (+700 -0)\n"
        ));
        assert!(out.contains("@@ -1 +1 @@\n-a\n+b\n"));
        assert_eq!(find_markers(&out).len(), 1);
    }
}

//! Search results (`grep -rn`, ripgrep): `path:line:content`, or `path:content` from a search without line numbers.
//!
//! In the request path a search answer keeps, per file, a couple of matches (error, keep-pattern and
//! query-relevant ones first, verbatim; warnings as the line compressor keeps them, a few of each kind) and a count of the rest; it shows the first files, the last ones and
//! every file with an error, keep or relevant hit, and sums up the hidden files by top directory behind one
//! marker. The model sees where the matches are and how many, which is usually what it searched for.

use rustc_hash::FxHashMap as FastMap;

use super::detect::search_path;
use super::lines::WarningBudget;
use super::relevance::{MAX_ERROR_LINE_BYTES, is_error_line, selective_terms};
use super::truncate::{LONG_LINE, shorten};
use super::{Ctx, Tally, Unit};

/// Matches shown per shown file (protected ones may add to it).
const PER_FILE: usize = 2;
/// Files shown from the start and from the end of the results.
const HEAD_FILES: usize = 8;
const TAIL_FILES: usize = 2;
/// Files shown because they match the query best.
const RELEVANT_FILES: usize = 10;
/// Top directories listed in the summary of hidden files.
const SUMMARY_DIRS: usize = 5;

struct File<'a> {
    path: &'a str,
    lines: Vec<usize>,
    protected: bool,
    score: u32,
}

pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let (body, trailing_newline) = match text.strip_suffix('\n') {
        Some(b) => (b, true),
        None => (text, false),
    };
    let lines: Vec<&str> = body.split('\n').collect();
    let n = lines.len();
    let mut protected = vec![false; n];
    let mut score = vec![0u32; n];
    let mut files: Vec<File<'_>> = Vec::new();
    let mut index: FastMap<&str, usize> = FastMap::default();
    let mut other: Vec<usize> = Vec::new();
    // Warning lines stay as the line compressor keeps them: a few of each kind, a few dozen in all. Sphinx's 400
    // `path:line: WARNING: …` lines read as search hits, and each held its place.
    let mut warnings = WarningBudget::default();
    for (i, line) in lines.iter().enumerate() {
        let hits = ctx.matcher.scan(line.as_bytes());
        let floor = super::detect::holds_floor(line);
        protected[i] = hits.keep || floor || (is_error_line(line) && warnings.admit(line));
        score[i] = hits.query;
        let Some(path) = search_path(line) else {
            other.push(i);
            continue;
        };
        let f = *index.entry(path).or_insert_with(|| {
            files.push(File {
                path,
                lines: Vec::new(),
                protected: false,
                score: 0,
            });
            files.len() - 1
        });
        let file = &mut files[f];
        file.lines.push(i);
        file.protected |= protected[i];
    }
    // A term on most lines picks none out (the searched pattern itself is on every hit): only the selective terms
    // score a line.
    let mask = selective_terms(score.iter().copied(), n);
    for s in &mut score {
        *s = (*s & mask).count_ones();
    }
    for f in &mut files {
        f.score = f.lines.iter().map(|&i| score[i]).max().unwrap_or(0);
    }
    let nf = files.len();
    let mut show_file = vec![false; nf];
    for (fi, f) in files.iter().enumerate() {
        show_file[fi] = f.protected || fi < HEAD_FILES || fi + TAIL_FILES >= nf;
    }
    let mut by_score: Vec<(u32, usize)> = files
        .iter()
        .enumerate()
        .filter(|(_, f)| f.score > 0)
        .map(|(i, f)| (f.score, i))
        .collect();
    by_score.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, fi) in by_score.iter().take(RELEVANT_FILES) {
        show_file[fi] = true;
    }

    // Paths under one directory (`/testbed/django/…`, an absolute search) are summed up below it.
    let common = common_dir(files.iter().map(|f| f.path));
    let mut out = String::with_capacity(text.len() / 8);
    let mut dropped = 0;
    let mut hidden: FastMap<&str, (usize, usize)> = FastMap::default();
    let mut hidden_files = 0;
    let emit = |out: &mut String, tally: &mut Tally, i: usize| {
        let verbatim = protected[i] && lines[i].len() <= MAX_ERROR_LINE_BYTES;
        if verbatim || lines[i].len() <= LONG_LINE {
            out.push_str(lines[i]);
        } else {
            out.push_str(&shorten(lines[i], ctx, tally));
        }
        out.push('\n');
    };
    // What each line becomes, decided file by file and then written in the output's own order: a build log read
    // as search results (Sphinx's `path:line: WARNING:` lines between its progress lines) keeps its sequence, and
    // a file whose hits come back later is not pulled together with its first ones.
    let mut keep = vec![false; n];
    // The file whose `… +N more` line follows this line (its last kept hit).
    let mut more_after: Vec<Option<(usize, usize)>> = vec![None; n];
    for (fi, f) in files.iter().enumerate() {
        if !show_file[fi] {
            hidden_files += 1;
            dropped += f.lines.len();
            let entry = hidden
                .entry(top_dir(&f.path[common.min(f.path.len())..]))
                .or_insert((0, 0));
            entry.0 += f.lines.len();
            entry.1 += 1;
            continue;
        }
        let mut ranked: Vec<usize> = f.lines.clone();
        ranked.sort_by_key(|&i| (!protected[i], std::cmp::Reverse(score[i]), i));
        let mut last = None;
        let mut chosen = 0;
        for (rank, &i) in ranked.iter().enumerate() {
            if rank < PER_FILE || protected[i] {
                keep[i] = true;
                chosen += 1;
                last = last.max(Some(i));
            }
        }
        let rest = f.lines.len() - chosen;
        if let Some(last) = last.filter(|_| rest > 0) {
            dropped += rest;
            more_after[last] = Some((fi, rest));
        }
    }
    for &i in &other {
        if protected[i] || score[i] > 0 {
            keep[i] = true;
        } else if !lines[i].trim().is_empty() && lines[i] != "--" {
            dropped += 1;
        }
    }
    for i in 0..n {
        if keep[i] {
            emit(&mut out, tally, i);
        }
        if let Some((fi, rest)) = more_after[i] {
            out.push_str(&format!("  … +{rest} more in {}\n", files[fi].path));
        }
    }
    if dropped == 0 {
        return None;
    }
    tally.add(Unit::Matches, dropped);
    out.push_str(&ctx.marker(dropped, Unit::Matches));
    if hidden_files > 0 {
        let mut dirs: Vec<(&str, (usize, usize))> = hidden.into_iter().collect();
        dirs.sort_unstable_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
        out.push_str(&format!(" {hidden_files} more files ("));
        for (j, (d, (m, nfiles))) in dirs.iter().take(SUMMARY_DIRS).enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            out.push_str(&format!("{d}: {m} in {nfiles} files"));
        }
        if dirs.len() > SUMMARY_DIRS {
            out.push_str(&format!(", +{} other dirs", dirs.len() - SUMMARY_DIRS));
        }
        out.push(')');
    }
    if trailing_newline {
        out.push('\n');
    }
    (out.len() < text.len()).then_some(out)
}

/// The length of the directory every path starts with (`/testbed/django/` of `/testbed/django/db/a.py` and
/// `/testbed/django/forms/b.py`), ending at a `/`; 0 when they share none.
fn common_dir<'a>(mut paths: impl Iterator<Item = &'a str>) -> usize {
    let Some(first) = paths.next() else {
        return 0;
    };
    let mut len = first.rfind('/').map_or(0, |i| i + 1);
    for p in paths {
        let same = first
            .bytes()
            .zip(p.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
        len = first[..same].rfind('/').map_or(0, |i| i + 1);
        if len == 0 {
            break;
        }
    }
    len
}

/// The first path component (`tokio-1.54.1/` for `./tokio-1.54.1/src/io.rs`), or the file itself.
fn top_dir(path: &str) -> &str {
    let p = path.trim_start_matches("./").trim_start_matches('/');
    match p.find('/') {
        Some(i) => &p[..=i],
        None => p,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Options;
    use super::*;

    #[test]
    fn few_matches_per_file_and_hidden_summary() {
        let mut text = String::new();
        for f in 0..60 {
            for l in 0..10 {
                text.push_str(&format!(
                    "./crate{}/src/f{f}.rs:{l}:    fn poll_{l}(&mut self)\n",
                    f % 3
                ));
            }
        }
        text = text.replace(
            "./crate1/src/f31.rs:5:    fn poll_5(&mut self)",
            "./crate1/src/f31.rs:5:    panic!(\"invalid state\")",
        );
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(out.contains("./crate1/src/f31.rs:5:    panic!(\"invalid state\")\n"));
        assert!(out.contains("./crate0/src/f0.rs:0:") && out.contains("./crate2/src/f59.rs:"));
        assert!(out.contains("  … +8 more in ./crate0/src/f0.rs\n"));
        assert!(out.contains("more files (crate"), "{out}");
        assert!(out.len() * 5 < text.len());
    }

    /// Sphinx prints 400 `path:line: WARNING: …` lines, which read as search hits: a few of each kind stay, not all.
    /// An absolute search sums its hidden files up below the directory they share.
    #[test]
    fn warnings_keep_a_few_of_each_kind_and_absolute_paths_are_summed_below_their_root() {
        let mut text = String::new();
        for f in 0..40 {
            for l in 0..10 {
                text.push_str(&format!(
                    "/srv/docs/{}/page{f}.rst:{l}: WARNING: py:obj reference target not found: name_{f}_{l} [ref.obj]\n",
                    if f % 2 == 0 { "api" } else { "guide" }
                ));
            }
        }
        text.push_str("/srv/docs/api/page3.rst:99: WARNING: Include file 'x.py' not found or reading it failed [docutils]\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        let shown = out.matches("reference target not found").count();
        assert!(shown <= 40, "{shown}: {out}");
        assert!(out.contains("reading it failed [docutils]\n"), "{out}");
        assert!(
            out.contains("more files (api/: ") && out.contains("guide/: "),
            "{out}"
        );
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// A build log whose warnings read as search hits keeps its order: a file's error printed after every other file's
    /// warnings stays there, and so does the `make` line that ends the log.
    #[test]
    fn lines_stay_in_the_outputs_order() {
        let mut text = String::from("Running Sphinx v7.2.6\nreading sources... [ 50%] api\n");
        for f in 0..30 {
            for l in 0..4 {
                text.push_str(&format!(
                    "docs/p{f}.rst:{l}: WARNING: duplicate label x{f}_{l}\n"
                ));
            }
        }
        text.push_str("writing output... [100%] index\n");
        text.push_str("docs/p0.rst:9: ERROR: Unknown directive type \"autofoo\".\n");
        text.push_str("make: *** [Makefile:20: html] Error 1\n");
        let ctx = Ctx::new("0123456789ab".into(), &Options::default());
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        // A missing line sorts last: the comparison that names it after another fails, and the first check
        // catches the last line missing.
        let at = |needle: &str| out.find(needle).unwrap_or(usize::MAX);
        assert!(at("make: ***") < usize::MAX, "{out}");
        assert!(at("docs/p29.rst:0:") < at("docs/p0.rst:9: ERROR"), "{out}");
        assert!(
            at("docs/p0.rst:9: ERROR") < at("+1 more in docs/p0.rst"),
            "{out}"
        );
        assert!(at("+1 more in docs/p0.rst") < at("make: ***"), "{out}");
        assert!(super::super::keeps_floor(&text, &out));
    }

    /// `grep -rn poll_ready`: the searched word is on every hit, so it ranks no file above another; the files a
    /// rarer query term names still stay.
    #[test]
    fn the_searched_pattern_on_every_line_picks_no_file() {
        let mut text = String::new();
        for f in 0..60 {
            for l in 0..3 {
                let call = if f == 40 {
                    "poll_ready(cx) // tower"
                } else {
                    "poll_ready(cx)"
                };
                text.push_str(&format!("./src/m{f}.rs:{l}:    self.inner.{call}\n"));
            }
        }
        let options = Options {
            query: vec!["poll_ready".into(), "tower".into()],
            ..Options::default()
        };
        let ctx = Ctx::new("0123456789ab".into(), &options);
        let out = compress(&text, &ctx, &mut Tally::default()).unwrap_or_default();
        assert!(out.contains("./src/m40.rs:0:"), "{out}");
        let files = out.matches("more in ./src/").count();
        assert!(files <= 11, "{files} files shown: {out}");
    }

    #[test]
    fn the_common_directory_ends_at_a_slash() {
        assert_eq!(common_dir(["/a/bc/x.rs", "/a/bd/y.rs"].into_iter()), 3);
        assert_eq!(common_dir(["/a/b/x.rs", "/a/b/y.rs"].into_iter()), 5);
        assert_eq!(common_dir(["src/x.rs", "tests/y.rs"].into_iter()), 0);
        assert_eq!(common_dir(std::iter::empty()), 0);
    }
}

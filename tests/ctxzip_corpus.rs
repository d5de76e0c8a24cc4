//! Corpus properties of ctxzip: real tool outputs (build logs, JSON answers, search results, listings,
//! compiler errors, a traceback) must shrink, keep every error line verbatim, keep keep-pattern hits, stay
//! valid JSON when they were JSON, name their original by hash, and compress deterministically. Also prints
//! the per-file token reduction (tiktoken o200k_base) and asserts the corpus-wide total.
//!
//! The corpus directory is `$CTXGATE_CORPUS`, else the repository's own `tests/fixtures/tool_outputs` (small
//! excerpts of real outputs; the development corpus feeds `ctxgate report` and the benchmarks, never a test).

use std::collections::HashSet;
use std::path::PathBuf;

use ctxgate::ctxzip::{Kind, Options, compress, find_markers, hash_of, is_floor_line};

fn corpus_dir() -> PathBuf {
    match std::env::var_os("CTXGATE_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tool_outputs"),
    }
}

/// (file name, content) of every corpus file, sorted by name.
fn corpus() -> Vec<(String, String)> {
    let dir = corpus_dir();
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let text = std::fs::read_to_string(e.path()).ok()?;
                    Some((name, text))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    assert!(!files.is_empty(), "no corpus files in {}", dir.display());
    files
}

/// Error lines (the floor's: error, fail, exception, fatal, panic, traceback) of `input` missing from `output` as
/// whole lines (a collapsed `line (×N)` counts). Warnings are not among them: past a few of each kind they may go
/// to the marker.
fn lost_error_lines<'a>(input: &'a str, output: &str) -> Vec<&'a str> {
    let out_lines: HashSet<&str> = output.lines().collect();
    input
        .lines()
        .filter(|l| is_floor_line(l))
        .filter(|l| !out_lines.contains(l) && !output.contains(&format!("{l} (×")))
        .collect()
}

fn check_common(name: &str, input: &str, opts: &Options) -> Option<ctxgate::ctxzip::Compressed> {
    let c = compress(input, opts)?;
    assert!(c.text.len() < input.len(), "{name}: not smaller");
    assert_eq!(c.hash, hash_of(input), "{name}: hash");
    let markers = find_markers(&c.text);
    assert!(!markers.is_empty(), "{name}: no marker");
    assert!(
        markers.iter().all(|(h, _)| *h == c.hash),
        "{name}: foreign marker"
    );
    assert_eq!(
        c.text.matches("<<ctxzip:").count(),
        markers.len(),
        "{name}: partial marker"
    );
    assert!(
        !c.note.contains(' ') && c.note.ends_with("_offloaded"),
        "{name}: note {}",
        c.note
    );
    assert_eq!(
        compress(input, opts).as_ref(),
        Some(&c),
        "{name}: not deterministic"
    );
    if matches!(c.kind, Kind::JsonArray | Kind::JsonObject) {
        // Under a Codex exec header only the body is JSON.
        let body = c
            .text
            .split_once("\nOutput:\n")
            .map_or(c.text.as_str(), |(_, b)| b);
        assert!(
            serde_json::from_str::<serde_json::Value>(body).is_ok(),
            "{name}: invalid JSON"
        );
    } else {
        // JSON keeps error-like rows (checked by `json_error_rows_survive`); text keeps error lines.
        let lost = lost_error_lines(input, &c.text);
        assert!(lost.is_empty(), "{name}: lost error lines {lost:?}");
    }
    Some(c)
}

#[test]
fn every_corpus_file_keeps_its_properties() {
    for (name, text) in corpus() {
        let c = check_common(&name, &text, &Options::default());
        if text.len() > 20_000 {
            assert!(c.is_some(), "{name}: a large output should compress");
        }
    }
}

#[test]
fn keep_patterns_stay_visible() {
    for (name, text) in corpus() {
        // A distinctive token from the middle of the file, as an operator's keep pattern.
        let lines: Vec<&str> = text.lines().collect();
        let middle = lines.get(lines.len() / 2).copied().unwrap_or("");
        let Some(token) = middle
            .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
            .filter(|t| t.len() >= 6 && t.len() <= 40)
            .max_by_key(|t| t.len())
        else {
            continue;
        };
        let opts = Options {
            keep_patterns: vec![token.to_uppercase()],
            ..Options::default()
        };
        let Some(c) = check_common(&name, &text, &opts) else {
            continue;
        };
        assert!(
            c.text.to_lowercase().contains(&token.to_lowercase()),
            "{name}: keep pattern {token} lost"
        );
        if !matches!(c.kind, Kind::JsonArray | Kind::JsonObject) && middle.len() <= 4096 {
            assert!(
                c.text.lines().any(|l| l == middle),
                "{name}: keep line {middle:?} not verbatim"
            );
        }
    }
}

#[test]
fn query_relevant_lines_stay_visible() {
    let opts = Options {
        query: vec!["hyper-util".into(), "poll_flush".into()],
        ..Options::default()
    };
    for (name, text) in corpus() {
        let Some(c) = check_common(&name, &text, &opts) else {
            continue;
        };
        if text.contains("poll_flush") && c.kind == Kind::Search {
            assert!(
                c.text.contains("poll_flush"),
                "{name}: relevant line dropped"
            );
        }
    }
}

/// An error row injected into each JSON corpus document survives verbatim and the result stays valid.
#[test]
fn json_error_rows_survive() {
    let error_row =
        serde_json::json!({"name": "injected", "status": "failed", "error": "connection refused"});
    for (name, text) in corpus() {
        let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let target = match &mut doc {
            serde_json::Value::Array(a) => Some(a),
            serde_json::Value::Object(o) => o
                .values_mut()
                .filter_map(|v| v.as_array_mut())
                .max_by_key(|a| a.len()),
            _ => None,
        };
        let Some(arr) = target else {
            continue;
        };
        let mid = arr.len() / 2;
        arr.insert(mid, error_row.clone());
        for pretty in [false, true] {
            let input = if pretty {
                serde_json::to_string_pretty(&doc)
            } else {
                serde_json::to_string(&doc)
            };
            let input = input.unwrap_or_default();
            let Some(c) = check_common(&name, &input, &Options::default()) else {
                continue;
            };
            let out: serde_json::Value = serde_json::from_str(&c.text).unwrap_or_default();
            let arrays: Vec<&Vec<serde_json::Value>> = match &out {
                serde_json::Value::Array(a) => vec![a],
                serde_json::Value::Object(o) => o.values().filter_map(|v| v.as_array()).collect(),
                _ => vec![],
            };
            assert!(
                arrays.iter().any(|a| a.contains(&error_row)),
                "{name} (pretty={pretty}): error row lost"
            );
        }
    }
}

/// Codex `exec_command` outputs: the header stays verbatim and the body is compressed by its own kind.
#[test]
fn exec_command_header_is_kept() {
    for (name, text) in corpus().into_iter().filter(|(_, t)| t.len() > 20_000) {
        let wrapped = format!(
            "Chunk ID: 1a2b\nWall time: 1.2 seconds\nProcess exited with code 0\nOriginal token count: 9\nOutput:\n{text}"
        );
        let Some(c) = check_common(&name, &wrapped, &Options::default()) else {
            continue;
        };
        assert!(
            c.text
                .starts_with("Chunk ID: 1a2b\nWall time: 1.2 seconds\n"),
            "{name}: header lost"
        );
        let bare = compress(&text, &Options::default()).map(|b| b.kind);
        assert_eq!(
            Some(c.kind),
            bare,
            "{name}: body kind differs under a header"
        );
    }
}

/// Token reduction over the whole corpus with o200k_base; files left uncompressed count as unchanged.
#[test]
fn corpus_token_reduction_table() -> Result<(), Box<dyn std::error::Error>> {
    let bpe = tiktoken_rs::o200k_base()?;
    let count = |t: &str| bpe.encode_ordinary(t).len();
    let (mut before_total, mut after_total, mut lost_total) = (0usize, 0usize, 0usize);
    eprintln!(
        "\n{:<36} {:>11} {:>9} {:>9} {:>7} {:>7} {:>6}",
        "file", "kind", "tokens", "after", "saved", "lines", "errs"
    );
    for (name, text) in corpus() {
        let c = compress(&text, &Options::default());
        let before = count(&text);
        let (after, kind, lines) = match &c {
            Some(c) => (count(&c.text), c.kind.as_str(), format!("{}", c.lines_kept)),
            None => (before, "(none)", "-".into()),
        };
        let out = c.as_ref().map_or(text.as_str(), |c| c.text.as_str());
        let errors = text.lines().filter(|l| is_floor_line(l)).count();
        let lost = lost_error_lines(&text, out).len();
        lost_total += lost;
        before_total += before;
        after_total += after;
        let saved = 100.0 * (before - after.min(before)) as f64 / before.max(1) as f64;
        eprintln!(
            "{name:<36} {kind:>11} {before:>9} {after:>9} {saved:>6.1}% {lines:>7} {errors:>3}/{lost}"
        );
    }
    let saved = 100.0 * (before_total - after_total) as f64 / before_total as f64;
    eprintln!(
        "{:<36} {:>11} {before_total:>9} {after_total:>9} {saved:>6.1}%   (errs = error lines/lost)\n",
        "TOTAL", ""
    );
    assert_eq!(lost_total, 0, "error lines lost");
    assert!(saved >= 55.0, "token reduction {saved:.1}% < 55%");
    Ok(())
}

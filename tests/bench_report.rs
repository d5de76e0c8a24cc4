//! `scripts/bench/report.py`, the load benchmark's table maker, on raw results written here: the figures in
//! BENCHMARKS.md come from it, so what it computes is checked like code.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use std::path::Path;
use std::process::Command;

const HEADER: &str =
    "round\tsize\tmode\tconns\ttarget\trequests\tseconds\trps\tp50_us\tp99_us\tcpu_us_per_req\n";

/// One wrk run's row: p50 and CPU per request as given, the rest fixed.
fn row(round: u32, size: &str, target: &str, p50: u32, cpu: &str) -> String {
    format!(
        "{round}\t{size}\tsse\t1\t{target}\t1000\t8\t5000\t{p50}\t{}\t{cpu}\n",
        p50 * 3
    )
}

fn report(dir: &Path, rows: &str, upstream: &str) -> String {
    let results = dir.join("results.tsv");
    let sizes = dir.join("upstream.tsv");
    std::fs::write(&results, format!("{HEADER}{rows}")).unwrap();
    std::fs::write(&sizes, format!("size\tmode\tsent\treceived\n{upstream}")).unwrap();
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench/report.py"))
        .args([&results, &sizes])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_upstreams_share_of_a_marker_row_is_split_out_round_by_round() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = String::new();
    // Two rounds: the mock takes 40 and 50 µs longer on ctxgate's larger body; the hop's own share is 80 and 70 µs
    // against nginx's 30 and 50.
    for (round, direct, fwd, nginx, gate) in [(1, 160, 200, 190, 280), (2, 150, 200, 200, 270)] {
        rows += &row(round, "10k-marker", "direct", direct, "-");
        rows += &row(round, "10k-marker", "direct-fwd", fwd, "-");
        rows += &row(round, "10k-marker", "nginx", nginx, "50");
        rows += &row(round, "10k-marker", "ctxgate", gate, "100");
    }
    let out = report(dir.path(), &rows, "10k-marker\tsse\t10240\t11617\n");
    // The measure is unchanged: added p50 over direct with the client's body (120 against 40 µs).
    assert!(out.contains("| 155 / 195 / 275 |"), "{out}");
    assert!(out.contains("| 40 / 120 |"), "{out}");
    assert!(out.contains("3.0× **MISS**"), "{out}");
    // The note says the body grew, and the second table splits the added p50: medians of the rounds' differences.
    assert!(
        out.contains("ctxgate added its context_expand tool"),
        "{out}"
    );
    assert!(!out.contains("fewer bytes"), "{out}");
    let split = out
        .lines()
        .find(|l| l.starts_with("| 10 KB, marker, no expand call | SSE | 1 | 155 / 200 / 275 |"));
    assert!(split.is_some(), "no split row in:\n{out}");
    let split = split.unwrap();
    assert_eq!(
        split.split('|').map(str::trim).collect::<Vec<_>>()[5..9],
        ["45", "75", "40", "1.9×"]
    );
}

#[test]
fn rows_without_a_forwarded_body_get_no_second_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = String::new();
    for (target, p50, cpu) in [
        ("direct", 100, "-"),
        ("nginx", 120, "40"),
        ("ctxgate", 140, "60"),
    ] {
        rows += &row(1, "1m", target, p50, cpu);
    }
    let out = report(dir.path(), &rows, "1m\tsse\t1048576\t230000\n");
    assert!(out.contains("2.0× ok"), "{out}");
    assert!(out.contains("fewer bytes"), "{out}");
    assert!(!out.contains("direct-fwd"), "{out}");
    assert!(!out.contains("context_expand"), "{out}");
}

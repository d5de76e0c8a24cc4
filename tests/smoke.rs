//! `docker/smoke.sh` against a locally started `ctxgate serve` in front of `ctxgate-mock` (the real binaries, each
//! on a port 0-chosen address read from its start-up log line), so the smoke script is checked without a container
//! engine. A second run against a ctxgate with its stages off shows the script does fail.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "a test fails loudly on what it did not expect"
)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A spawned binary, killed when dropped.
struct Running {
    child: Child,
    url: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` and waits for its log line `<marker> http://ADDR`; the rest of its stderr is drained in the
/// background so it never blocks on a full pipe.
fn spawn(mut cmd: Command, marker: &str) -> Running {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1");
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let marker = marker.to_string();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent && let Some(at) = line.find(&marker) {
                let rest = &line[at + marker.len()..];
                let url: String = rest
                    .trim_start()
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != ',')
                    .collect();
                let _ = tx.send(url);
                sent = true;
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("no '<marker> http://ADDR' log line from {cmd:?} within 30 s"));
    Running { child, url }
}

fn start_pair(dir: &std::path::Path, env: &[(&str, &str)]) -> (Running, Running) {
    let mut mock = Command::new(env!("CARGO_BIN_EXE_ctxgate-mock"));
    mock.args(["--listen", "127.0.0.1:0"]);
    let mock = spawn(mock, "ctxgate-mock listening on");
    let mut proxy = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
    proxy
        .current_dir(dir)
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("{}/v1", mock.url))
        .arg("--store")
        .arg(dir.join("store/ctxgate.redb"))
        .envs(env.iter().copied());
    let proxy = spawn(proxy, "ctxgate listening on");
    (mock, proxy)
}

fn smoke(proxy: &Running, mock: &Running) -> std::process::Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/docker/smoke.sh");
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(script)
        .arg(&proxy.url)
        .env("SMOKE_MOCK_URL", &mock.url)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    eprintln!(
        "smoke.sh took {:?}\n{}{}",
        started.elapsed(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn smoke_script_passes_against_local_ctxgate_and_mock() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, proxy) = start_pair(dir.path(), &[]);
    let out = smoke(&proxy, &mock);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "smoke.sh failed:\n{stdout}");
    for check in [
        "ok   healthz",
        "ok   readyz",
        "ok   plain response",
        "ok   streamed response",
        "ok   compressed tool output",
        "the upstream received",
        "ok   expand GET /v1/ctxzip/{hash}",
        "ok   expand POST /v1/ctxzip/expand",
        "ok   fold",
        "ok   upstream error: HTTP 429",
        "smoke: 9 passed, 0 failed",
    ] {
        assert!(stdout.contains(check), "{check} missing:\n{stdout}");
    }
}

#[test]
fn smoke_script_fails_when_the_stages_are_off() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, proxy) = start_pair(
        dir.path(),
        &[
            ("CTXGATE_COMPRESS_ENABLED", "false"),
            ("CTXGATE_FOLD_MODE", "off"),
        ],
    );
    let out = smoke(&proxy, &mock);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "smoke.sh passed with compression off"
    );
    assert!(
        stderr.contains("FAIL compressed tool output: x-ctxgate-compressed"),
        "{stderr}"
    );
    assert!(stdout.contains("smoke: 4 passed, 1 failed"), "{stdout}");
}

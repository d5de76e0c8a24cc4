//! `ctxgate serve` as a user runs it: the real binary with the shipped config, on a free loopback port, its log on a
//! pipe. Tests that need the process itself (signals, a killed replica, a closed log) start it here.
#![expect(
    clippy::panic,
    reason = "the harness fails the test loudly when the binary does not start or log"
)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// What becomes of the log pipe once the "listening" line has been read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Log {
    /// A thread reads the rest into [`Served::log`] (a pipe nobody reads fills up; a closed one fails its writes).
    Kept,
    /// The pipe is closed: the process goes on with a stderr nobody reads.
    Closed,
}

/// A running `ctxgate serve`, killed when dropped.
pub struct Served {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The log line that said where it listens.
    pub listening: String,
    /// The log lines after it, with [`Log::Kept`].
    pub log: Option<Receiver<String>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `ctxgate serve --listen 127.0.0.1:0 --config config/ctxgate.toml ARGS…` with `env` set (and
/// `CTXGATE_LOG` removed unless `env` sets it), and reads its log up to the line that says where it listens.
/// Blocks for that: call it from `spawn_blocking` in an async test.
pub fn spawn_serve(args: &[&str], env: &[(&str, &str)], log: Log) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args([
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/ctxgate.toml"),
        ])
        .args(args)
        .env_remove("CTXGATE_LOG")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
    let found = lines.find(|line| line.contains("listening on http://"));
    let served = |listening: String, log| {
        let addr = listening
            .split("listening on http://")
            .nth(1)
            .and_then(|rest| rest.split([',', ' ']).next())
            .unwrap_or_default()
            .to_string();
        Served {
            child,
            addr,
            listening,
            log,
        }
    };
    let Some(listening) = found else {
        let mut dead = served(String::new(), None);
        let status = dead.child.wait();
        panic!("ctxgate serve did not start: {status:?}");
    };
    match log {
        Log::Kept => {
            std::thread::spawn(move || {
                for line in lines {
                    let _ = tx.send(line);
                }
            });
            served(listening, Some(rx))
        }
        Log::Closed => {
            drop(lines);
            served(listening, None)
        }
    }
}

/// The next line of a kept log that contains `needle`, within 20 s.
pub fn wait_for_line(log: &Receiver<String>, needle: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if let Ok(line) = log.recv_timeout(Duration::from_millis(200)) {
            if line.contains(needle) {
                return line;
            }
        }
    }
    panic!("no log line containing {needle:?}");
}

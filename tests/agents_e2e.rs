//! Real agents through ctxgate in front of `ctxgate-mock`:
//!
//! - the Codex CLI (`codex exec` with a custom model provider) runs the shell command `mock-agent-shell` asks for,
//!   whose ~75 KB output reaches the upstream behind a marker, and ends with the mock's final text; with the
//!   default `[expand] eager_min_head_tokens` the run is offered the expand tool from its first request on, with
//!   the same head bytes on every turn, and with 0 the tool comes with the marker;
//! - the `openai-agents` Python SDK runs an agent whose function tool returns ~70 KB per call for the 8 turns of
//!   `mock-agent-loop`, past a small fold budget: the run completes and the upstream saw compressed and folded
//!   requests.
//!
//! Each test runs the same agent a second time with `x-ctxgate-bypass: 1` and shows that its own checks then fail,
//! so they cannot pass without ctxgate's stages. The tools come from `.ci/run` (npm `@openai/codex`, pinned) and
//! `scripts/test.sh` (`openai-agents` in `.venv`); outside CI (`CI` unset) a missing tool skips the test loudly,
//! under CI it fails it.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;
use ctxgate::mock::agent::{LOOP_PAGES, SHELL_DONE_TEXT};
use ctxgate::mock::{MockHandle, Recorded};
use serde_json::Value;

/// Longest an agent run may take before `timeout` ends it.
const AGENT_TIMEOUT_SECS: &str = "180";

/// Skips the test (loudly) outside CI; under CI (`CI` set) a missing tool fails it.
fn skip_or_fail(test: &str, reason: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {reason} (CI is set, so this is a failure: .ci/run installs it)"
    );
    eprintln!(
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
         !!! SKIPPED {test}: {reason}\n\
         !!! (not under CI; .ci/run installs it and fails this test instead of skipping)\n\
         !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
}

fn run_with_timeout(cmd: Command) -> Output {
    let program = cmd.get_program().to_owned();
    let mut timed = Command::new("timeout");
    timed
        .arg("--kill-after=10")
        .arg(AGENT_TIMEOUT_SECS)
        .arg(program)
        .args(cmd.get_args())
        .envs(
            cmd.get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
        )
        .stdin(Stdio::null());
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    timed.output().unwrap()
}

/// The `/v1/responses` bodies the mock received, parsed.
fn turns(mock: &MockHandle) -> Vec<Value> {
    mock.state
        .received()
        .iter()
        .filter(|r| r.path == "/v1/responses")
        .filter_map(Recorded::json)
        .collect()
}

fn outputs(turn: &Value) -> Vec<String> {
    turn["input"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .map(|i| match &i["output"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------------------------
// Codex CLI

fn codex_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CTXGATE_CODEX") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("codex"))
        .find(|p| p.is_file())
}

/// The provider block the README shows, with the test's base URL (and optional extra headers).
fn codex_config(base_url: &str, extra_headers: &str) -> String {
    format!(
        r#"model = "mock-agent-shell"
model_provider = "ctxgate"

[model_providers.ctxgate]
name = "ctxgate"
base_url = "{base_url}"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
{extra_headers}"#
    )
}

struct CodexRun {
    events: Vec<Value>,
    stdout: String,
    stderr: String,
    success: bool,
}

fn run_codex(codex: &Path, config: &str) -> CodexRun {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let mut cmd = Command::new(codex);
    cmd.args([
        "exec",
        "--skip-git-repo-check",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "Print the service log and tell me when it is done.",
    ])
    .current_dir(work.path())
    .env("CODEX_HOME", home.path())
    .env("HOME", home.path())
    .env("OPENAI_API_KEY", "sk-codex-e2e")
    .env_remove("OPENAI_BASE_URL");
    let out = run_with_timeout(cmd);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    CodexRun {
        events: stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        success: out.status.success(),
        stdout,
    }
}

impl CodexRun {
    fn completed_items(&self, kind: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == kind)
            .map(|e| &e["item"])
            .collect()
    }

    /// The exec completed with the mock's final text after running the command, whose output was large.
    fn check_completed(&self) -> Result<usize, String> {
        if !self.success {
            return Err(format!("codex exec failed: {}", self.stderr));
        }
        let commands = self.completed_items("command_execution");
        let output = commands
            .iter()
            .filter(|c| c["exit_code"] == 0)
            .filter_map(|c| c["aggregated_output"].as_str())
            .map(str::len)
            .max()
            .ok_or("no command_execution completed with exit code 0")?;
        if output < 40_000 {
            return Err(format!("the command printed {output} bytes, not 40 KB+"));
        }
        let texts: Vec<&str> = self
            .completed_items("agent_message")
            .iter()
            .filter_map(|m| m["text"].as_str())
            .collect();
        if texts.last() != Some(&SHELL_DONE_TEXT) {
            return Err(format!(
                "agent messages {texts:?}, expected {SHELL_DONE_TEXT:?}"
            ));
        }
        if !self.events.iter().any(|e| e["type"] == "turn.completed") {
            return Err("no turn.completed".into());
        }
        Ok(output)
    }
}

/// The command's output reached the upstream behind a marker, much smaller than what the command printed.
fn check_codex_upstream(mock: &MockHandle, printed: usize) -> Result<String, String> {
    let sent = turns(mock);
    let last = sent.last().ok_or("the upstream received no turn")?;
    let output = outputs(last)
        .into_iter()
        .next_back()
        .ok_or("the last turn carries no function_call_output")?;
    if !output.contains("<<ctxzip:") {
        return Err(format!(
            "the upstream received the output without a marker ({} bytes)",
            output.len()
        ));
    }
    if output.len() * 4 > printed {
        return Err(format!(
            "the upstream received {} bytes for {printed} printed",
            output.len()
        ));
    }
    Ok(format!(
        "{printed} B printed, {} B reached the upstream with a marker",
        output.len()
    ))
}

/// The Codex CLI, or `None` after skipping (or, under CI, failing) `test`.
fn codex_or_skip(test: &str) -> Option<PathBuf> {
    let codex = codex_binary();
    if codex.is_none() {
        skip_or_fail(
            test,
            "the Codex CLI (`codex`, npm @openai/codex) is not on PATH, or CTXGATE_CODEX names no file",
        );
    }
    codex
}

/// Runs `codex exec` with `config` off the async runtime; returns how many bytes its command printed, after
/// checking the run completed.
async fn exec_codex(codex: &Path, config: String) -> usize {
    let codex = codex.to_path_buf();
    let run = tokio::task::spawn_blocking(move || run_codex(&codex, &config))
        .await
        .unwrap();
    run.check_completed()
        .unwrap_or_else(|e| panic!("{e}\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_cli_exec_through_ctxgate() {
    let Some(codex) = codex_or_skip("codex_cli_exec_through_ctxgate") else {
        return;
    };
    // The tool comes with the first marker (the default offers it from the first turn: the test below).
    let mock = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.expand.eager_min_head_tokens = Some(0);
    let proxy = start_proxy_with(opts).await;
    let base_url = format!("{}/v1", proxy.url);

    let printed = exec_codex(&codex, codex_config(&base_url, "")).await;
    let what = check_codex_upstream(&mock, printed).unwrap();
    eprintln!("codex through ctxgate: {what}");
    let sent = turns(&mock);
    assert_eq!(sent.len(), 2, "one call round, one answer round");
    assert!(!sent[0]["tools"].to_string().contains("\"context_expand\""));

    // The same run with ctxgate's stages bypassed: the exec still completes, but the upstream check fails.
    mock.state.clear();
    let config = codex_config(
        &base_url,
        "http_headers = { \"x-ctxgate-bypass\" = \"1\" }\n",
    );
    let printed = exec_codex(&codex, config).await;
    let bypassed = check_codex_upstream(&mock, printed);
    assert!(
        bypassed
            .as_ref()
            .is_err_and(|e| e.contains("without a marker")),
        "with x-ctxgate-bypass the check must fail: {bypassed:?}"
    );
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_cli_exec_through_ctxgate_offered_the_tool_from_its_first_turn() {
    let Some(codex) =
        codex_or_skip("codex_cli_exec_through_ctxgate_offered_the_tool_from_its_first_turn")
    else {
        return;
    };
    // The shipped default (`eager_min_head_tokens` 1024).
    let (mock, proxy) = mock_and_proxy().await;
    let printed = exec_codex(&codex, codex_config(&format!("{}/v1", proxy.url), "")).await;
    check_codex_upstream(&mock, printed).unwrap();
    // Codex's instructions and tools are a long head: its first request, before any output exists, already
    // offers the tool, and the head is the same bytes on the turn that carries the marker.
    let sent = turns(&mock);
    assert_eq!(sent.len(), 2, "one call round, one answer round");
    let tools = |turn: &Value| turn["tools"].to_string();
    assert!(
        tools(&sent[0]).contains("\"context_expand\""),
        "{}",
        tools(&sent[0])
    );
    assert_eq!(tools(&sent[1]), tools(&sent[0]));
    assert_eq!(sent[1]["instructions"], sent[0]["instructions"]);
    assert!(!outputs(&sent[0]).iter().any(|o| o.contains("<<ctxzip:")));
    proxy.stop().await;
}

// ---------------------------------------------------------------------------------------------------------------
// openai-agents SDK

/// The venv interpreter when it has the `agents` package.
fn agents_python() -> Option<String> {
    let py = std::env::var("CTXGATE_E2E_PYTHON")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python").to_string());
    let ok = Command::new(&py)
        .args(["-c", "import agents"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(py)
}

fn run_agents(py: &str, base_url: &str, headers: &[&str]) -> Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/agents_check.py");
    let mut cmd = Command::new(py);
    cmd.arg(script)
        .env("OPENAI_BASE_URL", base_url)
        .env("OPENAI_API_KEY", "sk-agents-e2e")
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1");
    for h in headers {
        cmd.arg("--header").arg(h);
    }
    run_with_timeout(cmd)
}

/// Outputs rode compressed, the transcript was folded (a compact call, then turns that carry its output), and every
/// turn's compressed outputs were far smaller than the tool returned.
fn check_agents_upstream(mock: &MockHandle) -> Result<String, String> {
    let sent = turns(mock);
    if sent.len() != LOOP_PAGES as usize + 1 {
        return Err(format!(
            "{} turns reached the upstream, expected {}",
            sent.len(),
            LOOP_PAGES + 1
        ));
    }
    let with_marker = sent
        .iter()
        .filter(|t| outputs(t).iter().any(|o| o.contains("<<ctxzip:")))
        .count();
    if with_marker == 0 {
        return Err("no turn carried a compressed tool output".into());
    }
    let largest = sent
        .iter()
        .flat_map(outputs)
        .map(|o| o.len())
        .max()
        .unwrap_or(0);
    if largest > 30_000 {
        return Err(format!(
            "a tool output of {largest} bytes reached the upstream verbatim"
        ));
    }
    let compacts = mock
        .state
        .received()
        .iter()
        .filter(|r| r.path == "/v1/responses/compact")
        .count();
    let folded = sent
        .iter()
        .filter(|t| {
            t["input"]
                .as_array()
                .is_some_and(|items| items.iter().any(|i| i["type"] == "compaction"))
        })
        .count();
    if compacts == 0 || folded == 0 {
        return Err(format!(
            "not folded: {compacts} compact calls, {folded} turns carrying a compaction"
        ));
    }
    Ok(format!(
        "{} turns, {with_marker} with compressed outputs (largest {largest} B), {compacts} compact calls, {folded} folded turns",
        sent.len()
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_agents_sdk_through_ctxgate() {
    let Some(py) = agents_python() else {
        skip_or_fail(
            "openai_agents_sdk_through_ctxgate",
            "the openai-agents SDK is not importable (run ./scripts/test.sh, which installs it into .venv)",
        );
        return;
    };
    let (mock, proxy) = mock_and_proxy().await;
    let base_url = format!("{}/v1", proxy.url);

    // A fold budget of 3000 estimated tokens: every turn after the first tool output is over it.
    let (py2, url) = (py.clone(), base_url.clone());
    let out =
        tokio::task::spawn_blocking(move || run_agents(&py2, &url, &["x-ctxgate-budget=3000"]))
            .await
            .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "agents check failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("all agents checks passed"), "{stdout}");
    let what = check_agents_upstream(&mock).unwrap();
    eprintln!("openai-agents through ctxgate: {what}");

    // Bypassed: the agent still completes (ctxgate is transparent), but the upstream saw neither stage.
    mock.state.clear();
    let out = tokio::task::spawn_blocking(move || {
        run_agents(
            &py,
            &base_url,
            &["x-ctxgate-budget=3000", "x-ctxgate-bypass=1"],
        )
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "bypassed agents run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bypassed = check_agents_upstream(&mock);
    assert!(
        bypassed
            .as_ref()
            .is_err_and(|e| e.contains("no turn carried a compressed tool output")),
        "with x-ctxgate-bypass the check must fail: {bypassed:?}"
    );
    proxy.stop().await;
}

//! The `ctxgate` command line: `serve` runs the proxy; the other subcommands read the same store offline.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use ctxgate::config::Config;
use ctxgate::config::env::ProcessEnv;
use ctxgate::config::raw::RawConfig;

/// glibc's allocator spends about a seventh of a small turn's instructions in malloc and free (the turn allocates
/// and frees many small buffers, and its 10 KB bodies send glibc into consolidating its fast bins); mimalloc's
/// thread-local free lists fit the one-worker-per-core server, where a buffer is freed by the thread that made it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "ctxgate",
    version,
    about = "Context-compressing reverse proxy for OpenAI-style Responses APIs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy.
    Serve(ServeArgs),
    /// Compress a file offline exactly as the proxy would, and show what the model would see.
    Compress(CompressArgs),
    /// Print the original behind a marker, read from the store (the redb file, or the Redis at [store] url).
    Expand(ExpandCmd),
    /// Savings totals, stored originals per tenant and keep-pattern suggestions, read from the store (the redb file,
    /// or the Redis at [store] url).
    Stats(StatsCmd),
    /// Run a corpus of tool outputs and transcripts through the proxy's stages and report tokens saved,
    /// error lines kept and time taken.
    Report(ReportArgs),
    /// Probe a running ctxgate: exit 0 when the URL answers 2xx within the timeout (the image's HEALTHCHECK).
    Health(HealthCmd),
}

#[derive(clap::Args)]
struct ReportArgs {
    /// A corpus folder holding `tool_outputs/` and/or `transcripts/` (e.g. ../shared/corpus/dev).
    dir: Option<PathBuf>,
    /// A folder of tool outputs (one per file, optional manifest.tsv with a `kind` column).
    #[arg(long)]
    outputs: Option<PathBuf>,
    /// A folder of transcripts (`*.json`, each a Responses `input` array).
    #[arg(long)]
    transcripts: Option<PathBuf>,
    /// Skip the turn-by-turn session replay.
    #[arg(long)]
    no_replay: bool,
    /// Config file (default: config/ctxgate.toml when it exists); the store and upstream are the report's own.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print JSON (every row) instead of the tables.
    #[arg(long)]
    json: bool,
    /// Write, for each transcript, the request the upstream would receive (first seen) to this folder, under the
    /// transcript's file name: to see what was compressed and how.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// The user message each tool output is sent after (its words become the query terms): to see how a real
    /// task's words change what is kept.
    #[arg(long, default_value = ctxgate::report::DEFAULT_TASK)]
    task: String,
}

#[derive(clap::Args)]
struct HealthCmd {
    /// The URL to probe.
    #[arg(long, default_value = "http://127.0.0.1:8080/healthz")]
    url: String,
    /// Give up after this many milliseconds.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
}

#[derive(clap::Args)]
struct StoreArgs {
    /// Config file (its [store] and [expand] settings apply; CTXGATE_STORE_URL selects a Redis as for serve).
    #[arg(long)]
    config: Option<PathBuf>,
    /// redb store file [default: the config's, data/ctxgate.redb]; not with a [store] url.
    #[arg(long)]
    store: Option<String>,
}

impl StoreArgs {
    fn config(&self) -> Result<Config, String> {
        let mut raw = RawConfig::default();
        raw.store.path = self.store.clone();
        let config =
            Config::load(self.config.as_deref(), &ProcessEnv, raw).map_err(|e| e.to_string())?;
        if let (Some(path), Some(redis)) = (&self.store, &config.store.redis) {
            return Err(format!(
                "--store {path} names a redb file, but [store] url (or CTXGATE_STORE_URL) selects {}: drop one",
                redis.describe()
            ));
        }
        Ok(config)
    }
}

#[derive(clap::Args)]
struct ExpandCmd {
    /// The hash, its marker, or a unique prefix of at least 6 characters.
    hash: String,
    /// Only lines matching this query (with a little context).
    #[arg(long)]
    query: Option<String>,
    #[arg(long)]
    offset: Option<usize>,
    #[arg(long)]
    limit: Option<usize>,
    /// The tenant id (as in the logs), when several tenants hold the same original.
    #[arg(long)]
    tenant: Option<String>,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(clap::Args)]
struct StatsCmd {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(clap::Args)]
struct CompressArgs {
    /// The tool output to compress (`-` for standard input).
    file: PathBuf,
    /// Relevance query (as the conversation's first user message would pin it).
    #[arg(long)]
    query: Option<String>,
    /// Keep pattern (repeatable); the config file's `[compress] keep_patterns` are used too.
    #[arg(long = "keep")]
    keep: Vec<String>,
    /// Config file whose `[compress]` section applies (default: config/ctxgate.toml when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print one JSON object (result and stats) instead of text.
    #[arg(long)]
    json: bool,
    /// Compress the text as the agent's notes on its way to a tool call (what `[compress] agent_notes` does to an
    /// assistant message): a short head and tail and every error line.
    #[arg(long)]
    notes: bool,
    /// The shell command that printed the text, as the tool call's arguments would carry it: a view of a source
    /// file (`cat src/app.py`, `sed -n '1,80p' model.py`) stays verbatim, as in the proxy.
    #[arg(long)]
    command: Option<String>,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Config file (default: config/ctxgate.toml when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long)]
    listen: Option<String>,
    /// Upstream base URL [default: https://api.openai.com/v1].
    #[arg(long)]
    upstream: Option<String>,
    /// Store file [default: data/ctxgate.redb].
    #[arg(long)]
    store: Option<String>,
}

impl ServeArgs {
    fn flags(&self) -> RawConfig {
        let mut raw = RawConfig::default();
        raw.server.listen = self.listen.clone();
        raw.upstream.url = self.upstream.clone();
        raw.store.path = self.store.clone();
        raw
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Compress(args) => compress(args),
        Command::Report(args) => report(args),
        Command::Expand(args) => offline(async move {
            let config = args.store.config()?;
            let expand = ctxgate::expand::resolve::ExpandArgs {
                hash: args.hash,
                query: args.query,
                offset: args.offset,
                limit: args.limit,
            };
            ctxgate::offline::expand(&config, &ProcessEnv, args.tenant.as_deref(), &expand)
                .await
                .map_err(|e| e.to_string())
        }),
        Command::Health(args) => offline(health(args)),
        Command::Stats(args) => offline(async move {
            let config = args.store.config()?;
            let stats = ctxgate::offline::stats(&config, &ProcessEnv)
                .await
                .map_err(|e| e.to_string())?;
            Ok(if args.json {
                serde_json::to_string_pretty(&stats).unwrap_or_default() + "\n"
            } else {
                stats.to_text()
            })
        }),
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    let config = match Config::load(args.config.as_deref(), &ProcessEnv, args.flags()) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    ctxgate::telemetry::init_logging(config.log_format, &config.log_level);
    // One current-thread runtime per core (this thread is worker 0), like nginx's workers: a request is served
    // from accept to answer on one thread, with no wake-ups across threads.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    runtime.block_on(async move {
        let app = match ctxgate::App::build(config, &ProcessEnv) {
            Ok(a) => a,
            Err(e) => return fail(&e),
        };
        let listener = match app.bind().await {
            Ok(l) => l,
            Err(e) => return fail(&e),
        };
        match app
            .serve_on_cores(listener, cores, ctxgate::server::shutdown_signal())
            .await
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        }
    })
}

/// `ctxgate health`: one GET, success on a 2xx status.
async fn health(args: HealthCmd) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(args.timeout_ms))
        .build()
        .map_err(|e| e.to_string())?;
    let res = client
        .get(&args.url)
        .send()
        .await
        .map_err(|e| format!("{}: {e}", args.url))?;
    let status = res.status();
    if status.is_success() {
        Ok(format!("{} {status}", args.url))
    } else {
        Err(format!("{} answered {status}", args.url))
    }
}

/// Runs an offline command and prints its text.
fn offline(work: impl std::future::Future<Output = Result<String, String>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    match runtime.block_on(work) {
        Ok(text) => write_stdout(&text),
        Err(e) => fail(&e),
    }
}

fn write_stdout(text: &str) -> ExitCode {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let mut out = text.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    match stdout.write_all(out.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("ctxgate: error: {e}");
    ExitCode::FAILURE
}

fn report(args: ReportArgs) -> ExitCode {
    let config = match Config::load(args.config.as_deref(), &ProcessEnv, RawConfig::default()) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let sub = |name: &str| {
        args.dir
            .as_ref()
            .map(|d| d.join(name))
            .filter(|p| p.is_dir())
    };
    let outputs = args.outputs.clone().or_else(|| sub("tool_outputs"));
    let transcripts = args.transcripts.clone().or_else(|| sub("transcripts"));
    for path in [&args.dir, &args.outputs, &args.transcripts]
        .into_iter()
        .flatten()
    {
        if !path.is_dir() {
            return fail(&format!(
                "{}: no such folder (the development corpus lives in ../shared/corpus/dev on the team's machines)",
                path.display()
            ));
        }
    }
    if outputs.is_none() && transcripts.is_none() {
        return fail(
            &"nothing to report: give a corpus folder with tool_outputs/ or transcripts/, or --outputs / --transcripts",
        );
    }
    let options = ctxgate::report::ReportOptions {
        outputs,
        transcripts,
        replay: !args.no_replay,
        dump: args.dump.clone(),
        config,
        task: args.task.clone(),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    match runtime.block_on(ctxgate::report::run(options)) {
        Ok(report) if args.json => {
            write_stdout(&(serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"))
        }
        Ok(report) => write_stdout(&ctxgate::report::to_text(&report)),
        Err(e) => fail(&e),
    }
}

fn compress(args: CompressArgs) -> ExitCode {
    let config = match Config::load(args.config.as_deref(), &ProcessEnv, RawConfig::default()) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let read = if args.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(&args.file)
    };
    let text = match read {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot read {}: {e}", args.file.display())),
    };
    let mut keep_patterns = config.compress.keep_patterns.clone();
    keep_patterns.extend(args.keep);
    // The shell call that printed the text, as the proxy would read its arguments.
    let call = args
        .command
        .as_deref()
        .map(|c| serde_json::json!({ "command": c }).to_string());
    let call_says =
        |says: fn(&str, &str) -> bool| call.as_deref().is_some_and(|a| says("shell", a));
    let report = ctxgate::ctxzip::report::offline(
        &text,
        &ctxgate::ctxzip::Options {
            query: ctxgate::ctxzip::query_terms(args.query.as_deref().unwrap_or("")),
            keep_patterns,
            compress_code: config.compress.code,
            notes: args.notes,
            viewed_source: call_says(ctxgate::ctxzip::views::views_source_file),
            fetched: call_says(ctxgate::ctxzip::views::fetches_page),
        },
    );
    let out = if args.json {
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
    } else {
        report.to_text()
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

//! `ctxgate-mock`: a deterministic stand-in for an OpenAI-style Responses API.
//!
//! Lets people try ctxgate without an API key and lets out-of-process tests and
//! benchmarks run against a predictable upstream. All behaviour lives in
//! `ctxgate::mock`; this binary only turns flags into a [`MockConfig`].

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ctxgate::mock::{self, MockConfig};

#[derive(Debug, Parser)]
#[command(
    name = "ctxgate-mock",
    version,
    about = "Deterministic mock of the OpenAI Responses API"
)]
struct Args {
    /// Address to listen on (`127.0.0.1:0` picks a free port; the log line says which).
    #[arg(long, env = "CTXGATE_MOCK_LISTEN", default_value = "127.0.0.1:8090")]
    listen: String,
    /// Delay before answering each API request, in milliseconds.
    #[arg(long, env = "CTXGATE_MOCK_LATENCY_MS", default_value_t = 0)]
    latency_ms: u64,
    /// Delay between SSE events, in milliseconds.
    #[arg(long, env = "CTXGATE_MOCK_CHUNK_DELAY_MS", default_value_t = 0)]
    chunk_delay_ms: u64,
    /// Make `/v1/responses/compact` answer this HTTP status.
    #[arg(long, env = "CTXGATE_MOCK_COMPACT_STATUS", value_parser = clap::value_parser!(u16).range(200..=599))]
    compact_status: Option<u16>,
    /// Record only the last N requests (default: every request until `DELETE /__mock/requests`); load benchmarks
    /// keep the mock's memory and copying flat with a small N.
    #[arg(long, env = "CTXGATE_MOCK_RECORD_LAST")]
    record_last: Option<usize>,
    /// Send each SSE answer as one body chunk (its events joined), as an upstream behind a buffering hop does,
    /// instead of one chunk per event (ignored when --chunk-delay-ms spaces the events).
    #[arg(long, env = "CTXGATE_MOCK_SSE_WHOLE")]
    sse_whole: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cfg = MockConfig {
        latency: Duration::from_millis(args.latency_ms),
        chunk_delay: Duration::from_millis(args.chunk_delay_ms),
        compact_status: args.compact_status,
        record_last: args.record_last,
        sse_whole: args.sse_whole,
    };
    let listener = match tokio::net::TcpListener::bind(&args.listen).await {
        Ok(l) => l,
        Err(err) => {
            tracing::error!(%err, listen = %args.listen, "cannot listen");
            return ExitCode::FAILURE;
        }
    };
    match mock::serve(listener, cfg).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(%err, "server error");
            ExitCode::FAILURE
        }
    }
}

//! ctxgate: a reverse proxy in front of OpenAI-style Responses APIs that keeps agent transcripts small.
//!
//! [`App::build`] turns a checked [`config::Config`] into the shared state every request uses ([`state`]: upstream
//! client, credentials, store, metrics, the turn's stages, the clock); [`App::serve`] runs it until a shutdown
//! signal ([`server`]). The binary in `main.rs` is only argument parsing around these two calls.
//!
//! A request crosses, in order: [`edge`] (route table, authentication, metrics) → [`turn`] for `POST
//! /v1/responses` (its stages `compress`, `fold`, `expand`, each over the pure cores [`ctxzip`], [`fold`],
//! [`expand`] and [`responses`]) or [`proxy::passthrough`] for any other `/v1/` route → [`proxy`] (the upstream
//! client, forward and relay). What is remembered goes through [`store::records`].

pub mod clock;
pub mod config;
pub mod ctxzip;
pub mod edge;
pub mod expand;
pub mod fold;
pub mod mock;
pub mod offline;
pub mod proxy;
pub mod report;
pub mod responses;
pub mod server;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod turn;

use std::future::Future;
use std::sync::Arc;

pub use state::{AppState, StartupError};

/// A built ctxgate, ready to serve.
pub struct App {
    pub state: Arc<AppState>,
}

impl App {
    /// Builds the shared state (see [`AppState::build`]). `env` supplies the proxy-held upstream key when
    /// `[upstream] api_key_env` is set.
    pub fn build(
        config: config::Config,
        env: &dyn config::env::EnvSource,
    ) -> Result<App, StartupError> {
        Ok(App {
            state: Arc::new(AppState::build(config, env)?),
        })
    }

    /// Binds the configured address.
    pub async fn bind(&self) -> Result<tokio::net::TcpListener, StartupError> {
        let addr = self.state.config.listen;
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| StartupError::Bind { addr, source })
    }

    /// Serves on `listener` until `shutdown` resolves, then drains and closes the store.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.announce(&listener)?;
        server::serve(listener, self.state, shutdown).await
    }

    /// The one log line that says where ctxgate listens, the upstream and the store.
    fn announce(&self, listener: &tokio::net::TcpListener) -> std::io::Result<()> {
        let cfg = &self.state.config;
        let addr = listener.local_addr()?;
        // The Redis target without its password, or the redb file.
        let store = match &cfg.store.redis {
            Some(redis) => redis.describe(),
            None => cfg.store_path.display().to_string(),
        };
        // An HTTP proxy from the environment is named, never its address (it may carry a password).
        let proxied = self.state.upstream.is_proxied();
        tracing::info!(
            listen = %addr,
            upstream = %cfg.upstream.url,
            upstream_proxy = proxied,
            store = %store,
            credential = if self.state.credentials.is_proxy_held() { "proxy-held" } else { "forwarded" },
            "ctxgate listening on http://{addr}, upstream {}{}, store {store}",
            cfg.upstream.url,
            if proxied { " through the HTTP proxy the environment names" } else { "" },
        );
        Ok(())
    }

    /// [`Self::serve`] on `cores` threads, one current-thread runtime each (see [`server::serve_on_cores`]).
    pub async fn serve_on_cores(
        self,
        listener: tokio::net::TcpListener,
        cores: usize,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.announce(&listener)?;
        tracing::info!(cores, "one server worker per core");
        server::serve_on_cores(listener, self.state, cores, shutdown).await
    }
}

//! ctxgate: a reverse proxy in front of OpenAI-style Responses APIs that keeps agent transcripts small.
//!
//! [`App::build`] turns a checked [`config::Config`] into the shared state every request uses (upstream client,
//! credentials, store, metrics, pipeline stages); [`App::serve`] runs it until a shutdown signal. The binary in
//! `main.rs` is only argument parsing around these two calls.

pub mod config;
pub mod ctxzip;
pub mod expand;
pub mod fold;
pub mod mock;
pub mod offline;
pub mod proxy;
pub mod report;
pub mod responses;
pub mod server;
pub mod store;
pub mod telemetry;

use std::future::Future;
use std::sync::Arc;

use config::Config;
use proxy::auth::Credentials;
use proxy::compress::CompressStage;
use proxy::error::ProxyError;
use proxy::expand::Expander;
use proxy::expand::inject::InjectStage;
use proxy::fold::FoldStage;
use proxy::turn::Stage;
use proxy::upstream::Upstream;
use server::AppState;
use store::StoreError;
use store::redb::RedbStore;
use telemetry::Metrics;

/// Why ctxgate could not start. Each names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("upstream.api_key_env names {0}, but that environment variable is not set")]
    MissingUpstreamKey(String),
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

/// A built ctxgate, ready to serve.
pub struct App {
    pub state: Arc<AppState>,
}

impl App {
    /// Builds the shared state: opens the store, prepares the upstream client and credentials. `env` supplies the
    /// proxy-held upstream key when `[upstream] api_key_env` is set.
    pub fn build(config: Config, env: &dyn config::env::EnvSource) -> Result<App, StartupError> {
        let credentials = match &config.upstream.api_key_env {
            None => Credentials::forward(),
            Some(var) => {
                let key = env
                    .var(var)
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| StartupError::MissingUpstreamKey(var.clone()))?;
                Credentials::proxy_held(&key, &config.auth.keys)?
            }
        };
        let upstream = Upstream::new(&config.upstream)?;
        let store: Arc<dyn store::Store> = Arc::new(RedbStore::open(&config.store_path)?);
        let metrics = Arc::new(Metrics::new());
        let tasks = tokio_util::task::TaskTracker::new();
        let expander = Arc::new(Expander::new(
            config.expand.clone(),
            config.compress.ttl.as_secs(),
            store.clone(),
            metrics.clone(),
            tasks.clone(),
        ));
        // The turn's stages, in order: compress first (fold weighs the compressed transcript), then fold, then the
        // expand tool is offered if the outgoing input carries a marker.
        let stages: Vec<Arc<dyn Stage>> = vec![
            Arc::new(CompressStage::new(
                config.compress.clone(),
                store.clone(),
                metrics.clone(),
                tasks.clone(),
            )),
            Arc::new(FoldStage::new(
                config.fold.clone(),
                store.clone(),
                upstream.clone(),
                metrics.clone(),
                tasks.clone(),
            )),
            Arc::new(InjectStage::new(expander.clone())),
        ];
        let state = AppState::new(server::StateParts {
            config: Arc::new(config),
            upstream,
            credentials,
            store,
            metrics,
            expander,
            stages,
            tasks,
        });
        Ok(App {
            state: Arc::new(state),
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
        tracing::info!(
            listen = %addr,
            upstream = %cfg.upstream.url,
            store = %cfg.store_path.display(),
            credential = if self.state.credentials.is_proxy_held() { "proxy-held" } else { "forwarded" },
            "ctxgate listening on http://{addr}, upstream {}, store {}",
            cfg.upstream.url,
            cfg.store_path.display()
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

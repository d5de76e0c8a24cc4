//! The shared state every request reads, built once at start from the checked config.
//!
//! [`AppState`] is what a handler, a middleware or a stage may use — the upstream client, the credentials, the
//! store, the metrics, the turn's stages, the tracked task set for durable background work and the clock. It lives
//! in its own module so that the server (which routes to the handlers) and the handlers (which read the state) both
//! depend on it, and not on each other. There is no global mutable state.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::task::TaskTracker;

use crate::clock::Clock;
use crate::config::Config;
use crate::proxy::auth::{AdminKeys, Credentials};
use crate::proxy::error::ProxyError;
use crate::proxy::upstream::Upstream;
use crate::store::records::Records;
use crate::store::redis::health::StoreHealth;
use crate::store::{Store, StoreError};
use crate::telemetry::Metrics;
use crate::turn::expand::Expander;
use crate::turn::stage::Stage;

/// Why ctxgate could not start. Each names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
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

/// Everything a request handler may use, passed explicitly.
pub struct AppState {
    pub config: Arc<Config>,
    pub upstream: Upstream,
    pub credentials: Credentials,
    /// The operator keys of `GET /admin/stats` (none: that view is off).
    pub admin: AdminKeys,
    pub store: Arc<dyn Store>,
    /// The store as typed records, dated by [`Self::clock`], written on [`Self::tasks`].
    pub records: Records,
    pub metrics: Arc<Metrics>,
    /// Answers `context_expand` calls (in the turn loop and on the side endpoints).
    pub expander: Arc<Expander>,
    /// The `/v1/responses` stages, in order.
    pub stages: Vec<Arc<dyn Stage>>,
    /// Durable work (store writes, counters) that must finish even when the client hangs up; shutdown waits for it.
    pub tasks: TaskTracker,
    /// Where every stage and the sweeper read the time (tests move it by hand instead of sleeping).
    pub clock: Clock,
    /// Each tenant's recent input item lists: the next body of a conversation is not split again where it repeats
    /// the last.
    pub known_inputs: crate::turn::known::KnownInputs,
    request_counter: AtomicU64,
    instance: u64,
}

impl AppState {
    /// Builds the shared state: opens the store, prepares the upstream client and credentials, and the stages in
    /// their order. `env` supplies the proxy-held upstream key when `[upstream] api_key_env` is set.
    pub fn build(
        config: Config,
        env: &dyn crate::config::env::EnvSource,
    ) -> Result<AppState, StartupError> {
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
        let metrics = Arc::new(Metrics::new());
        let target = match &config.store.redis {
            Some(redis) => redis.describe(),
            None => config.store_path.display().to_string(),
        };
        let health = Arc::new(StoreHealth::new(&metrics, target));
        let store: Arc<dyn Store> = crate::store::open(&config, env, health)?;
        let tasks = TaskTracker::new();
        let clock = Clock::system();
        let records = Records::new(store.clone(), tasks.clone(), clock.clone());
        let expander = Arc::new(Expander::new(
            config.expand.clone(),
            config.compress.ttl.as_secs(),
            records.clone(),
            metrics.clone(),
        ));
        let stages = crate::turn::stages(&config, &records, &upstream, &metrics, &expander);
        let instance = clock.unix_nanos();
        let admin = AdminKeys::new(&config.auth.admin_keys);
        Ok(AppState {
            config: Arc::new(config),
            upstream,
            credentials,
            admin,
            store,
            records,
            metrics,
            expander,
            stages,
            tasks,
            clock,
            known_inputs: Default::default(),
            request_counter: AtomicU64::new(0),
            instance,
        })
    }

    /// A request id unique within this process and very likely across restarts.
    pub fn next_request_id(&self) -> String {
        let n = self.request_counter.fetch_add(1, Ordering::Relaxed);
        format!("req_{:08x}{:06x}", self.instance & 0xffff_ffff, n)
    }

    /// Resolves once every durable background write started so far has finished (tests wait on this instead of
    /// sleeping; shutdown has its own drain).
    pub async fn settled(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
    }
}

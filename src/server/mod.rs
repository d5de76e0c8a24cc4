//! The server's lifecycle: one worker per core, the store sweeper, and a graceful shutdown.
//!
//! The route table and its layers are [`crate::edge`]; the shared state is [`crate::state`]. Shutdown on
//! SIGINT/SIGTERM stops accepting, lets in-flight requests finish (up to `shutdown_grace_secs`), waits for durable
//! background work, then closes the store cleanly.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;

mod coalesce;

use crate::edge::router;
use crate::state::AppState;
use crate::store::Namespace;

/// How often expired records are swept from the store.
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Serves until `shutdown` resolves, then drains: in-flight requests get `shutdown_grace` to finish, tracked
/// background work is awaited, and the store is closed.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_workers(listener, state, shutdown, Workers::none()).await
}

/// Serves on `cores` threads, each with its own current-thread runtime accepting on the same listening socket —
/// the way nginx runs one worker per core. A connection lives on one thread from accept to close, with the
/// upstream connection pool of that thread, so relaying a request never wakes another thread. The calling
/// runtime is worker 0 and also runs the sweeper and the shutdown sequence.
pub async fn serve_on_cores(
    listener: TcpListener,
    state: Arc<AppState>,
    cores: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = listener.into_std()?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (exit_tx, exit_rx) = tokio::sync::watch::channel(false);
    let mut workers = Workers {
        stop: Some(stop_tx),
        exit: Some(exit_tx),
        drained: Vec::new(),
        threads: Vec::new(),
    };
    for index in 1..cores.max(1) {
        let socket = listener.try_clone()?;
        let (state, stop, exit) = (state.clone(), stop_rx.clone(), exit_rx.clone());
        let (drained_tx, drained_rx) = tokio::sync::oneshot::channel();
        workers.drained.push(drained_rx);
        let thread = std::thread::Builder::new()
            .name(format!("ctxgate-worker-{index}"))
            .spawn(move || run_worker(index, socket, state, stop, exit, drained_tx))?;
        workers.threads.push(thread);
    }
    let listener = TcpListener::from_std(listener)?;
    serve_with_workers(listener, state, shutdown, workers).await
}

/// The extra worker threads of [`serve_on_cores`] and how to stop them.
struct Workers {
    /// Tells the workers to stop accepting and drain.
    stop: Option<tokio::sync::watch::Sender<bool>>,
    /// Tells the workers to end their runtimes (after the durable work they ran has finished).
    exit: Option<tokio::sync::watch::Sender<bool>>,
    drained: Vec<tokio::sync::oneshot::Receiver<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    fn none() -> Workers {
        Workers {
            stop: None,
            exit: None,
            drained: Vec::new(),
            threads: Vec::new(),
        }
    }
}

/// One extra worker: serves until told to stop, reports when drained, then keeps its runtime (and the store
/// writes it spawned) running until told to exit.
fn run_worker(
    index: usize,
    socket: std::net::TcpListener,
    state: Arc<AppState>,
    stop: tokio::sync::watch::Receiver<bool>,
    mut exit: tokio::sync::watch::Receiver<bool>,
    drained: tokio::sync::oneshot::Sender<()>,
) {
    crate::proxy::upstream::set_worker(index);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(index, error = %e, "could not start a server worker");
            let _ = drained.send(());
            return;
        }
    };
    runtime.block_on(async move {
        match TcpListener::from_std(socket) {
            Ok(listener) => {
                let server = axum::serve(client_sockets(listener), router(state))
                    .with_graceful_shutdown(stopped(stop));
                if let Err(e) = server.await {
                    tracing::warn!(index, error = %e, "server worker failed");
                }
            }
            Err(e) => tracing::warn!(index, error = %e, "server worker has no listener"),
        }
        let _ = drained.send(());
        stopped(exit.clone()).await;
        let _ = exit.borrow_and_update();
    });
}

/// Resolves once the watched flag is true (or its sender is gone).
async fn stopped(mut flag: tokio::sync::watch::Receiver<bool>) {
    while !*flag.borrow_and_update() {
        if flag.changed().await.is_err() {
            return;
        }
    }
}

/// The client connections as the server uses them: TCP_NODELAY set, writes coalesced ([`coalesce`]).
///
/// SSE events are small writes: without TCP_NODELAY, Nagle's algorithm holds each one back until the client's
/// delayed ACK (~40 ms), which would add that to every streamed turn. Joining the events that are already here
/// into one write is done by ctxgate instead, without waiting for anything.
fn client_sockets(
    listener: TcpListener,
) -> impl axum::serve::Listener<Addr = std::net::SocketAddr> {
    coalesce::Coalescing(listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a client connection");
        }
    }))
}

async fn serve_with_workers(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    mut workers: Workers,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let sweeper = spawn_sweeper(state.clone(), stop_rx.clone());
    let worker_stop = workers.stop.take();
    let server = axum::serve(client_sockets(listener), router(state.clone()))
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
            if let Some(stop) = worker_stop {
                let _ = stop.send(true);
            }
        });
    let grace = state.config.shutdown_grace;
    let stopped_rx = stop_rx.clone();
    let forced = async move {
        stopped(stopped_rx).await;
        tokio::time::sleep(grace).await;
    };
    let drained = futures_util::future::join_all(std::mem::take(&mut workers.drained));
    tokio::select! {
        result = async { let r = server.await; drained.await; r } => result?,
        () = forced => tracing::warn!(?grace, "in-flight requests still running after the grace period; stopping"),
    }
    // The sweeper stops between sweeps, never in the middle of one.
    let _ = sweeper.await;
    state.tasks.close();
    if tokio::time::timeout(grace, state.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("background store work did not finish within the grace period");
    }
    if let Some(exit) = workers.exit.take() {
        let _ = exit.send(true);
    }
    let threads = std::mem::take(&mut workers.threads);
    let _ = tokio::task::spawn_blocking(move || {
        for thread in threads {
            let _ = thread.join();
        }
    })
    .await;
    if let Err(e) = state.store.close().await {
        tracing::warn!(error = %e, "closing the store failed");
    }
    tracing::info!("ctxgate stopped");
    Ok(())
}

fn spawn_sweeper(
    state: Arc<AppState>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.changed() => return,
            }
            if *stop.borrow() {
                return;
            }
            match state.store.sweep_expired(state.clock.unix_now()).await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(removed = n, "swept expired records"),
                Err(e) => tracing::warn!(error = %e, "store sweep failed"),
            }
            let bounded = [Namespace::Originals, Namespace::Compressed];
            match state
                .store
                .evict_to(&bounded, state.config.store_max_bytes)
                .await
            {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    evicted = n,
                    "store over its size bound; evicted the least recently used records"
                ),
                Err(e) => tracing::warn!(error = %e, "store eviction failed"),
            }
        }
    })
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutdown signal received; draining");
}

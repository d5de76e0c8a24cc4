//! Real Redis servers for the tests: one `redis-server`, or a three-master Redis Cluster, on free loopback ports.
//!
//! Each server is a child of the test process, killed when its handle drops; a watchdog shell kills it too if the
//! test process dies without dropping it (a panic in another thread, a static that is never dropped). Without
//! `redis-server` on PATH the tests fail with a message saying what to install: the Redis backend is never
//! silently left untested.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly on what it did not expect"
)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One `redis-server` process.
pub struct RedisServer {
    pub port: u16,
    child: Child,
    dir: PathBuf,
    cluster: bool,
}

impl RedisServer {
    /// Starts a plain Redis on a free port and waits until it answers.
    pub fn start() -> RedisServer {
        let dir = tempfile::tempdir().unwrap().keep();
        spawn_ready(free_port, &dir, false)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL: as if it crashed) and waits for it to go.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on the same port (after [`Self::kill`]), with the same data directory.
    pub fn restart(&mut self) {
        let again = spawn(self.port, &self.dir, self.cluster);
        let old = std::mem::replace(self, again);
        drop(old);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        if let Err(why) = self.ready() {
            panic!("redis-server on port {}: {why}", self.port);
        }
    }

    /// Waits until the server answers PING (10 s at most); an error says why not, the server's early exit
    /// included (its port taken between the pick and its bind, by another test's connection).
    fn ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if cli(self.port, &["PING"]).is_some_and(|o| o.contains("PONG")) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited before answering ({status})"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("did not answer PING within 10 s".into())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Three masters (`redis-cli --cluster create`), all 16384 slots covered.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let dir = tempfile::tempdir().unwrap().keep();
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| spawn_ready(free_cluster_port, &dir, true))
            .collect();
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"].map(String::from));
        let out = Command::new("redis-cli")
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli must be installed with redis-server (Debian package redis-tools)");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let ok = nodes.iter().all(|n| {
                cli(n.port, &["CLUSTER", "INFO"]).is_some_and(|o| o.contains("cluster_state:ok"))
            });
            if ok {
                return RedisCluster { nodes };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the Redis Cluster did not reach cluster_state:ok within 20 s");
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }
}

impl RedisCluster {
    /// Kills every node (SIGKILL: as if the whole cluster crashed) and waits for them to go.
    pub fn kill(&mut self) {
        for n in &mut self.nodes {
            n.kill();
        }
    }

    /// Starts every node again on its port, with its cluster config file (the same slots and node ids), and waits
    /// until every node reports `cluster_state:ok`. The data is gone (no persistence), the cluster is not.
    pub fn restart(&mut self) {
        for n in &mut self.nodes {
            n.restart();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let ok = self.nodes.iter().all(|n| {
                cli(n.port, &["CLUSTER", "INFO"]).is_some_and(|o| o.contains("cluster_state:ok"))
            });
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the restarted Redis Cluster did not reach cluster_state:ok within 30 s");
    }
}

/// A store a test can take down and bring back: one Redis, or a whole Redis Cluster.
pub trait Outage {
    /// The `[store] url` that reaches it.
    fn url(&self) -> String;
    /// Kills it (SIGKILL).
    fn kill(&mut self);
    /// Starts it again at the same address(es) and waits until it serves.
    fn restart(&mut self);
}

impl Outage for RedisServer {
    fn url(&self) -> String {
        RedisServer::url(self)
    }
    fn kill(&mut self) {
        RedisServer::kill(self);
    }
    fn restart(&mut self) {
        RedisServer::restart(self);
    }
}

impl Outage for RedisCluster {
    fn url(&self) -> String {
        RedisCluster::url(self)
    }
    fn kill(&mut self) {
        RedisCluster::kill(self);
    }
    fn restart(&mut self) {
        RedisCluster::restart(self);
    }
}

/// One Redis shared by every test of a test binary (each test uses its own key prefix).
pub fn shared_redis() -> &'static RedisServer {
    static SERVER: OnceLock<RedisServer> = OnceLock::new();
    SERVER.get_or_init(RedisServer::start)
}

/// One Redis Cluster shared by every test of a test binary.
pub fn shared_cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(RedisCluster::start)
}

/// A key prefix no other test uses.
pub fn unique_prefix(test: &str) -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("t{}-{test}-{n}:", std::process::id())
}

/// A server on a port `pick` chooses, answering PING. A free port can be taken before the server binds it (the
/// tests run in parallel and their connections get ports from the same range): a server that exits for that is
/// started again on another port, a few times, before the test fails.
fn spawn_ready(pick: fn() -> u16, dir: &Path, cluster: bool) -> RedisServer {
    let mut why = String::new();
    for _ in 0..5 {
        let mut server = spawn(pick(), dir, cluster);
        match server.ready() {
            Ok(()) => return server,
            Err(e) => why = format!("port {}: {e}", server.port),
        }
    }
    panic!("redis-server did not start in five tries; last: {why}");
}

fn spawn(port: u16, dir: &Path, cluster: bool) -> RedisServer {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
        .args(["--dir", &dir.display().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if cluster {
        cmd.args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", &format!("nodes-{port}.conf")]);
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => panic!(
            "cannot start redis-server ({e}): the Redis store tests need it on PATH \
             (Debian: apt-get install redis-server); they fail rather than skip"
        ),
    };
    watchdog(child.id());
    RedisServer {
        port,
        child,
        dir: dir.to_path_buf(),
        cluster,
    }
}

/// Kills `pid` once this test process is gone, however it ended.
fn watchdog(pid: u32) {
    let me = std::process::id();
    let script = format!(
        "while kill -0 {me} 2>/dev/null && kill -0 {pid} 2>/dev/null; do sleep 0.5; done; kill -9 {pid} 2>/dev/null"
    );
    let _ = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A free port whose cluster bus port (+10000) is free too.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

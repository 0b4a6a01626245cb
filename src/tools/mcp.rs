//! MCP servers over stdio: the [`Manager`] starts each configured server in the background
//! (a slow or broken one never delays the session), speaks the protocol through the official
//! SDK (`rmcp`), and keeps each server's tools in the registry as the group `mcp:<id>`,
//! replaced whenever the server says its list changed. The agent declares them at its next
//! request because the registry's generation changed.
//!
//! Configuration arrives as plain [`ServerConfig`] values from the CLI: this module never reads
//! config files, never decides trust or approval of a server, and never talks to a frontend
//! (its state is read through [`Manager::statuses`] and [`Manager::take_notices`]).
//!
//! The parts: `process` (the child: environment, stderr log, stopping), `server` (one
//! server's life: handshake, paged `tools/list`, refresh, exit), `tool` (an MCP tool as a
//! [`crate::tools::Tool`]: names, argument checks, approval, the call, its result), `schema`
//! (the argument check).

mod process;
mod schema;
mod server;
mod tool;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Registry, ToolCtx};
use crate::sync::lock;

pub(crate) use process::GRACE;

/// One server as the user configured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The name in the configuration (`[mcp_servers.<id>]`, or the key in `.mcp.json`).
    pub id: String,
    pub command: String,
    pub args: Vec<String>,
    /// Variables added to the child's environment (after the secrets were removed).
    pub env: Vec<(String, String)>,
    /// The folder it runs in; the workspace when `None`.
    pub cwd: Option<PathBuf>,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
    /// Where it was defined, for listings (a file path).
    pub origin: String,
    /// `Some(why)` for a server that is listed but must not start (disabled, not approved).
    pub held: Option<String>,
}

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Not started, and why (disabled, not approved).
    Held(String),
    /// Started; the handshake or the first tool list is not done yet.
    Starting,
    /// Its tools are in the registry.
    Ready,
    /// It could not start, or it stopped; calls to its tools fail at once.
    Failed(String),
}

/// What `/mcp` and `minicode mcp list` show of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub id: String,
    pub(crate) origin: String,
    pub state: State,
    /// (name the model calls, the server's own name), in the server's order.
    pub tools: Vec<(String, String)>,
    /// Its stderr log, once it was started.
    pub(crate) log: Option<PathBuf>,
}

/// Starts, watches, restarts and stops the configured servers. Shared between the CLI (which
/// starts and stops it), the agent (which reads its state for `/mcp`) and the tools.
pub struct Manager {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    registry: Arc<Registry>,
    workspace: PathBuf,
    scrub: Vec<String>,
    servers: Vec<Arc<Server>>,
    /// Held while names are chosen and a group is set, so two servers registering at once
    /// cannot pick the same name.
    naming: Mutex<()>,
    /// Failures and problems to tell the user, taken by the agent before each request.
    notices: Mutex<Vec<String>>,
    /// Bumped on every state change, for waiting until servers settle.
    changes: watch::Sender<u64>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// One configured server and its current run.
pub(crate) struct Server {
    config: ServerConfig,
    live: Mutex<Live>,
}

struct Live {
    /// Which run the state belongs to: a run that was replaced (restart) changes nothing.
    run: u64,
    state: State,
    tools: Vec<(String, String)>,
    conn: Option<Conn>,
    /// Stops the current run.
    stop: Option<CancellationToken>,
    log: Option<PathBuf>,
}

/// A ready server's connection, as a call needs it.
#[derive(Clone)]
pub(crate) struct Conn {
    peer: rmcp::Peer<rmcp::RoleClient>,
    /// Cancelled when this run's server exits or is stopped: calls in flight fail at once.
    ended: CancellationToken,
}

impl Server {
    fn group(&self) -> String {
        format!("mcp:{}", self.config.id)
    }

    pub(crate) fn id(&self) -> &str {
        &self.config.id
    }

    pub(crate) fn call_timeout(&self) -> Duration {
        self.config.call_timeout
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        lock(&self.live)
    }

    /// The connection of a ready server, or why there is none.
    pub(crate) fn connection(&self) -> Result<Conn, String> {
        let live = self.live();
        match (&live.state, &live.conn) {
            (State::Ready, Some(conn)) => Ok(conn.clone()),
            (State::Failed(why), _) => Err(format!("it failed: {why}")),
            (State::Starting, _) => Err("it is still starting".to_string()),
            (State::Held(why), _) => Err(format!("it was not started: {why}")),
            (State::Ready, None) => Err("it has no connection".to_string()),
        }
    }
}

impl Manager {
    /// A manager for `servers` (nothing starts until [`Manager::start`]). `notices` are
    /// reported with the first ones of the servers (e.g. a `.mcp.json` that was not read).
    pub fn new(
        servers: Vec<ServerConfig>,
        registry: Arc<Registry>,
        ctx: &ToolCtx,
        notices: Vec<String>,
    ) -> Arc<Self> {
        let servers = servers
            .into_iter()
            .map(|config| {
                let state = match &config.held {
                    Some(why) => State::Held(why.clone()),
                    None => State::Starting,
                };
                Arc::new(Server {
                    config,
                    live: Mutex::new(Live {
                        run: 0,
                        state,
                        tools: Vec::new(),
                        conn: None,
                        stop: None,
                        log: None,
                    }),
                })
            })
            .collect();
        Arc::new(Self {
            shared: Arc::new(Shared {
                registry,
                workspace: ctx.workspace.clone(),
                scrub: ctx.scrub_env.clone(),
                servers,
                naming: Mutex::new(()),
                notices: Mutex::new(notices),
                changes: watch::channel(0).0,
                tasks: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Starts every server that is not held, each in its own task on the current runtime;
    /// returns at once.
    pub fn start(&self) {
        for server in &self.shared.servers {
            if server.config.held.is_none() {
                self.launch(server);
            }
        }
    }

    /// Stops the server's current run (if any) and starts a new one.
    pub(crate) fn restart(&self, id: &str) -> Result<(), String> {
        let server = self
            .shared
            .servers
            .iter()
            .find(|s| s.config.id == id)
            .ok_or_else(|| {
                let known: Vec<&str> = self
                    .shared
                    .servers
                    .iter()
                    .map(|s| s.config.id.as_str())
                    .collect();
                if known.is_empty() {
                    "no MCP server is configured".to_string()
                } else {
                    format!("no MCP server `{id}` (configured: {})", known.join(", "))
                }
            })?;
        if let Some(why) = &server.config.held {
            return Err(format!("MCP server `{id}` is not started: {why}"));
        }
        self.launch(server);
        Ok(())
    }

    fn launch(&self, server: &Arc<Server>) {
        let stop = CancellationToken::new();
        let run = {
            let mut live = server.live();
            if let Some(old) = live.stop.replace(stop.clone()) {
                old.cancel();
            }
            if let Some(conn) = live.conn.take() {
                conn.ended.cancel();
            }
            live.run += 1;
            live.state = State::Starting;
            live.run
        };
        self.shared.changed();
        let task = tokio::spawn(server::run(self.shared.clone(), server.clone(), run, stop));
        let mut tasks = lock(&self.shared.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// Every server's state and tools, in configuration order.
    pub fn statuses(&self) -> Vec<Status> {
        self.shared
            .servers
            .iter()
            .map(|s| {
                let live = s.live();
                Status {
                    id: s.config.id.clone(),
                    origin: s.config.origin.clone(),
                    state: live.state.clone(),
                    tools: live.tools.clone(),
                    log: live.log.clone(),
                }
            })
            .collect()
    }

    /// What happened since the last call that the user should hear of (failures, refused
    /// names, unreadable configuration), oldest first.
    pub(crate) fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.shared.notices))
    }

    /// Waits until no server is starting, or `limit` passed.
    pub async fn settled(&self, limit: Duration) {
        let mut changes = self.shared.changes.subscribe();
        let wait = async {
            loop {
                let starting = self
                    .shared
                    .servers
                    .iter()
                    .any(|s| s.live().state == State::Starting);
                if !starting || changes.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }

    /// Stops every server (stdin closed, SIGTERM, SIGKILL after [`GRACE`]) and waits for
    /// them; no server outlives this.
    pub async fn shutdown(&self) {
        for server in &self.shared.servers {
            let mut live = server.live();
            if let Some(stop) = live.stop.take() {
                stop.cancel();
            }
        }
        let tasks = std::mem::take(&mut *lock(&self.shared.tasks));
        // Each run stops its own child within two grace periods; the bound only guards odd
        // cases (the drop guards kill what is left).
        let all = futures_util::future::join_all(tasks);
        let _ = tokio::time::timeout(GRACE * 3, all).await;
    }
}

impl Shared {
    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    fn notice(&self, text: String) {
        tracing::warn!(notice = %text, "mcp");
        lock(&self.notices).push(text);
    }

    /// Applies `f` to the server's state if `run` is still its current run.
    fn update(&self, server: &Server, run: u64, f: impl FnOnce(&mut Live)) -> bool {
        let current = {
            let mut live = server.live();
            let current = live.run == run;
            if current {
                f(&mut live);
            }
            current
        };
        if current {
            self.changed();
        }
        current
    }

    /// Marks the run failed (its calls fail at once from now on) and tells the user.
    fn fail(&self, server: &Server, run: u64, why: String) {
        let id = &server.config.id;
        let applied = self.update(server, run, |live| {
            live.state = State::Failed(why.clone());
            if let Some(conn) = live.conn.take() {
                conn.ended.cancel();
            }
        });
        if applied {
            self.notice(format!(
                "MCP server `{id}` failed: {why} (its tools are unavailable; /mcp restart {id} \
                 starts it again)"
            ));
        }
    }

    /// Registers `tools` as the server's group under unique names and marks it ready.
    fn register(&self, server: &Arc<Server>, run: u64, conn: Conn, tools: Vec<rmcp::model::Tool>) {
        let _naming = lock(&self.naming);
        if server.live().run != run {
            return;
        }
        let group = server.group();
        let mut taken: HashSet<String> = self
            .registry
            .specs()
            .iter()
            .map(|s| s.name.to_string())
            .collect();
        for (name, _) in &server.live().tools {
            taken.remove(name);
        }
        let mut built: Vec<Arc<dyn super::Tool>> = Vec::new();
        let mut names = Vec::new();
        for remote in tools {
            let made = tool::McpTool::new(server.clone(), remote, &|n| taken.contains(n));
            taken.insert(made.name().to_string());
            names.push((made.name().to_string(), made.remote().to_string()));
            built.push(Arc::new(made));
        }
        let refused = self.registry.set_group(&group, built);
        names.retain(|(name, _)| !refused.contains(name));
        for name in refused {
            self.notice(format!(
                "MCP server `{}`: tool `{name}` was left out (the name is taken)",
                server.config.id
            ));
        }
        self.update(server, run, |live| {
            live.state = State::Ready;
            live.tools = names;
            live.conn = Some(conn);
        });
    }
}

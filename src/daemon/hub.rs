//! The daemon's sessions: opening one (inside an allowed root only; reopening one a crash left
//! mid-run with what its log and journal say), finding them by session or run, listing them,
//! and closing them all at shutdown (each one's MCP servers stopped after its core). Building a
//! core is the `protocol::Opener`'s job (the CLI's wiring): the hub never touches providers,
//! tools or session files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::live::{Live, Run};
use super::log::{CallJournal, EventLog, OpenRun, session_dir};
use super::wire::{self, RpcError};
use crate::protocol::{Event, Hosted, OpenRequest, Opened, Opener, Recovery};
use crate::sync::lock;

/// How long a new core may take to say `session_configured`.
const CONFIGURED_WAIT: Duration = Duration::from_secs(30);

/// Every session the daemon has open.
pub(crate) struct Hub {
    opener: Arc<dyn Opener>,
    roots: Vec<PathBuf>,
    /// Where the open sessions are listed (0600, beside the token), so a daemon restarted
    /// after a crash reopens them; emptied at a clean shutdown.
    registry: Option<PathBuf>,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// Opens one session at a time, so one id is never opened twice.
    opening: tokio::sync::Mutex<()>,
    /// Each session's end: its core closed, then what its opener left to stop (MCP servers).
    endings: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Cancelled by `server.shutdown` or a signal.
    pub(crate) stop: CancellationToken,
}

fn open_failed(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(wire::OPEN_FAILED, format!("cannot open the session: {e}"))
}

/// Runs file work on the session's folder (inside the repository) on the blocking pool: the
/// daemon's one thread keeps answering and stopping whatever that folder holds.
async fn off_the_loop<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(open_failed)?
        .map_err(open_failed)
}

/// What a session's event log and journal say about the run an earlier daemon left open.
type Found = (EventLog, u64, Option<OpenRun>);

/// A session of an earlier daemon: its log says whether a run was left open, its journal
/// which calls had started (bound to `journal` from now on).
async fn earlier(
    workspace: &Path,
    id: &str,
    journal: &Arc<CallJournal>,
) -> Result<(Option<Found>, Option<Recovery>), RpcError> {
    let (found, started) = off_the_loop({
        let (workspace, id, journal) = (workspace.to_path_buf(), id.to_string(), journal.clone());
        move || {
            let dir = session_dir(&workspace, &id)?;
            let found = EventLog::open(&dir)?;
            let started = journal.bind(&dir)?;
            Ok((found, started))
        }
    })
    .await?;
    let recovery = found.2.as_ref().map(|run| Recovery {
        started,
        cancelled: run.cancelled,
    });
    Ok((Some(found), recovery))
}

impl Hub {
    /// `roots` are canonical folders; a workspace must be one of them or inside one.
    pub(super) fn new(
        opener: Arc<dyn Opener>,
        roots: Vec<PathBuf>,
        registry: Option<PathBuf>,
    ) -> Hub {
        Hub {
            opener,
            roots,
            registry,
            sessions: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
            endings: Mutex::new(Vec::new()),
            stop: CancellationToken::new(),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Live>>> {
        lock(&self.sessions)
    }

    fn check_workspace(&self, raw: &str) -> Result<PathBuf, RpcError> {
        let refused = |why: String| RpcError::new(wire::WORKSPACE_REFUSED, why);
        let path = Path::new(raw);
        if !path.is_absolute() {
            return Err(refused(format!(
                "workspace {raw:?} is not an absolute path"
            )));
        }
        let canonical = path
            .canonicalize()
            .map_err(|e| refused(format!("workspace {raw:?}: {e}")))?;
        if !canonical.is_dir() {
            return Err(refused(format!("workspace {raw:?} is not a folder")));
        }
        if !self.roots.iter().any(|root| canonical.starts_with(root)) {
            return Err(refused(format!(
                "workspace {} is outside every allowed root",
                canonical.display()
            )));
        }
        Ok(canonical)
    }

    /// `session.open`: the session's info (its id, last sequence, where to replay from).
    pub(crate) async fn open(
        &self,
        workspace: &str,
        session_id: Option<String>,
    ) -> Result<Value, RpcError> {
        if self.stop.is_cancelled() {
            return Err(RpcError::new(
                wire::SHUTTING_DOWN,
                "the daemon is shutting down",
            ));
        }
        let workspace = self.check_workspace(workspace)?;
        let _one_at_a_time = self.opening.lock().await;
        if let Some(id) = &session_id {
            let open = self.sessions().get(id).cloned();
            if let Some(live) = open.filter(|l| !l.is_closed()) {
                if live.workspace != workspace {
                    return Err(open_failed(format!(
                        "session {id} belongs to workspace {}",
                        live.workspace.display()
                    )));
                }
                return Ok(live.info());
            }
        }
        let journal = Arc::new(CallJournal::default());
        // A session of an earlier daemon: its log says whether a run was left open, its journal
        // which calls had started.
        let (reopened, recovery) = match &session_id {
            Some(id) => earlier(&workspace, id, &journal).await?,
            None => (None, None),
        };
        let hosted = Hosted {
            journal: journal.clone(),
            recovery,
        };
        let opened = self.build(&workspace, session_id.clone(), hosted).await?;
        let closing = opened.closing;
        let mut handle = opened.handle;
        let first = tokio::time::timeout(CONFIGURED_WAIT, handle.next_event())
            .await
            .ok()
            .flatten();
        let Some(first @ Event::SessionConfigured { .. }) = first else {
            return Err(open_failed("the session did not start"));
        };
        let Event::SessionConfigured { session_id: id, .. } = &first else {
            return Err(open_failed("the session did not start"));
        };
        let id = id.clone();
        let (log, last, open_run) = match reopened {
            Some(found) => found,
            None => {
                off_the_loop({
                    let (workspace, id, journal) = (workspace.clone(), id.clone(), journal.clone());
                    move || {
                        let dir = session_dir(&workspace, &id)?;
                        journal.bind(&dir)?;
                        EventLog::open(&dir)
                    }
                })
                .await?
            }
        };
        let run = open_run.map(|r| Run {
            id: r.run_id,
            cancel_requested: r.cancelled,
            bound: false,
        });
        let live = Live::start(
            id.clone(),
            workspace,
            handle,
            first,
            (log, last),
            journal,
            run,
        );
        self.sessions().insert(id, live.clone());
        self.save_registry();
        let info = live.info();
        self.watch_end(live, closing);
        Ok(info)
    }

    /// Once the session's core has closed, stops what its opener left running (its MCP
    /// servers); `close_all` waits for these too.
    fn watch_end(&self, live: Arc<Live>, closing: BoxFuture<'static, ()>) {
        let ending = tokio::spawn(async move {
            live.closed().await;
            closing.await;
        });
        let mut endings = lock(&self.endings);
        endings.retain(|e| !e.is_finished());
        endings.push(ending);
    }

    /// Has the opener build the session's core, off the loop (it reads files and may start
    /// programs).
    async fn build(
        &self,
        workspace: &Path,
        session_id: Option<String>,
        hosted: Hosted,
    ) -> Result<Opened, RpcError> {
        let request = OpenRequest {
            cwd: workspace.to_path_buf(),
            session_id,
            mcp_servers: Vec::new(),
            files: None,
            hosted: Some(hosted),
        };
        let opener = self.opener.clone();
        tokio::task::spawn_blocking(move || opener.open(request))
            .await
            .map_err(open_failed)?
            .map_err(open_failed)
    }

    /// Writes the list of open sessions (workspace and id) for a restart to reopen.
    fn save_registry(&self) {
        let Some(path) = &self.registry else {
            return;
        };
        let mut open: Vec<Value> = self
            .sessions()
            .values()
            .filter(|l| !l.is_closed())
            .map(|l| json!({"workspace": l.workspace.display().to_string(), "session_id": l.id}))
            .collect();
        open.sort_by(|a, b| a["session_id"].as_str().cmp(&b["session_id"].as_str()));
        let text = json!({ "sessions": open }).to_string();
        if let Err(e) = crate::fsutil::write_atomic(path, text.as_bytes(), Some(0o600)) {
            tracing::warn!(error = %e, "could not write the list of open sessions");
        }
    }

    /// Reopens the sessions an earlier daemon had open when it died (each resumes the run it
    /// left, if any). A session that cannot be opened (gone, locked, now outside the roots)
    /// is skipped.
    pub(crate) async fn reopen_registered(&self) {
        let Some(path) = &self.registry else {
            return;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let listed: Value = serde_json::from_str(&text).unwrap_or_default();
        let entries = listed["sessions"].as_array().cloned().unwrap_or_default();
        for entry in entries {
            let (Some(workspace), Some(id)) =
                (entry["workspace"].as_str(), entry["session_id"].as_str())
            else {
                continue;
            };
            if let Err(e) = self.open(workspace, Some(id.to_string())).await {
                tracing::warn!(session = id, error = %e.message, "could not reopen a session");
            }
        }
    }

    /// An open session by id.
    pub(super) fn get(&self, session_id: &str) -> Result<Arc<Live>, RpcError> {
        self.sessions()
            .get(session_id)
            .filter(|l| !l.is_closed())
            .cloned()
            .ok_or_else(|| {
                RpcError::new(
                    wire::UNKNOWN_SESSION,
                    format!("no open session {session_id:?}: open it with session.open first"),
                )
            })
    }

    /// `session.list`: every open session, oldest sequence first is not promised.
    pub(super) fn list(&self) -> Value {
        let mut sessions: Vec<Value> = self
            .sessions()
            .values()
            .filter(|l| !l.is_closed())
            .map(|l| l.info())
            .collect();
        sessions.sort_by(|a, b| a["session_id"].as_str().cmp(&b["session_id"].as_str()));
        json!({ "sessions": sessions })
    }

    /// Stops every core (each interrupts its run and saves) and waits, bounded, for them.
    pub(crate) async fn close_all(&self, wait: Duration) {
        let open: Vec<Arc<Live>> = self.sessions().values().cloned().collect();
        for live in &open {
            live.shutdown();
        }
        let deadline = tokio::time::Instant::now() + wait;
        for live in open {
            let _ = tokio::time::timeout_at(deadline, live.closed()).await;
        }
        let endings = std::mem::take(&mut *lock(&self.endings));
        for ending in endings {
            let _ = tokio::time::timeout_at(deadline, ending).await;
        }
        // Closed on purpose: nothing to reopen at the next start.
        self.save_registry();
    }
}

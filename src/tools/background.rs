//! The session's background processes (issue 36): what `bash` with `background: true`
//! starts, `bash_output` reads and `bash_kill` ends. Each gets a short id (`bg1`, `bg2`, …),
//! its own task that collects its output (`background::job`), and at most
//! [`Jobs::max`] run at once. They keep the confinement of the call that started them (the
//! same supervisor and sandbox as any `bash` call). All of them end when the session does
//! ([`Jobs::end_all`], and dropping the registry), or with minicode: the supervisor of each
//! kills its group when minicode's end of its socket closes, even after a SIGKILL.
//!
//! Tools never learn who listens: a change (one started, one ended) is told to a callback
//! the agent sets ([`Jobs::watch`]).

pub(crate) mod job;
pub(crate) mod unread;

use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::chat::Background;
use crate::sandbox::Policy;

use super::ToolCtx;
use job::Job;

/// Told the whole listing whenever a process starts or ends.
pub(crate) type Watcher = Arc<dyn Fn(Vec<Background>) + Send + Sync>;

/// Ended processes kept (for a last `bash_output` and for `/ps`) before the oldest is
/// forgotten.
const KEEP_ENDED: usize = 16;

/// The background processes of one session.
pub struct Jobs {
    shared: Arc<Shared>,
}

struct Shared {
    max: usize,
    /// Why none may start here, when none may (a sub-agent's tools).
    refused: Option<&'static str>,
    state: Mutex<State>,
    watcher: RwLock<Option<Watcher>>,
}

#[derive(Default)]
struct State {
    next: u32,
    jobs: Vec<Arc<Job>>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Jobs(max {})", self.shared.max)
    }
}

impl Jobs {
    /// A registry letting `max` processes run at once.
    pub(crate) fn new(max: usize) -> Self {
        Self::build(max, None)
    }

    /// A registry that starts nothing, saying `why` (a sub-agent's tools).
    pub(crate) fn refusing(why: &'static str) -> Self {
        Self::build(0, Some(why))
    }

    fn build(max: usize, refused: Option<&'static str>) -> Self {
        Self {
            shared: Arc::new(Shared {
                max,
                refused,
                state: Mutex::new(State::default()),
                watcher: RwLock::new(None),
            }),
        }
    }

    /// Sets who is told about changes.
    pub(crate) fn watch(&self, watcher: Watcher) {
        *crate::sync::write(&self.shared.watcher) = Some(watcher);
    }

    /// Every process, running and recently ended, oldest first.
    pub(crate) fn list(&self) -> Vec<Background> {
        self.shared.list()
    }

    /// Starts `command` under `policy`; its id, or why it did not start (for the model).
    pub(crate) fn start(
        &self,
        command: &str,
        ctx: &ToolCtx,
        policy: &Policy,
    ) -> Result<String, String> {
        if let Some(why) = self.shared.refused {
            return Err(why.to_string());
        }
        let mut state = crate::sync::lock(&self.shared.state);
        let running = state
            .jobs
            .iter()
            .filter(|j| !j.ended.is_cancelled())
            .count();
        if running >= self.shared.max {
            return Err(format!(
                "not started: {running} background processes are running, the most allowed \
                 at once (`[tools] max_background`); end one with bash_kill first"
            ));
        }
        let started = job::start(command, ctx, policy)?;
        state.next += 1;
        let job = Arc::new(Job {
            id: format!("bg{}", state.next),
            command: command.to_string(),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            pgid: started.pgid(),
            inner: Mutex::new(job::Inner {
                unread: unread::Unread::new(ctx.output_limit()),
                state: crate::chat::BackgroundState::Running,
                log: String::new(),
            }),
            stop: tokio_util::sync::CancellationToken::new(),
            ended: tokio_util::sync::CancellationToken::new(),
        });
        state.jobs.push(job.clone());
        forget_old(&mut state.jobs);
        drop(state);
        let id = job.id.clone();
        let shared = self.shared.clone();
        tokio::spawn(job::watch(job, started, job::Saving::of(ctx), move || {
            shared.tell()
        }));
        self.shared.tell();
        Ok(id)
    }

    /// The process `id`.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Job>> {
        let state = crate::sync::lock(&self.shared.state);
        state.jobs.iter().find(|j| j.id == id).cloned()
    }

    /// Asks process `id` to end (SIGTERM, SIGKILL after [`job::GRACE`]) and waits until it
    /// has; `None` when there is no such process.
    pub(crate) async fn kill(&self, id: &str) -> Option<Background> {
        let job = self.get(id)?;
        job.stop.cancel();
        job.ended.cancelled().await;
        Some(job.snapshot())
    }

    /// Kills every running process at once (SIGKILL to each group): the session ends.
    pub(crate) fn end_all(&self) {
        let state = crate::sync::lock(&self.shared.state);
        for job in state.jobs.iter().filter(|j| !j.ended.is_cancelled()) {
            job.stop.cancel();
            crate::process::child::kill_group(job.pgid);
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.end_all();
    }
}

impl Shared {
    fn list(&self) -> Vec<Background> {
        let state = crate::sync::lock(&self.state);
        state.jobs.iter().map(|j| j.snapshot()).collect()
    }

    fn tell(&self) {
        let watcher = crate::sync::read(&self.watcher).clone();
        if let Some(watcher) = watcher {
            watcher(self.list());
        }
    }
}

/// Forgets the oldest ended processes beyond [`KEEP_ENDED`].
fn forget_old(jobs: &mut Vec<Arc<Job>>) {
    let ended = jobs.iter().filter(|j| j.ended.is_cancelled()).count();
    let mut extra = ended.saturating_sub(KEEP_ENDED);
    jobs.retain(|j| {
        if extra > 0 && j.ended.is_cancelled() {
            extra -= 1;
            return false;
        }
        true
    });
}

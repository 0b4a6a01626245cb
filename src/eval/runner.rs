//! One run of one task: a fresh scratch workspace (the fixture copied in), the setup commands,
//! the agent as an ordinary one-shot run of this very binary (its own session, HOME and XDG
//! folders, the sandbox on, approvals answered by the task's script), then the checks. Setup
//! and check commands run confined, through `minicode sandbox`, in the workspace. Every child
//! dies with the evaluator, and an interrupted evaluator ([`Stop`]) stops them all.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::expect;
use super::scratch::Scratch;
use super::stop::{Stop, signal_group};
use super::task::{Answer, Task};
use super::trajectory::Trajectory;

/// What every run shares: the binary, the model flags, where results go.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// This binary (`std::env::current_exe`).
    pub(crate) exe: PathBuf,
    /// The flags that choose the model (`--demo`, `--model`, `--base-url`, `--config`).
    pub(crate) model_args: Vec<OsString>,
    pub(crate) out: PathBuf,
    /// What the agent runs are handed to reach the model (see `eval::Options`).
    pub(crate) agent_env: Vec<(OsString, OsString)>,
    /// Configured secret names, scrubbed from every child.
    pub(crate) scrub: Vec<String>,
    /// Set when the evaluator is interrupted.
    pub(crate) stop: Arc<Stop>,
}

/// One finished run.
#[derive(Debug, Clone)]
pub(crate) struct RunResult {
    pub(crate) task: usize,
    pub(crate) run: u32,
    pub(crate) dir: PathBuf,
    pub(crate) trajectory: Trajectory,
    /// Every broken expectation or check, and any failure to run at all.
    pub(crate) failures: Vec<String>,
    /// The whole run as the evaluator saw it: copy, setup, agent, checks.
    pub(crate) wall: Duration,
    /// The agent process alone.
    pub(crate) agent_wall: Duration,
}

impl RunResult {
    pub(crate) fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// How long a stopped process gets to save its session before it is killed.
const GRACE: Duration = Duration::from_secs(5);
/// The same when the evaluator itself is interrupted: the user is waiting.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// How often a wait looks at the stop switch.
const STOP_POLL: Duration = Duration::from_millis(50);
/// The tail of a failed command's stderr quoted in the report.
const QUOTED_STDERR: usize = 300;

/// Runs `task` once (`run` counts from 1).
pub(crate) fn run(plan: &Plan, task: &Task, index: usize, run: u32) -> RunResult {
    let started = Instant::now();
    let dir = plan
        .out
        .join(task.name.replace('/', "__"))
        .join(format!("run-{run}"));
    let mut result = RunResult {
        task: index,
        run,
        dir: dir.clone(),
        trajectory: Trajectory::default(),
        failures: Vec::new(),
        wall: Duration::ZERO,
        agent_wall: Duration::ZERO,
    };
    match Scratch::new() {
        Ok(workspace) => {
            if let Err(e) = steps(plan, task, workspace.path(), &mut result) {
                result.failures.push(e);
            }
        }
        Err(e) => result
            .failures
            .push(format!("cannot make a scratch workspace: {e}")),
    }
    result.wall = started.elapsed();
    result
}

/// The run's steps; an `Err` is a failure that stopped it (setup, the agent not starting).
fn steps(plan: &Plan, task: &Task, ws: &Path, result: &mut RunResult) -> Result<(), String> {
    let dir = result.dir.clone();
    let home = dir.join("home");
    for sub in [".config", ".cache", ".local/share", ".local/state", "run"] {
        std::fs::create_dir_all(home.join(sub))
            .map_err(|e| format!("cannot make {}: {e}", home.display()))?;
    }
    if let Some(fixture) = &task.workspace {
        copy_tree(fixture, ws).map_err(|e| format!("cannot copy the workspace: {e}"))?;
    }
    for command in &task.setup {
        interrupted(plan)?;
        confined(plan, ws, &home, command, task.timeout)
            .map_err(|e| format!("setup `{command}` {e}"))?;
    }
    interrupted(plan)?;
    let agent_started = Instant::now();
    let outcome = agent(plan, task, ws, &dir)?;
    result.agent_wall = agent_started.elapsed();
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default();
    result.trajectory = Trajectory::from_events(&events);
    if let Some(session) = &result.trajectory.session_path {
        // Kept for inspection beside the transcript; the scratch workspace goes.
        // The journal holds what was saved since the snapshot; `minicode export` reads both.
        let _ = std::fs::copy(session, dir.join("session.json"));
        let journal = Path::new(session).with_extension("journal");
        if journal.is_file() {
            let _ = std::fs::copy(journal, dir.join("session.journal"));
        }
    }
    if outcome == Outcome::TimedOut {
        result.failures.push(format!(
            "timeout: the run took longer than {} s and was stopped",
            task.timeout.as_secs()
        ));
    }
    interrupted(plan)?;
    result
        .failures
        .extend(expect::failures(task, &result.trajectory));
    for command in &task.checks {
        interrupted(plan)?;
        if let Err(e) = confined(plan, ws, &home, command, task.timeout) {
            result.failures.push(format!("check `{command}` {e}"));
        }
    }
    Ok(())
}

/// `Err` once the evaluator was interrupted: the run stops where it is.
fn interrupted(plan: &Plan) -> Result<(), String> {
    match plan.stop.signal_name() {
        Some(signal) => Err(format!("interrupted: the evaluator got {signal}")),
        None => Ok(()),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Exited,
    TimedOut,
    /// The evaluator was interrupted; the process was stopped.
    Stopped,
}

/// The agent: a one-shot run with stream-json on stdout kept as the transcript.
fn agent(plan: &Plan, task: &Task, ws: &Path, dir: &Path) -> Result<Outcome, String> {
    let open = |name: &str| {
        std::fs::File::create(dir.join(name)).map_err(|e| format!("cannot write {name}: {e}"))
    };
    let mut cmd = Command::new(&plan.exe);
    cmd.args(&plan.model_args).args([
        "--output-format",
        "stream-json",
        "--sandbox",
        "workspace-write",
    ]);
    for expected in &task.expect_approval {
        cmd.arg("--approval-answer")
            .arg(format!("{}={}", expected.tool, expected.answer.as_str()));
    }
    let others = match task.other_approvals {
        Answer::Approve => "*=approve",
        Answer::Deny => "*=deny",
    };
    cmd.args(["--approval-answer", others, "--"])
        .arg(&task.prompt);
    cmd.stdout(open("events.jsonl")?)
        .stderr(open("stderr.txt")?);
    prepare(&mut cmd, ws, &dir.join("home"), &plan.scrub);
    // This binary again: it reads its model's variables and forgets them at once.
    cmd.envs(plan.agent_env.iter().map(|(k, v)| (k, v)));
    let (status, outcome) = cmd
        .spawn()
        .and_then(|child| supervise(child, task.timeout, &plan.stop))
        .map_err(|e| format!("cannot start the agent: {e}"))?;
    interrupted(plan)?;
    // Exit 1 is a failed run (its events say why); 2 is a usage error that never ran.
    if status.code() == Some(2) {
        let stderr = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
        return Err(format!(
            "the agent refused to start (exit 2): {}",
            tail(&stderr)
        ));
    }
    Ok(outcome)
}

/// `sh -c command` confined as a `bash` call is, in `ws`; `Err` says how it failed.
fn confined(
    plan: &Plan,
    ws: &Path,
    home: &Path,
    command: &str,
    limit: Duration,
) -> Result<(), String> {
    let mut cmd = Command::new(&plan.exe);
    cmd.args(["sandbox", "--", "sh", "-c", command])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    prepare(&mut cmd, ws, home, &plan.scrub);
    let (status, outcome, stderr) =
        wait_capturing(cmd, limit, &plan.stop).map_err(|e| format!("could not start: {e}"))?;
    match outcome {
        Outcome::TimedOut => return Err(format!("timed out after {} s", limit.as_secs())),
        Outcome::Stopped => return interrupted(plan),
        Outcome::Exited => {}
    }
    if status.success() {
        return Ok(());
    }
    let code = status
        .code()
        .map_or("a signal".to_string(), |c| c.to_string());
    Err(format!("failed (exit {code}): {}", tail(&stderr)))
}

fn wait_capturing(
    mut cmd: Command,
    limit: Duration,
    stop: &Stop,
) -> std::io::Result<(ExitStatus, Outcome, String)> {
    use std::io::Read;
    let mut child = cmd.spawn()?;
    let mut pipe = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(p) = pipe.as_mut() {
            let _ = p.take(64 * 1024).read_to_string(&mut text);
        }
        text
    });
    let (status, outcome) = supervise(child, limit, stop)?;
    let stderr = reader.join().unwrap_or_default();
    Ok((status, outcome, stderr))
}

/// The run's folder as HOME and every XDG folder, `ws` as the working folder, a process group
/// of its own (so a timeout stops everything it started), the secrets scrubbed, and death
/// with the evaluator (a killed evaluator leaves no run going; the agent's own children die
/// with it in turn).
fn prepare(cmd: &mut Command, ws: &Path, home: &Path, scrub: &[String]) {
    use std::os::unix::process::CommandExt;
    crate::process::child::scrub_env(cmd, scrub);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || crate::process::child::die_with_parent(parent));
    }
    cmd.current_dir(ws)
        .stdin(Stdio::null())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env_remove("XDG_CONFIG_DIRS")
        .env_remove("XDG_DATA_DIRS")
        .process_group(0);
}

/// Waits for `child` up to `limit`; then SIGTERM to its group (the run saves its session as
/// interrupted), and SIGKILL after a grace period. An interrupted evaluator (`stop`, which
/// already sent the SIGTERM) ends the wait the same way, with a shorter grace.
fn supervise(
    mut child: std::process::Child,
    limit: Duration,
    stop: &Stop,
) -> std::io::Result<(ExitStatus, Outcome)> {
    let pid = child.id() as i32;
    stop.track(pid);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let ended = waited(&rx, limit, stop);
    let result = match ended {
        Some(status) => status.map(|s| (s, Outcome::Exited)),
        None => {
            let outcome = if stop.signal().is_some() {
                Outcome::Stopped
            } else {
                signal_group(pid, nix::sys::signal::Signal::SIGTERM);
                Outcome::TimedOut
            };
            let grace = match outcome {
                Outcome::Stopped => STOP_GRACE,
                _ => GRACE,
            };
            let status = match rx.recv_timeout(grace) {
                Ok(status) => status,
                Err(_) => {
                    signal_group(pid, nix::sys::signal::Signal::SIGKILL);
                    rx.recv().map_err(std::io::Error::other)?
                }
            };
            status.map(|s| (s, outcome))
        }
    };
    stop.untrack(pid);
    result
}

/// The child's status if it ended within `limit` and before the evaluator was stopped.
fn waited(
    rx: &std::sync::mpsc::Receiver<std::io::Result<ExitStatus>>,
    limit: Duration,
    stop: &Stop,
) -> Option<std::io::Result<ExitStatus>> {
    let deadline = Instant::now() + limit;
    loop {
        if stop.signal().is_some() {
            return None;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        match rx.recv_timeout(left.min(STOP_POLL)) {
            Ok(status) => return Some(status),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Some(Err(std::io::Error::other("the wait for the run ended")));
            }
        }
    }
}

/// The last few hundred characters, on one line.
fn tail(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let skip = flat.chars().count().saturating_sub(QUOTED_STDERR);
    let cut: String = flat.chars().skip(skip).collect();
    if cut.is_empty() {
        "no output".to_string()
    } else {
        cut
    }
}

/// Copies the fixture's files and folders (links are copied as links, never followed).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

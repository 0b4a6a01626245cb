//! One running language server and our side of its conversation, through `async-lsp`'s client
//! main loop and `lsp-types`: started under the session's sandbox policy by the same
//! supervisor as `bash` (a group of its own that dies with minicode), initialised in the
//! background, told each new text of a file (`didOpen`, then `didChange` with the whole
//! text), and asked nothing else: it pushes `publishDiagnostics`, which we keep per file and
//! version. It decides nothing about what the model reads (see `report`).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_lsp::router::Router;
use async_lsp::{MainLoop, ResponseError, ServerSocket};
use lsp_types::notification::{
    DidChangeTextDocument, DidOpenTextDocument, Exit, Initialized, PublishDiagnostics,
};
use lsp_types::request::{
    RegisterCapability, Shutdown, UnregisterCapability, WorkDoneProgressCreate,
    WorkspaceConfiguration,
};
use lsp_types::{
    DiagnosticSeverity, DidChangeTextDocumentParams, DidOpenTextDocumentParams, InitializedParams,
    TextDocumentContentChangeEvent, TextDocumentItem, Url, VersionedTextDocumentIdentifier,
};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::ServerCommand;
use super::report::{Diag, Severity};
use crate::process::child::GroupGuard;
use crate::sync::lock;
use crate::tools::ToolCtx;

/// How long a server may take to answer `shutdown` and exit before its group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);

/// Why a check brought nothing back.
#[derive(Debug, thiserror::Error)]
pub(super) enum Problem {
    /// No diagnostics in time; the server keeps running.
    #[error("it did not answer in time")]
    Slow,
    /// The server is gone or cannot be used.
    #[error("{0}")]
    Stopped(String),
}

/// Where the server's start-up stands.
#[derive(Debug, Clone)]
enum Readiness {
    Starting,
    Ready,
    Failed(String),
}

/// The last diagnostics a server pushed for one file.
#[derive(Debug, Default)]
struct Published {
    version: Option<i32>,
    /// Bumped with every push for the file, so a server that sends no versions still tells
    /// us that it answered.
    seq: u64,
    diags: Vec<Diag>,
}

/// What the main loop's handlers share with us.
#[derive(Clone)]
struct Shared {
    published: Arc<Mutex<HashMap<Url, Published>>>,
    pushed: Arc<watch::Sender<u64>>,
}

/// A started server.
pub(super) struct Client {
    socket: ServerSocket,
    shared: Shared,
    ready: watch::Receiver<Readiness>,
    /// The version we last sent of each open file.
    versions: HashMap<Url, i32>,
    /// What the server said of each file after our last change: the "before" of the next.
    baseline: HashMap<Url, Vec<Diag>>,
    main_loop: tokio::task::JoinHandle<String>,
    child: tokio::process::Child,
    /// Kills the supervisor's group (the server and all it started) when dropped.
    _group: GroupGuard,
    /// Our end of the supervisor's socket: closing it makes the supervisor kill the group.
    _control: Option<UnixStream>,
}

impl Client {
    /// Starts `command` in the workspace under `policy` (the session's, from the core's
    /// sandbox part) and begins the `initialize` handshake in the background. The error is a
    /// message for a note.
    pub(super) fn start(
        command: &ServerCommand,
        ctx: &ToolCtx,
        policy: &crate::sandbox::Policy,
    ) -> Result<Client, String> {
        if policy.is_confined() && ctx.supervisor.is_none() {
            return Err("could not start: no helper process to confine it in".into());
        }
        let path_var = std::env::var_os("PATH");
        if super::language::find_program(&command.command, &ctx.workspace, path_var.as_deref())
            .is_none()
        {
            return Err("was not found (or is not executable)".into());
        }
        let line = shell_line(command);
        let streams = crate::tools::bash::spawn::Streams {
            stdin: Stdio::piped(),
            stdout: Stdio::piped(),
            stderr: Stdio::null(),
        };
        let tag = crate::process::supervisor::new_tag();
        let (mut child, control) =
            crate::tools::bash::spawn::spawn(&line, ctx, policy, &tag, streams)
                .map_err(|e| format!("could not start: {e}"))?;
        let pid = child.id().ok_or("could not start: no process id")?;
        let group = GroupGuard(pid as libc::pid_t);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("could not be connected to".into());
        };
        let (pushed, _) = watch::channel(0u64);
        let shared = Shared {
            published: Arc::default(),
            pushed: Arc::new(pushed),
        };
        let (main_loop, socket) = MainLoop::new_client(|_| router(shared.clone()));
        let main_loop = tokio::spawn(async move {
            match main_loop
                .run_buffered(stdout.compat(), stdin.compat_write())
                .await
            {
                Ok(()) => "ended".to_string(),
                Err(e) => format!("stopped ({e})"),
            }
        });
        let (ready_tx, ready) = watch::channel(Readiness::Starting);
        let init = socket.clone();
        let root = ctx.workspace.clone();
        tokio::spawn(async move {
            let state = match handshake(&init, &root).await {
                Ok(()) => Readiness::Ready,
                Err(e) => Readiness::Failed(e),
            };
            let _ = ready_tx.send(state);
        });
        Ok(Client {
            socket,
            shared,
            ready,
            versions: HashMap::new(),
            baseline: HashMap::new(),
            main_loop,
            child,
            _group: group,
            _control: control,
        })
    }

    /// Whether the server still runs.
    pub(super) fn alive(&self) -> bool {
        !self.main_loop.is_finished()
    }

    /// Tells the server `text` is the new content of `path` and waits until `deadline` for
    /// its diagnostics of that version. Returns what it said before this change and now.
    pub(super) async fn check(
        &mut self,
        path: &Path,
        language_id: &str,
        text: String,
        deadline: Instant,
    ) -> Result<(Vec<Diag>, Vec<Diag>), Problem> {
        self.wait_ready(deadline).await?;
        let uri = Url::from_file_path(path)
            .map_err(|()| Problem::Stopped(format!("{} is no file URI", path.display())))?;
        let mut pushed = self.shared.pushed.subscribe();
        pushed.borrow_and_update();
        let seq_before = lock(&self.shared.published).get(&uri).map_or(0, |p| p.seq);
        let version = self.send_text(&uri, language_id, text)?;
        loop {
            if let Some(diags) = self.answered(&uri, version, seq_before) {
                let before = self.baseline.insert(uri, diags.clone()).unwrap_or_default();
                return Ok((before, diags));
            }
            match tokio::time::timeout_at(deadline, pushed.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(self.why_not().await),
                Err(_) => return Err(self.why_not().await),
            }
        }
    }

    /// Asks the server to shut down and exit, then kills its group, whatever it did.
    pub(super) async fn shut_down(mut self) {
        if self.alive() && matches!(*self.ready.borrow(), Readiness::Ready) {
            let asked = self.socket.request::<Shutdown>(());
            if let Ok(Ok(())) = tokio::time::timeout(SHUTDOWN_GRACE, asked).await {
                let _ = self.socket.notify::<Exit>(());
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.child.wait()).await;
            }
        }
        self.main_loop.abort();
        // Dropping the guard and the control socket kills what is left of the group.
    }

    async fn wait_ready(&mut self, deadline: Instant) -> Result<(), Problem> {
        loop {
            let state = self.ready.borrow_and_update().clone();
            match state {
                Readiness::Ready => return Ok(()),
                Readiness::Failed(e) if self.alive() => return Err(Problem::Stopped(e)),
                Readiness::Failed(_) => return Err(self.why_not().await),
                Readiness::Starting => {}
            }
            match tokio::time::timeout_at(deadline, self.ready.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return Err(self.why_not().await),
            }
        }
    }

    /// Sends `text` as the next version of `uri` (opening it the first time).
    fn send_text(&mut self, uri: &Url, language_id: &str, text: String) -> Result<i32, Problem> {
        let stopped = |e: async_lsp::Error| Problem::Stopped(format!("stopped ({e})"));
        match self.versions.get_mut(uri) {
            Some(version) => {
                *version += 1;
                let params = DidChangeTextDocumentParams {
                    text_document: VersionedTextDocumentIdentifier::new(uri.clone(), *version),
                    content_changes: vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text,
                    }],
                };
                self.socket
                    .notify::<DidChangeTextDocument>(params)
                    .map_err(stopped)?;
                Ok(*version)
            }
            None => {
                let item = TextDocumentItem::new(uri.clone(), language_id.into(), 1, text);
                self.socket
                    .notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                        text_document: item,
                    })
                    .map_err(stopped)?;
                self.versions.insert(uri.clone(), 1);
                Ok(1)
            }
        }
    }

    /// The diagnostics the server pushed for `version` of `uri` (or, from a server that sends
    /// no versions, any push since we sent it).
    fn answered(&self, uri: &Url, version: i32, seq_before: u64) -> Option<Vec<Diag>> {
        let published = lock(&self.shared.published);
        let p = published.get(uri)?;
        let fits = match p.version {
            Some(v) => v >= version,
            None => p.seq > seq_before,
        };
        fits.then(|| p.diags.clone())
    }

    /// Why no answer came: the server is slow, or it stopped (with the main loop's reason).
    async fn why_not(&mut self) -> Problem {
        if self.alive() {
            return Problem::Slow;
        }
        match (&mut self.main_loop).await {
            Ok(reason) => Problem::Stopped(reason),
            Err(_) => Problem::Stopped("stopped".into()),
        }
    }
}

/// The handlers for what the server sends: diagnostics are kept; its few requests get empty
/// answers (we offer no configuration and register nothing); every other notification (logs,
/// progress, telemetry) is let through.
fn router(shared: Shared) -> Router<Shared> {
    let mut router = Router::new(shared);
    router
        .notification::<PublishDiagnostics>(|shared, params| {
            let diags = params.diagnostics.into_iter().map(diag).collect();
            let mut published = lock(&shared.published);
            let entry = published.entry(params.uri).or_default();
            entry.version = params.version;
            entry.seq += 1;
            entry.diags = diags;
            drop(published);
            shared.pushed.send_modify(|n| *n += 1);
            ControlFlow::Continue(())
        })
        .request::<WorkspaceConfiguration, _>(|_, params| {
            let answer = vec![serde_json::Value::Null; params.items.len()];
            std::future::ready(Ok::<_, ResponseError>(answer))
        })
        .request::<RegisterCapability, _>(|_, _| std::future::ready(Ok(())))
        .request::<UnregisterCapability, _>(|_, _| std::future::ready(Ok(())))
        .request::<WorkDoneProgressCreate, _>(|_, _| std::future::ready(Ok(())))
        .unhandled_notification(|_, _| ControlFlow::Continue(()))
        .unhandled_event(|_, _| ControlFlow::Continue(()));
    router
}

/// `initialize` as plain JSON both ways: we offer one capability and read none of the
/// server's, and lsp-types' full `ClientCapabilities`/`InitializeResult` serde code would
/// cost the binary far more than this request is worth.
enum InitializeJson {}

impl lsp_types::request::Request for InitializeJson {
    type Params = serde_json::Value;
    type Result = serde_json::Value;
    const METHOD: &'static str = "initialize";
}

/// `initialize` with the workspace as the one root, then `initialized`.
async fn handshake(socket: &ServerSocket, root: &Path) -> Result<(), String> {
    let uri = Url::from_file_path(root).map_err(|()| "the workspace is no file URI".to_string())?;
    // No process id: the server runs in a PID namespace of its own, where ours does not
    // exist, and servers that watch it (pyright) would exit at once. Its group dies with us
    // anyway (the supervisor). `rootUri`: older servers still read it.
    let params = serde_json::json!({
        "processId": null,
        "rootUri": uri.as_str(),
        "workspaceFolders": [{ "uri": uri.as_str(), "name": "workspace" }],
        "capabilities": {
            "textDocument": { "publishDiagnostics": { "versionSupport": true } }
        }
    });
    socket
        .request::<InitializeJson>(params)
        .await
        .map_err(|e| format!("failed to initialise ({e})"))?;
    socket
        .notify::<Initialized>(InitializedParams {})
        .map_err(|e| format!("stopped ({e})"))
}

/// One protocol diagnostic as the report reads it (1-based positions).
fn diag(d: lsp_types::Diagnostic) -> Diag {
    let severity = match d.severity {
        None | Some(DiagnosticSeverity::ERROR) => Severity::Error,
        Some(DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(_) => Severity::Other,
    };
    Diag {
        line: d.range.start.line.saturating_add(1),
        column: d.range.start.character.saturating_add(1),
        severity,
        message: d.message,
    }
}

/// The server's command line for the supervisor's `bash -c`: every word single-quoted, and
/// `exec`, so the server itself is the command the supervisor watches.
fn shell_line(command: &ServerCommand) -> String {
    let quote = |w: &str| format!("'{}'", w.replace('\'', r"'\''"));
    let mut line = format!("exec {}", quote(&command.command));
    for arg in &command.args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_quotes_every_word() {
        let command = ServerCommand {
            command: "/opt/my server/pyright".into(),
            args: vec!["--stdio".into(), "it's".into()],
        };
        assert_eq!(
            shell_line(&command),
            r"exec '/opt/my server/pyright' '--stdio' 'it'\''s'"
        );
    }
}

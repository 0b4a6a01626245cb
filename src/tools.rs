//! The tool registry: what the model may call, how arguments are checked, and the context every
//! tool runs in (workspace root, limits, cancellation, which files were seen).
//!
//! A tool failure is not a Rust error: it is output the model reads. Tools never prompt the
//! user; the agent asks for approval with what `prepare` describes, then calls `run`.

pub mod bash;
pub mod diff;
pub mod edit;
pub mod outputs;
pub mod protected;
pub mod read;
pub mod secrets;
pub mod write;

pub use secrets::Secrets;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::chat::ToolSpec;
use crate::chat::{ApprovalRequest, ToolStatus};

pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// One tool the model can call.
pub trait Tool: Send + Sync {
    /// Name, description and JSON schema, as declared to the model.
    fn spec(&self) -> ToolSpec;

    /// Checks the arguments (no side effects) and describes the call: a one-line summary for
    /// display and, for tools that change something, what the user must see to approve it.
    /// An `Err` is a message for the model; nothing runs.
    fn prepare(&self, args: &serde_json::Value, ctx: &ToolCtx) -> Result<Prepared, String>;

    /// Runs the call. Must return promptly once `cancel` fires, killing anything it started.
    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a>;
}

/// What `prepare` learned about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// One line describing the call, e.g. the command or the path.
    pub summary: String,
    /// `Some` when the call needs the user's approval.
    pub approval: Option<ApprovalRequest>,
    /// Why the call touches a protected path (see [`protected`]), when it does: then it is
    /// asked every time, even after "always" for the tool.
    pub protected: Option<&'static str>,
}

/// The result of a call, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub status: ToolStatus,
    pub content: String,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            content: content.into(),
        }
    }

    pub fn failed(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Failed,
            content: content.into(),
        }
    }

    pub fn interrupted(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Interrupted,
            content: content.into(),
        }
    }
}

/// Parses a tool's arguments into its typed struct; serde's message names the missing,
/// unknown or mistyped field. Use with `#[serde(deny_unknown_fields)]` structs.
pub fn parse_args<T: DeserializeOwned>(args: &serde_json::Value) -> Result<T, String> {
    T::deserialize(args).map_err(|e| format!("invalid arguments: {e}"))
}

/// A file's identity when a tool last read or wrote it, so `edit` can tell if it changed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub len: u64,
    pub modified: Option<std::time::SystemTime>,
    /// A hash of the content, so a same-size rewrite within one mtime tick is still caught.
    pub hash: u64,
}

impl Fingerprint {
    pub fn of(content: &[u8], meta: &std::fs::Metadata) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        content.hash(&mut h);
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            hash: h.finish(),
        }
    }
}

/// Everything a tool needs from its surroundings; shared by all calls of a session.
#[derive(Debug)]
pub struct ToolCtx {
    /// The canonical workspace root; every file path is resolved against it and must stay in it.
    pub workspace: PathBuf,
    /// `<workspace>/.minicode`, as a plain path. Anything written below it must go through
    /// `fsutil::private_dir`, which refuses a `.minicode` that links out of the workspace.
    pub data_dir: PathBuf,
    /// Default bash timeout (a call may ask for up to `MAX_BASH_TIMEOUT`).
    pub bash_timeout: Duration,
    /// Environment variables removed from every child process (secrets).
    pub scrub_env: Vec<String>,
    /// Files read or written in this session, by canonical path.
    seen: Mutex<HashMap<PathBuf, Fingerprint>>,
    /// Values no tool output may carry to the model, the session file or the screen.
    pub secrets: Secrets,
    /// Bytes of output one call may hand the model (see [`ToolCtx::set_output_limit`]).
    output_limit: AtomicUsize,
    /// Limits of the saved full outputs under `<data_dir>/outputs`.
    pub outputs: outputs::Limits,
}

/// The most output one tool call hands the model, whatever the window.
pub const MAX_OUTPUT_LIMIT: usize = 64 * 1024;
/// The least, however small the window.
pub const MIN_OUTPUT_LIMIT: usize = 2 * 1024;

/// The longest a single bash call may run, whatever it asks for.
pub const MAX_BASH_TIMEOUT: Duration = Duration::from_secs(600);

impl ToolCtx {
    pub fn new(workspace: PathBuf, bash_timeout: Duration, scrub_env: Vec<String>) -> Self {
        let data_dir = workspace.join(".minicode");
        Self {
            workspace,
            data_dir,
            bash_timeout,
            scrub_env,
            seen: Mutex::new(HashMap::new()),
            secrets: Secrets::default(),
            output_limit: AtomicUsize::new(MAX_OUTPUT_LIMIT),
            outputs: outputs::Limits::default(),
        }
    }

    /// Removes saved bash outputs beyond the configured age and total size (at start; each
    /// bash call that saves one prunes again).
    pub fn prune_outputs(&self) {
        outputs::prune(&self.workspace, &self.outputs, None);
    }

    /// Bytes of output one call may hand the model.
    pub fn output_limit(&self) -> usize {
        self.output_limit.load(Ordering::Relaxed)
    }

    /// Sizes tool output to the model's window: at most a quarter of it (about 4 bytes a
    /// token), between 2 KiB and 64 KiB, so one result can never crowd out the conversation
    /// of a small local model. Called again when the server states a smaller window.
    pub fn set_output_limit(&self, context_window: u64) {
        let bytes = usize::try_from(context_window).unwrap_or(usize::MAX);
        self.output_limit.store(
            bytes.clamp(MIN_OUTPUT_LIMIT, MAX_OUTPUT_LIMIT),
            Ordering::Relaxed,
        );
    }

    /// Records that the model has seen this file's current content.
    pub fn remember(&self, path: &Path, fp: Fingerprint) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(path.to_path_buf(), fp);
        }
    }

    /// Forgets every file seen: a new conversation has not read anything, so `edit` needs a
    /// fresh `read` before it changes a file again.
    pub fn forget_seen(&self) {
        // Even after a panic elsewhere poisoned the map, forgetting is always safe.
        match self.seen.lock() {
            Ok(mut seen) => seen.clear(),
            Err(poisoned) => poisoned.into_inner().clear(),
        }
    }

    /// The fingerprint recorded when the model last read or wrote this file.
    pub fn recall(&self, path: &Path) -> Option<Fingerprint> {
        self.seen.lock().ok().and_then(|s| s.get(path).copied())
    }
}

/// The set of tools offered to the model, in declaration order.
pub struct Registry {
    tools: Vec<Box<dyn Tool>>,
    specs: Vec<ToolSpec>,
}

impl Registry {
    pub fn new(tools: Vec<Box<dyn Tool>>) -> Self {
        let specs = tools.iter().map(|t| t.spec()).collect();
        Self { tools, specs }
    }

    /// The four built-in tools: `bash`, `read`, `write`, `edit`.
    pub fn builtin() -> Self {
        Self::new(vec![
            Box::new(bash::Bash),
            Box::new(read::Read),
            Box::new(write::Write),
            Box::new(edit::Edit),
        ])
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        let index = self.specs.iter().position(|s| s.name == name)?;
        Some(self.tools[index].as_ref())
    }

    /// Parses raw JSON arguments and finds the tool; the error is a message for the model.
    pub fn resolve(
        &self,
        name: &str,
        arguments: &str,
    ) -> Result<(&dyn Tool, serde_json::Value), String> {
        let tool = self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.specs.iter().map(|s| s.name).collect();
            format!(
                "unknown tool {name:?}; available tools: {}",
                known.join(", ")
            )
        })?;
        let text = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("invalid arguments: not valid JSON ({e})"))?;
        if !value.is_object() {
            return Err("invalid arguments: expected a JSON object".to_string());
        }
        Ok((tool, value))
    }
}

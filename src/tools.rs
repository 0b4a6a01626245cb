//! The tool registry: what the model may call, how arguments are checked, and the context every
//! tool runs in (workspace root, limits, cancellation, which files were seen).
//!
//! A tool failure is not a Rust error: it is output the model reads. Tools never prompt the
//! user; the agent asks for approval with what `prepare` describes, then calls `run`.

pub mod background;
pub mod bash;
pub(crate) mod bash_kill;
pub(crate) mod bash_output;
pub(crate) mod core_calls;
pub(crate) mod diff;
pub mod edit;
pub mod fetch;
pub(crate) mod find;
pub mod lean;
pub mod list;
pub mod live;
pub mod mcp;
pub mod outputs;
pub mod protected;
pub(crate) mod read;
pub(crate) mod read_guard;
pub(crate) mod running;
pub(crate) mod search;
pub(crate) mod secrets;
pub mod skills;
pub(crate) mod typed;
pub(crate) mod walk;
pub(crate) mod write;

pub use core_calls::{CoreCall, CoreTool, DelegateTask, GoalUpdate, GoalUpdateStatus};
pub use secrets::Secrets;
pub(crate) use typed::Typed;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::chat::{ApprovalRequest, ToolStatus};
use crate::chat::{ToolKind, ToolSpec};
use crate::sync::lock;

pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// What a [`FileAccess`] call resolves to; the error is a message for the model.
pub(crate) type FileFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// Where `read`, `write` and `edit` get and put a file's text when it is not the disk: an
/// editor that serves its buffers (unsaved changes included) and records the writes in its own
/// undo (ACP's `fs/read_text_file` and `fs/write_text_file`). Paths are absolute, canonical
/// and already confined to the workspace by the tool; an implementation only moves text.
pub(crate) trait FileAccess: Send + Sync + std::fmt::Debug {
    /// The whole current text of the file.
    fn read_text<'a>(&'a self, path: &'a Path) -> FileFuture<'a, String>;
    /// Replaces the whole file with `content` (creating it when missing).
    fn write_text<'a>(&'a self, path: &'a Path, content: &'a str) -> FileFuture<'a, ()>;
}

/// One tool the model can call.
pub trait Tool: Send + Sync {
    /// Name, description and JSON schema, as declared to the model.
    fn spec(&self) -> ToolSpec;

    /// A one-sentence description for the small profile (see [`lean`]), which also drops
    /// the parameters' descriptions; `None` keeps [`Tool::spec`] as it is.
    fn brief(&self) -> Option<&'static str> {
        None
    }

    /// Parameters the small profile leaves out of the declaration while the tool `needs`
    /// is hidden (`bash`'s `background` without `bash_output`), as (parameter, tool).
    fn lean_drops(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// What its calls do, for frontends to show them by.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    /// `Some` for a tool the core runs itself (see [`CoreTool`]).
    fn core(&self) -> Option<CoreTool> {
        None
    }

    /// Reads a call's arguments, once: the agent then prepares, shows and runs what this
    /// returns. An `Err` is a message for the model; nothing runs.
    fn parse<'t>(&'t self, args: &serde_json::Value) -> Result<Box<dyn Invocation + 't>, String>;
}

/// What a call aims at, as permission rules, "always" answers and frontends see it: read from
/// the parsed call, so nothing outside a tool digs into its arguments by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aim {
    /// A command line (`bash`).
    Command(String),
    /// A web host (`fetch` with a valid URL).
    Host(String),
    /// Workspace paths, as the model wrote them (the file tools; none: the workspace).
    Paths(Vec<String>),
    /// Nothing more specific than the call itself.
    Call,
}

impl Aim {
    /// The workspace paths the call touches, as the model wrote them.
    pub fn paths(&self) -> &[String] {
        match self {
            Aim::Paths(paths) => paths,
            _ => &[],
        }
    }
}

/// One call of a tool, its arguments parsed (see [`Tool::parse`]).
pub trait Invocation: Send + Sync {
    /// What the call aims at.
    fn aim(&self) -> Aim {
        Aim::Call
    }

    /// Checks the call (no side effects) and describes it: a one-line summary for display
    /// and, for a call that changes something, what the user must see to approve it. An `Err`
    /// is a message for the model; nothing runs.
    fn prepare(&self, ctx: &ToolCtx) -> Result<Prepared, String>;

    /// Runs the call. Must return promptly once `cancel` fires, killing anything it started.
    fn run<'a>(&'a self, ctx: &'a ToolCtx, cancel: CancellationToken) -> ToolFuture<'a>;

    /// For a call of a tool the core runs itself (see [`CoreTool`]): the call with its
    /// arguments as parsed here, so the core never reads them from JSON again.
    fn core_call(&self) -> Option<CoreCall> {
        None
    }

    /// For a call that changes a file: what it will write, for frontends to preview.
    fn change(&self) -> Option<crate::chat::Change> {
        None
    }
}

impl dyn Tool + '_ {
    /// Parses `args` and prepares the call (see [`Invocation::prepare`]).
    pub fn prepare(&self, args: &serde_json::Value, ctx: &ToolCtx) -> Result<Prepared, String> {
        self.parse(args)?.prepare(ctx)
    }

    /// Parses `args` and runs the call; arguments that do not parse fail it.
    pub fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            match self.parse(&args) {
                Ok(call) => call.run(ctx, cancel).await,
                Err(e) => ToolOutput::failed(e),
            }
        })
    }
}

/// A tool whose arguments stay JSON: an MCP server's tool (its server declares them) or a
/// skill. It prepares and runs from the arguments as they came.
pub(crate) trait JsonTool: Send + Sync {
    /// See [`Invocation::prepare`].
    fn prepare_json(&self, args: &serde_json::Value, ctx: &ToolCtx) -> Result<Prepared, String>;

    /// See [`Invocation::run`].
    fn run_json<'a>(
        &'a self,
        args: &'a serde_json::Value,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a>;
}

/// A call of a [`JsonTool`]: its arguments as they came.
pub(crate) struct JsonCall<'t, T: ?Sized> {
    tool: &'t T,
    args: serde_json::Value,
}

impl<'t, T: JsonTool + ?Sized> JsonCall<'t, T> {
    /// The call of `tool` with `args`, boxed as [`Tool::parse`] answers it.
    pub(crate) fn boxed(tool: &'t T, args: &serde_json::Value) -> Box<dyn Invocation + 't> {
        Box::new(Self {
            tool,
            args: args.clone(),
        })
    }
}

impl<T: JsonTool + ?Sized> Invocation for JsonCall<'_, T> {
    fn prepare(&self, ctx: &ToolCtx) -> Result<Prepared, String> {
        self.tool.prepare_json(&self.args, ctx)
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx, cancel: CancellationToken) -> ToolFuture<'a> {
        self.tool.run_json(&self.args, ctx, cancel)
    }
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

/// Runs `job` off the runtime (it blocks on the file system) and answers "interrupted" as
/// soon as `cancel` fires (the job watches `cancel` too, and stops). `tool` names a job that
/// panicked.
pub(crate) async fn off_runtime<T: Send + 'static>(
    cancel: &CancellationToken,
    tool: &str,
    job: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, ToolOutput> {
    let job = tokio::task::spawn_blocking(job);
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ToolOutput::interrupted("interrupted by the user")),
        done = job => match done {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(ToolOutput::failed(e)),
            Err(e) => Err(ToolOutput::failed(format!("{tool} failed: {e}"))),
        },
    }
}

impl Prepared {
    /// A call that runs without asking (a read, a search): only its summary to show.
    pub(crate) fn unasked(summary: String) -> Self {
        Self {
            summary,
            approval: None,
            protected: None,
        }
    }
}

/// The result of a call, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub status: ToolStatus,
    pub content: String,
    /// For `edit`: the tier that found `old_string` (see [`edit::Tier`]), counted per model.
    pub matched: Option<edit::Tier>,
    /// For `read` of an image file: the image, shown to the model in a user message after
    /// the batch's results (tool messages cannot carry images on most servers).
    /// Boxed: most outputs have none, and every output travels through `Result`s.
    pub image: Option<Box<crate::chat::Image>>,
}

impl ToolOutput {
    /// The same output, noting which edit tier matched.
    pub(crate) fn matched(mut self, tier: edit::Tier) -> Self {
        self.matched = Some(tier);
        self
    }

    /// The same output, carrying `image`.
    pub(crate) fn with_image(mut self, image: crate::chat::Image) -> Self {
        self.image = Some(Box::new(image));
        self
    }

    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            content: content.into(),
            matched: None,
            image: None,
        }
    }

    pub(crate) fn failed(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Failed,
            content: content.into(),
            matched: None,
            image: None,
        }
    }

    pub(crate) fn interrupted(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Interrupted,
            content: content.into(),
            matched: None,
            image: None,
        }
    }

    /// Refused before it ran: by the user, a rule, plan mode, or nobody to ask.
    pub(crate) fn denied(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Denied,
            content: content.into(),
            matched: None,
            image: None,
        }
    }
}

/// Parses a tool's arguments into its typed struct; serde's message names the missing,
/// unknown or mistyped field. Use with `#[serde(deny_unknown_fields)]` structs.
pub(crate) fn parse_args<T: DeserializeOwned>(args: &serde_json::Value) -> Result<T, String> {
    T::deserialize(args).map_err(|e| format!("invalid arguments: {e}"))
}

/// The closing note of a `list` or `search` that left files out for the rules.
pub(crate) fn withheld_note(count: usize) -> Option<String> {
    (count > 0).then(|| {
        format!(
            "[{count} {} withheld: denied by a permission rule]",
            if count == 1 { "file" } else { "files" }
        )
    })
}

/// A file's identity when a tool last read or wrote it, so `edit` can tell if it changed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub len: u64,
    pub modified: Option<std::time::SystemTime>,
    /// A hash of the content, so a same-size rewrite within one mtime tick is still caught.
    pub hash: u64,
}

impl Fingerprint {
    /// The fingerprint of text that came through a [`FileAccess`] (no disk metadata).
    pub(crate) fn of_text(content: &[u8]) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        content.hash(&mut h);
        Self {
            len: content.len() as u64,
            modified: None,
            hash: h.finish(),
        }
    }

    pub(crate) fn of(content: &[u8], meta: &std::fs::Metadata) -> Self {
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
    /// Default bash timeout (a call may ask for up to `defaults::BASH_TIMEOUT_CEILING`).
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
    /// How long and how much one `fetch` may take.
    pub fetch: fetch::Limits,
    /// Where `read`, `write` and `edit` move file text: `None` is the disk (the default);
    /// `Some` an editor's buffers (see [`FileAccess`]). Confinement is the tools' either way.
    pub(crate) files: Option<Arc<dyn FileAccess>>,
    /// The program each `bash` command runs under as its supervisor (the minicode binary,
    /// see `process::supervisor`), which kills the command's whole group if minicode dies.
    /// `None` (a library user whose binary is not minicode) runs `bash` directly, killed with
    /// minicode on Linux but not what it started.
    pub supervisor: Option<PathBuf>,
    /// Whether a confined `bash` call's supervisor records the paths the command's calls name
    /// (the sandbox's attribution filter, see `sandbox::notifier`), for the checkpoints. On by
    /// default; `benches/sandbox_notify.rs` turns it off to measure what it costs.
    pub record_writes: bool,
    /// The last text of each file read or written through `files`, by canonical path: what
    /// `edit` and `write` compare against when they describe a change for approval.
    texts: Mutex<HashMap<PathBuf, Arc<str>>>,
    /// The permission rules in force: the agent applies them to each call, and `read`, `list`
    /// and `search` never show a file a `read(…)` deny rule covers. `None`: no rules.
    pub permissions: Option<Arc<crate::permissions::Rules>>,
    /// The session's background processes (`bash` with `background: true`): they end when
    /// the session does.
    pub background: background::Jobs,
    /// The session's network namespace that confined calls join with the network off.
    pub session_net: bash::network::SessionNet,
}

/// The most output one tool call hands the model, whatever the window.
pub const MAX_OUTPUT_LIMIT: usize = 64 * 1024;
/// The least, however small the window.
pub const MIN_OUTPUT_LIMIT: usize = 2 * 1024;

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
            fetch: fetch::Limits::default(),
            files: None,
            supervisor: None,
            record_writes: true,
            texts: Mutex::new(HashMap::new()),
            permissions: None,
            background: background::Jobs::new(crate::defaults::MAX_BACKGROUND),
            session_net: bash::network::SessionNet::default(),
        }
    }

    /// The deny rule that keeps the file at `path` (canonical, inside the workspace) from
    /// being shown by `read`, `list` or `search`, as the text the model reads; `None` when no
    /// rule covers it.
    pub(crate) fn read_denied(&self, path: &Path) -> Option<String> {
        let guard = read_guard::ReadGuard::new(self.permissions.as_deref(), &self.workspace)?;
        guard.denial(path).map(|denial| denial.describe())
    }

    /// Records the text the model saw of a file through [`ToolCtx::files`].
    pub(crate) fn remember_text(&self, path: &Path, text: &str) {
        lock(&self.texts).insert(path.to_path_buf(), Arc::from(text));
    }

    /// The text last read or written through [`ToolCtx::files`].
    pub(crate) fn recall_text(&self, path: &Path) -> Option<Arc<str>> {
        lock(&self.texts).get(path).cloned()
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
    pub(crate) fn remember(&self, path: &Path, fp: Fingerprint) {
        lock(&self.seen).insert(path.to_path_buf(), fp);
    }

    /// Forgets every file seen: a new conversation has not read anything, so `edit` needs a
    /// fresh `read` before it changes a file again.
    pub(crate) fn forget_seen(&self) {
        lock(&self.seen).clear();
        lock(&self.texts).clear();
    }

    /// The files read or written in this session (canonical paths), sorted.
    pub(crate) fn seen_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = lock(&self.seen).keys().cloned().collect();
        paths.sort();
        paths
    }

    /// The fingerprint recorded when the model last read or wrote this file.
    pub(crate) fn recall(&self, path: &Path) -> Option<Fingerprint> {
        lock(&self.seen).get(path).copied()
    }
}

/// The set of tools offered to the model, in declaration order. It can change while a session
/// runs (an MCP server's tools join when it is ready, or change when it says so), so tools are
/// kept in named groups that are replaced whole, and every change bumps a generation the agent
/// compares before each request to refresh what it declares. Readers take a cheap snapshot;
/// the lock is never held across an await.
pub struct Registry {
    catalog: RwLock<Arc<Catalog>>,
}

/// One consistent state of the registry.
struct Catalog {
    /// (group, tool), in declaration order: groups in the order they were first set.
    tools: Vec<(String, Arc<dyn Tool>)>,
    /// The tools offered to the model: all of `tools` but those the small profile hides.
    offered: Vec<Arc<dyn Tool>>,
    /// The declarations of `offered`, in the same order.
    specs: Arc<[ToolSpec]>,
    generation: u64,
    /// The small profile's view, when it is in force.
    lean: Option<Arc<lean::Lean>>,
}

impl Catalog {
    fn new(
        tools: Vec<(String, Arc<dyn Tool>)>,
        generation: u64,
        lean: Option<Arc<lean::Lean>>,
    ) -> Self {
        let offered: Vec<Arc<dyn Tool>> = tools
            .iter()
            .map(|(_, t)| t)
            .filter(|t| lean.as_ref().is_none_or(|l| l.offers(t.as_ref())))
            .cloned()
            .collect();
        let specs = offered
            .iter()
            .map(|t| match &lean {
                Some(view) => lean::spec(t.as_ref(), view),
                None => t.spec(),
            })
            .collect();
        Self {
            tools,
            offered,
            specs,
            generation,
            lean,
        }
    }
}

/// The group the built-in tools belong to.
pub(crate) const BUILTIN_GROUP: &str = "builtin";

impl Registry {
    /// A registry holding `tools` in the [`BUILTIN_GROUP`].
    pub fn new(tools: Vec<Box<dyn Tool>>) -> Self {
        let tools = tools
            .into_iter()
            .map(|t| (BUILTIN_GROUP.to_string(), Arc::from(t)))
            .collect();
        Self {
            catalog: RwLock::new(Arc::new(Catalog::new(tools, 0, None))),
        }
    }

    /// The built-in tools: `bash` (with `bash_output` and `bash_kill` for its background
    /// processes), `read`, `write`, `edit`, the read-only `list`, `search` and `find`, and
    /// `fetch` (web pages).
    pub fn builtin() -> Self {
        Self::new(vec![
            Box::new(bash::Bash),
            Box::new(bash_output::BashOutput),
            Box::new(bash_kill::BashKill),
            Box::new(read::Read),
            Box::new(write::Write),
            Box::new(edit::Edit),
            Box::new(list::List),
            Box::new(search::Search),
            Box::new(find::Find::default()),
            Box::new(fetch::Fetch),
        ])
    }

    fn snapshot(&self) -> Arc<Catalog> {
        crate::sync::read(&self.catalog).clone()
    }

    /// The declarations of every tool now, in order. A snapshot: later changes do not affect it.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        self.snapshot().specs.clone()
    }

    /// Changes whenever the set of tools does; equal generations mean equal [`Registry::specs`].
    pub fn generation(&self) -> u64 {
        self.snapshot().generation
    }

    /// Replaces every tool of `group` with `tools` (none removes the group). A tool whose name
    /// is already taken by another group is left out, and its name returned, so one source can
    /// never shadow another's tool.
    pub fn set_group(&self, group: &str, tools: Vec<Arc<dyn Tool>>) -> Vec<String> {
        let mut guard = crate::sync::write(&self.catalog);
        let mut next: Vec<(String, Arc<dyn Tool>)> = Vec::new();
        let mut inserted = false;
        let mut refused = Vec::new();
        let mut place_new = |next: &mut Vec<(String, Arc<dyn Tool>)>, others: &[String]| {
            for tool in &tools {
                let name = tool.spec().name.into_owned();
                if others.contains(&name) || next.iter().any(|(_, t)| t.spec().name == name) {
                    refused.push(name);
                } else {
                    next.push((group.to_string(), tool.clone()));
                }
            }
        };
        let others: Vec<String> = guard
            .tools
            .iter()
            .filter(|(g, _)| g != group)
            .map(|(_, t)| t.spec().name.into_owned())
            .collect();
        for (g, tool) in &guard.tools {
            if g == group {
                if !inserted {
                    place_new(&mut next, &others);
                    inserted = true;
                }
            } else {
                next.push((g.clone(), tool.clone()));
            }
        }
        if !inserted {
            place_new(&mut next, &others);
        }
        let generation = guard.generation + 1;
        *guard = Arc::new(Catalog::new(next, generation, guard.lean.clone()));
        refused
    }

    /// Puts the small profile's view in force (`Some`) or lifts it (`None`): the tools it
    /// hides are neither declared nor callable, the others are declared briefly.
    pub fn set_lean(&self, lean: Option<lean::Lean>) {
        let mut guard = crate::sync::write(&self.catalog);
        let generation = guard.generation + 1;
        let tools = guard.tools.clone();
        *guard = Arc::new(Catalog::new(tools, generation, lean.map(Arc::new)));
    }

    /// A new registry with only the tools named in `names` (in this registry's order): what a
    /// restricted agent, such as a sub-agent, may call.
    pub fn subset(&self, names: &[&str]) -> Registry {
        let catalog = self.snapshot();
        let tools = catalog
            .tools
            .iter()
            .filter(|(_, t)| names.contains(&t.spec().name.as_ref()))
            .cloned()
            .collect();
        Registry {
            catalog: RwLock::new(Arc::new(Catalog::new(tools, 0, None))),
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let catalog = self.snapshot();
        let index = catalog.specs.iter().position(|s| s.name == name)?;
        Some(catalog.offered[index].clone())
    }

    /// Parses raw JSON arguments and finds the tool; the error is a message for the model.
    pub fn resolve(
        &self,
        name: &str,
        arguments: &str,
    ) -> Result<(Arc<dyn Tool>, serde_json::Value), String> {
        let tool = self.get(name).ok_or_else(|| {
            let specs = self.specs();
            let known: Vec<&str> = specs.iter().map(|s| s.name.as_ref()).collect();
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

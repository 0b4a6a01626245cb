//! The only contract between frontends and the agent core: `Op`s go in, `Event`s come out.
//!
//! Payloads are typed (the only free-form JSON is tool arguments) and serialize with a `type`
//! tag, so `--output-format stream-json` and a later JSON-RPC mode print them as they are.
//! Frontends match exhaustively; adding a variant is a deliberate, visible change.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::chat::{ApprovalRequest, Change, ToolKind, ToolStatus, Usage};

mod commands;
pub(crate) mod envelope;
mod goal;
mod goal_command;
mod op_fields;
mod open;
pub(crate) mod rewind;
mod run;
pub(crate) mod sessions;

pub use commands::{CustomCommand, find_custom};
pub use goal::{BlockCode, Goal, GoalBlock, GoalChange, GoalOp, GoalPhase, GoalRef};
pub(crate) use open::{EditorFiles, Hosted, Listed, McpServerSpec, OpenRequest, Opened, Opener};
pub use rewind::{FileChangeKind, RewindScope, RewindTurn};
pub use run::RunMarker;
pub use sessions::SessionSummary;

pub use crate::sandbox::Mode as SandboxMode;

/// The confinement of the session's `bash` calls as frontends show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    pub mode: SandboxMode,
    /// IPv4/IPv6 sockets allowed.
    pub network: bool,
    /// The plan file (relative to the workspace) while plan mode is on; `None` outside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_file: Option<String>,
}

impl Profile {
    /// The short form the status bar, `/status` and the header show, e.g.
    /// `workspace-write · no network` or `plan · read-only · no network`.
    pub(crate) fn describe(&self) -> String {
        let mode = match self.mode {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "no sandbox",
        };
        let mut text = String::new();
        if self.plan_file.is_some() {
            text.push_str("plan · ");
        }
        text.push_str(mode);
        if self.mode != SandboxMode::Off {
            text.push_str(if self.network {
                " · network"
            } else {
                " · no network"
            });
        }
        text
    }
}

/// Identifies a tool call within a session (the model's call id).
pub(crate) type CallId = String;

/// What a frontend asks the core to do. Serialized with a `type` tag like `Event` (the
/// daemon's wire carries it as it is, docs/headless.md); the two variants holding one bare
/// value name it (`{"type":"submit","text":…}`, `{"type":"compact","focus":…}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Run a user turn (queued if a turn is running).
    #[serde(with = "op_fields::text")]
    Submit(String),
    /// Run a user turn whose message carries images (`--image`, `@image.png`, ACP image
    /// blocks), checked where they entered (format, size).
    SubmitImages {
        text: String,
        images: Vec<crate::chat::Image>,
    },
    /// Answer an `ApprovalRequested` event.
    Decide { call: CallId, decision: Decision },
    /// Stop the running turn: drop the stream, kill the running tool, keep history valid.
    Interrupt,
    /// Compact the context now, with optional focus instructions for the summariser. Reported
    /// like a turn (`TurnStarted` … `TurnEnded`, summary usage in its stats); `Interrupt`
    /// cancels it.
    #[serde(with = "op_fields::focus")]
    Compact(Option<String>),
    /// Start a fresh session in the same workspace.
    NewSession,
    /// Report the MCP servers (answered with `McpServers`, also while a turn runs).
    McpServers,
    /// Stop an MCP server and start it again (answered with `McpServers`).
    McpRestart { server: String },
    /// List the skills with their state (answered by `SkillsListed`, also while a turn runs).
    ListSkills,
    /// A goal command (answered by `GoalChanged`, `GoalStatus` or `GoalRefused`). While a turn
    /// runs it is queued like a prompt and applied when the turn ends.
    Goal(GoalOp),
    /// Continue in a copy of this session (new id, new file; the original stays as it is),
    /// answered by `SessionForked` and a fresh `SessionConfigured`. A goal comes along with its
    /// phase, disarmed.
    Fork,
    /// Turn plan mode on or off (answered by `SandboxChanged`; queued while a turn runs).
    SetPlan { on: bool },
    /// `/model`: without a name, list the models the server offers (`ModelsListed`); with one,
    /// use it for the rest of the session (`ModelSwitched`, then `ContextWindowSet` once the
    /// window is probed again). Queued while a turn runs.
    Model { name: Option<String> },
    /// List the user turns a rewind can go back before (answered by `RewindList`).
    ListRewind,
    /// Go back to before user turn `turn` (1 is the first): restore the files its calls and
    /// later ones changed (conflicts left alone), fork the conversation before it, or both.
    /// Answered by `Rewound` (after `SessionForked` and a fresh `SessionConfigured` when the
    /// conversation is rewound). Queued while a turn runs. `force`: overwrite conflicts too,
    /// after recording their content (the rewind is itself recorded and can be undone).
    Rewind {
        turn: u32,
        scope: RewindScope,
        force: bool,
    },
    /// List this workspace's sessions a user can resume (answered by `SessionsListed`).
    ListSessions,
    /// Continue in the saved session `id` of this workspace (a full id or a unique prefix),
    /// as `--session` opens it: answered by a fresh `SessionConfigured` and `HistoryRestored`.
    Resume { id: String },
    /// The user runs `command` themselves (`!command`): through the `bash` tool and its
    /// sandbox, with no approval, reported as a tool call inside `TurnStarted` … `TurnEnded`.
    /// Its output goes before the next prompt sent to the model. Queued while a turn runs.
    Shell { command: String },
    /// Complete a path being typed after `@` (answered by `PathCompletions`, also while a
    /// turn runs).
    CompletePath { prefix: String },
    /// End background process `id` (`/ps kill bg1`): SIGTERM, SIGKILL after a grace period;
    /// the change arrives as `BackgroundChanged`. Served at once, also while a turn runs.
    KillBackground { id: String },
    /// Finish: interrupt whatever runs, save, emit `ShutdownComplete`, stop.
    Shutdown,
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Run this call.
    Approve,
    /// Run this call and, for the rest of the session, every later call the rule offered
    /// with the request (`ApprovalRequested::always`) covers.
    ApproveTool,
    /// Do not run it; the optional reason is passed to the model.
    Deny { reason: Option<String> },
    /// Nobody could be asked (a one-shot run without a terminal): not run. Not a denial: the
    /// model is told no one saw the call and that `--yes` approves, and a goal round whose
    /// every call ended so blocks the goal instead of trying again.
    NoTerminal,
}

impl Decision {
    /// Whether the call runs.
    pub(crate) fn runs(&self) -> bool {
        matches!(self, Decision::Approve | Decision::ApproveTool)
    }
}

/// What the model reads (and stderr shows) for a call refused because no terminal was there
/// to ask: it must not read as the user's refusal.
pub(crate) const NO_TERMINAL_REFUSAL: &str = "not run: no terminal was available to ask for approval, so \
nobody saw this call; rerun with --yes to approve tool calls (a change to a protected path, or \
a call a permission rule asks about, is asked even then)";

/// How the rule an "always" answer adds reads on a key or a button: `bash(ls*)` → `ls …` (the
/// command's first words, then anything), any other rule (a tool's name) as it is.
pub(crate) fn always_label(rule: &str) -> String {
    match rule
        .strip_prefix("bash(")
        .and_then(|r| r.strip_suffix("*)"))
    {
        Some(prefix) => format!("{prefix} …"),
        None => rule.to_string(),
    }
}

/// Why a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TurnEnd {
    Completed,
    /// The round limit was reached; the summary reply was shown.
    RoundLimit {
        rounds: u32,
    },
    /// The user interrupted it.
    Interrupted,
    /// A provider or local error ended it.
    Failed {
        error: String,
    },
}

impl TurnEnd {
    pub fn is_success(&self) -> bool {
        matches!(self, TurnEnd::Completed)
    }
}

/// Token accounting for a turn: never estimated, only what servers reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenStats {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Replies that carried usage.
    pub replies_with_usage: u32,
    /// Replies that did not.
    pub replies_without_usage: u32,
    /// Prompt tokens the server served from its prompt cache, over the replies that said.
    #[serde(default)]
    pub cached_tokens: u64,
    /// The prompt tokens of those replies.
    #[serde(default)]
    pub cache_known_input_tokens: u64,
    /// `cached_tokens` as a share of `cache_known_input_tokens`, in whole percent; `None` when
    /// no reply said (most hosted APIs without caching, older servers).
    #[serde(default)]
    pub cached_percent: Option<u32>,
}

impl TokenStats {
    pub(crate) fn add(&mut self, usage: Option<Usage>) {
        match usage {
            Some(u) => {
                self.input_tokens += u.input_tokens;
                self.output_tokens += u.output_tokens;
                self.total_tokens += u.total_tokens;
                self.replies_with_usage += 1;
                if let Some(cached) = u.cached_tokens {
                    self.cached_tokens += cached;
                    self.cache_known_input_tokens += u.input_tokens.max(cached);
                    self.cached_percent = self.share();
                }
            }
            None => self.replies_without_usage += 1,
        }
    }

    /// Adds another tally to this one.
    pub(crate) fn merge(&mut self, other: &TokenStats) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
        self.replies_with_usage += other.replies_with_usage;
        self.replies_without_usage += other.replies_without_usage;
        self.cached_tokens += other.cached_tokens;
        self.cache_known_input_tokens += other.cache_known_input_tokens;
        self.cached_percent = self.share().or(self.cached_percent);
    }

    /// The share of prompt tokens served from the cache, when a reply said.
    fn share(&self) -> Option<u32> {
        (self.cache_known_input_tokens > 0)
            .then(|| (self.cached_tokens * 100 / self.cache_known_input_tokens) as u32)
    }

    /// No reply carried usage.
    pub(crate) fn unavailable(&self) -> bool {
        self.replies_with_usage == 0
    }

    /// Some replies carried usage and some did not.
    pub fn partial(&self) -> bool {
        self.replies_with_usage > 0 && self.replies_without_usage > 0
    }
}

/// Per-turn statistics, reported on every ending alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnStats {
    #[serde(serialize_with = "ser_millis", deserialize_with = "de_millis")]
    pub wall: Duration,
    pub model_calls: u32,
    pub tool_calls: u32,
    pub tokens: TokenStats,
    /// Summary calls made by compaction, counted apart from the main conversation.
    pub summary_calls: u32,
    pub summary_tokens: TokenStats,
    /// Sub-agents started by `delegate` calls in this turn.
    pub subagents: u32,
    /// Their model calls (summaries included) and tokens, counted apart from the parent's.
    pub subagent_calls: u32,
    pub subagent_tokens: TokenStats,
    /// Tool calls the model wrote as text that were recovered and run like native ones.
    #[serde(default)]
    pub recovered_calls: u32,
    /// Corrections sent because a reply only announced or mis-named a call (at most one a
    /// turn).
    #[serde(default)]
    pub nudges: u32,
    /// Replies cut short: at the token limit, or stopped on runaway repetition.
    #[serde(default)]
    pub cut_replies: u32,
    /// `edit` calls refused because the file had not been read in this session.
    #[serde(default)]
    pub unread_edits: u32,
}

impl TurnStats {
    /// Adds another turn's figures (a goal run reports the sum of its rounds).
    pub(crate) fn merge(&mut self, other: &TurnStats) {
        self.wall += other.wall;
        self.model_calls += other.model_calls;
        self.tool_calls += other.tool_calls;
        self.tokens.merge(&other.tokens);
        self.summary_calls += other.summary_calls;
        self.summary_tokens.merge(&other.summary_tokens);
        self.subagents += other.subagents;
        self.subagent_calls += other.subagent_calls;
        self.subagent_tokens.merge(&other.subagent_tokens);
        self.recovered_calls += other.recovered_calls;
        self.nudges += other.nudges;
        self.cut_replies += other.cut_replies;
        self.unread_edits += other.unread_edits;
    }
}

/// How a sub-agent's task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentStatus {
    /// It answered.
    Completed,
    /// Its model call failed, it hit the round limit, or it could not start.
    Failed,
    /// It missed its deadline and was stopped; its answer so far is kept.
    TimedOut,
    /// The user interrupted the parent's turn.
    Interrupted,
}

impl SubagentStatus {
    /// The word used in results and events.
    pub fn as_str(self) -> &'static str {
        crate::chat::serde_name(&self)
    }
}

fn ser_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

fn de_millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    u64::deserialize(d).map(Duration::from_millis)
}

/// Where the context window in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowSource {
    /// `[model] context_window` in the configuration: always wins over a probe.
    Config,
    /// The server said so when asked at session start (or a cached answer of it).
    Probe,
    /// The server named it in a context-length error.
    ServerError,
    /// Nothing said anything: the built-in default.
    Default,
}

impl WindowSource {
    /// The word used in the status bar and in JSON.
    pub fn as_str(self) -> &'static str {
        crate::chat::serde_name(&self)
    }
}

/// How one hook run ended, as its transcript line and `hook` event say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// Exit 0: go on (with any context or decision it gave).
    Ok,
    /// Exit 2, or a JSON `block`/`deny`/`continue: false`.
    Blocked,
    /// Another exit status, a signal, or it could not start: shown, otherwise ignored.
    Failed,
    /// Killed at its timeout with its process group.
    TimedOut,
    /// The turn was interrupted while it ran.
    Cancelled,
    /// It failed because the sandbox denied it something (a write outside what the policy
    /// allows, the network): not the hook's verdict, so nothing is blocked; shown with the
    /// reason and ignored otherwise.
    StoppedBySandbox,
}

impl HookOutcome {
    /// The word shown in the transcript and in JSON.
    pub(crate) fn as_str(self) -> &'static str {
        crate::chat::serde_name(&self)
    }
}

/// The line a frontend shows for a `Hook`: `PreToolUse (bash) hook `./check.sh`: ok in 12
/// ms`.
pub(crate) fn hook_line(hook: &str, outcome: HookOutcome, ms: u64) -> String {
    format!("{hook}: {} in {ms} ms", outcome.as_str().replace('_', " "))
}

/// Something that happened in the core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session is ready (sent first, and again after `NewSession`).
    SessionConfigured {
        session_id: String,
        session_path: String,
        model: String,
        /// The window at start; `ContextWindowSet` follows with where it came from.
        context_window: u64,
        /// Messages restored from disk (0 for a new session).
        resumed_messages: usize,
    },
    /// The conversation of a resumed session, oldest first, sent once right after
    /// `SessionConfigured` when the session has history. A frontend shows it instead of
    /// reading the session file, so every frontend (and a later headless one) sees the same.
    HistoryRestored {
        entries: Vec<HistoryEntry>,
    },
    TurnStarted {
        turn: u64,
    },
    /// A model request began (round 1 is the first of the turn).
    ModelRequestStarted {
        round: u32,
    },
    /// A piece of assistant text as it streams.
    TextDelta {
        text: String,
    },
    /// A piece of the model's reasoning as it streams: never part of the answer.
    ReasoningDelta {
        text: String,
    },
    /// The assistant's complete text for one reply (may be empty beside tool calls).
    AssistantMessage {
        text: String,
    },
    /// The provider is about to send a failed request again: `attempt` (counted from 1) of at
    /// most `max_attempts` failed.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The model asked for a tool; `summary` is a one-line description of the arguments;
    /// `kind` and `paths` (as the model wrote them) are what the tool declares about the call.
    ToolCallBegan {
        call: CallId,
        tool: String,
        summary: String,
        arguments: serde_json::Value,
        #[serde(default)]
        kind: ToolKind,
        #[serde(default)]
        paths: Vec<String>,
        /// For a call that changes a file: what it will write, as the tool read it (redacted
        /// like `arguments`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<Change>,
    },
    /// The sandbox profile `bash` calls run under now, and plan mode: sent after
    /// `SessionConfigured` and whenever plan mode turns on or off.
    SandboxChanged {
        profile: Profile,
    },
    /// The core waits for an `Op::Decide` for this call.
    ApprovalRequested {
        call: CallId,
        tool: String,
        request: ApprovalRequest,
        /// The allow rule an "always" answer adds for the session (`bash(ls*)`, an MCP tool's
        /// name): later calls run unasked only when it covers them. `None`: "always" approves
        /// this call only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        always: Option<String>,
    },
    /// The answer that was applied (from the user, the session's "always", or `--yes`).
    ApprovalDecided {
        call: CallId,
        decision: Decision,
    },
    /// Output of a running call as it arrives (`bash` only), coalesced to a piece every
    /// 50 ms at most and redacted like the result. It may hold `\r` progress rewrites and
    /// partial lines; the result in `ToolCallEnded` (capped) is what the model reads.
    ToolOutputDelta {
        call: CallId,
        text: String,
    },
    ToolCallEnded {
        call: CallId,
        status: ToolStatus,
        output: String,
    },
    /// A sub-agent of the `delegate` call `call` began its task `task` (the task's id as the
    /// model named it) in its own session.
    SubagentStarted {
        call: CallId,
        task: String,
        session_id: String,
    },
    /// A running sub-agent moved on: a new model request or a tool call.
    SubagentProgress {
        call: CallId,
        task: String,
        rounds: u32,
        tool_calls: u32,
        elapsed_ms: u64,
    },
    /// A sub-agent stopped; exactly once per `SubagentStarted`.
    SubagentEnded {
        call: CallId,
        task: String,
        status: SubagentStatus,
        rounds: u32,
        tool_calls: u32,
        elapsed_ms: u64,
        /// Why it failed, when it did.
        error: Option<String>,
    },
    /// Something worth telling the user that does not end the turn.
    Warning {
        message: String,
    },
    /// A hook ran (docs/hooks.md): at which event (Claude Code's name), which hook (event,
    /// matcher and command, sanitised), how it ended and how long it took.
    Hook {
        event: crate::hooks::HookEvent,
        hook: String,
        outcome: HookOutcome,
        ms: u64,
    },
    /// The context was compacted.
    Compacted {
        tokens_before: u64,
        tokens_after: u64,
        messages_summarized: usize,
    },
    /// Project memory was (re)loaded.
    MemoryLoaded {
        path: String,
        tokens: u64,
    },
    /// The context window in use and where it came from: sent at the start of a session
    /// (after `SessionConfigured` and any `HistoryRestored`), then whenever it changes (the probe at session start answered, or
    /// the server named its window in a context-length error).
    ContextWindowSet {
        tokens: u64,
        source: WindowSource,
    },
    /// The probe at session start could not connect to the model server (`message` says
    /// why): a frontend tells the user before a first prompt fails, with the fix
    /// (`minicode doctor`).
    ServerUnreachable {
        message: String,
    },
    /// A skill's instructions entered the conversation: the model called the `skill` tool
    /// (`trigger` is `None`), or a word of the user's message was one of its triggers and the
    /// core loaded it before the request (it is then in history as a `skill` call).
    SkillLoaded {
        name: String,
        /// The root it came from, as shown to the user (`.minicode/skills`, …).
        source: String,
        trigger: Option<String>,
    },
    /// The answer to `Op::ListSkills`, in the order the skills are searched.
    SkillsListed {
        skills: Vec<SkillEntry>,
    },
    /// The answer to `Op::Model { name: None }`: the models the server lists (`GET /models`)
    /// and the one in use.
    ModelsListed {
        current: String,
        models: Vec<String>,
    },
    /// The session uses `model` from now on (`Op::Model`); the switch is recorded in the
    /// session's history.
    ModelSwitched {
        previous: String,
        model: String,
    },
    /// A goal change was recorded in the session (`goal` is `None` after `cleared`). `armed`
    /// is the live activation after it: create and resume arm; pause, complete, block and
    /// clear disarm; edit keeps it.
    GoalChanged {
        change: GoalChange,
        goal_id: String,
        revision: u64,
        goal: Option<Goal>,
        armed: bool,
    },
    /// The goal as it stands: the answer to `GoalOp::Show`, sent after `SessionConfigured`
    /// when the session has a goal record, and whenever the activation changes without a
    /// record (an interrupt disarms; resuming an active goal arms). `error` says why goal
    /// access fails (a corrupt record, naming its message index); `goal` is then `None`.
    GoalStatus {
        goal: Option<Goal>,
        armed: bool,
        error: Option<String>,
    },
    /// A goal round begins: its turn follows (`TurnStarted`). `round` counts from 1 over the
    /// goal's life, resumes included.
    GoalRoundStarted {
        goal_id: String,
        revision: u64,
        round: u32,
        max_rounds: u32,
    },
    /// A goal run is over: the goal was armed (created or resumed) and now no round runs or
    /// will run, its last turn ended. Sent once per run, after the events that ended it, so a
    /// frontend waiting for a goal command's work waits for this alone. `goal` is as the run left
    /// it (`None` when cleared or unreadable); `interrupted` says an interrupt stopped it.
    GoalRunEnded {
        goal: Option<Goal>,
        interrupted: bool,
    },
    /// A goal command was refused; nothing was recorded and nothing was sent to the model.
    GoalRefused {
        message: String,
    },
    /// The session's user turns that changed files, newest first (`Op::ListRewind`), and
    /// whether checkpoints are recorded at all.
    RewindList {
        turns: Vec<RewindTurn>,
        enabled: bool,
    },
    /// `Op::Rewind` is done: the files restored, the conflicts left as they are (changed since
    /// the agent last wrote them), the files too large to have been recorded, and the turn's
    /// prompt (for the input box; only when the conversation went back). `error` says why nothing could be done.
    Rewound {
        turn: u32,
        restored: Vec<String>,
        conflicts: Vec<String>,
        /// Conflicts a forced rewind overwrote.
        #[serde(default)]
        overwritten: Vec<String>,
        skipped: Vec<String>,
        prompt: Option<String>,
        error: Option<String>,
    },
    /// The answer to `Op::ListSessions`, newest first.
    SessionsListed {
        sessions: Vec<SessionSummary>,
    },
    /// The session's background processes changed (one started or ended): the whole
    /// listing, running and recently ended (`/ps`, the status bar's count).
    BackgroundChanged {
        processes: Vec<crate::chat::Background>,
    },
    /// The answer to `Op::CompletePath`: workspace paths starting with `prefix` (folders end
    /// in `/`), sorted.
    PathCompletions {
        prefix: String,
        paths: Vec<String>,
    },
    /// `Op::Fork` made a copy of the session; `SessionConfigured` for the copy follows.
    SessionForked {
        parent_id: String,
        session_id: String,
    },
    /// The estimated context size after the last request (tokens).
    ContextUsage {
        tokens: u64,
        window: u64,
    },
    /// Exactly once per `TurnStarted`.
    TurnEnded {
        turn: u64,
        end: TurnEnd,
        stats: Box<TurnStats>,
    },
    /// The MCP servers, their state and tools (the answer to `Op::McpServers`).
    McpServers {
        servers: Vec<McpServer>,
    },
    /// A request that could not be carried out (e.g. `Decide` for an unknown call).
    Error {
        message: String,
    },
    /// The core stopped after `Shutdown`; nothing follows.
    ShutdownComplete,
}

/// One MCP server as `/mcp` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    pub id: String,
    /// The file that defines it.
    pub origin: String,
    pub state: McpState,
    /// The names the model calls its tools by.
    pub tools: Vec<String>,
    /// Its stderr log, once it was started.
    pub log: Option<String>,
}

/// Where an MCP server is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpState {
    /// Configured but not started (disabled, or not approved).
    NotStarted {
        reason: String,
    },
    Starting,
    Ready,
    /// It could not start or it stopped; its tools fail at once.
    Failed {
        reason: String,
    },
}

/// One skill as `/skills` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillEntry {
    pub name: String,
    pub description: String,
    /// The root it came from, as shown to the user.
    pub source: String,
    pub state: SkillState,
}

/// Where a skill stands in this session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillState {
    /// Its name and description are in the system prompt.
    Listed,
    /// Only its name is (the descriptions before it used the listing's budget).
    NameOnly,
    /// Its instructions were loaded in this session.
    Loaded,
}

impl SkillState {
    pub(crate) fn label(self) -> &'static str {
        match self {
            SkillState::Listed => "listed",
            SkillState::NameOnly => "name only",
            SkillState::Loaded => "loaded",
        }
    }
}

/// One item of a restored conversation: what the user saw, not what the model is sent (no
/// system prompt, project memory or compaction notes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HistoryEntry {
    /// A prompt the user sent.
    User { text: String },
    /// The text of one assistant reply (never empty).
    Assistant { text: String },
    /// A goal record or a goal round's instruction, described in one line.
    Goal { text: String },
    /// A tool call the model made and how it ended.
    ToolCall {
        call: CallId,
        tool: String,
        /// The one-line description shown when it ran (rebuilt from the arguments for calls
        /// that never began or come from a file written before summaries were kept).
        summary: String,
        arguments: serde_json::Value,
        /// `None` when the session does not know how it ended.
        status: Option<ToolStatus>,
        /// The result the model read.
        output: String,
        /// What the tool declares about the call (`other` and none when it is gone); named
        /// so beside the entry's own `kind` tag.
        #[serde(default)]
        tool_kind: ToolKind,
        #[serde(default)]
        paths: Vec<String>,
        /// What the call would write to a file, as its tool reads the arguments (boxed: most
        /// entries have none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<Box<Change>>,
    },
}

/// Where a host that outlives crashes (the daemon) records tool calls, so that after a crash
/// it knows which calls had started. The core calls it synchronously around every effect.
pub(crate) trait Journal: Send + Sync {
    /// The call's effect is about to start. An error keeps the call from running (it fails
    /// with that error), so a call never runs unrecorded.
    fn starting(&self, call: &str) -> std::io::Result<()>;
    /// The call's result is saved in the session: it will never be taken for one in flight.
    fn finished(&self, call: &str);
}

/// What a host knows about the run a crash left open, handed to the core that reopens the
/// session (see `agent::spawn_hosted`). The core answers it with one turn (`TurnStarted` …
/// `TurnEnded`): calls that had started end as `ExecutionUnknown` and end the turn failed;
/// after a recorded cancel the rest are not run and the turn ends interrupted; otherwise the
/// calls that never started run now (asking for approval again) and the turn goes on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Recovery {
    /// Calls whose effect had started and whose result was not saved.
    pub(crate) started: Vec<CallId>,
    /// A cancel of the run was recorded before the crash.
    pub(crate) cancelled: bool,
}

/// A frontend's end of the core: send ops, receive events.
pub struct AgentHandle {
    ops: mpsc::UnboundedSender<Op>,
    events: mpsc::UnboundedReceiver<Event>,
}

/// The sending half alone, for frontends that read events in one place and send ops from
/// another (e.g. a signal handler).
#[derive(Clone)]
pub struct OpSender(mpsc::UnboundedSender<Op>);

impl OpSender {
    /// Sends an op; silently ignored once the core has shut down.
    pub fn send(&self, op: Op) {
        let _ = self.0.send(op);
    }
}

impl AgentHandle {
    /// Joins the two channel ends the core serves (see `agent::spawn`).
    pub(crate) fn new(
        ops: mpsc::UnboundedSender<Op>,
        events: mpsc::UnboundedReceiver<Event>,
    ) -> Self {
        Self { ops, events }
    }

    pub fn send(&self, op: Op) {
        let _ = self.ops.send(op);
    }

    pub fn sender(&self) -> OpSender {
        OpSender(self.ops.clone())
    }

    /// The next event; `None` once the core has stopped.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// Splits into a cloneable op sender and the event receiver.
    pub(crate) fn split(self) -> (OpSender, mpsc::UnboundedReceiver<Event>) {
        (OpSender(self.ops), self.events)
    }
}

#[cfg(test)]
mod tests {
    use super::always_label;

    #[test]
    fn always_label_shows_a_bash_rule_as_its_first_words() {
        assert_eq!(always_label("bash(cargo test*)"), "cargo test …");
        assert_eq!(
            always_label("mcp_github__create_issue"),
            "mcp_github__create_issue"
        );
    }
}

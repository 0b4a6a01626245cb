//! Every default and ceiling that more than one layer needs, in one place: the configuration
//! fills unset fields from here, and the core's own `Default`s (for library callers and tests)
//! use the same values, so the two can never drift apart. A leaf: plain constants, the
//! default locations derived from the environment, and how settings tables write a duration.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Tools of minicode's own the small model profile leaves out unless `[model] tools` names
/// them (goal tools, skills and MCP tools come only when the user asked for them, so they stay).
/// The background tools go together: without them `bash` declares no `background` either.
pub(crate) const SMALL_PROFILE_OPTIONAL_TOOLS: [&str; 5] =
    ["find", "delegate", "fetch", "bash_output", "bash_kill"];

/// The model's context window when neither the configuration nor the server says otherwise.
pub(crate) const CONTEXT_WINDOW: u64 = 262_144;
/// The largest `max_tokens` a request asks for (less when the window leaves less room).
pub(crate) const MAX_TOKENS: u32 = 8192;
/// Tool rounds one turn may use before a final summary is requested.
pub(crate) const MAX_ROUNDS: u32 = 500;
/// Goal rounds a goal may use (`[goal] max_rounds`, `--goal-rounds`).
pub(crate) const GOAL_MAX_ROUNDS: u32 = 256;
/// Goal rounds in a row without progress after which a goal blocks (`[goal] stall_rounds`).
pub(crate) const GOAL_STALL_ROUNDS: u32 = 3;

/// The deadline of one model call, from sending the request to the end of the reply.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest silence in a streamed reply before the call fails.
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Tool calls one reply may carry.
pub const MAX_TOOL_CALLS: usize = 64;
/// Attempts in all for a request that failed before any response byte (429, 5xx, connect).
pub const RETRY_ATTEMPTS: u32 = 4;
/// The first backoff wait; each retry doubles it (with jitter) up to [`RETRY_MAX_DELAY`].
pub(crate) const RETRY_BASE_DELAY: Duration = Duration::from_millis(500);
pub(crate) const RETRY_MAX_DELAY: Duration = Duration::from_secs(30);
/// The longest `Retry-After` a server may impose.
pub(crate) const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// How long one bash call may run unless it asks for more.
pub(crate) const BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// Background processes (`bash` with `background: true`) that may run at once in a session
/// (`[tools] max_background`), and the most that setting may ask for.
pub(crate) const MAX_BACKGROUND: usize = 4;
pub(crate) const MAX_BACKGROUND_CEILING: usize = 32;
/// The most one bash call may run, whatever the configuration or the model asks for.
pub(crate) const BASH_TIMEOUT_CEILING: Duration = Duration::from_secs(600);

/// Bytes of one bash call's full output saved under `.minicode/outputs/`.
pub(crate) const OUTPUTS_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes all saved outputs may take together.
pub(crate) const OUTPUTS_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Days a saved output is kept.
pub(crate) const OUTPUTS_MAX_AGE_DAYS: u64 = 7;

/// The longest one `fetch` may take, redirects and reading included (`[fetch] timeout_secs`).
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of one page `fetch` downloads; the rest is left unread (`[fetch] max_bytes`).
pub(crate) const FETCH_MAX_BYTES: u64 = 5 * 1024 * 1024;

/// Files larger than this are not recorded by checkpoints (`[checkpoints] max_file_bytes`).
pub(crate) const CHECKPOINT_MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Bytes the checkpoint store may take before the oldest turns are pruned
/// (`[checkpoints] max_bytes`).
pub(crate) const CHECKPOINT_MAX_BYTES: u64 = 512 * 1024 * 1024;

/// How long one edit waits for a running language server's diagnostics (`[lsp] timeout_ms`).
pub(crate) const LSP_TIMEOUT_MS: u64 = 3_000;
/// How long the first edit of a language waits, the server's start-up included
/// (`[lsp] start_timeout_ms`): a cold pyright or rust-analyzer takes seconds.
pub(crate) const LSP_START_TIMEOUT_MS: u64 = 10_000;
/// The most diagnostics appended to one tool result (`[lsp] max_errors`).
pub(crate) const LSP_MAX_ERRORS: usize = 5;

/// Environment variables that may hold a model key whatever the configuration says; the
/// configured `api_key_env` joins them. They are wiped from minicode's own environment once
/// read and never reach a child process.
pub(crate) const SECRET_ENV_VARS: &[&str] = &["MINICODE_API_KEY", "OPENAI_API_KEY"];

/// Sub-agents (the `delegate` tool) running at once in one process, and the most that may be
/// configured (each holds a model connection).
pub(crate) const SUBAGENTS_MAX_CONCURRENT: usize = 3;
pub(crate) const SUBAGENTS_MAX_CONCURRENT_CEILING: usize = 16;
/// How long one sub-agent may take from its start.
pub(crate) const SUBAGENTS_TIMEOUT: Duration = Duration::from_secs(300);
/// Time an MCP server has for its handshake and first tool list (all pages).
pub(crate) const MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Time one MCP tool call may take before its outcome is reported unknown.
pub(crate) const MCP_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Upper bounds of the numeric settings (docs/configuration.md lists each one). Past them a
/// value is a mistake or a trap: a timeout of 2^64 seconds overflows the clock and aborts the
/// process, a cap of 2^64 bytes is no cap. A value above its bound is a config error.
pub(crate) mod bounds {
    /// Tokens of context window.
    pub(crate) const CONTEXT_WINDOW: u64 = 16 * 1024 * 1024;
    /// Tokens of one reply.
    pub(crate) const MAX_TOKENS: u64 = 1024 * 1024;
    /// Every `*_timeout_secs` but bash's (one day).
    pub(crate) const TIMEOUT_SECS: u64 = 86_400;
    /// Tool calls in one reply.
    pub(crate) const MAX_TOOL_CALLS: u64 = 1024;
    /// Tool rounds of a turn and goal rounds of a goal.
    pub(crate) const ROUNDS: u64 = 100_000;
    /// Bytes of one saved bash output (1 GiB).
    pub(crate) const OUTPUTS_MAX_FILE_BYTES: u64 = 1024 * 1024 * 1024;
    /// Bytes of all saved bash outputs (16 GiB).
    pub(crate) const OUTPUTS_MAX_BYTES: u64 = 16 * 1024 * 1024 * 1024;
    /// Days a saved output is kept.
    pub(crate) const OUTPUTS_MAX_AGE_DAYS: u64 = 365;
    /// Bytes of one page `fetch` downloads (1 GiB: it is held in memory).
    pub(crate) const FETCH_MAX_BYTES: u64 = 1024 * 1024 * 1024;
    /// Bytes of one file checkpoints record (4 GiB) and of the whole store (1 TiB).
    pub(crate) const CHECKPOINT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024 * 1024;
    pub(crate) const CHECKPOINT_MAX_BYTES: u64 = 1024 * 1024 * 1024 * 1024;
    /// Turns printed on exit.
    pub(crate) const EXIT_TRANSCRIPT_TURNS: u32 = 1_000_000;
}

/// minicode's runtime folder (the daemon's socket and token): `$XDG_RUNTIME_DIR/minicode`, or
/// `/tmp/minicode-<uid>` without it. Here because both the daemon (which makes it) and the
/// sandbox (which hides it from confined commands) must name the same folder.
pub(crate) fn runtime_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match env("XDG_RUNTIME_DIR").filter(|d| Path::new(d).is_absolute()) {
        Some(dir) => Path::new(&dir).join("minicode"),
        None => PathBuf::from(format!("/tmp/minicode-{}", nix::unistd::getuid())),
    }
}

/// How a settings table writes a duration: whole seconds (`timeout_secs = 30`), read into the
/// part's `Duration` field with `#[serde(deserialize_with = "crate::defaults::secs")]`.
pub(crate) fn secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    <u64 as serde::Deserialize>::deserialize(d).map(Duration::from_secs)
}

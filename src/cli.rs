//! Arguments: parses the command line, builds the config and the provider, opens the session
//! and picks the frontend (full-screen, one-shot, or a subcommand); the session itself is put
//! together by `cli/assemble.rs`, the one builder every frontend uses.
//! Every usage, config or input error becomes exit code 2 here; `main` only exits. Workspace
//! trust (`trust`/`untrust`, the question before a full-screen session) is in `cli/trust.rs`.

mod acp;
mod ask;
mod assemble;
mod commands;
mod doctor;
mod eval;
mod export;
mod goal;
mod hooks;
mod host;
mod init;
mod mcp;
mod prelude;
mod provider;
mod rewind;
pub(crate) mod sandbox;
mod sandbox_flags;
mod serve;
mod sessions;
mod shell;
mod skills;
mod trust;
mod typo;

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod stdin;

use self::assemble::Inputs;
use self::provider::build_provider;
use crate::agent;
use crate::config::{Config, Overrides};
use crate::print::{self, OutputFormat};
use crate::session::Session;

/// Exit code for usage, configuration and input errors.
pub const EXIT_USAGE: u8 = 2;

/// minicode: a terminal coding agent for OpenAI-compatible model servers.
#[derive(Debug, Parser)]
#[command(
    name = "minicode",
    version,
    about,
    args_conflicts_with_subcommands = true,
    after_help = shell::AFTER_HELP,
    after_long_help = shell::AFTER_LONG_HELP
)]
pub struct Args {
    /// The task: the words after the options, joined by spaces (quoting is optional; after
    /// `--` even a subcommand's name is a prompt). Without it, a terminal opens the
    /// full-screen session and piped stdin is the task; with it, piped stdin is attached below.
    #[arg(value_name = "PROMPT", num_args = 0..)]
    pub(crate) prompt: Vec<String>,
    /// One-shot even without a prompt argument (the prompt then comes from stdin), as
    /// `claude -p` does: `minicode -p "fix the test"`.
    #[arg(short = 'p', long = "print")]
    pub(crate) print: bool,
    #[command(flatten)]
    pub(crate) server: ServerFlags,
    /// Approve every tool call without asking.
    #[arg(short = 'y', long)]
    pub(crate) yes: bool,
    /// Resume this session of the current workspace: its id, or a unique prefix of 6+
    /// characters (such as the short id the full-screen session shows).
    #[arg(long, value_name = "ID", conflicts_with = "continue_")]
    pub(crate) session: Option<String>,
    /// Resume the most recent session of this workspace.
    #[arg(long = "continue", short = 'c')]
    pub(crate) continue_: bool,
    /// One-shot output: text (the answer), json (one object), stream-json (one event per line).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) output_format: OutputFormat,
    /// Offer the model no tools: plain chat, for models or servers without tool support.
    #[arg(long)]
    pub(crate) no_tools: bool,
    /// One-shot: print the model's reasoning on stderr as it streams (never on stdout).
    #[arg(long)]
    pub(crate) show_reasoning: bool,
    /// Goal mode, one-shot: set this goal and work on it round after round until it is
    /// complete (exit 0) or blocked or out of rounds (exit 1). A refused goal exits 2.
    #[arg(long, value_name = "OBJECTIVE", conflicts_with_all = ["prompt", "goal_resume"])]
    pub(crate) goal: Option<String>,
    /// Goal rounds allowed (default: [goal] max_rounds, 256), with --goal or --goal-resume.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) goal_rounds: Option<u32>,
    /// With --session or --continue: arm that session's goal and run it to its end.
    #[arg(long, conflicts_with = "prompt")]
    pub(crate) goal_resume: bool,
    /// With --session or --continue: continue in a copy of that session (new id and file; the
    /// original stays as it is). A goal comes along, disarmed.
    #[arg(long)]
    pub(crate) fork: bool,
    /// One-shot: the final answer must be JSON valid against the JSON Schema in FILE (one
    /// second try with the errors; still invalid exits 1, a bad schema file exits 2).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["goal", "goal_resume"])]
    pub(crate) output_schema: Option<std::path::PathBuf>,
    /// One-shot: attach the image at PATH to the prompt (PNG, JPEG, GIF or WebP, at most
    /// 5 MiB; any path you name). Repeatable.
    #[arg(long = "image", value_name = "PATH", conflicts_with_all = ["goal", "goal_resume"])]
    pub(crate) images: Vec<std::path::PathBuf>,
    /// One-shot: answer approvals of TOOL without a terminal (`approve` or `deny`; `*` for
    /// every other tool). Repeatable. The question is still recorded (see docs/headless.md).
    #[arg(long = "approval-answer", value_name = "TOOL=ANSWER")]
    pub(crate) approval_answers: Vec<print::ScriptedAnswer>,
    /// Run no configured hook (what `minicode eval` gives each run, so a task is measured as
    /// written, whatever hooks the user's config holds).
    #[arg(long, hide = true)]
    pub(crate) no_hooks: bool,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// The flags that choose the model server, the same for a session, `acp`, `serve` and
/// `doctor`: declared once, so their names and help never drift apart.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ServerFlags {
    /// Use this config file instead of the usual locations.
    #[arg(long, value_name = "PATH")]
    pub(crate) config: Option<PathBuf>,
    /// Model name (overrides the config file and MINICODE_MODEL).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// Server base URL, e.g. http://127.0.0.1:8080/v1 (overrides config and MINICODE_BASE_URL).
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// Use the built-in offline demo model (no key, no network).
    #[arg(long)]
    pub(crate) demo: bool,
    #[command(flatten)]
    pub(crate) sandbox: sandbox_flags::SandboxFlags,
}

impl ServerFlags {
    /// What the flags change in the configuration. `skip_workspace_file`: the workspace's own
    /// file is not read at all (the daemon, whose workspaces are the clients' to choose).
    fn overrides(&self, skip_workspace_file: bool) -> Overrides {
        let mut overrides = Overrides {
            config_path: self.config.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            demo: self.demo,
            skip_workspace_file,
            ..Overrides::default()
        };
        self.sandbox.apply(&mut overrides);
        overrides
    }
}

/// The one-thread tokio runtime every command runs on: the core, the provider stream and the
/// frontend hand events to each other without cross-thread wake-ups.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure {
            code: 1,
            message: format!("cannot start the runtime: {e}"),
        })
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Speak the Agent Client Protocol on stdin/stdout, for editors such as Zed (see
    /// docs/headless.md).
    Acp(acp::AcpArgs),
    /// List this workspace's sessions, newest first.
    Sessions(sessions::SessionsArgs),
    /// Trust a workspace (default: the current folder): its .minicode/config.toml may then
    /// choose the server, the provider and the key. Recorded in your user config.
    Trust {
        /// The workspace folder.
        path: Option<PathBuf>,
    },
    /// Stop trusting a workspace (default: the current folder).
    Untrust {
        /// The workspace folder.
        path: Option<PathBuf>,
    },
    /// Set up a model: write your user config (where minicode reads it) from a few questions,
    /// or from --base-url and --model without any, then check it with `doctor`.
    Init(init::InitArgs),
    /// Check the configured model server step by step: reachable, key, model, streaming,
    /// usage, a tool call round trip, context window, reasoning, speed. Exit 0 when it can run
    /// the agent, 1 when it cannot, 2 for configuration errors.
    Doctor {
        /// text (a table) or json.
        #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = doctor_format)]
        output_format: OutputFormat,
        #[command(flatten)]
        server: ServerFlags,
    },
    /// List the skills a session here offers the model: name, state, source, description
    /// (the workspace's own .minicode/skills and .agents/skills only when it is trusted).
    Skills,
    /// List the custom slash commands a session here offers: name, source file, description
    /// (the workspace's own .minicode/commands only when it is trusted).
    Commands,
    /// MCP servers.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Run a daemon several clients share over a Unix socket or loopback TCP (newline-delimited
    /// JSON-RPC 2.0; see docs/headless.md).
    Serve(serve::ServeArgs),
    /// Open the full-screen session as a client of a running `minicode serve`.
    Attach(serve::AttachArgs),
    /// Print a shell completion script on stdout (see docs/usage.md: installing them).
    Completions {
        /// bash, zsh or fish.
        #[arg(value_enum)]
        shell: shell::Shell,
    },
    /// Print the man page (roff) on stdout: `minicode man | man -l -`.
    Man,
    /// Run task suites against a model and report how often each task's runs met every
    /// expectation (see docs/eval.md). Exit 0 when every task met its pass rate, 1 otherwise.
    Eval(eval::EvalArgs),
    /// Write a session to stdout as an ATIF trajectory (Harbor's Agent Trajectory Interchange
    /// Format) or as minicode's own events (jsonl); see docs/eval.md.
    Export(export::ExportArgs),
    /// Undo: list a session's turns that changed files (--list, the default), or go back to the
    /// state before one (--to N) for the code, the conversation or both. Exit 1 when conflicts
    /// were left as they are.
    Rewind(rewind::RewindArgs),
    /// Run one command confined as a `bash` call would be (profile, network), in the current
    /// folder as the workspace, and exit with its status: `minicode sandbox -- cargo build`.
    Sandbox(sandbox::SandboxArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Start the configured MCP servers, print each one's state and tools, and stop them.
    /// Exit 1 when one failed to start or never answered.
    List,
}

/// `doctor --output-format`: only the two formats it writes (the one-shot descriptions of
/// the shared enum would mislead in its help).
fn doctor_format(value: &str) -> Result<OutputFormat, String> {
    match value {
        "text" => Ok(OutputFormat::Text),
        "json" => Ok(OutputFormat::Json),
        other => Err(format!(
            "`{other}` is not a format doctor writes: text or json"
        )),
    }
}

/// A failure that ends the program, with its exit code.
struct Failure {
    code: u8,
    message: String,
}

fn usage(message: impl std::fmt::Display) -> Failure {
    Failure {
        code: EXIT_USAGE,
        message: message.to_string(),
    }
}

/// The hidden first argument that makes the binary the supervisor of one `bash` command
/// (`process::supervisor`); `main` checks for it before anything else.
pub const SUPERVISOR_ARG: &str = crate::process::supervisor::ARG;

/// Runs as the supervisor of `command`, confined as `launch` says (never returns while the
/// command runs well).
pub fn supervise(launch: &std::ffi::OsStr, command: &std::ffi::OsStr) -> ExitCode {
    ExitCode::from(crate::process::supervisor::run(launch, command))
}

/// Runs minicode with parsed arguments; the returned code is the process exit status.
pub fn run(args: Args) -> ExitCode {
    match run_inner(args) {
        Ok(code) => code,
        Err(failure) => {
            let mut err = std::io::stderr().lock();
            // Errors may carry text from files or a server: nothing in it may act on the terminal.
            let _ = writeln!(
                err,
                "minicode: {}",
                crate::sanitize::sanitize(&failure.message)
            );
            ExitCode::from(failure.code)
        }
    }
}

impl Args {
    /// The prompt the command line gives: its words joined by single spaces.
    pub(crate) fn prompt_text(&self) -> Option<String> {
        (!self.prompt.is_empty()).then(|| self.prompt.join(" "))
    }
}

/// Parses the command line, adding a suggestion clap does not make itself: an unknown flag
/// one or two edits away from a real one (`--yse`) names it.
pub fn parse() -> Result<Args, clap::Error> {
    Args::try_parse().map_err(typo::suggest_flag)
}

fn run_inner(args: Args) -> Result<ExitCode, Failure> {
    crate::process::deny_dumps();
    let launch = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| usage(format!("cannot use the current directory: {e}")))?;
    let env = |name: &str| std::env::var(name).ok();
    typo::check(&args, &std::env::args_os().skip(1).collect::<Vec<_>>())?;
    match &args.command {
        Some(command) => subcommand(command, &args, &env, &launch),
        None => run_session(args, &env, &launch),
    }
}

/// Every command but a session.
fn subcommand(
    command: &Command,
    args: &Args,
    env: &dyn Fn(&str) -> Option<String>,
    launch: &Path,
) -> Result<ExitCode, Failure> {
    match command {
        Command::Acp(acp_args) => acp::run(acp_args, launch),
        Command::Sessions(sessions_args) => sessions::list(launch, sessions_args),
        Command::Trust { path } => trust::change(env, launch, path, true),
        Command::Untrust { path } => trust::change(env, launch, path, false),
        Command::Mcp {
            command: McpCommand::List,
        } => mcp::list(env, launch, args.server.config.as_deref()),
        Command::Doctor {
            output_format,
            server,
        } => doctor::run(env, launch, server, *output_format),
        Command::Init(init_args) => init::run(init_args, env, launch),
        Command::Skills => skills::list(env, launch),
        Command::Commands => commands::list(env, launch),
        Command::Serve(serve_args) => serve::serve(serve_args, launch),
        Command::Attach(attach_args) => serve::attach(attach_args, launch),
        Command::Completions { shell } => shell::completions(*shell),
        Command::Man => shell::man(),
        Command::Eval(eval_args) => eval::run(eval_args, env),
        Command::Export(export_args) => export::run(export_args, launch),
        Command::Rewind(rewind_args) => rewind::run(rewind_args, env, launch),
        Command::Sandbox(sandbox_args) => {
            sandbox::run(sandbox_args, env, launch, args.server.config.as_deref())
        }
    }
}

/// A one-shot or full-screen session in the launch folder.
fn run_session(
    args: Args,
    env: &dyn Fn(&str) -> Option<String>,
    launch: &Path,
) -> Result<ExitCode, Failure> {
    let mut overrides = args.server.overrides(false);
    overrides.no_hooks = args.no_hooks;
    let goal_task = goal::task(&args)?;
    let interactive = args.prompt.is_empty()
        && !args.print
        && goal_task.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let prelude::Started {
        config,
        log: _log,
        runtime,
    } = prelude::start(prelude::Setup {
        env,
        launch,
        overrides,
        refused: if interactive {
            prelude::Refused::Ask
        } else {
            prelude::Refused::Fail
        },
        log: if interactive {
            prelude::Log::ByDefault
        } else {
            prelude::Log::OnRequest
        },
    })?;
    announce(&config, launch);
    // A goal run sends no prompt: the goal's rounds are its turns.
    let prompt = match goal_task {
        Some(_) => None,
        None => prompt(&args, interactive)?,
    };
    let commands = commands::discover(env, launch, config.trust.is_trusted());
    // `minicode /name args` runs a custom command's prompt.
    let prompt = match prompt {
        Some(p) => Some(commands::expand_one_shot(&commands, p)?),
        None => None,
    };
    let schema = match (&args.output_schema, &prompt) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(usage(
                "--output-schema checks the answer of a one-shot run: give a prompt",
            ));
        }
        (Some(path), Some(_)) => Some(print::OutputSchema::load(path).map_err(usage)?),
    };
    let images = match (&args.images[..], &prompt) {
        ([], _) => Vec::new(),
        (_, None) => return Err(usage("--image goes with a one-shot prompt: give a prompt")),
        (paths, Some(_)) => paths
            .iter()
            .map(|path| {
                crate::chat::Image::read(path)
                    .map_err(|e| usage(format!("--image {}: {e}", path.display())))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    if prompt.is_some() {
        for warning in &commands.warnings {
            note(warning);
        }
    }
    // Everything that can fail with a usage error comes before the session file is created.
    assemble::check(&config).map_err(usage)?;
    let provider = build_provider(&config, env)?;
    // Asked before the session opens: a `.mcp.json` server the user has not approved yet.
    let mut prepared = assemble::prepare(Inputs {
        config: &config,
        env,
        workspace: launch,
        trust: config.trust,
        provider,
        tools: !args.no_tools,
        ask: mcp::Ask::Terminal,
        client_servers: Vec::new(),
        files: None,
        auto_approve: args.yes,
        // Someone answers only in the full-screen session.
        ask_outside_sandbox: interactive,
        // One value for the process: every delegation shares its slots.
        subagents: Some(agent::delegate::Subagents::new(
            config.subagents_max_concurrent,
            config.subagents_timeout,
        )),
        hosted: None,
    });
    // The runtime (one thread: the core, the provider stream and the frontend hand events to
    // each other without cross-thread wake-ups) was built by the prelude, before the session
    // opens: nothing may fail between creating a session and running it, or an empty session
    // file would be left behind.
    let session = open_session(launch, &args)?;
    let hooks = std::mem::take(&mut prepared.hook_listing);
    let resume_flags = resume_flags(&args);
    let task = goal_task.or(prompt.map(print::Task::Prompt));
    let (format, show_reasoning) = (args.output_format, args.show_reasoning);
    let answers = print::Answers::new(args.approval_answers.clone());
    let code = runtime.block_on(async {
        let started = prepared.start(session);
        let code = match task {
            Some(task) => {
                let output = print::Options {
                    format,
                    resume_flags: &resume_flags,
                    show_reasoning,
                    schema,
                    answers,
                    images,
                };
                print::run(started.handle, task, output).await
            }
            None => {
                let screen = Screen {
                    config: &config,
                    resume_flags: &resume_flags,
                    workspace: launch,
                    commands,
                    hooks,
                };
                full_screen(started.handle, screen).await
            }
        };
        started.mcp.shutdown().await;
        code
    });
    // A tool child that ignores its kill must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(code)
}

/// The prompt of a run without a goal: the argument (with whatever is piped beside it), or
/// stdin; `None` for the full-screen session.
fn prompt(args: &Args, interactive: bool) -> Result<Option<String>, Failure> {
    let prompt = match (args.prompt_text(), interactive) {
        (Some(p), _) if std::io::stdin().is_terminal() => Some(p),
        (Some(p), _) => Some(with_piped_text(&p)?),
        (None, true) => None,
        (None, false) if std::io::stdin().is_terminal() => {
            return Err(usage(
                "no prompt given: pass one as an argument or pipe it on stdin",
            ));
        }
        (None, false) if !stdin::is_pipe_or_file() => {
            return Err(usage(
                "no prompt given, and stdin is neither a terminal (for the full-screen session) \
                 nor a pipe: pass the prompt as an argument or pipe it on stdin",
            ));
        }
        (None, false) => Some(read_stdin()?),
    };
    if prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(usage("the prompt is empty"));
    }
    Ok(prompt)
}

/// The config's notices and the workspace's `.gitignore` warnings, on stderr.
fn announce(config: &Config, launch: &Path) {
    for notice in &config.notices {
        note(notice);
    }
    for warning in crate::fsutil::gitignore::warnings(launch) {
        note(&warning);
    }
}

/// The log (and the trace exporter, when configured). An exporter the environment configures
/// in a way we cannot honour (an unsupported OTEL_EXPORTER_OTLP_COMPRESSION, say) must not stop
/// the user's work: export is off.
fn start_logging(
    config: &Config,
    launch: &Path,
    by_default: bool,
) -> Result<Option<crate::logging::LogGuard>, Failure> {
    match crate::logging::init(launch, by_default, export_settings(config)) {
        Ok(guard) => Ok(guard),
        Err(e) => {
            note(&format!("{e}; OpenTelemetry export is off for this run"));
            crate::logging::init(launch, by_default, None).map_err(usage)
        }
    }
}

/// The largest prompt accepted on stdin; more is almost certainly a mistake (a binary piped in).
const MAX_STDIN_PROMPT: u64 = 8 * 1024 * 1024;

fn read_stdin() -> Result<String, Failure> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_STDIN_PROMPT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| usage(format!("cannot read the prompt from stdin: {e}")))?;
    if bytes.len() as u64 > MAX_STDIN_PROMPT {
        return Err(usage(format!(
            "the prompt on stdin is larger than {} MiB",
            MAX_STDIN_PROMPT / (1024 * 1024)
        )));
    }
    String::from_utf8(bytes).map_err(|_| usage("the prompt on stdin is not valid UTF-8"))
}

/// The prompt with whatever was piped beside it (`git diff | minicode "review this"`).
fn with_piped_text(prompt: &str) -> Result<String, Failure> {
    let quiet = || {
        let _ = writeln!(
            std::io::stderr(),
            "minicode: waiting for the text piped on stdin to end (it is sent after the \
             prompt); to run without it, redirect stdin from /dev/null"
        );
    };
    match stdin::read_beside_prompt(quiet).map_err(usage)? {
        stdin::Piped::Text(text) => Ok(stdin::attach(prompt, &text)),
        stdin::Piped::Nothing => Ok(prompt.to_string()),
    }
}

/// A line on stderr that does not stop the run, made safe for the terminal.
fn note(text: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "minicode: note: {}",
        crate::sanitize::sanitize(text)
    );
}

fn open_session(workspace: &Path, args: &Args) -> Result<Session, Failure> {
    let session = match (&args.session, args.continue_) {
        (Some(given), _) => sessions::open(workspace, given)?,
        (None, true) => sessions::open_latest(workspace)?,
        (None, false) => Session::begin(workspace).map_err(usage)?,
    };
    if !args.fork {
        return Ok(session);
    }
    goal::fork(session)
}

/// The exporter's settings when telemetry is on.
fn export_settings(config: &Config) -> Option<crate::logging::otlp::Settings> {
    let t = config.telemetry.as_ref()?;
    Some(crate::logging::otlp::Settings {
        traces_url: t.traces_url.clone(),
        headers: t
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.expose().to_string()))
            .collect(),
        json: t.protocol == crate::config::OtlpProtocol::HttpJson,
        service_name: t.service_name.clone(),
    })
}

/// Takes the API key out of this process's environment (every variable that may hold it: the
/// fixed key variables and the configured `api_key_env`, whatever their value), so no child
/// process and no `/proc/<pid>/environ` reader sees it. Every entry point that reads the key
/// or starts children calls this once its configuration is read (`None`: none could be).
///
/// # Safety
/// As [`crate::process::forget_variables`]: no other thread may be running.
#[allow(unsafe_code)]
pub(crate) unsafe fn forget_key(config: Option<&Config>) {
    let mut names = crate::defaults::SECRET_ENV_VARS.to_vec();
    names.extend(config.and_then(|c| c.api_key_env.as_deref()));
    // SAFETY: passed on to the caller (see above).
    unsafe { crate::process::forget_variables(names) };
}

/// What the full-screen session is started with besides its core.
struct Screen<'a> {
    config: &'a Config,
    resume_flags: &'a str,
    workspace: &'a Path,
    commands: commands::Found,
    /// Every configured hook and whether it runs, for `/hooks`.
    hooks: Vec<String>,
}

/// The full-screen session; on exit the terminal is already restored and the transcript printed.
async fn full_screen(handle: crate::protocol::AgentHandle, screen: Screen<'_>) -> ExitCode {
    let Screen {
        config,
        resume_flags,
        workspace,
        commands,
        hooks,
    } = screen;
    let options = crate::tui::Options {
        model: config.model.clone(),
        context_window: config.context_window,
        exit_transcript_turns: config.exit_transcript_turns,
        highlight: config.syntax_highlighting,
        welcome: crate::tui::help::Welcome {
            version: env!("CARGO_PKG_VERSION").to_string(),
            server: crate::tui::help::Welcome::host_of(&config.base_url),
            workspace: workspace.display().to_string(),
            model_origin: config.origins.model.clone(),
            server_origin: config.origins.base_url.clone(),
            window_origin: config.origins.context_window.clone(),
        },
        rulebook: Some(rulebook(config)),
        commands: commands.commands,
        command_warnings: commands.warnings,
        hooks,
        workspace: workspace.to_path_buf(),
    };
    match crate::tui::run(handle, options).await {
        Ok(outcome) => {
            if let Some(id) = outcome.session_id.filter(|id| session_kept(workspace, id)) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(
                    out,
                    "session {id} · resume with: minicode{resume_flags} --session {id}"
                );
            }
            match outcome.signal {
                None => ExitCode::SUCCESS,
                Some(libc::SIGINT) => ExitCode::from(print::EXIT_SIGINT),
                Some(_) => ExitCode::FAILURE,
            }
        }
        Err(e) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "minicode: terminal error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The permission rules for the full-screen session's `/permissions`, and the writer its
/// `/permissions save` uses (the user's config file, found as at start-up).
fn rulebook(config: &Config) -> crate::tui::permissions::Rulebook {
    let listing = config
        .permissions
        .iter()
        .map(|r| format!("{} {} (from {})", r.action.list(), r.text, r.origin))
        .collect();
    crate::tui::permissions::Rulebook {
        listing,
        save: std::sync::Arc::new(|rule| {
            let env = |name: &str| std::env::var(name).ok();
            crate::config::save_allow_rule(&env, rule).map(|p| p.display().to_string())
        }),
    }
}

/// The flags that chose the model, to repeat in the "resume with" hint (each with a leading
/// space). Values are quoted only when they need it.
fn resume_flags(args: &Args) -> String {
    let quote = |v: &str| {
        if v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@".contains(c))
        {
            v.to_string()
        } else {
            format!("'{}'", v.replace('\'', "'\\''"))
        }
    };
    let mut flags = String::new();
    if let Some(path) = &args.server.config {
        flags.push_str(&format!(" --config {}", quote(&path.display().to_string())));
    }
    if args.server.demo {
        flags.push_str(" --demo");
    }
    if args.no_tools {
        flags.push_str(" --no-tools");
    }
    if let Some(url) = &args.server.base_url {
        flags.push_str(&format!(" --base-url {}", quote(url)));
    }
    if let Some(model) = &args.server.model {
        flags.push_str(&format!(" --model {}", quote(model)));
    }
    flags
}

/// Whether the session's file is still there (an unused session is removed on exit, and
/// pointing the user at it would only produce "no session").
pub(crate) fn session_kept(workspace: &Path, id: &str) -> bool {
    crate::session::sessions_dir(workspace)
        .join(format!("{id}.json"))
        .exists()
}

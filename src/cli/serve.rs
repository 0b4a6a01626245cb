//! `minicode serve` and `minicode attach`: the wiring of the daemon (one configuration, one
//! provider and the sub-agent slots shared by every session; each session opened by
//! `cli/host.rs` with the daemon's journal and recovery hooks) and of a full-screen client of
//! it. The daemon's
//! own logic is in `daemon`, the client's in `attach`; this file only assembles and reports.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use super::host::{Host, Notes, Source};
use super::{Failure, usage};
use crate::agent;
use crate::attach::{self, Endpoint};
use crate::daemon::{self, Listen};
use crate::provider::Provider;

/// `minicode serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Listen on TCP at this address instead of a Unix socket, e.g. 127.0.0.1:7700 (port 0
    /// picks one). Only a loopback address unless you name another one explicitly.
    #[arg(long, value_name = "ADDR", conflicts_with = "socket")]
    pub(crate) listen: Option<SocketAddr>,
    /// The Unix socket (default: $XDG_RUNTIME_DIR/minicode/daemon.sock).
    #[arg(long, value_name = "PATH")]
    pub(crate) socket: Option<PathBuf>,
    /// Read the token clients must present from this file instead of writing a random one to
    /// `token` beside the socket.
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,
    /// A folder whose workspaces clients may open (repeatable; default: the current folder).
    #[arg(long = "allowed-root", value_name = "DIR")]
    pub(crate) allowed_roots: Vec<PathBuf>,
    /// The largest message a client may send, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = daemon::wire::DEFAULT_MAX_MESSAGE)]
    pub(crate) max_message_bytes: usize,
    #[command(flatten)]
    pub(crate) server: super::ServerFlags,
}

/// `minicode attach`.
#[derive(Debug, clap::Args)]
pub(crate) struct AttachArgs {
    /// The session to show (of the current folder's workspace): its id, or a unique prefix
    /// of 6+ characters such as the short id the screen shows; without it, a new one.
    #[arg(long, value_name = "ID")]
    pub(crate) session: Option<String>,
    /// The daemon's Unix socket (default: $XDG_RUNTIME_DIR/minicode/daemon.sock).
    #[arg(long, value_name = "PATH", conflicts_with = "connect")]
    pub(crate) socket: Option<PathBuf>,
    /// The daemon's TCP address instead of its socket.
    #[arg(long, value_name = "ADDR")]
    pub(crate) connect: Option<SocketAddr>,
    /// The token file (default: `token` beside the socket, or in the runtime folder for TCP).
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn runtime_failure(message: impl std::fmt::Display) -> Failure {
    Failure {
        code: 1,
        message: message.to_string(),
    }
}

/// Runs the daemon until it is told to stop.
pub(super) fn serve(args: &ServeArgs, launch: &Path) -> Result<ExitCode, Failure> {
    // Workspaces are the clients' to choose: no workspace file may pick the server or the key
    // of a daemon that serves them all.
    let overrides = args.server.overrides(true);
    let super::prelude::Started {
        config,
        log: _log,
        runtime,
    } = super::prelude::start(super::prelude::Setup {
        env: &env,
        launch,
        overrides,
        refused: super::prelude::Refused::Fail,
        log: super::prelude::Log::OnRequest,
    })?;
    super::assemble::check(&config).map_err(usage)?;
    let provider = super::provider::build_provider(&config, &env)?;
    let roots = allowed_roots(args, launch)?;
    let (listen, folder) = listen(args)?;
    let (token, token_path) = token(args, &folder)?;
    let registry = folder.join(daemon::REGISTRY_FILE);
    let opener = Arc::new(host(config, provider, launch));
    let max_message = args.max_message_bytes.max(1024);
    let result = runtime.block_on(async move {
        let listener = daemon::bind(&listen).await?;
        {
            // One line on stdout once clients can connect, for scripts to wait on.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening {}", listener.describe());
            let _ = writeln!(out, "token {}", token_path.display());
            let _ = out.flush();
        }
        let options = daemon::Options {
            token,
            registry: Some(registry),
            allowed_roots: roots,
            max_message,
        };
        daemon::run(listener, options, opener).await
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e @ (daemon::DaemonError::InUse(_) | daemon::DaemonError::NotASocket(_))) => {
            Err(usage(e))
        }
        Err(e) => Err(runtime_failure(e)),
    }
}

/// The folders whose workspaces clients may open, canonical (default: the launch folder).
fn allowed_roots(args: &ServeArgs, launch: &Path) -> Result<Vec<PathBuf>, Failure> {
    let wanted = if args.allowed_roots.is_empty() {
        vec![launch.to_path_buf()]
    } else {
        args.allowed_roots.clone()
    };
    wanted
        .into_iter()
        .map(|root| {
            root.canonicalize()
                .map_err(|e| usage(format!("--allowed-root {}: {e}", root.display())))
        })
        .collect()
}

/// Where to listen, and the folder the token (and the default socket) live in, made private
/// to the user when the daemon keeps anything there. A non-loopback address gets a note.
fn listen(args: &ServeArgs) -> Result<(Listen, PathBuf), Failure> {
    let listen = match (&args.listen, &args.socket) {
        (Some(addr), _) => Listen::Tcp(*addr),
        (None, Some(path)) => Listen::Unix(path.clone()),
        (None, None) => Listen::Unix(daemon::runtime_dir(&env).join(daemon::SOCKET_FILE)),
    };
    let folder = match &listen {
        Listen::Unix(path) => path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| daemon::runtime_dir(&env)),
        Listen::Tcp(_) => daemon::runtime_dir(&env),
    };
    if args.token_file.is_none() || matches!(listen, Listen::Unix(_)) {
        let owned = folder == daemon::runtime_dir(&env);
        daemon::private_runtime_dir(&folder, owned).map_err(usage)?;
    }
    if let Listen::Tcp(addr) = &listen
        && !addr.ip().is_loopback()
    {
        note(&format!(
            "listening on {addr}, which is not a loopback address: anyone who can reach it and \
             has the token can run commands here"
        ));
    }
    Ok((listen, folder))
}

/// The token clients must present, and its file: the one given, or a new random one written
/// to `folder`.
fn token(args: &ServeArgs, folder: &Path) -> Result<(String, PathBuf), Failure> {
    match &args.token_file {
        Some(path) => Ok((daemon::read_token(path).map_err(usage)?, path.clone())),
        None => {
            let path = folder.join(daemon::TOKEN_FILE);
            Ok((daemon::write_token(&path).map_err(usage)?, path))
        }
    }
}

/// The host every session of the daemon is opened by: one configuration, provider and set of
/// sub-agent slots for all of them.
fn host(config: crate::config::Config, provider: Arc<dyn Provider>, launch: &Path) -> Host {
    Host {
        source: Source::Shared {
            subagents: agent::delegate::Subagents::new(
                config.subagents_max_concurrent,
                config.subagents_timeout,
            ),
            provider,
            config: Box::new(config),
        },
        // The daemon's clients read the session's events: the core reports them as warnings.
        notes: Notes::Core,
        // Taken once the key is gone from the environment.
        vars: std::env::vars().collect(),
        launch: launch.to_path_buf(),
    }
}

fn note(text: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "minicode: note: {}",
        crate::sanitize::sanitize(text)
    );
}

/// Refuses a socket or a token in the runtime folder unless that folder passes the same check
/// `serve` makes: otherwise another local user who created `/tmp/minicode-<uid>` first could
/// run a fake daemon there and receive the workspace path and every prompt typed. A folder
/// that does not exist is left to the connection to report.
fn trusted_runtime_dir(endpoint: &Endpoint, token: &Path) -> Result<(), Failure> {
    let runtime = daemon::runtime_dir(&env);
    let socket = match endpoint {
        Endpoint::Unix(path) => Some(path.as_path()),
        Endpoint::Tcp(_) => None,
    };
    let uses_it = [socket, Some(token)]
        .into_iter()
        .flatten()
        .any(|path| path.parent() == Some(runtime.as_path()));
    if uses_it && std::fs::symlink_metadata(&runtime).is_ok() {
        daemon::check_private_dir(&runtime).map_err(usage)?;
    }
    Ok(())
}

/// Opens the full-screen UI on a daemon's session.
pub(super) fn attach(args: &AttachArgs, launch: &Path) -> Result<ExitCode, Failure> {
    let (endpoint, default_token) = match (&args.connect, &args.socket) {
        (Some(addr), _) => (
            Endpoint::Tcp(*addr),
            daemon::runtime_dir(&env).join(daemon::TOKEN_FILE),
        ),
        (None, socket) => {
            let socket = socket
                .clone()
                .unwrap_or_else(|| daemon::runtime_dir(&env).join(daemon::SOCKET_FILE));
            let token = socket
                .parent()
                .map(|p| p.join(daemon::TOKEN_FILE))
                .unwrap_or_else(|| PathBuf::from(daemon::TOKEN_FILE));
            (Endpoint::Unix(socket), token)
        }
    };
    let token_path = args.token_file.clone().unwrap_or(default_token);
    trusted_runtime_dir(&endpoint, &token_path)?;
    let token = daemon::read_token(&token_path).map_err(usage)?;
    let runtime = super::runtime()?;
    // The short id the full-screen session shows (a unique prefix) names the session as the
    // full id does, as for `--session` of a local session.
    let session = match &args.session {
        Some(given) => {
            Some(crate::session::Session::resolve_id(launch, given).map_err(super::usage)?)
        }
        None => None,
    };
    let workspace = launch.to_path_buf();
    let workspace_shown = workspace.display().to_string();
    let result = runtime.block_on(async move {
        let attached = attach::connect(&endpoint, &token, &workspace, session.as_deref())
            .await
            .map_err(runtime_failure)?;
        let options = crate::tui::Options {
            model: String::new(),
            context_window: crate::defaults::CONTEXT_WINDOW,
            exit_transcript_turns: Some(0),
            highlight: true,
            // The daemon's session is already under way: the model and server are the
            // daemon's, so the header names only what this client knows.
            welcome: crate::tui::help::Welcome {
                version: env!("CARGO_PKG_VERSION").to_string(),
                workspace: workspace_shown,
                ..Default::default()
            },
            // The daemon's rules are not this client's to list or change.
            rulebook: None,
            hooks: Vec::new(),
            commands: Vec::new(),
            command_warnings: Vec::new(),
            workspace: launch.to_path_buf(),
        };
        let outcome = crate::tui::run(attached.handle, options)
            .await
            .map_err(|e| runtime_failure(format!("terminal error: {e}")))?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "detached from session {} · it goes on in the daemon; attach again with: minicode attach --session {}",
            attached.session_id, attached.session_id
        );
        Ok::<_, Failure>(match outcome.signal {
            None => ExitCode::SUCCESS,
            Some(libc::SIGINT) => ExitCode::from(crate::print::EXIT_SIGINT),
            Some(_) => ExitCode::FAILURE,
        })
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    result
}

//! `minicode serve`: a daemon several clients share, a thin transport over the same core and
//! the same `protocol` ops and events as the other frontends. It listens on a Unix socket
//! (folder 0700, socket 0600) or loopback TCP, speaks newline-delimited JSON-RPC 2.0 after a
//! token handshake, numbers and logs each session's events so clients can replay them, and
//! carries runs across its own crashes (see `daemon/live.rs` and `agent/recovery.rs`).
//! It never runs agent logic and never prints: the CLI wires it and reports.

mod admission;
mod connection;
mod hub;
mod images;
mod live;
mod log;
mod ops;
mod outbox;
mod pump;
pub(crate) mod wire;

use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{SignalKind, signal};

use crate::protocol::Opener;

/// How long the cores may take to save and stop at shutdown.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// How long accepting pauses after it failed (e.g. out of descriptors).
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);
/// The name of the token file beside the socket.
pub(crate) const TOKEN_FILE: &str = "token";
/// The default socket's name in the runtime folder.
pub(crate) const SOCKET_FILE: &str = "daemon.sock";
/// The list of open sessions, beside the token.
pub(crate) const REGISTRY_FILE: &str = "sessions.json";

/// Where the daemon listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listen {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

/// What `serve` was started with.
pub(crate) struct Options {
    pub(crate) token: String,
    /// The list of open sessions a restart after a crash reopens (see `Hub`).
    pub(crate) registry: Option<PathBuf>,
    /// Canonical folders; a workspace must be inside one.
    pub(crate) allowed_roots: Vec<PathBuf>,
    pub(crate) max_message: usize,
}

/// Why the daemon could not start or run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DaemonError {
    #[error("another daemon is listening on {}", .0.display())]
    InUse(PathBuf),
    #[error("{} exists and is not a socket; not replacing it", .0.display())]
    NotASocket(PathBuf),
    #[error("cannot listen on {what}: {source}")]
    Listen {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("the folder {} {problem}", .path.display())]
    UnsafeDir { path: PathBuf, problem: String },
    #[error("token file {}: {source}", .path.display())]
    Token {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("token file {} is empty", .0.display())]
    EmptyToken(PathBuf),
}

pub(crate) use crate::defaults::runtime_dir;

/// Creates `dir` (0700), or checks an existing one: it must be a folder. When it is the
/// daemon's own (`owned`: the default runtime folder) it must also pass [`check_private_dir`]
/// (a loose one is refused, not repaired: someone else may have put a socket or a token in it
/// already); a folder the user named (the parent of `--socket`) keeps its mode: the socket and
/// the token are 0600 themselves.
pub(crate) fn private_runtime_dir(dir: &Path, owned: bool) -> Result<(), DaemonError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| unsafe_dir(dir, format!("cannot be created: {e}"))),
        Err(e) => Err(unsafe_dir(dir, format!("cannot be read: {e}"))),
        Ok(meta) if !meta.is_dir() => Err(unsafe_dir(dir, "is not a folder".into())),
        Ok(_) if !owned => Ok(()),
        Ok(_) => check_private_dir(dir),
    }
}

fn unsafe_dir(dir: &Path, problem: String) -> DaemonError {
    DaemonError::UnsafeDir {
        path: dir.to_path_buf(),
        problem,
    }
}

/// The one check `serve` and `attach` make on the runtime folder before trusting what is in
/// it (the socket, the token): a real folder (not a link), owned by this user, that no other
/// user may enter or write. Without `XDG_RUNTIME_DIR` it is `/tmp/minicode-<uid>`, a name any
/// local user can create first and fill with a fake daemon.
pub(crate) fn check_private_dir(dir: &Path) -> Result<(), DaemonError> {
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| unsafe_dir(dir, format!("cannot be read: {e}")))?;
    if !meta.is_dir() {
        return Err(unsafe_dir(
            dir,
            "is not a folder (a link or a file is never trusted)".into(),
        ));
    }
    let me = nix::unistd::getuid().as_raw();
    if meta.uid() != me {
        return Err(unsafe_dir(
            dir,
            format!(
                "belongs to another user (uid {}, not {me}); remove it or set XDG_RUNTIME_DIR",
                meta.uid()
            ),
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(unsafe_dir(
            dir,
            format!(
                "is open to other users (mode {mode:04o}); make it private with `chmod 700 {}` \
                 or remove it",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// A new random token (two v4 UUIDs: 244 random bits from the OS), written 0600 to `path`.
pub(crate) fn write_token(path: &Path) -> Result<String, DaemonError> {
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let error = |source| DaemonError::Token {
        path: path.to_path_buf(),
        source,
    };
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(error)?;
    use std::io::Write;
    file.write_all(token.as_bytes()).map_err(error)?;
    file.sync_all().map_err(error)?;
    Ok(token)
}

/// The token in `path` (surrounding whitespace ignored).
pub(crate) fn read_token(path: &Path) -> Result<String, DaemonError> {
    let text = std::fs::read_to_string(path).map_err(|source| DaemonError::Token {
        path: path.to_path_buf(),
        source,
    })?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(DaemonError::EmptyToken(path.to_path_buf()));
    }
    Ok(token)
}

/// A bound listener, before it serves.
pub(crate) enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    /// Where clients connect: `unix:PATH` or `tcp:ADDR` (with the port chosen for port 0).
    pub(crate) fn describe(&self) -> String {
        match self {
            Listener::Unix(_, path) => format!("unix:{}", path.display()),
            Listener::Tcp(l) => match l.local_addr() {
                Ok(addr) => format!("tcp:{addr}"),
                Err(_) => "tcp:?".into(),
            },
        }
    }
}

/// Binds `listen`. A socket file a dead daemon left is replaced; a live one is not.
pub(crate) async fn bind(listen: &Listen) -> Result<Listener, DaemonError> {
    match listen {
        Listen::Tcp(addr) => TcpListener::bind(addr)
            .await
            .map(Listener::Tcp)
            .map_err(|source| DaemonError::Listen {
                what: addr.to_string(),
                source,
            }),
        Listen::Unix(path) => {
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                if !meta.file_type().is_socket() {
                    return Err(DaemonError::NotASocket(path.clone()));
                }
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(DaemonError::InUse(path.clone()));
                }
                let _ = std::fs::remove_file(path);
            }
            let what = path.display().to_string();
            let listener = UnixListener::bind(path).map_err(|source| DaemonError::Listen {
                what: what.clone(),
                source,
            })?;
            // The folder is 0700 already; the socket itself is made 0600 as well.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|source| DaemonError::Listen { what, source })?;
            Ok(Listener::Unix(listener, path.clone()))
        }
    }
}

/// Serves until `server.shutdown`, SIGTERM or SIGINT; then stops every core (each saves) and
/// removes the socket.
pub(crate) async fn run(
    listener: Listener,
    options: Options,
    opener: Arc<dyn Opener>,
) -> Result<(), DaemonError> {
    // The test switch for the log's segment size is read once, here, before any session.
    log::segment_bytes();
    let hub = Arc::new(hub::Hub::new(
        opener,
        options.allowed_roots,
        options.registry,
    ));
    // Before the first connection is accepted: a client that connects at once already sees
    // the sessions a crash left (and their runs resumed).
    hub.reopen_registered().await;
    let shared = Arc::new(connection::Shared {
        hub: hub.clone(),
        token: options.token,
        max_message: options.max_message,
    });
    let admission = Arc::new(admission::Admission::default());
    let signal_error = |source| DaemonError::Listen {
        what: "signals".into(),
        source,
    };
    let mut term = signal(SignalKind::terminate()).map_err(signal_error)?;
    let mut int = signal(SignalKind::interrupt()).map_err(signal_error)?;
    loop {
        tokio::select! {
            _ = hub.stop.cancelled() => break,
            _ = term.recv() => break,
            _ = int.recv() => break,
            accepted = accept(&listener) => match accepted {
                Ok(stream) => {
                    // Every place held by an authenticated client: the new one is closed.
                    let Some(ticket) = admission.admit() else {
                        continue;
                    };
                    match stream {
                        Stream::Unix(stream) => {
                            tokio::spawn(connection::serve(stream, shared.clone(), ticket));
                        }
                        Stream::Tcp(stream) => {
                            let _ = stream.set_nodelay(true);
                            tokio::spawn(connection::serve(stream, shared.clone(), ticket));
                        }
                    }
                }
                Err(e) => {
                    // Out of descriptors, say: the pending connection stays queued and would
                    // fail again at once; pause instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                }
            },
        }
    }
    hub.stop.cancel();
    hub.close_all(SHUTDOWN_WAIT).await;
    if let Listener::Unix(_, path) = &listener {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

enum Stream {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

async fn accept(listener: &Listener) -> io::Result<Stream> {
    match listener {
        Listener::Unix(l, _) => l.accept().await.map(|(s, _)| Stream::Unix(s)),
        Listener::Tcp(l) => l.accept().await.map(|(s, _)| Stream::Tcp(s)),
    }
}

//! One run of one MCP server: start the child, `initialize`, list the tools page by page
//! (following `nextCursor` to the end), register them, then watch for `tools/list_changed`
//! (list again, replace the group), for the child's exit or closed pipes (mark the server
//! failed) and for the stop token (close stdin, SIGTERM, SIGKILL after the grace period).
//!
//! The start-up (handshake and first list) is bounded by the server's `startup_timeout`; a
//! later refresh by the same bound. Nothing here blocks the agent: it all runs in this task.

use std::sync::Arc;

use rmcp::model::{
    ClientConfig, Implementation, PaginatedRequestParams, ProtocolVersion, Tool as RemoteTool,
};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::{ClientHandler, Peer, ServiceExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Conn, Server, Shared, process};

/// At most this many `tools/list` pages are followed: a server that keeps returning a cursor
/// is broken, not large.
const MAX_PAGES: usize = 100;
/// How long a server whose pipes closed may take to exit before it is reported as having
/// closed its connection (and stopped).
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
/// At most this many tools per server are declared to the model.
const MAX_TOOLS: usize = 500;

/// What minicode tells a server about itself, and what it hears back.
struct Handler {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info =
            ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        info.client_info = Implementation::new("minicode", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}

/// How the start-up ended.
enum Started {
    Stop,
    Failed(String),
    Ready(
        rmcp::service::RunningService<RoleClient, Handler>,
        Vec<RemoteTool>,
    ),
}

/// What happened to a ready server.
enum Next {
    Stop,
    Exited(Option<std::process::ExitStatus>),
    Closed,
    ListChanged,
}

/// Runs the server until it fails or `stop` fires; the child never outlives this task.
pub(super) async fn run(
    shared: Arc<Shared>,
    server: Arc<Server>,
    run: u64,
    stop: CancellationToken,
) {
    let id = server.config.id.clone();
    let (mut child, pipes) = match process::spawn(&server.config, &shared.workspace, &shared.scrub)
    {
        Ok(started) => started,
        Err(why) => return shared.fail(&server, run, why),
    };
    tracing::info!(server = %id, pid = child.pid(), "mcp server started");
    let log = child.log.clone();
    shared.update(&server, run, |live| live.log = log);
    let (tx, mut list_changed) = mpsc::unbounded_channel();
    let startup = server.config.startup_timeout;
    let started = start_up(
        &mut child,
        pipes,
        Handler { list_changed: tx },
        startup,
        &stop,
    );
    let (service, tools) = match started.await {
        Started::Stop => return child.terminate().await,
        Started::Failed(why) => {
            shared.fail(&server, run, why);
            return child.terminate().await;
        }
        Started::Ready(service, tools) => (service, tools),
    };
    let ended = CancellationToken::new();
    let peer = service.peer().clone();
    let count = tools.len();
    shared.register(&server, run, conn(&peer, &ended), tools);
    tracing::info!(server = %id, tools = count, "mcp server ready");
    // Boxed, so it can be dropped (closing the server's stdin) before the child is stopped.
    let mut closed = Box::pin(service.waiting());
    loop {
        let next = tokio::select! {
            biased;
            _ = stop.cancelled() => Next::Stop,
            status = child.wait() => Next::Exited(status.ok()),
            _ = &mut closed => Next::Closed,
            Some(()) = list_changed.recv() => Next::ListChanged,
        };
        match next {
            Next::Stop => break,
            Next::Exited(status) => {
                let why = format!("it {}", child.describe_exit(status));
                shared.fail(&server, run, why);
                break;
            }
            Next::Closed => {
                shared.fail(&server, run, closed_reason(&mut child).await);
                break;
            }
            Next::ListChanged => refresh(&shared, &server, run, conn(&peer, &ended)).await,
        }
    }
    ended.cancel();
    // Dropping the service closes the server's stdin, the protocol's own request to exit.
    drop(closed);
    child.terminate().await;
    tracing::info!(server = %id, "mcp server stopped");
}

/// The handshake and the first list of tools, bounded by the start-up timeout, raced against
/// the stop token and the child's exit.
async fn start_up(
    child: &mut process::Child,
    pipes: process::Pipes,
    handler: Handler,
    startup: std::time::Duration,
    stop: &CancellationToken,
) -> Started {
    let handshake = async {
        let service = handler
            .serve(pipes)
            .await
            .map_err(|e| format!("the MCP handshake failed: {e}"))?;
        let tools = list_tools(service.peer()).await?;
        Ok::<_, String>((service, tools))
    };
    tokio::select! {
        biased;
        _ = stop.cancelled() => Started::Stop,
        status = child.wait() => Started::Failed(format!(
            "it {} during start-up", child.describe_exit(status.ok())
        )),
        result = tokio::time::timeout(startup, handshake) => match result {
            Err(_) => Started::Failed(format!(
                "no answer within its start-up timeout of {} s", startup.as_secs()
            )),
            Ok(Err(why)) => Started::Failed(with_stderr(why, child)),
            Ok(Ok((service, tools))) => Started::Ready(service, tools),
        },
    }
}

/// The connection the registered tools call through; `ended` tells them the server is gone.
fn conn(peer: &Peer<RoleClient>, ended: &CancellationToken) -> Conn {
    Conn {
        peer: peer.clone(),
        ended: ended.clone(),
    }
}

/// Why a server whose connection closed stopped. Usually it is exiting: its status, given a
/// moment, says more than the closed pipe.
async fn closed_reason(child: &mut process::Child) -> String {
    match tokio::time::timeout(CLOSE_GRACE, child.wait()).await {
        Ok(status) => format!("it {}", child.describe_exit(status.ok())),
        Err(_) => with_stderr("it closed its connection".to_string(), child),
    }
}

/// `tools/list_changed`: the server's tools listed again and registered in place of the old
/// ones; a failed or late listing keeps the previous list and says so.
async fn refresh(shared: &Shared, server: &Arc<Server>, run: u64, conn: Conn) {
    let id = &server.config.id;
    let startup = server.config.startup_timeout;
    match tokio::time::timeout(startup, list_tools(&conn.peer)).await {
        Ok(Ok(tools)) => {
            tracing::info!(server = %id, tools = tools.len(), "mcp tools changed");
            shared.register(server, run, conn, tools);
        }
        Ok(Err(why)) => shared.notice(format!(
            "MCP server `{id}` changed its tools but listing them failed: {why}; \
                 the previous list stays"
        )),
        Err(_) => shared.notice(format!(
            "MCP server `{id}` changed its tools but did not list them within {} s; \
                 the previous list stays",
            startup.as_secs()
        )),
    }
}

/// `why`, with the server's last stderr line when it left one (often the real reason).
fn with_stderr(why: String, child: &process::Child) -> String {
    match child.last_stderr() {
        Some(line) => format!("{why}; its last message: {line}"),
        None => why,
    }
}

/// Every tool the server lists, page after page.
async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer
            .list_tools(params)
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        tools.extend(page.tools);
        if tools.len() > MAX_TOOLS {
            return Err(format!("it lists more than {MAX_TOOLS} tools"));
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(tools),
        }
    }
    Err(format!(
        "tools/list did not end after {MAX_PAGES} pages (the server keeps returning a cursor)"
    ))
}

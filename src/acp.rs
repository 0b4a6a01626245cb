//! `minicode acp`: the Agent Client Protocol (JSON-RPC 2.0, one message a line) on stdin and
//! stdout, spoken as an agent with the official `agent-client-protocol` crate. A thin frontend:
//! each ACP session is one core from `agent::spawn` (opened by the CLI through `protocol::Opener`), fed
//! `protocol::Op`s and read as `protocol::Event`s. It must not run a loop of its own, touch the
//! disk or a session file, or write anything but protocol messages to stdout (logs go to the
//! log file). The per-session event pump is in `acp/session/pump.rs`, the pure mappings in
//! `acp/convert.rs`, the editor's file access in `acp/files.rs`, goal mode's commands and plan
//! in `acp/goal.rs`, `/ps` in `acp/processes.rs`.

mod convert;
mod files;
mod goal;
mod processes;
mod session;

pub(crate) use files::ClientFiles;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, McpServer,
    NewSessionRequest, PromptCapabilities, PromptRequest, PromptResponse, SessionCapabilities,
    SessionInfo, SessionListCapabilities, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error, ErrorCode};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::protocol::{CustomCommand, EditorFiles, GoalOp, Listed, Op, OpenRequest, Opener};
use crate::sync::lock;

type Connection = agent_client_protocol::v1::ConnectionTo<Client>;

/// The slash commands a session offers, besides plain prompts.
pub(crate) const COMMANDS: &[(&str, &str, Option<&str>)] = &[
    (
        "compact",
        "Summarise the conversation so far to free room in the context window",
        Some("optional focus for the summary"),
    ),
    (
        "goal",
        "Set a goal worked on round after round until it is done; alone, show it",
        Some("objective, or pause | resume | clear | edit <new objective>"),
    ),
    (
        "rewind",
        "Undo: alone, list the turns that changed files; with N, restore the files to before turn N",
        Some("N, optionally followed by force"),
    ),
    (
        "ps",
        "Background processes: id, state, runtime, command; /ps kill <id> ends one",
        Some("nothing to list, or kill <id>"),
    ),
];

/// The connection's state: the client's capabilities and the live sessions.
struct Shared {
    opener: Arc<dyn Opener>,
    capabilities: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<session::Live>>>,
    /// Pumps and MCP shutdowns to await at the end.
    endings: Mutex<Vec<session::Ending>>,
}

impl Shared {
    /// A connection's state before `initialize`: no capabilities known, no session open.
    fn new(opener: Arc<dyn Opener>) -> Arc<Self> {
        Arc::new(Self {
            opener,
            capabilities: Mutex::new(ClientCapabilities::new()),
            sessions: Mutex::new(HashMap::new()),
            endings: Mutex::new(Vec::new()),
        })
    }

    fn session(&self, id: &str) -> Option<Arc<session::Live>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// The editor's file access when the client offered both halves of it.
    fn files(&self, cx: &Connection) -> Option<ClientFiles> {
        let caps = lock(&self.capabilities);
        (caps.fs.read_text_file && caps.fs.write_text_file).then(|| ClientFiles::new(cx.clone()))
    }

    /// Opens a core and starts its pump; `ready` answers the client once the session is set
    /// up (after the history was replayed, for `session/load`).
    fn open(
        &self,
        cx: &Connection,
        cwd: PathBuf,
        session_id: Option<String>,
        servers: Vec<McpServer>,
        ready: session::Ready,
    ) -> Result<(), Error> {
        if !cwd.is_absolute() {
            return ready.fail(invalid_params("cwd must be an absolute path"));
        }
        if let Some(id) = &session_id
            && self.session(id).is_some()
        {
            return ready.fail(invalid_params(format!("session {id} is already open")));
        }
        let (mcp_servers, mut notes) = convert::mcp_servers(servers);
        let files = self.files(cx);
        let request = OpenRequest {
            cwd: cwd.clone(),
            session_id,
            mcp_servers,
            files: files.clone().map(|f| Arc::new(f) as Arc<dyn EditorFiles>),
            hosted: None,
        };
        let opened = match self.opener.open(request) {
            Ok(opened) => opened,
            Err(message) => return ready.fail(invalid_params(message)),
        };
        if let Some(files) = &files {
            files.bind(&opened.session_id);
        }
        notes.extend(opened.notes);
        let (ops, events) = opened.handle.split();
        let live = Arc::new(session::Live::new(
            opened.session_id.clone(),
            ops,
            cwd,
            opened.commands,
        ));
        lock(&self.sessions).insert(opened.session_id.clone(), live.clone());
        let pump = tokio::spawn(session::pump(
            live.clone(),
            events,
            cx.clone(),
            ready,
            notes,
        ));
        lock(&self.endings).push(session::Ending {
            live,
            pump,
            closing: opened.closing,
        });
        Ok(())
    }
}

impl Shared {
    /// `session/prompt`: the prompt (or slash command) handed to its session's core, which
    /// answers once the turn ends.
    fn prompt(
        &self,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: &Connection,
    ) -> Result<(), Error> {
        let Some(live) = self.session(&request.session_id.0) else {
            return responder.respond_with_error(invalid_params(format!(
                "no session {} is open",
                request.session_id.0
            )));
        };
        let text = convert::prompt_text(&request.prompt);
        let images = match convert::prompt_images(&request.prompt) {
            Ok(images) => images,
            Err(message) => return responder.respond_with_error(invalid_params(message)),
        };
        if !images.is_empty() {
            live.prompt(Op::SubmitImages { text, images }, responder);
            return Ok(());
        }
        if text.trim().is_empty() {
            return responder.respond_with_error(invalid_params("the prompt is empty"));
        }
        if let Some(arg) = processes::command_arg(&text) {
            return live.ps(arg, cx, responder);
        }
        match prompt_op(text, live.commands()) {
            Ok(op) => live.prompt(op, responder),
            Err(usage) => return responder.respond_with_error(invalid_params(usage)),
        }
        Ok(())
    }

    /// `initialize`: the client's capabilities are kept (they decide whether sessions read
    /// and write files through the editor), and ours are the answer.
    fn initialize(
        &self,
        request: &InitializeRequest,
        responder: Responder<InitializeResponse>,
    ) -> Result<(), Error> {
        *lock(&self.capabilities) = request.client_capabilities.clone();
        responder.respond(initialize_response())
    }

    /// `session/set_mode`: the session's permission mode, or an error for an unknown session
    /// or mode.
    fn set_mode(
        &self,
        request: &SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    ) -> Result<(), Error> {
        let Some(live) = self.session(&request.session_id.0) else {
            return responder.respond_with_error(invalid_params(format!(
                "no session {} is open",
                request.session_id.0
            )));
        };
        match live.set_mode(&request.mode_id.0) {
            Ok(()) => responder.respond(SetSessionModeResponse::new()),
            Err(message) => responder.respond_with_error(invalid_params(message)),
        }
    }

    /// `session/cancel`: interrupts the session's turn; a notification, so an unknown session
    /// is ignored.
    fn cancel(&self, notification: &CancelNotification) {
        if let Some(live) = self.session(&notification.session_id.0) {
            live.cancel();
        }
    }

    /// `session/list`: the stored sessions of the workspace asked for.
    fn list(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let listed = self.opener.list(request.cwd).map_err(invalid_params)?;
        Ok(ListSessionsResponse::new(
            listed.into_iter().map(session_info).collect(),
        ))
    }

    /// Once the connection is gone: every session shut down (each saves) and its MCP servers
    /// stopped.
    async fn finish(&self) {
        let endings = std::mem::take(&mut *lock(&self.endings));
        for ending in endings {
            ending.finish().await;
        }
    }
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

/// The text a prompt sends to the core, or the slash command it names; the error is a usage
/// message for the client.
fn prompt_op(text: String, commands: &[CustomCommand]) -> Result<Op, String> {
    let trimmed = text.trim_start();
    let command = |name: &str| {
        trimmed
            .strip_prefix(name)
            .filter(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
            .map(str::trim)
    };
    if let Some(focus) = command("/compact") {
        return Ok(Op::Compact((!focus.is_empty()).then(|| focus.to_string())));
    }
    if let Some(arg) = command("/rewind") {
        return rewind_op(arg);
    }
    if let Some(arg) = command("/goal") {
        return GoalOp::parse_command(arg).map(Op::Goal);
    }
    if let Some((command, args)) = crate::protocol::find_custom(commands, &text) {
        return Ok(Op::Submit(command.expand(args)));
    }
    Ok(Op::Submit(text))
}

/// `/rewind` (the listing) or `/rewind N [force]` (the code before turn N; a conversation
/// rewind forks the session, which an editor's session does not follow).
fn rewind_op(arg: &str) -> Result<Op, String> {
    let mut words = arg.split_whitespace();
    let Some(turn) = words.next() else {
        return Ok(Op::ListRewind);
    };
    let usage = || "usage: /rewind, or /rewind N [force] (N: the turn, 1 is the first)".to_string();
    let turn: u32 = turn.parse().ok().filter(|t| *t > 0).ok_or_else(usage)?;
    let force = match words.next() {
        None => false,
        Some("force") => true,
        Some(_) => return Err(usage()),
    };
    Ok(Op::Rewind {
        turn,
        scope: crate::protocol::RewindScope::Code,
        force,
    })
}

/// Serves ACP on stdin/stdout until the client closes stdin, then shuts every session down
/// (each core saves its session) and stops their MCP servers.
pub(crate) async fn serve(opener: Arc<dyn Opener>) -> Result<(), String> {
    let shared = Shared::new(opener);
    let transport = ByteStreams::new(
        tokio::io::stdout().compat_write(),
        tokio::io::stdin().compat(),
    );
    let on_mode = shared.clone();
    let (on_init, on_new, on_load, on_prompt, on_cancel, on_list) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
    );
    let result = Agent
        .v1()
        .name("minicode")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                on_init.initialize(&request, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                on_new.open(
                    &cx,
                    request.cwd,
                    None,
                    request.mcp_servers,
                    session::Ready::New(responder),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                on_load.open(
                    &cx,
                    request.cwd,
                    Some(request.session_id.0.to_string()),
                    request.mcp_servers,
                    session::Ready::Load(responder),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                on_prompt.prompt(request, responder, &cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                responder.respond_with_result(on_list.list(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                on_mode.set_mode(&request, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                on_cancel.cancel(&notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    shared.finish().await;
    result.map_err(|e| format!("the ACP connection failed: {e}"))
}

fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
                .session_capabilities(
                    SessionCapabilities::new().list(SessionListCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new("minicode", env!("CARGO_PKG_VERSION")))
}

fn session_info(listed: Listed) -> SessionInfo {
    SessionInfo::new(listed.id, listed.cwd)
        .title(listed.title)
        .updated_at(listed.updated)
}

//! MCP servers through the library: the manager against the real test server
//! (`support::mcp_server`, built with rmcp's server side and run as a child process), and the
//! agent calling its tools: discovery across pages, names and schemas in the request, the
//! approval, results, timeouts, crashes and restarts, `tools/list_changed`, stopping.
//! The binary's side (config, `.mcp.json`, trust, `mcp list`, no orphans) is in `mcp_binary`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use minicode::agent::{self, Options, Setup};
use minicode::chat::{ApprovalRequest, ToolStatus};
use minicode::protocol::{AgentHandle, Decision, Event, McpState, Op};
use minicode::provider::Provider;
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::session::Session;
use minicode::tools::mcp::{Manager, ServerConfig, State};
use minicode::tools::{Registry, ToolCtx};

use crate::support::events::{run_turn, shutdown, until};
use crate::support::fake::{Fake, text_reply, tool_reply};
use crate::support::mcp_server;
use crate::support::mock_openai::{self, MockServer, wait_until};
use crate::support::workspace;

/// How long a test waits for a server to become ready or fail.
const SETTLE: Duration = Duration::from_secs(30);

/// A server of the test binary with this id and environment.
pub fn server(id: &str, env: &[(&str, &str)]) -> ServerConfig {
    let (command, args) = mcp_server::command();
    let mut env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if !env.iter().any(|(k, _)| k == "IT_MCP_MODE") {
        env.push(("IT_MCP_MODE".into(), "paged".into()));
    }
    ServerConfig {
        id: id.to_string(),
        command,
        args,
        env,
        cwd: None,
        startup_timeout: Duration::from_secs(20),
        call_timeout: Duration::from_secs(60),
        origin: "test".to_string(),
        held: None,
    }
}

/// A workspace, a registry with the built-in tools, and a manager of `servers`.
struct Harness {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    registry: Arc<Registry>,
    ctx: Arc<ToolCtx>,
    manager: Arc<Manager>,
}

impl Harness {
    fn new(servers: impl FnOnce(&Path) -> Vec<ServerConfig>) -> Self {
        let (tmp, ws) = workspace();
        let registry = Arc::new(Registry::builtin());
        let ctx = Arc::new(ToolCtx::new(
            ws.clone(),
            Duration::from_secs(30),
            Vec::new(),
        ));
        let manager = Manager::new(servers(&ws), registry.clone(), &ctx, Vec::new());
        Self {
            _tmp: tmp,
            ws,
            registry,
            ctx,
            manager,
        }
    }

    /// One paged test server `t` recording its calls in `<ws>/calls`.
    fn one(extra: &[(&str, &str)]) -> Self {
        Self::new(|ws| {
            let record = ws.join("calls").display().to_string();
            let mut env = vec![("IT_MCP_RECORD", record.as_str())];
            env.extend_from_slice(extra);
            vec![server("t", &env)]
        })
    }

    /// Starts the servers and waits until none is starting.
    async fn started(self) -> Self {
        self.manager.start();
        self.manager.settled(SETTLE).await;
        self
    }

    fn agent(&self, provider: impl Provider + 'static, auto_approve: bool) -> AgentHandle {
        agent::spawn(Setup {
            provider: Arc::new(provider),
            registry: self.registry.clone(),
            tool_ctx: self.ctx.clone(),
            session: Session::create(&self.ws).unwrap(),
            options: Options {
                auto_approve,
                ..Options::default()
            },
            mcp: Some(self.manager.clone()),
        })
    }

    /// The calls that reached the server, one line each (`<tool> <arguments>`).
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.ws.join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn state(&self, id: &str) -> State {
        self.manager
            .statuses()
            .into_iter()
            .find(|s| s.id == id)
            .unwrap()
            .state
    }
}

fn ended_call(events: &[Event]) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .expect("a call ended")
}

fn names(registry: &Registry) -> Vec<String> {
    registry
        .specs()
        .iter()
        .map(|s| s.name.to_string())
        .collect()
}

#[tokio::test]
async fn discovery_follows_every_page_and_the_request_declares_names_and_schemas() {
    let h = Harness::one(&[]).started().await;
    assert_eq!(h.state("t"), State::Ready);
    let status = &h.manager.statuses()[0];
    // 8 tools over 3 pages of tools/list.
    assert_eq!(status.tools.len(), 8, "{:?}", status.tools);
    let server = MockServer::start(vec![mock_openai::text_reply("done", 4)]).await;
    let provider = OpenAi::new(OpenAiOptions {
        base_url: server.base_url(),
        model: "mock-model".into(),
        ..OpenAiOptions::default()
    })
    .unwrap();
    let mut handle = h.agent(provider, false);
    run_turn(&mut handle, "hello", |_| None).await;
    let body = &server.requests()[0].body;
    let tools = body["tools"].as_array().unwrap();
    let declared: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in [
        "bash",
        "mcp_t__echo",
        "mcp_t__sleep",
        "mcp_t__fail",
        "mcp_t__crash",
        "mcp_t__env",
        "mcp_t__change",
        "mcp_t__picture",
        "mcp_t__odd_name_with_spaces",
    ] {
        assert!(declared.contains(&name), "{name} missing from {declared:?}");
    }
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp_t__echo")
        .unwrap();
    assert_eq!(echo["function"]["description"], "Echoes the text back.");
    assert_eq!(echo["function"]["parameters"]["required"][0], "text");
    // The schema's draft marker is not sent: it tells the model nothing.
    assert!(echo["function"]["parameters"].get("$schema").is_none());
    assert_eq!(
        echo["function"]["parameters"]["properties"]["times"]["type"],
        "integer"
    );
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn every_call_asks_showing_server_tool_and_arguments_and_a_refusal_sends_nothing() {
    let h = Harness::one(&[]).started().await;
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "mcp_t__echo", r#"{"text":"hi"}"#)]),
        text_reply("ok"),
    ]);
    let mut handle = h.agent(fake, false);
    let (events, _, _) = run_turn(&mut handle, "echo", |_| {
        Some(Decision::Deny { reason: None })
    })
    .await;
    let request = events
        .iter()
        .find_map(|e| match e {
            Event::ApprovalRequested { request, .. } => Some(request.clone()),
            _ => None,
        })
        .expect("the call was asked about");
    let ApprovalRequest::McpCall {
        server,
        tool,
        arguments,
    } = request
    else {
        panic!("not an MCP approval: {request:?}");
    };
    assert_eq!((server.as_str(), tool.as_str()), ("t", "echo"));
    assert!(arguments.contains("\"text\": \"hi\""), "{arguments}");
    assert_eq!(ended_call(&events).0, ToolStatus::Denied);
    assert!(h.calls().is_empty(), "{:?}", h.calls());
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn an_approved_call_returns_the_servers_text_and_always_covers_only_that_tool() {
    let h = Harness::one(&[]).started().await;
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "mcp_t__echo", r#"{"text":"hi","times":2}"#)]),
        tool_reply(&[("c2", "mcp_t__echo", r#"{"text":"again"}"#)]),
        tool_reply(&[("c3", "mcp_t__fail", "{}")]),
        text_reply("ok"),
    ]);
    let mut handle = h.agent(fake, false);
    let mut asked = Vec::new();
    let (events, _, _) = run_turn(&mut handle, "echo", |tool| {
        asked.push(tool.to_string());
        Some(Decision::ApproveTool)
    })
    .await;
    // Asked for the first echo and for fail, not for the second echo.
    assert_eq!(asked, ["mcp_t__echo", "mcp_t__fail"]);
    // "Always" offers the one tool's rule, never the server's.
    let offered: Vec<Option<String>> = events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested { always, .. } => Some(always.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        offered,
        [Some("mcp_t__echo".into()), Some("mcp_t__fail".into())]
    );
    let ends: Vec<(ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ends[0], (ToolStatus::Succeeded, "hihi".to_string()));
    assert_eq!(ends[1], (ToolStatus::Succeeded, "again".to_string()));
    // isError is a failed call with the server's text.
    assert_eq!(ends[2].0, ToolStatus::Failed);
    assert!(ends[2].1.contains("it failed on purpose"), "{}", ends[2].1);
    assert_eq!(h.calls().len(), 3);
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn arguments_that_break_the_schema_are_rejected_before_anyone_is_asked() {
    let h = Harness::one(&[]).started().await;
    let fake = Fake::new(vec![
        tool_reply(&[
            ("c1", "mcp_t__echo", r#"{"times":2}"#),
            ("c2", "mcp_t__echo", r#"{"text":"x","times":"two"}"#),
            ("c3", "mcp_t__echo", r#"{"text":"x","loud":true}"#),
        ]),
        text_reply("ok"),
    ]);
    let mut handle = h.agent(fake, false);
    let (events, _, _) = run_turn(&mut handle, "echo", |_| Some(Decision::Approve)).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { .. }))
    );
    let outputs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => {
                assert_eq!(*status, ToolStatus::Rejected);
                Some(output.clone())
            }
            _ => None,
        })
        .collect();
    assert!(
        outputs[0].contains("missing required argument `text`"),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[1].contains("`times` must be integer, not a string"),
        "{}",
        outputs[1]
    );
    assert!(
        outputs[2].contains("unknown argument `loud`"),
        "{}",
        outputs[2]
    );
    assert!(h.calls().is_empty());
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_call_past_its_timeout_fails_with_an_unknown_outcome_and_is_not_repeated() {
    let h = Harness::new(|ws| {
        let record = ws.join("calls").display().to_string();
        let mut s = server("t", &[("IT_MCP_RECORD", record.as_str())]);
        s.call_timeout = Duration::from_secs(1);
        vec![s]
    })
    .started()
    .await;
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "mcp_t__sleep", r#"{"secs":30}"#)]),
        text_reply("it timed out"),
        text_reply("next turn"),
    ]);
    let mut handle = h.agent(fake.clone(), true);
    let (events, _, _) = run_turn(&mut handle, "sleep", |_| None).await;
    let (status, output) = ended_call(&events);
    assert_eq!(status, ToolStatus::Failed);
    assert!(output.contains("did not answer within 1 s"), "{output}");
    assert!(output.contains("outcome is unknown"), "{output}");
    assert!(output.contains("not repeated"), "{output}");
    run_turn(&mut handle, "go on", |_| None).await;
    assert_eq!(h.calls(), [r#"sleep {"secs":30}"#]);
    // The server is still usable after a timed-out call.
    assert_eq!(h.state("t"), State::Ready);
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_crashed_server_fails_its_calls_at_once_keeps_its_stderr_and_restarts() {
    let h = Harness::one(&[]).started().await;
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "mcp_t__crash", "{}")]),
        tool_reply(&[("c2", "mcp_t__echo", r#"{"text":"still there?"}"#)]),
        text_reply("crashed"),
        tool_reply(&[("c3", "mcp_t__echo", r#"{"text":"back"}"#)]),
        text_reply("fine"),
    ]);
    let mut handle = h.agent(fake, true);
    let (events, _, _) = run_turn(&mut handle, "crash", |_| None).await;
    let ends: Vec<(ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ends[0].0, ToolStatus::Failed);
    assert!(ends[0].1.contains("outcome is"), "{}", ends[0].1);
    assert_eq!(ends[1].0, ToolStatus::Failed);
    assert!(
        ends[1].1.contains("is not available") && ends[1].1.contains("exited with code 3"),
        "{}",
        ends[1].1
    );
    assert!(ends[1].1.contains("/mcp restart t"), "{}", ends[1].1);
    // Only the crash reached the server; the later call was refused here.
    assert_eq!(h.calls(), ["crash {}"]);
    let State::Failed(why) = h.state("t") else {
        panic!("not failed: {:?}", h.state("t"));
    };
    assert!(why.contains("crashing on purpose"), "{why}");
    let log = h.ws.join(".minicode/logs/mcp-t.log");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("crashing on purpose")
    );
    // The failure reached the user as a warning.
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Warning { message } if message.contains("MCP server `t` failed")
    )));

    handle.send(Op::McpRestart { server: "t".into() });
    until(&mut handle, |e| matches!(e, Event::McpServers { .. })).await;
    h.manager.settled(SETTLE).await;
    assert_eq!(h.state("t"), State::Ready);
    let (events, _, _) = run_turn(&mut handle, "again", |_| None).await;
    assert_eq!(
        ended_call(&events),
        (ToolStatus::Succeeded, "back".to_string())
    );
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_list_changed_notification_replaces_the_tools_and_the_next_request_declares_them() {
    let h = Harness::one(&[]).started().await;
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "mcp_t__change", "{}")]),
        text_reply("changed"),
        text_reply("next"),
    ]);
    let mut handle = h.agent(fake.clone(), true);
    run_turn(&mut handle, "change", |_| None).await;
    let registry = h.registry.clone();
    assert!(
        wait_until(SETTLE, || names(&registry)
            .contains(&"mcp_t__added".to_string()))
        .await,
        "the new tool never joined"
    );
    run_turn(&mut handle, "next", |_| None).await;
    let requests = fake.main_requests();
    let first = requests[0].tools;
    assert_eq!(requests.last().unwrap().tools, first + 1);
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn results_describe_images_and_resources_by_type_and_size() {
    let h = Harness::one(&[]).started().await;
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "mcp_t__picture", "{}")]),
        text_reply("seen"),
    ]);
    let mut handle = h.agent(fake, true);
    let (events, _, _) = run_turn(&mut handle, "picture", |_| None).await;
    let (status, output) = ended_call(&events);
    assert_eq!(status, ToolStatus::Succeeded);
    assert!(output.starts_with("a picture follows\n"), "{output}");
    assert!(
        output.contains("[image: image/png, 6 bytes, not shown]"),
        "{output}"
    );
    assert!(
        output.contains("[resource file:///notes.txt: text/plain, 11 bytes, not shown]"),
        "{output}"
    );
    assert!(!output.contains("AAECAwQF") && !output.contains("hello world"));
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

#[tokio::test]
async fn names_are_cleaned_cut_to_64_characters_and_made_unique() {
    let long = "a-very-long-server-name-that-goes-on-and-on-and-on-beyond-sixty";
    let h = Harness::new(|_| vec![server("a.b", &[]), server("a_b", &[]), server(long, &[])])
        .started()
        .await;
    let all = names(&h.registry);
    let unique: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "duplicate names: {all:?}");
    let builtin = Registry::builtin().specs().len();
    assert_eq!(all.len(), builtin + 3 * 8, "{all:?}");
    for name in &all {
        assert!(name.len() <= 64, "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    // One of the two servers whose ids clean to `a_b` got suffixed names.
    assert!(all.contains(&"mcp_a_b__echo".to_string()));
    assert!(all.contains(&"mcp_a_b__echo_2".to_string()), "{all:?}");
    // A long server id gives way to the tool's name: every tool keeps its own.
    for tool in ["echo", "picture", "odd_name_with_spaces"] {
        assert!(
            all.iter()
                .any(|n| n.starts_with("mcp_a-very-long") && n.ends_with(&format!("__{tool}"))),
            "{tool}: {all:?}"
        );
    }
    h.manager.shutdown().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_clearly_and_is_reported_as_a_warning() {
    let h = Harness::new(|_| {
        let mut broken = server("broken", &[]);
        broken.command = "/nonexistent/mcp-server".into();
        let mut slow = server(
            "slow",
            &[("IT_MCP_MODE", "slow"), ("IT_MCP_GATE", "/nonexistent")],
        );
        slow.startup_timeout = Duration::from_secs(1);
        vec![broken, slow]
    })
    .started()
    .await;
    let State::Failed(why) = h.state("broken") else {
        panic!("{:?}", h.state("broken"));
    };
    assert!(
        why.contains("could not start `/nonexistent/mcp-server`"),
        "{why}"
    );
    let State::Failed(why) = h.state("slow") else {
        panic!("{:?}", h.state("slow"));
    };
    assert!(why.contains("start-up timeout of 1 s"), "{why}");
    let fake = Fake::new(vec![text_reply("hi")]);
    let mut handle = h.agent(fake, false);
    let events = until(&mut handle, |e| matches!(e, Event::ContextUsage { .. })).await;
    let _ = events;
    let (events, _, _) = run_turn(&mut handle, "hello", |_| None).await;
    let _ = events;
    handle.send(Op::McpServers);
    let events = until(&mut handle, |e| matches!(e, Event::McpServers { .. })).await;
    let Some(Event::McpServers { servers }) = events.last() else {
        unreachable!()
    };
    assert!(matches!(servers[0].state, McpState::Failed { .. }));
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

/// Whether `pid` is a live process (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// The server's and its grandchild's pids from the file `IT_MCP_PID` names.
pub fn pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn stopping_the_manager_ends_every_server_and_what_it_started() {
    let (_tmp, dir) = workspace();
    let polite = dir.join("polite.pid").display().to_string();
    let stubborn = dir.join("stubborn.pid").display().to_string();
    let h = Harness::new(|_| {
        vec![
            server("polite", &[("IT_MCP_PID", polite.as_str())]),
            server(
                "stubborn",
                &[
                    ("IT_MCP_PID", stubborn.as_str()),
                    ("IT_MCP_IGNORE_TERM", "1"),
                ],
            ),
        ]
    })
    .started()
    .await;
    assert_eq!(h.state("polite"), State::Ready);
    assert_eq!(h.state("stubborn"), State::Ready);
    let all: Vec<u32> = [&polite, &stubborn]
        .iter()
        .flat_map(|p| pids(Path::new(p)))
        .collect();
    assert_eq!(all.len(), 4);
    assert!(all.iter().all(|p| alive(*p)));
    h.manager.shutdown().await;
    assert!(
        wait_until(Duration::from_secs(10), || all.iter().all(|p| !alive(*p))).await,
        "still running: {:?}",
        all.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn in_plan_mode_every_mcp_call_is_asked_even_under_yes() {
    let h = Harness::one(&[]).started().await;
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "mcp_t__echo", r#"{"text":"hi"}"#)]),
        text_reply("ok"),
    ]);
    let mut handle = agent::spawn(Setup {
        provider: Arc::new(fake),
        registry: h.registry.clone(),
        tool_ctx: h.ctx.clone(),
        session: Session::create(&h.ws).unwrap(),
        options: Options {
            auto_approve: true,
            plan: true,
            ..Options::default()
        },
        mcp: Some(h.manager.clone()),
    });
    let mut asked = Vec::new();
    let (events, _, _) = run_turn(&mut handle, "echo", |tool| {
        asked.push(tool.to_string());
        Some(Decision::Deny { reason: None })
    })
    .await;
    assert_eq!(asked, ["mcp_t__echo"], "asked although --yes was given");
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::Warning { message } if message.contains("plan mode is on")
        )),
        "{events:?}"
    );
    assert_eq!(ended_call(&events).0, ToolStatus::Denied);
    assert!(h.calls().is_empty(), "nothing reached the server");
    shutdown(&mut handle).await;
    h.manager.shutdown().await;
}

//! Manual compaction (`Op::Compact`) served like a turn: an interrupt during a slow summary call
//! keeps the old checkpoint and the session usable, prompts sent meanwhile are queued, a
//! shutdown stops it; and the one-shot binary reports an automatic compaction on stderr.

use std::collections::VecDeque;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::mock_openai::{MockReply, MockServer, text_reply};
use futures_util::stream;
use minicode::agent::Options;
use minicode::chat::{Message, Usage};
use minicode::protocol::AgentHandle;
use minicode::protocol::{Event, Op, TurnEnd, TurnStats};
use minicode::provider::{
    ChatRequest, EventStream, Provider, ProviderError, Reply, ReplyFuture, StreamEvent,
};
use minicode::session::Session;
use tokio::sync::mpsc;

/// One scripted answer to a summary call.
enum Summary {
    Reply(Reply),
    /// Never answers: the call stays in flight until it is cancelled.
    Hang,
}

/// A model with scripted main (streamed) replies and summary (chat) answers. Every summary
/// call is announced on `started`, so a test can act while one is in flight.
#[derive(Clone)]
struct Fake {
    main: Arc<Mutex<VecDeque<Reply>>>,
    summaries: Arc<Mutex<VecDeque<Summary>>>,
    main_seen: Arc<Mutex<Vec<Vec<Message>>>>,
    started: mpsc::UnboundedSender<usize>,
}

impl Fake {
    fn new(main: Vec<Reply>, summaries: Vec<Summary>) -> (Self, mpsc::UnboundedReceiver<usize>) {
        let (started, rx) = mpsc::unbounded_channel();
        let fake = Self {
            main: Arc::new(Mutex::new(main.into())),
            summaries: Arc::new(Mutex::new(summaries.into())),
            main_seen: Arc::default(),
            started,
        };
        (fake, rx)
    }

    fn last_request(&self) -> Vec<Message> {
        self.main_seen.lock().unwrap().last().cloned().unwrap()
    }
}

impl Provider for Fake {
    fn stream(&self, request: &ChatRequest<'_>) -> EventStream {
        self.main_seen
            .lock()
            .unwrap()
            .push(request.messages.iter().map(|m| (*m).clone()).collect());
        let next = self.main.lock().unwrap().pop_front();
        let reply = next.unwrap_or_else(|| text("(exhausted)"));
        Box::pin(stream::iter(vec![Ok(StreamEvent::Done(reply))]))
    }

    fn chat(&self, _request: &ChatRequest<'_>) -> ReplyFuture {
        let next = self.summaries.lock().unwrap().pop_front();
        let started = self.started.clone();
        Box::pin(async move {
            let _ = started.send(1);
            match next {
                Some(Summary::Reply(reply)) => Ok(reply),
                Some(Summary::Hang) => std::future::pending().await,
                None => Err(ProviderError::Network("no summary scripted".into())),
            }
        })
    }

    fn model(&self) -> &str {
        "fake"
    }
}

fn text(t: &str) -> Reply {
    Reply {
        text: t.to_string(),
        finish_reason: Some("stop".into()),
        usage: Some(Usage::new(10, 5, 0)),
        ..Reply::default()
    }
}

fn start(workspace: &Path, fake: Fake) -> AgentHandle {
    let options = Options {
        context_window: 8192,
        auto_approve: true,
        ..Options::default()
    };
    crate::support::agent::spawn(workspace, fake, options)
}

/// Events until (and including) the first matching `last`, with a generous deadline.
async fn until(handle: &mut AgentHandle, last: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), handle.next_event())
            .await
            .expect("timed out waiting for the core")
            .expect("core stopped");
        let done = last(&event);
        events.push(event);
        if done {
            return events;
        }
    }
}

fn ended(events: &[Event]) -> (TurnEnd, TurnStats) {
    match events.last() {
        Some(Event::TurnEnded { end, stats, .. }) => (end.clone(), *stats),
        other => panic!("expected TurnEnded, got {other:?}"),
    }
}

async fn turn(handle: &mut AgentHandle, input: &str) -> TurnEnd {
    handle.send(Op::Submit(input.to_string()));
    ended(&until(handle, |e| matches!(e, Event::TurnEnded { .. })).await).0
}

async fn compact(handle: &mut AgentHandle) -> Vec<Event> {
    handle.send(Op::Compact(None));
    until(handle, |e| matches!(e, Event::TurnEnded { .. })).await
}

async fn summary_started(started: &mut mpsc::UnboundedReceiver<usize>) {
    tokio::time::timeout(Duration::from_secs(30), started.recv())
        .await
        .expect("no summary call was made")
        .expect("the fake is gone");
}

fn ledger(messages: &[Message]) -> Option<&str> {
    messages
        .iter()
        .map(Message::text)
        .find(|t| t.contains("<task-ledger>"))
}

const FIRST: &str = "First request: port the parser to Rust.";

#[tokio::test]
async fn interrupted_compaction_keeps_the_old_checkpoint_and_the_session_usable() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let (fake, mut started) = Fake::new(
        vec![
            text(&"c".repeat(10_000)),
            text("ok"),
            text(&"d".repeat(10_000)),
            text("ok"),
            text("queued answer"),
        ],
        vec![Summary::Reply(text("notes one")), Summary::Hang],
    );
    let mut handle = start(&workspace, fake.clone());
    turn(&mut handle, FIRST).await;
    turn(&mut handle, "small").await;
    let events = compact(&mut handle).await;
    assert_eq!(ended(&events).0, TurnEnd::Completed, "{events:?}");
    summary_started(&mut started).await;
    turn(&mut handle, "more").await;
    turn(&mut handle, "small again").await;

    handle.send(Op::Compact(None));
    until(&mut handle, |e| matches!(e, Event::TurnStarted { .. })).await;
    summary_started(&mut started).await;
    // While the summary call hangs: a prompt is queued, a second /compact is refused as busy,
    // and the interrupt cancels the call.
    handle.send(Op::Submit("queued".into()));
    handle.send(Op::Compact(None));
    handle.send(Op::Interrupt);
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    let (end, stats) = ended(&events);
    assert_eq!(end, TurnEnd::Interrupted, "{events:?}");
    assert_eq!(stats.summary_calls, 1, "the cancelled call was sent");
    assert!(!events.iter().any(|e| matches!(e, Event::Compacted { .. })));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Error { message } if message.contains("busy"))),
        "{events:?}"
    );

    // The queued prompt runs next, against the old checkpoint.
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert_eq!(ended(&events).0, TurnEnd::Completed, "{events:?}");
    let sent = fake.last_request();
    assert_eq!(sent.last().unwrap().text(), "queued");
    let ledger = ledger(&sent).expect("the old checkpoint must stay");
    assert!(ledger.contains("notes one") && ledger.contains(FIRST));
    assert!(
        sent.iter().any(|m| m.text() == "d".repeat(10_000)),
        "history after the old checkpoint is still sent verbatim"
    );

    handle.send(Op::Shutdown);
    until(&mut handle, |e| matches!(e, Event::ShutdownComplete)).await;
    let id = {
        let sessions = Session::list(&workspace).unwrap();
        assert_eq!(sessions.len(), 1);
        sessions[0].id.clone()
    };
    let saved = Session::open(&workspace, &id).unwrap();
    assert_eq!(saved.checkpoint().unwrap().summary, "notes one");
}

#[tokio::test]
async fn shutdown_during_compaction_stops_it_and_saves() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let (fake, mut started) = Fake::new(
        vec![text(&"c".repeat(10_000)), text("ok")],
        vec![Summary::Hang],
    );
    let mut handle = start(&workspace, fake);
    turn(&mut handle, FIRST).await;
    turn(&mut handle, "small").await;
    handle.send(Op::Compact(None));
    summary_started(&mut started).await;
    handle.send(Op::Shutdown);
    let events = until(&mut handle, |e| matches!(e, Event::ShutdownComplete)).await;
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::TurnEnded {
                end: TurnEnd::Interrupted,
                ..
            }
        )),
        "{events:?}"
    );
    let sessions = Session::list(&workspace).unwrap();
    let saved = Session::open(&workspace, &sessions[0].id).unwrap();
    assert!(saved.checkpoint().is_none());
    assert_eq!(saved.messages().len(), 4);
}

#[tokio::test]
async fn compaction_with_nothing_to_summarise_warns_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let (fake, _started) = Fake::new(vec![text("short")], vec![]);
    let mut handle = start(&workspace, fake);
    turn(&mut handle, FIRST).await;
    let events = compact(&mut handle).await;
    let (end, stats) = ended(&events);
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.summary_calls, 0);
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Warning { message } if message.contains("nothing to compact"))
        ),
        "{events:?}"
    );
}

#[test]
fn one_shot_reports_an_automatic_compaction_on_stderr() {
    let summary = MockReply::json(
        200,
        &serde_json::json!({
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "## Goal\nprint many lines"},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}
        }),
    );
    // With a 4,096-token window each tool result is capped at 4 KiB (about 1,000 tokens). The
    // server reports a 3,400-token prompt for the tool-call round, so the result pushes the
    // next request past the window and it is compacted first: tool call, summary, answer.
    let mut payloads = crate::support::mock_openai::tool_call_payloads(
        &[("c1", "bash", r#"{"command":"yes x | head -c 20000"}"#)],
        16,
    );
    let usage = payloads
        .iter_mut()
        .find(|p| p.get("usage").is_some())
        .expect("a usage chunk");
    *usage = crate::support::mock_openai::chunk_usage(3400, 7);
    let server = MockServer::start_in_thread(vec![
        MockReply::sse(crate::support::mock_openai::sse_events(&payloads)),
        summary,
        text_reply("done", 4),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\ncontext_window = 4096\n",
        server.base_url()
    );
    std::fs::write(dir.path().join("config/config.toml"), config).unwrap();
    crate::support::user_config::write_trusting(&dir.path().join("home"), dir.path(), "");
    let out = Command::new(env!("CARGO_BIN_EXE_minicode"))
        .current_dir(dir.path())
        .env("HOME", dir.path().join("home"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("MINICODE_BASE_URL")
        .env_remove("MINICODE_MODEL")
        .env_remove("MINICODE_API_KEY")
        .env_remove("MINICODE_LOG")
        .stdin(Stdio::null())
        .args(["--yes", "print many lines"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("context compacted"))
        .unwrap_or_else(|| panic!("no compaction line on stderr:\n{stderr}"));
    assert!(
        line.contains("1 messages summarised"),
        "the first request is summarised: {line}"
    );
    assert!(
        stderr.contains("1 summary calls (940 tokens)"),
        "the summary call counts in the closing stats:\n{stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].body["stream"], false, "the summary call");
    assert!(
        requests[1].body.get("tools").is_none(),
        "summary calls offer no tools"
    );
    let last = requests[2].raw_body.as_str();
    assert!(
        last.contains("bytes cut"),
        "tool output sized to the window"
    );
    assert!(last.contains("<task-ledger>") && last.contains("print many lines"));
}

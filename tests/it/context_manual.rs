//! Manual compaction (`Op::Compact`) served like a turn: an interrupt during a slow summary call
//! keeps the old checkpoint and the session usable, prompts sent meanwhile are queued, a
//! shutdown stops it; and the one-shot binary reports an automatic compaction on stderr.

use std::path::Path;

use crate::support::events::{DEADLINE, ended, turn, until};
use crate::support::fake::{Answer, Fake, text_reply as text};
use crate::support::mock_openai::{MockReply, MockServer, text_reply};
use minicode::agent::Options;
use minicode::chat::Message;
use minicode::protocol::AgentHandle;
use minicode::protocol::{Event, Op, TurnEnd};
use minicode::session::Session;
use tokio::sync::mpsc;

fn start(workspace: &Path, fake: Fake) -> AgentHandle {
    let options = Options {
        context_window: 8192,
        auto_approve: true,
        ..Options::default()
    };
    crate::support::agent::spawn(workspace, fake, options)
}

async fn compact(handle: &mut AgentHandle) -> Vec<Event> {
    handle.send(Op::Compact(None));
    until(handle, |e| matches!(e, Event::TurnEnded { .. })).await
}

async fn summary_started(started: &mut mpsc::UnboundedReceiver<()>) {
    tokio::time::timeout(DEADLINE, started.recv())
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
    let fake = Fake::new(vec![
        text(&"c".repeat(10_000)),
        text("ok"),
        text(&"d".repeat(10_000)),
        text("ok"),
        text("queued answer"),
    ])
    .with_summaries(vec![Answer::Reply(text("notes one")), Answer::Hang]);
    let mut started = fake.summary_starts();
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
    let sent = fake.main_messages().pop().unwrap();
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
    let fake =
        Fake::new(vec![text(&"c".repeat(10_000)), text("ok")]).with_summaries(vec![Answer::Hang]);
    let mut started = fake.summary_starts();
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
    let fake = Fake::new(vec![text("short")]);
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
    std::fs::create_dir_all(dir.path().join(".minicode")).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\ncontext_window = 4096\n",
        server.base_url()
    );
    std::fs::write(dir.path().join(".minicode/config.toml"), config).unwrap();
    crate::support::user_config::write_trusting(&dir.path().join("home"), dir.path(), "");
    let out = crate::support::binary::command(dir.path())
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
        line.contains("1 message summarised"),
        "the first request is summarised: {line}"
    );
    assert!(
        stderr.contains("1 summary call (940 tokens)"),
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

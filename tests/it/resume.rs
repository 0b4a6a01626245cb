//! A resumed session reaches every frontend through the protocol: the core sends the restored
//! conversation as one `HistoryRestored` event (with each call's recorded status and summary),
//! the full-screen state renders it from that event alone, and one-shot `stream-json` prints
//! it while text output leaves it out.

use std::path::Path;
use std::process::Output;

use crate::support::agent::{spawn, spawn_session};
use crate::support::events::{run_turn, shutdown, until};
use crate::support::fake::{Fake, text_reply, tool_reply};
use crate::support::mock_openai::{MockServer, text_reply as sse_text, tool_calls_reply};
use crate::support::workspace;
use minicode::agent::Options;
use minicode::chat::ToolStatus;
use minicode::protocol::{Decision, Event, HistoryEntry, TurnEnd};
use minicode::session::Session;
use minicode::tui::state::{Msg, State};
use minicode::tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// A first run in `ws`: three bash calls (succeeds, fails, denied by the user) and an answer.
/// Returns the session id.
async fn first_run(ws: &Path) -> String {
    let calls = tool_reply(&[
        ("c1", "bash", r#"{"command":"echo fine"}"#),
        ("c2", "bash", r#"{"command":"echo broken; exit 3"}"#),
        ("c3", "bash", r#"{"command":"touch denied.txt"}"#),
    ]);
    let fake = Fake::new(vec![calls, text_reply("two of three worked")]);
    let mut handle = spawn(ws, fake, Options::default());
    let configured = until(&mut handle, |e| {
        matches!(e, Event::SessionConfigured { .. })
    })
    .await;
    let Some(Event::SessionConfigured { session_id, .. }) = configured.last() else {
        unreachable!()
    };
    let session_id = session_id.clone();
    let mut answers = vec![
        Decision::Approve,
        Decision::Approve,
        Decision::Deny {
            reason: Some("not that one".into()),
        },
    ]
    .into_iter();
    let (_, end, _) = run_turn(&mut handle, "run the three commands", |_| answers.next()).await;
    assert_eq!(end, TurnEnd::Completed);
    shutdown(&mut handle).await;
    assert!(!ws.join("denied.txt").exists());
    session_id
}

/// The events a resumed core sends before any op: up to its first `ContextUsage`.
async fn resume_events(ws: &Path, id: &str) -> Vec<Event> {
    let session = Session::open(ws, id).unwrap();
    let mut handle = spawn_session(session, Fake::default(), Options::default());
    let events = until(&mut handle, |e| matches!(e, Event::ContextUsage { .. })).await;
    shutdown(&mut handle).await;
    events
}

fn rows(s: &State) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(s.size.0, s.size.1)).unwrap();
    term.draw(|f| view::render(s, f)).unwrap();
    let buf = term.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

#[tokio::test]
async fn a_resumed_session_shows_each_call_as_it_ended_from_protocol_events_alone() {
    let (_dir, ws) = workspace();
    let id = first_run(&ws).await;
    let events = resume_events(&ws, &id).await;

    // The core's side: right after SessionConfigured, one event with the typed transcript.
    assert!(
        matches!(
            events.first(),
            Some(Event::SessionConfigured {
                resumed_messages: 6,
                ..
            })
        ),
        "{events:?}"
    );
    let Some(Event::HistoryRestored { entries }) = events.get(1) else {
        panic!("no HistoryRestored right after SessionConfigured: {events:?}");
    };
    let calls: Vec<(&str, &str, Option<ToolStatus>)> = entries
        .iter()
        .filter_map(|e| match e {
            HistoryEntry::ToolCall {
                call,
                summary,
                status,
                ..
            } => Some((call.as_str(), summary.as_str(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("c1", "echo fine", Some(ToolStatus::Succeeded)),
            ("c2", "echo broken; exit 3", Some(ToolStatus::Failed)),
            ("c3", "touch denied.txt", Some(ToolStatus::Denied)),
        ]
    );
    assert_eq!(
        entries.first(),
        Some(&HistoryEntry::User {
            text: "run the three commands".into()
        })
    );
    assert_eq!(
        entries.last(),
        Some(&HistoryEntry::Assistant {
            text: "two of three worked".into()
        })
    );

    // The frontend's side: the state is fed nothing but those events (the random session id
    // is replaced so the snapshot is stable).
    let mut state = State::new("fake", 262_144);
    state.update(Msg::Resize(72, 20));
    for event in events {
        let event = match event {
            Event::SessionConfigured {
                model,
                context_window,
                resumed_messages,
                ..
            } => Event::SessionConfigured {
                session_id: "00000000-0000-4000-8000-000000000000".into(),
                session_path: "/w/.minicode/sessions/00000000.json".into(),
                model,
                context_window,
                resumed_messages,
            },
            other => other,
        };
        state.update(Msg::Agent(event));
    }
    let screen = rows(&state);
    for (summary, mark) in [
        ("echo fine", "✓"),
        ("echo broken; exit 3", "✗"),
        ("touch denied.txt", "⊘"),
    ] {
        let row = screen
            .iter()
            .find(|r| r.contains(summary))
            .unwrap_or_else(|| panic!("{summary} missing: {screen:#?}"));
        assert!(row.trim_start().starts_with(mark), "{summary}: {row}");
    }
    // The transcript area only: the status bar's context figure depends on the system prompt.
    let transcript = screen.iter().take_while(|r| !r.starts_with('─'));
    insta::assert_snapshot!(transcript.cloned().collect::<Vec<_>>().join("\n"));
}

/// The binary in `ws` against `server`, with an isolated HOME and no inherited settings.
fn minicode(ws: &Path, server: &MockServer, args: &[&str]) -> Output {
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    std::fs::write(ws.join(".minicode/config.toml"), config).unwrap();
    crate::support::user_config::write_trusting(&ws.join("home"), ws, "");
    crate::support::binary::command(ws)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn stream_json_prints_the_restored_history_and_text_output_leaves_it_out() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", r#"{"command":"echo hi"}"#)], 5),
        sse_text("first answer", 4),
        sse_text("second answer", 4),
        sse_text("third answer", 4),
    ]);
    let (_dir, ws) = workspace();
    let first = minicode(&ws, &server, &["--yes", "first question"]);
    assert_eq!(first.status.code(), Some(0));
    let id = Session::list(&ws).unwrap()[0].id.clone();

    let out = minicode(
        &ws,
        &server,
        &["--session", &id, "--output-format", "stream-json", "again"],
    );
    assert_eq!(out.status.code(), Some(0));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "session_configured");
    assert_eq!(events[1]["type"], "history_restored", "{events:#?}");
    let entries = events[1]["entries"].as_array().unwrap();
    assert_eq!(
        entries[0],
        serde_json::json!({"kind": "user", "text": "first question"})
    );
    assert_eq!(entries[1]["kind"], "tool_call");
    assert_eq!(entries[1]["tool"], "bash");
    assert_eq!(entries[1]["summary"], "echo hi");
    assert_eq!(entries[1]["status"], "succeeded");
    assert_eq!(entries[1]["arguments"]["command"], "echo hi");
    assert!(entries[1]["output"].as_str().unwrap().contains("hi"));
    assert_eq!(
        entries[2],
        serde_json::json!({"kind": "assistant", "text": "first answer"})
    );

    let text = minicode(&ws, &server, &["--session", &id, "third"]);
    assert_eq!(text.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&text.stdout), "third answer\n");
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(!stderr.contains("first answer"), "{stderr}");
}

#[tokio::test]
async fn a_session_from_an_older_format_is_restored_with_inferred_statuses() {
    let (_dir, ws) = workspace();
    let id = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    let v2 = serde_json::json!({
        "version": 2,
        "id": id,
        "workspace": ws,
        "created": "2026-10-09T08:00:00Z",
        "updated": "2026-10-09T08:05:00Z",
        "messages": [
            {"role": "user", "content": "build it"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function",
                 "function": {"name": "bash", "arguments": "{\"command\":\"make\\nmake install\"}"}},
                {"id": "b", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"src/main.rs\"}"}}
            ]},
            {"role": "tool", "content": "error 1\n[exit code 2]", "tool_call_id": "a"},
            {"role": "tool", "content": "the user denied this call; it did not run", "tool_call_id": "b"},
            {"role": "assistant", "content": "the build failed"}
        ]
    });
    let dir = minicode::session::sessions_dir(&ws);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), v2.to_string()).unwrap();

    let events = resume_events(&ws, id).await;
    let Some(Event::HistoryRestored { entries }) = events.get(1) else {
        panic!("no HistoryRestored: {events:?}");
    };
    let calls: Vec<(&str, &str, Option<ToolStatus>)> = entries
        .iter()
        .filter_map(|e| match e {
            HistoryEntry::ToolCall {
                tool,
                summary,
                status,
                ..
            } => Some((tool.as_str(), summary.as_str(), *status)),
            _ => None,
        })
        .collect();
    // Older files kept no summary: the frontend is given the call's target instead.
    assert_eq!(
        calls,
        [
            ("bash", "make", Some(ToolStatus::Failed)),
            ("read", "src/main.rs", Some(ToolStatus::Denied)),
        ]
    );
    assert!(dir.join(format!("{id}.json.v2.bak")).exists());
}

//! Plan mode: the runtime refuses `write` and `edit` (each refusal reaches the model) except to
//! the session's plan file, the system prompt says so, `Op::SetPlan { on: false }` gives
//! writes back, and `--plan` does the same for a one-shot run (its JSON names the profile).

use std::path::Path;

use crate::support::events::{next, run_turn};
use crate::support::fake::{Fake, text_reply, tool_reply};
use crate::support::mock_openai::{MockServer, text_reply as mock_text, tool_calls_reply};
use minicode::agent::Options;
use minicode::chat::ToolStatus;
use minicode::protocol::{Decision, Event, Op, SandboxMode};
use minicode::session::Session;

fn approve_all(_: &str) -> Option<Decision> {
    Some(Decision::Approve)
}

fn args(value: serde_json::Value) -> String {
    value.to_string()
}

/// The results of the calls of a turn, in order.
fn results(events: &[Event]) -> Vec<(ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .collect()
}

/// Events until the core reports a profile; returns it.
async fn profile(handle: &mut minicode::protocol::AgentHandle) -> minicode::protocol::Profile {
    loop {
        if let Event::SandboxChanged { profile } = next(handle).await {
            return profile;
        }
    }
}

#[tokio::test]
async fn plan_mode_refuses_write_and_edit_but_writes_the_plan_file_and_off_restores_writes() {
    let (_tmp, ws) = crate::support::workspace();
    std::fs::write(ws.join("keep.txt"), "original\n").unwrap();
    let session = Session::create(&ws).unwrap();
    let plan_file = format!(".minicode/plans/{}.md", session.id());
    let model = Fake::new(vec![
        tool_reply(&[
            ("c0", "read", &args(serde_json::json!({"path": "keep.txt"}))),
            (
                "c1",
                "write",
                &args(serde_json::json!({"path": "new.txt", "content": "x\n"})),
            ),
            (
                "c2",
                "edit",
                &args(serde_json::json!({
                    "path": "keep.txt", "old_string": "original", "new_string": "changed"
                })),
            ),
            (
                "c3",
                "write",
                &args(serde_json::json!({"path": plan_file, "content": "# Plan\n1. do it\n"})),
            ),
        ]),
        text_reply("planned"),
        tool_reply(&[(
            "c4",
            "write",
            &args(serde_json::json!({"path": "new.txt", "content": "x\n"})),
        )]),
        text_reply("done"),
    ]);
    let options = Options {
        plan: true,
        auto_approve: true,
        ..Options::default()
    };
    let mut handle = crate::support::agent::spawn_session(session, model.clone(), options);
    let on = profile(&mut handle).await;
    assert_eq!(on.plan_file.as_deref(), Some(plan_file.as_str()));
    assert_eq!(on.mode, SandboxMode::ReadOnly);
    assert!(!on.network);

    let (events, _, _) = run_turn(&mut handle, "plan it", approve_all).await;
    let results = results(&events);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(results[0].0, ToolStatus::Succeeded, "reading is allowed");
    for (status, text) in &results[1..3] {
        assert_eq!(*status, ToolStatus::Denied, "{text}");
        assert!(text.contains("plan mode is on"), "{text}");
        assert!(text.contains(&plan_file), "{text}");
    }
    assert_eq!(results[3].0, ToolStatus::Succeeded, "{}", results[3].1);
    assert!(!ws.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("keep.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(&plan_file)).unwrap(),
        "# Plan\n1. do it\n"
    );
    // A notice before the prompt says so (the system prompt never changes), and each refusal
    // reaches the model.
    let requests = model.main_messages();
    assert!(!requests[0][0].text().contains("Plan mode"));
    let notice = requests[0][requests[0].len() - 3].text();
    assert!(notice.contains("Plan mode is on"), "{notice}");
    assert!(notice.contains(&plan_file));
    let refusals = requests[1]
        .iter()
        .filter(|m| m.text().contains("plan mode is on"))
        .count();
    assert_eq!(refusals, 2);

    handle.send(Op::SetPlan { on: false });
    let off = profile(&mut handle).await;
    assert_eq!(off.plan_file, None);
    assert_eq!(
        off.mode,
        SandboxMode::Off,
        "the session's own profile comes back"
    );
    let (events, _, _) = run_turn(&mut handle, "do it", approve_all).await;
    assert_eq!(results_status(&events), vec![ToolStatus::Succeeded]);
    assert!(ws.join("new.txt").exists());
    let after = model.main_messages();
    assert_eq!(after[2][0], requests[0][0], "the system prompt stays");
    let notice = after[2][after[2].len() - 3].text();
    assert!(notice.contains("Plan mode is off"), "{notice}");
}

fn results_status(events: &[Event]) -> Vec<ToolStatus> {
    results(events).into_iter().map(|(s, _)| s).collect()
}

#[tokio::test]
async fn plan_mode_turned_on_by_op_refuses_writes() {
    let (_tmp, ws) = crate::support::workspace();
    let model = Fake::new(vec![
        tool_reply(&[(
            "c1",
            "write",
            &args(serde_json::json!({"path": "a.txt", "content": "x\n"})),
        )]),
        text_reply("ok"),
    ]);
    let options = Options {
        auto_approve: true,
        ..Options::default()
    };
    let mut handle = crate::support::agent::spawn(&ws, model, options);
    let first = profile(&mut handle).await;
    assert_eq!(first.plan_file, None);
    handle.send(Op::SetPlan { on: true });
    assert!(profile(&mut handle).await.plan_file.is_some());
    let (events, _, _) = run_turn(&mut handle, "write", approve_all).await;
    assert_eq!(results_status(&events), vec![ToolStatus::Denied]);
    assert!(!ws.join("a.txt").exists());
}

fn one_shot(dir: &Path, args: &[&str]) -> std::process::Output {
    crate::support::binary::command(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn plan_flag_refuses_writes_in_one_shot_and_json_names_the_plan_profile() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("c1", "write", r#"{"path":"out.txt","content":"no\n"}"#)],
            5,
        ),
        mock_text("a plan", 4),
    ]);
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), &server);
    let out = one_shot(
        dir.path(),
        &[
            "--plan",
            "--yes",
            "--output-format",
            "json",
            "plan something",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!dir.path().join("out.txt").exists());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sandbox = &json["sandbox"];
    assert_eq!(sandbox["mode"], "read-only", "{sandbox}");
    assert_eq!(sandbox["network"], false, "{sandbox}");
    let id = json["session_id"].as_str().unwrap();
    assert_eq!(
        sandbox["plan_file"],
        format!(".minicode/plans/{id}.md"),
        "{sandbox}"
    );
    let requests = server.requests();
    assert!(requests[0].raw_body.contains("Plan mode is on"));
    assert!(requests[1].raw_body.contains("plan mode is on"));
}

#[test]
fn plan_mode_bash_runs_read_only_so_a_redirect_changes_nothing_and_the_model_is_told() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::kernel::require_working_sandbox(dir.path());
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", r#"{"command":"echo x > f"}"#)], 5),
        mock_text("a plan", 4),
    ]);
    crate::support::binary::write_config(dir.path(), &server);
    let out = one_shot(dir.path(), &["--plan", "--yes", "plan something"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!dir.path().join("f").exists(), "{stderr}");
    let second = &server.requests()[1].raw_body;
    // The refusal reaches the model: the kernel's answer to the write, and that the sandbox
    // blocked it (the relative `f` is resolved against the workspace).
    assert!(second.contains("Permission denied"), "{second}");
    assert!(
        second.contains("blocked by the sandbox (ReadOnly profile): write to"),
        "the model is told the sandbox blocked it: {second}"
    );
}

mod full_screen {
    //! `/plan`, `/plan off` and `/status` in the full-screen state, and the profile in the
    //! status bar, rendered on a `TestBackend`.

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use minicode::protocol::{Event, Op, Profile, SandboxMode};
    use minicode::tui::state::{Effect, Msg, State};
    use minicode::tui::view;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn state() -> State {
        let mut s = State::new("test-model", 100_000);
        s.update(Msg::Resize(140, 20));
        s.update(Msg::Agent(Event::SessionConfigured {
            session_id: "0123456789abcdef".into(),
            session_path: "/w/s.json".into(),
            model: "test-model".into(),
            context_window: 100_000,
            resumed_messages: 0,
        }));
        s
    }

    fn screen(s: &State) -> String {
        let mut term = Terminal::new(TestBackend::new(s.size.0, s.size.1)).unwrap();
        term.draw(|f| view::render(s, f)).unwrap();
        term.backend().to_string()
    }

    fn enter(s: &mut State, line: &str) -> Vec<Effect> {
        for c in line.chars() {
            s.update(Msg::Key(KeyEvent::new(
                KeyCode::Char(c),
                KeyModifiers::NONE,
            )));
        }
        s.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
    }

    fn profile(plan: bool) -> Profile {
        Profile {
            mode: if plan {
                SandboxMode::ReadOnly
            } else {
                SandboxMode::WorkspaceWrite
            },
            network: false,
            plan_file: plan.then(|| ".minicode/plans/0123.md".to_string()),
        }
    }

    #[test]
    fn plan_toggles_through_the_core_and_the_status_bar_shows_the_profile() {
        let mut s = state();
        s.update(Msg::Agent(Event::SandboxChanged {
            profile: profile(false),
        }));
        assert!(screen(&s).contains("workspace-write · no network"));
        assert_eq!(
            enter(&mut s, "/plan"),
            vec![Effect::Op(Op::SetPlan { on: true })]
        );
        s.update(Msg::Agent(Event::SandboxChanged {
            profile: profile(true),
        }));
        let shown = screen(&s);
        assert!(shown.contains("plan · read-only · no network"), "{shown}");
        assert!(shown.contains("plan mode on"), "{shown}");
        assert_eq!(
            enter(&mut s, "/plan"),
            vec![Effect::Op(Op::SetPlan { on: false })]
        );
        assert_eq!(
            enter(&mut s, "/plan off"),
            vec![Effect::Op(Op::SetPlan { on: false })]
        );
        assert_eq!(
            enter(&mut s, "/plan approve"),
            vec![
                Effect::Op(Op::SetPlan { on: false }),
                Effect::Op(Op::Submit(
                    "The plan in .minicode/plans/0123.md is approved: carry it out.".into()
                )),
            ]
        );
        enter(&mut s, "/status");
        let shown = screen(&s);
        assert!(
            shown.contains("plan mode on (plan file .minicode/plans/0123.md)"),
            "{shown}"
        );
    }
}

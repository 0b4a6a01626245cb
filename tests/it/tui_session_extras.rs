//! What users reach for in the first minutes of a full-screen session: `/resume` (a picker of
//! the workspace's sessions), `@path` mentions (Tab completion, the file attached confined like
//! `read`), `!command` (run for the user, its output sent with the next prompt) and `/init`.
//! The screen through a `TestBackend`; the core through a scripted fake model.

use crate::support::screen::text as screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use minicode::agent::Options;
use minicode::protocol::{Event, Op, SessionSummary};
use minicode::session::Session;
use minicode::tui::state::{Effect, Msg, State};

use crate::support::agent::{spawn, spawn_session};
use crate::support::events::{shutdown, turn, until};
use crate::support::fake::{Fake, text_reply};

fn state() -> State {
    let mut s = State::new("m", 32_768);
    s.update(Msg::Resize(100, 30));
    s
}

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    s.update(Msg::Paste(text.into()));
    key(s, KeyCode::Enter)
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn summary(id: &str, title: &str, ago: u64, turns: u32, current: bool) -> SessionSummary {
    SessionSummary {
        id: id.to_string(),
        title: title.to_string(),
        updated: now_secs() - ago,
        turns,
        forked_from: None,
        current,
    }
}

#[test]
fn slash_resume_opens_a_picker_with_title_age_and_turns_and_resumes_the_choice() {
    let mut s = state();
    assert_eq!(typed(&mut s, "/resume"), vec![Effect::Op(Op::ListSessions)]);
    s.update(Msg::Agent(Event::SessionsListed {
        sessions: vec![
            summary("11111111-aaaa", "the one running", 10, 1, true),
            summary("22222222-bbbb", "port the parser", 5 * 60 + 20, 3, false),
            summary("33333333-cccc", "fix the flaky test", 3 * 3600, 1, false),
        ],
    }));
    let text = screen(&s);
    assert!(text.contains("resume a session"), "{text}");
    assert!(text.contains("port the parser"), "{text}");
    assert!(text.contains("5 min ago · 3 turns"), "{text}");
    assert!(text.contains("3 h ago · 1 turn"), "{text}");
    assert!(text.contains("(this session)"), "{text}");
    // The first other session is chosen; ↓ moves on, Enter resumes it.
    assert!(key(&mut s, KeyCode::Down).is_empty());
    let effects = key(&mut s, KeyCode::Enter);
    assert_eq!(
        effects,
        vec![Effect::Op(Op::Resume {
            id: "33333333-cccc".into()
        })]
    );
    assert!(!screen(&s).contains("resume a session"));
    // Until the core has switched, the transcript stays (a resume can fail: a locked file).
    s.update(Msg::Agent(Event::Error {
        message: "could not resume session 33333333-cccc: locked".into(),
    }));
    assert!(screen(&s).contains("could not resume"), "{}", screen(&s));
    s.update(Msg::Agent(Event::SessionConfigured {
        session_id: "33333333-cccc".into(),
        session_path: "/tmp/x.json".into(),
        model: "m".into(),
        context_window: 32_768,
        resumed_messages: 2,
    }));
    s.update(Msg::Agent(Event::HistoryRestored {
        entries: vec![minicode::protocol::HistoryEntry::User {
            text: "fix the flaky test".into(),
        }],
    }));
    let text = screen(&s);
    assert!(!text.contains("could not resume"), "{text}");
    assert!(text.contains("fix the flaky test"), "{text}");

    // Esc closes the picker and nothing is resumed.
    typed(&mut s, "/resume");
    s.update(Msg::Agent(Event::SessionsListed {
        sessions: vec![summary("22222222-bbbb", "port the parser", 60, 3, false)],
    }));
    assert!(key(&mut s, KeyCode::Esc).is_empty());
    assert!(!screen(&s).contains("resume a session"));
}

#[test]
fn tab_after_at_asks_the_core_and_completes_the_path() {
    let mut s = state();
    s.update(Msg::Paste("explain @sr".into()));
    assert_eq!(
        key(&mut s, KeyCode::Tab),
        vec![Effect::Op(Op::CompletePath {
            prefix: "sr".into()
        })]
    );
    s.update(Msg::Agent(Event::PathCompletions {
        prefix: "sr".into(),
        paths: vec!["src/".into()],
    }));
    assert_eq!(s.draft.text(), "explain @src/");
    s.update(Msg::Agent(Event::PathCompletions {
        prefix: "src/".into(),
        paths: vec!["src/main.rs".into(), "src/mod_a.rs".into()],
    }));
    assert_eq!(s.draft.text(), "explain @src/m");
    assert!(screen(&s).contains("main.rs  mod_a.rs"), "{}", screen(&s));
    s.update(Msg::Agent(Event::PathCompletions {
        prefix: "src/m".into(),
        paths: vec!["src/main.rs".into()],
    }));
    assert_eq!(s.draft.text(), "explain @src/main.rs ");
    // An answer for a draft that moved on is dropped.
    s.update(Msg::Agent(Event::PathCompletions {
        prefix: "zz".into(),
        paths: vec!["zzz".into()],
    }));
    assert_eq!(s.draft.text(), "explain @src/main.rs ");
}

#[test]
fn bang_runs_the_command_for_the_user_and_slash_init_asks_for_an_agents_md() {
    let mut s = state();
    assert_eq!(
        typed(&mut s, "!ls -la"),
        vec![Effect::Op(Op::Shell {
            command: "ls -la".into()
        })]
    );
    assert!(screen(&s).contains("next prompt"), "{}", screen(&s));
    let effects = typed(&mut s, "/init");
    match effects.as_slice() {
        [Effect::Op(Op::Submit(prompt))] => assert!(prompt.contains("AGENTS.md"), "{prompt}"),
        other => panic!("{other:?}"),
    }
}

fn options() -> Options {
    Options {
        auto_approve: true,
        ..Options::default()
    }
}

#[tokio::test]
async fn a_mentioned_file_goes_with_the_prompt_confined_like_read() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "the parrot is blue\n").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside-secret\n").unwrap();
    std::fs::write(ws.join("blob.bin"), [0u8, 1, 2, 0, 255, 0]).unwrap();
    let fake = Fake::new(vec![text_reply("ok")]);
    let mut handle = spawn(&ws, fake.clone(), options());
    let (events, _, _) = turn(
        &mut handle,
        "what colour? see @notes.txt, @../secret.txt and @blob.bin; mail me@example.org",
    )
    .await;
    let messages = fake.main_messages();
    let prompt = messages[0]
        .iter()
        .rev()
        .find(|m| m.role == minicode::chat::Role::User)
        .unwrap()
        .text()
        .to_string();
    assert!(prompt.contains("the parrot is blue"), "{prompt}");
    assert!(
        prompt.contains("<attached-file path=\"notes.txt\">"),
        "{prompt}"
    );
    assert!(!prompt.contains("outside-secret"), "{prompt}");
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("@../secret.txt not attached")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("@blob.bin not attached") && w.contains("binary")),
        "{warnings:?}"
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_user_command_runs_sandboxed_and_its_output_goes_with_the_next_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![text_reply("seen")]);
    let mut handle = spawn(dir.path(), fake.clone(), options());
    handle.send(Op::Shell {
        command: "echo parrot-$((40 + 2))".into(),
    });
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert!(
        events.iter().any(|e| matches!(e,
            Event::ToolCallEnded { output, .. } if output.contains("parrot-42"))),
        "{events:?}"
    );
    // It was no model turn.
    assert!(fake.main_requests().is_empty());
    turn(&mut handle, "what did it print?").await;
    let messages = fake.main_messages();
    let prompt = messages[0].last().unwrap().text().to_string();
    assert!(prompt.contains("parrot-42"), "{prompt}");
    assert!(prompt.ends_with("what did it print?"), "{prompt}");
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn the_core_lists_and_resumes_a_saved_session_and_completes_paths() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::create_dir(ws.join("srcgen")).unwrap();
    std::fs::write(ws.join(".gitignore"), "srcgen/\n").unwrap();
    let mut saved = Session::create(&ws).unwrap();
    saved.push(minicode::chat::Message::user("port the parser"));
    saved.push(minicode::chat::Message::assistant(
        Some("ported".into()),
        Vec::new(),
    ));
    saved.save().unwrap();
    let saved_id = saved.id().to_string();
    drop(saved);

    let current = Session::create(&ws).unwrap();
    let mut handle = spawn_session(
        current,
        Fake::new(Vec::<minicode::provider::Reply>::new()),
        options(),
    );
    handle.send(Op::CompletePath {
        prefix: "sr".into(),
    });
    let events = until(&mut handle, |e| matches!(e, Event::PathCompletions { .. })).await;
    let Some(Event::PathCompletions { paths, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(paths, &["src/"]);

    handle.send(Op::ListSessions);
    let events = until(&mut handle, |e| matches!(e, Event::SessionsListed { .. })).await;
    let Some(Event::SessionsListed { sessions }) = events.last() else {
        unreachable!()
    };
    let listed = sessions.iter().find(|s| s.id == saved_id).unwrap();
    assert_eq!(listed.title, "port the parser");
    assert_eq!(listed.turns, 1);
    assert!(!listed.current);

    handle.send(Op::Resume {
        id: saved_id.clone(),
    });
    let events = until(&mut handle, |e| matches!(e, Event::HistoryRestored { .. })).await;
    assert!(events.iter().any(
        |e| matches!(e, Event::SessionConfigured { session_id, .. } if *session_id == saved_id)
    ));
    shutdown(&mut handle).await;
}

//! Checkpoints and rewind: scripted sessions (a fake model) whose `write`, `edit` and `bash`
//! calls change the workspace, then `Op::Rewind`; the tree is compared with a snapshot taken
//! by a walk independent of the implementation.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use minicode::agent::Options;
use minicode::chat::ToolStatus;
use minicode::checkpoints::{Position, Recorder, Settings};
use minicode::protocol::{AgentHandle, Event, Op, RewindScope};
use minicode::session::Session;

use crate::support::agent::{spawn, spawn_session};
use crate::support::events::{shutdown, turn, until};
use crate::support::fake::{Fake, bash, text_reply, tool_reply};
use crate::support::tree::{self, Tree};

/// Every file under `dir` but `.minicode/`: content and permission bits.
fn snapshot(dir: &Path) -> Tree {
    tree::snapshot(dir, &[".minicode"])
}

fn options(settings: Settings) -> Options {
    Options {
        auto_approve: true,
        checkpoints: settings,
        ..Options::default()
    }
}

fn write_call(id: &str, path: &str, content: &str) -> minicode::provider::Reply {
    let args = serde_json::json!({ "path": path, "content": content }).to_string();
    tool_reply(&[(id, "write", &args)])
}

/// The blobs in the store: files of their own, and the entries of the packs (each a 4-byte
/// little-endian length, then the bytes).
pub(crate) fn blob_count(ws: &Path) -> usize {
    let root = ws.join(".minicode/checkpoints");
    let loose: usize = std::fs::read_dir(root.join("blobs")).map_or(0, |fans| {
        fans.map(|f| std::fs::read_dir(f.unwrap().path()).unwrap().count())
            .sum()
    });
    let packed: usize = std::fs::read_dir(root.join("packs")).map_or(0, |packs| {
        packs
            .map(|p| {
                let bytes = std::fs::read(p.unwrap().path()).unwrap();
                let (mut at, mut n) = (0, 0);
                while at + 4 <= bytes.len() {
                    at += 4 + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
                    n += 1;
                }
                n
            })
            .sum()
    });
    loose + packed
}

/// Sends `op` and waits for its `Rewound` answer.
async fn rewind(handle: &mut AgentHandle, turn: u32, scope: RewindScope) -> Event {
    handle.send(Op::Rewind {
        turn,
        scope,
        force: false,
    });
    until(handle, |e| matches!(e, Event::Rewound { .. }))
        .await
        .pop()
        .unwrap()
}

fn rewound(event: &Event) -> (Vec<String>, Vec<String>, Option<String>) {
    match event {
        Event::Rewound {
            restored,
            conflicts,
            error,
            ..
        } => (restored.clone(), conflicts.clone(), error.clone()),
        other => panic!("expected Rewound, got {other:?}"),
    }
}

fn ended_ok(events: &[Event]) {
    for e in events {
        if let Event::ToolCallEnded { status, output, .. } = e {
            assert_eq!(*status, ToolStatus::Succeeded, "{output}");
        }
    }
}

#[tokio::test]
async fn rewind_undoes_what_write_edit_and_bash_changed_and_leaves_ignored_files() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join("b.txt"), "bee\n").unwrap();
    std::fs::write(ws.join("c.sh"), "echo c\n").unwrap();
    std::fs::set_permissions(ws.join("c.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(ws.join(".gitignore"), "ignored.log\n").unwrap();
    std::fs::write(ws.join("ignored.log"), "keep\n").unwrap();
    let before = snapshot(&ws);
    let read = serde_json::json!({ "path": "a.txt" }).to_string();
    let edit = serde_json::json!({ "path": "a.txt", "old_string": "one", "new_string": "ONE" })
        .to_string();
    let fake = Fake::new(vec![
        write_call("w1", "new.txt", "created\n"),
        tool_reply(&[("r1", "read", &read)]),
        tool_reply(&[("e1", "edit", &edit)]),
        bash(
            "b1",
            "rm b.txt && chmod +x c.sh && echo changed > ignored.log && mkdir -p d/e \
             && echo x > d/e/f.txt && mv new.txt moved.txt",
        ),
        text_reply("done"),
    ]);
    let mut handle = spawn(&ws, fake, options(Settings::default()));
    let (events, _, _) = turn(&mut handle, "change things").await;
    ended_ok(&events);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "ONE\n");
    assert!(ws.join("d/e/f.txt").exists());

    handle.send(Op::ListRewind);
    let listed = until(&mut handle, |e| matches!(e, Event::RewindList { .. })).await;
    let Some(Event::RewindList { turns, enabled }) = listed.last() else {
        unreachable!()
    };
    assert!(enabled);
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].prompt, "change things");
    let paths: Vec<&str> = turns[0].files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["a.txt", "b.txt", "c.sh", "d/e/f.txt", "moved.txt"]);
    // The turn ran a command: the listing says what a rewind of it cannot undo.
    assert_eq!(turns[0].caveats.len(), 1, "{:?}", turns[0].caveats);
    assert!(turns[0].caveats[0].contains("outside the workspace"));

    let event = rewind(&mut handle, 1, RewindScope::Code).await;
    // The conversation keeps the turn: its prompt is not offered again for the input box.
    assert!(
        matches!(&event, Event::Rewound { prompt: None, .. }),
        "{event:?}"
    );
    let (restored, conflicts, error) = rewound(&event);
    assert_eq!(error, None);
    assert!(conflicts.is_empty(), "{conflicts:?}");
    assert_eq!(restored.len(), 5, "{restored:?}");
    let mut after = snapshot(&ws);
    // The ignored file is not recorded, so it keeps what the call wrote.
    let (log, _) = after.remove("ignored.log").unwrap();
    assert_eq!(log, b"changed\n");
    let mut expected = before;
    expected.remove("ignored.log");
    assert_eq!(after, expected);
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_file_the_user_changed_after_the_call_is_not_clobbered_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(ws.join("keep.txt"), "original\n").unwrap();
    let fake = Fake::new(vec![
        bash("b1", "echo agent > x.txt && echo agent > keep.txt"),
        text_reply("done"),
    ]);
    let mut handle = spawn(&ws, fake, options(Settings::default()));
    let (events, _, _) = turn(&mut handle, "write x").await;
    ended_ok(&events);
    std::fs::write(ws.join("x.txt"), "user's bytes\n").unwrap();
    let (restored, conflicts, _) = rewound(&rewind(&mut handle, 1, RewindScope::Code).await);
    assert_eq!(conflicts, ["x.txt"]);
    assert_eq!(restored, ["keep.txt"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("x.txt")).unwrap(),
        "user's bytes\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("keep.txt")).unwrap(),
        "original\n"
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_bash_call_touching_one_file_among_many_adds_one_blob_and_a_small_record() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    for i in 0..2000 {
        let sub = ws.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    let fake = Fake::new(vec![
        bash("b1", "echo first >> d0/f0.txt"),
        text_reply("one"),
        bash("b2", "echo second >> d3/f3.txt"),
        text_reply("two"),
    ]);
    let mut handle = spawn(&ws, fake, options(Settings::default()));
    turn(&mut handle, "first").await;
    // The base: every file once, and the one changed content.
    assert_eq!(blob_count(&ws), 2001);
    let journal = std::fs::read_dir(ws.join(".minicode/checkpoints/sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let size = std::fs::metadata(&journal).unwrap().len();
    turn(&mut handle, "second").await;
    assert_eq!(blob_count(&ws), 2002);
    let grown = std::fs::metadata(&journal).unwrap().len() - size;
    assert!(grown < 2048, "the second call's record took {grown} bytes");
    shutdown(&mut handle).await;
}

/// A session in `ws` whose first turn (`change a`) rewrote `a.txt` from `before` to `after`.
async fn after_one_write(ws: &Path) -> AgentHandle {
    std::fs::write(ws.join("a.txt"), "before\n").unwrap();
    let fake = Fake::new(vec![
        write_call("w1", "a.txt", "after\n"),
        text_reply("done"),
    ]);
    let mut handle = spawn(ws, fake, options(Settings::default()));
    let (events, _, _) = turn(&mut handle, "change a").await;
    ended_ok(&events);
    handle
}

#[tokio::test]
async fn checkpoints_survive_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let mut handle = after_one_write(&ws).await;
    let id = Session::list(&ws).unwrap()[0].id.clone();
    shutdown(&mut handle).await;
    let session = Session::open(&ws, &id).unwrap();
    let mut handle = spawn_session(session, Fake::default(), options(Settings::default()));
    handle.send(Op::ListRewind);
    let listed = until(&mut handle, |e| matches!(e, Event::RewindList { .. })).await;
    let Some(Event::RewindList { turns, .. }) = listed.last() else {
        unreachable!()
    };
    // A write is undone whole: no caveat.
    assert_eq!(turns.len(), 1);
    assert!(turns[0].caveats.is_empty(), "{:?}", turns[0].caveats);
    let (restored, conflicts, _) = rewound(&rewind(&mut handle, 1, RewindScope::Code).await);
    assert_eq!((restored, conflicts), (vec!["a.txt".to_string()], vec![]));
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "before\n"
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn rewinding_the_conversation_forks_before_the_turn_and_gives_back_its_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let fake = Fake::new(vec![
        text_reply("hello"),
        write_call("w1", "a.txt", "x\n"),
        text_reply("done"),
    ]);
    let mut handle = spawn(&ws, fake, options(Settings::default()));
    turn(&mut handle, "say hello").await;
    turn(&mut handle, "write a").await;
    handle.send(Op::Rewind {
        turn: 2,
        scope: RewindScope::Both,
        force: false,
    });
    let events = until(&mut handle, |e| matches!(e, Event::Rewound { .. })).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::SessionForked { .. }))
    );
    let Some(Event::Rewound {
        prompt, restored, ..
    }) = events.last()
    else {
        unreachable!()
    };
    assert_eq!(prompt.as_deref(), Some("write a"));
    assert_eq!(restored, &["a.txt"]);
    assert!(!ws.join("a.txt").exists());
    let resumed = events.iter().find_map(|e| match e {
        Event::SessionConfigured {
            resumed_messages, ..
        } => Some(*resumed_messages),
        _ => None,
    });
    // The first turn's prompt and reply.
    assert_eq!(resumed, Some(2));
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_fork_starts_with_the_parents_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let mut handle = after_one_write(&ws).await;
    handle.send(Op::Fork);
    until(&mut handle, |e| matches!(e, Event::SessionForked { .. })).await;
    let (restored, conflicts, error) = rewound(&rewind(&mut handle, 1, RewindScope::Code).await);
    assert_eq!(
        (restored, conflicts, error),
        (vec!["a.txt".to_string()], vec![], None)
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "before\n"
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn disabled_checkpoints_record_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let fake = Fake::new(vec![write_call("w1", "a.txt", "x\n"), text_reply("done")]);
    let settings = Settings {
        enabled: false,
        ..Settings::default()
    };
    let mut handle = spawn(&ws, fake, options(settings));
    let (events, _, _) = turn(&mut handle, "write").await;
    ended_ok(&events);
    handle.send(Op::ListRewind);
    let listed = until(&mut handle, |e| matches!(e, Event::RewindList { .. })).await;
    assert!(matches!(
        listed.last(),
        Some(Event::RewindList { turns, enabled: false }) if turns.is_empty()
    ));
    assert!(!ws.join(".minicode/checkpoints").exists());
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn the_storage_cap_prunes_the_oldest_turn_and_a_large_file_is_named_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "x".repeat(20_000)).unwrap();
    let fake = Fake::new(vec![
        bash("b1", "head -c 20000 /dev/zero | tr '\\0' a > a.txt"),
        text_reply("one"),
        bash(
            "b2",
            "head -c 20000 /dev/zero | tr '\\0' b > a.txt && head -c 40000 /dev/zero > big.bin",
        ),
        text_reply("two"),
    ]);
    // The base and each turn's content take 20,000 bytes (20,480 on disk); the journal, the
    // shared snapshot and its pointer and the store's folders a block each: the third content
    // is over the cap, and pruning the first turn frees the base's content, which only it
    // still needed.
    let settings = Settings {
        enabled: true,
        max_file_bytes: 30_000,
        max_bytes: 90_000,
        ..Settings::default()
    };
    let mut handle = spawn(&ws, fake, options(settings));
    turn(&mut handle, "first").await;
    turn(&mut handle, "second").await;
    handle.send(Op::ListRewind);
    let listed = until(&mut handle, |e| matches!(e, Event::RewindList { .. })).await;
    let Some(Event::RewindList { turns, .. }) = listed.last() else {
        unreachable!()
    };
    let numbers: Vec<u32> = turns.iter().map(|t| t.turn).collect();
    assert_eq!(numbers, [2]);
    assert_eq!(turns[0].skipped, ["big.bin"]);
    assert_eq!(blob_count(&ws), 2);
    let (restored, _, error) = rewound(&rewind(&mut handle, 1, RewindScope::Code).await);
    assert!(restored.is_empty());
    assert!(error.unwrap().contains("pruned"));
    // Turn 2 is still undoable.
    let (restored, _, error) = rewound(&rewind(&mut handle, 2, RewindScope::Code).await);
    assert_eq!((restored, error), (vec!["a.txt".to_string()], None));
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "a".repeat(20_000)
    );
    shutdown(&mut handle).await;
}

#[test]
fn a_call_the_process_died_during_is_undone_from_the_state_recorded_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "before\n").unwrap();
    let mut recorder = Recorder::new(&ws, "crash-session", Settings::default());
    let position = Position {
        turn: 1,
        call: "c1".into(),
        tool: "bash".into(),
    };
    recorder.before(&position).unwrap();
    // The call changes files, then the process dies: no `after`.
    std::fs::write(ws.join("a.txt"), "half done\n").unwrap();
    std::fs::write(ws.join("new.txt"), "new\n").unwrap();
    drop(recorder);
    let mut recorder = Recorder::new(&ws, "crash-session", Settings::default());
    let how = minicode::checkpoints::How::default();
    let outcome = recorder.rewind(1, &how).unwrap();
    assert_eq!(outcome.restored, ["a.txt", "new.txt"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "before\n"
    );
    assert!(!ws.join("new.txt").exists());
}

#[test]
fn the_store_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    // Enough small files for a pack.
    for i in 0..10 {
        std::fs::write(ws.join(format!("{i}.txt")), format!("{i}\n")).unwrap();
    }
    let mut recorder = Recorder::new(&ws, "private", Settings::default());
    let position = Position {
        turn: 1,
        call: "c1".into(),
        tool: "write".into(),
    };
    recorder.before(&position).unwrap();
    recorder.after().unwrap();
    let root = ws.join(".minicode/checkpoints");
    for dir in [
        &root,
        &root.join("blobs"),
        &root.join("sessions"),
        &root.join("bases"),
        &root.join("packs"),
    ] {
        let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }
    let journal = root.join("sessions/private.jsonl");
    assert_eq!(
        std::fs::metadata(journal).unwrap().permissions().mode() & 0o777,
        0o600
    );
    for fan in std::fs::read_dir(root.join("blobs")).unwrap() {
        let fan = fan.unwrap().path();
        assert_eq!(
            std::fs::metadata(&fan).unwrap().permissions().mode() & 0o777,
            0o700
        );
        for blob in std::fs::read_dir(fan).unwrap() {
            let mode = blob.unwrap().metadata().unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }
    for dir in ["packs", "bases"] {
        for file in std::fs::read_dir(root.join(dir)).unwrap() {
            let mode = file.unwrap().metadata().unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }
    let pointer = root.join("workspace.json");
    assert_eq!(
        std::fs::metadata(pointer).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// The one-shot binary with `[checkpoints]` from the workspace's config: a `bash` call under
/// `--yes`, then whether the session's journal exists.
fn oneshot_records(extra_config: &str) -> bool {
    use crate::support::mock_openai::{MockServer, text_reply as sse_text, tool_calls_reply};
    let args = serde_json::json!({ "command": "echo x > made.txt" }).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &args)], 16),
        sse_text("done", 8),
    ]);
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), &server);
    let file = dir.path().join(".minicode/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{}\n{extra_config}", text.trim_end())).unwrap();
    let out = crate::support::binary::command(dir.path())
        .args(["--yes", "make a file"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.path().join(".minicode/checkpoints/sessions").is_dir()
}

#[test]
fn the_binary_records_checkpoints_unless_the_config_turns_them_off() {
    assert!(oneshot_records(""));
    assert!(!oneshot_records("[checkpoints]\nenabled = false\n"));
}

mod tui {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use minicode::protocol::{Event, FileChangeKind, Op, RewindScope, RewindTurn};
    use minicode::tui::state::{Effect, Msg, State};
    use minicode::tui::view;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn state() -> State {
        let mut s = State::new("m", 32_768);
        s.update(Msg::Resize(100, 30));
        s
    }

    fn command(s: &mut State, text: &str) -> Vec<Effect> {
        s.update(Msg::Paste(text.into()));
        s.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
    }

    fn screen(s: &State) -> String {
        let mut term = Terminal::new(TestBackend::new(s.size.0, s.size.1)).unwrap();
        term.draw(|f| view::render(s, f)).unwrap();
        term.backend().to_string()
    }

    #[test]
    fn slash_rewind_lists_turns_and_asks_for_the_chosen_one() {
        let mut s = state();
        let effects = command(&mut s, "/rewind");
        assert!(matches!(effects.as_slice(), [Effect::Op(Op::ListRewind)]));
        let effects = command(&mut s, "/rewind 2 code");
        assert!(matches!(
            effects.as_slice(),
            [Effect::Op(Op::Rewind {
                turn: 2,
                scope: RewindScope::Code,
                force: false,
            })]
        ));
        s.update(Msg::Agent(Event::RewindList {
            turns: vec![RewindTurn {
                turn: 2,
                prompt: "add the parser".into(),
                files: vec![("src/parse.rs".into(), FileChangeKind::Created)],
                skipped: vec![],
                withheld: vec![],
                undone: false,
                caveats: vec!["ran commands: not all undone".into()],
            }],
            enabled: true,
        }));
        let text = screen(&s);
        assert!(text.contains("2. add the parser"), "{text}");
        assert!(text.contains("+ src/parse.rs"), "{text}");
        assert!(text.contains("? ran commands: not all undone"), "{text}");
    }

    #[test]
    fn esc_esc_on_an_empty_input_box_asks_for_the_rewind_listing() {
        let mut s = state();
        let esc = || Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        let start = std::time::Instant::now();
        assert!(s.update_at(esc(), start).is_empty());
        let effects = s.update_at(esc(), start + std::time::Duration::from_millis(200));
        assert!(matches!(effects.as_slice(), [Effect::Op(Op::ListRewind)]));
        // Two far apart, or with text in the box, do nothing.
        let later = start + std::time::Duration::from_secs(10);
        assert!(s.update_at(esc(), later).is_empty());
        assert!(
            s.update_at(esc(), later + std::time::Duration::from_secs(5))
                .is_empty()
        );
        s.update(Msg::Paste("draft".into()));
        let t = later + std::time::Duration::from_secs(6);
        assert!(s.update_at(esc(), t).is_empty());
        assert!(
            s.update_at(esc(), t + std::time::Duration::from_millis(100))
                .is_empty()
        );
    }

    #[test]
    fn a_rewind_puts_the_prompt_back_and_names_conflicts() {
        let mut s = state();
        s.update(Msg::Agent(Event::Rewound {
            turn: 2,
            restored: vec!["a.rs".into()],
            conflicts: vec!["b.rs".into()],
            overwritten: vec![],
            skipped: vec![],
            prompt: Some("add the parser".into()),
            error: None,
        }));
        assert_eq!(s.draft.text(), "add the parser");
        let text = screen(&s);
        assert!(text.contains("b.rs"), "{text}");
    }

    #[test]
    fn a_slash_command_typed_over_a_rewound_prompt_replaces_it_so_exit_exits() {
        let mut s = state();
        s.update(Msg::Agent(Event::Rewound {
            turn: 2,
            restored: vec![],
            conflicts: vec![],
            overwritten: vec![],
            skipped: vec![],
            prompt: Some("add the parser".into()),
            error: None,
        }));
        assert_eq!(s.draft.text(), "add the parser");
        for c in "/exit".chars() {
            s.update(Msg::Key(KeyEvent::new(
                KeyCode::Char(c),
                KeyModifiers::NONE,
            )));
        }
        assert_eq!(s.draft.text(), "/exit");
        let effects = s.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        assert_eq!(effects, vec![Effect::Exit]);

        // Words typed after the prompt extend it, as before.
        let mut s = state();
        s.update(Msg::Agent(Event::Rewound {
            turn: 2,
            restored: vec![],
            conflicts: vec![],
            overwritten: vec![],
            skipped: vec![],
            prompt: Some("add the parser".into()),
            error: None,
        }));
        for c in " now".chars() {
            s.update(Msg::Key(KeyEvent::new(
                KeyCode::Char(c),
                KeyModifiers::NONE,
            )));
        }
        assert_eq!(s.draft.text(), "add the parser now");
    }
}

/// Bytes under `dir`, recursively.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            bytes_under(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

#[test]
fn a_hundred_edits_of_one_file_cost_their_contents_and_little_more() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let body = |n: usize| format!("{n:06}\n").repeat(100 * 1024 / 7);
    std::fs::write(ws.join("big.txt"), body(0)).unwrap();
    let mut recorder = Recorder::new(&ws, "edits", Settings::default());
    let mut distinct = body(0).len() as u64;
    for n in 1..=100 {
        let position = Position {
            turn: u32::try_from(n).unwrap(),
            call: format!("c{n}"),
            tool: "edit".into(),
        };
        recorder.before(&position).unwrap();
        std::fs::write(ws.join("big.txt"), body(n)).unwrap();
        recorder.after().unwrap();
        distinct += body(n).len() as u64;
    }
    let store = bytes_under(&ws.join(".minicode/checkpoints"));
    let overhead = store - distinct;
    eprintln!("store {store} bytes, distinct contents {distinct}, overhead {overhead}");
    assert!(overhead < 2 * 1024 * 1024, "overhead {overhead} bytes");
}

//! The agent loop driven through its public contract (ops in, events out) with a scripted fake
//! model: tool rounds, approvals, refusals, the round limit, failed streams, interrupts, stats.

use std::path::Path;
use std::time::Duration;

use crate::support::events::run_turn;
use crate::support::fake::{Answer, Fake, bash, text_reply, tool_reply};
use crate::support::mock_openai::wait_until;
use minicode::agent::Options;
use minicode::chat::{Change, ToolKind, ToolStatus};
use minicode::chat::{Message, Role};
use minicode::protocol::AgentHandle;
use minicode::protocol::{Decision, Event, Op, TurnEnd};
use minicode::provider::ProviderError;
use minicode::session::Session;

fn start(dir: &Path, model: Fake, options: Options) -> AgentHandle {
    crate::support::agent::spawn(dir, model, options)
}

fn approve_all(_: &str) -> Option<Decision> {
    Some(Decision::Approve)
}

fn tool_results(events: &[Event]) -> Vec<(ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_reply_completes_turn_and_streams_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![Ok(text_reply("hello there"))]);
    let mut handle = start(dir.path(), model.clone(), Options::default());
    let first = handle.next_event().await.unwrap();
    assert!(matches!(
        first,
        Event::SessionConfigured {
            resumed_messages: 0,
            ..
        }
    ));
    let (events, end, stats) = run_turn(&mut handle, "hi", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    let streamed: String = events
        .iter()
        .filter_map(|e| {
            if let Event::TextDelta { text } = e {
                Some(text.as_str())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(streamed, "hello there");
    assert_eq!(stats.model_calls, 1);
    assert_eq!(
        stats.tokens.total_tokens, 15,
        "total filled in as input + output"
    );
    let seen = model.main_requests();
    assert_eq!(seen[0].messages[0].role, Role::System);
    assert_eq!(seen[0].messages[1], Message::user("hi"));
    assert_eq!(seen[0].tools, crate::support::agent::builtin_tools());
}

#[tokio::test]
async fn approved_bash_call_runs_and_result_goes_back_to_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Ok(bash("c1", "echo ran > marker.txt; echo done")),
        Ok(text_reply("finished")),
    ]);
    let mut handle = start(dir.path(), model.clone(), Options::default());
    let (events, end, stats) = run_turn(&mut handle, "make a marker", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(dir.path().join("marker.txt").exists());
    assert_eq!(stats.tool_calls, 1);
    assert_eq!(stats.model_calls, 2);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { .. }))
    );
    let second = &model.main_requests()[1].messages;
    let result = second.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.tool_call_id.as_deref(), Some("c1"));
    assert!(
        result.text().contains("done"),
        "tool output reaches the model: {}",
        result.text()
    );
}

#[tokio::test]
async fn a_call_is_announced_with_the_kind_and_paths_its_tool_declares() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let model = Fake::new(vec![
        Ok(tool_reply(&[
            ("c1", "read", r#"{"path":"a.txt"}"#),
            ("c2", "bash", r#"{"command":"true"}"#),
            ("c3", "search", r#"{"pattern":"alpha","path":"."}"#),
            ("c4", "no_such_tool", r#"{"path":"b.txt"}"#),
        ])),
        Ok(text_reply("looked")),
    ]);
    let mut handle = start(dir.path(), model, Options::default());
    let (events, end, _) = run_turn(&mut handle, "look", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    let began: Vec<(String, ToolKind, Vec<String>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallBegan {
                call, kind, paths, ..
            } => Some((call.clone(), *kind, paths.clone())),
            _ => None,
        })
        .collect();
    let owned = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        began,
        [
            ("c1".to_string(), ToolKind::Read, owned(&["a.txt"])),
            ("c2".to_string(), ToolKind::Execute, Vec::new()),
            ("c3".to_string(), ToolKind::Search, owned(&["."])),
            // An unknown tool declares nothing.
            ("c4".to_string(), ToolKind::Other, Vec::new()),
        ]
    );
    // stream-json and the daemon carry them beside the call's name.
    let line = serde_json::to_value(
        events
            .iter()
            .find(|e| matches!(e, Event::ToolCallBegan { .. }))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["kind"], "read");
    assert_eq!(line["paths"], serde_json::json!(["a.txt"]));
}

#[tokio::test]
async fn a_file_change_is_announced_with_what_it_writes_as_its_tool_read_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let model = Fake::new(vec![
        Ok(tool_reply(&[
            ("c1", "read", r#"{"path":"a.txt"}"#),
            (
                "c2",
                "edit",
                r#"{"path":"a.txt","old_string":"alpha","new_string":"beta"}"#,
            ),
            ("c3", "write", r#"{"path":"b.txt","content":"gamma\n"}"#),
            ("c4", "edit", r#"{"path":"a.txt","old_string":1}"#),
        ])),
        Ok(text_reply("changed")),
    ]);
    let mut handle = start(dir.path(), model, Options::default());
    let (events, end, _) = run_turn(&mut handle, "change", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    let changes: Vec<Option<Change>> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallBegan { change, .. } => Some(change.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        [
            None,
            Some(Change::Replace {
                old: "alpha".into(),
                new: "beta".into()
            }),
            Some(Change::Whole {
                text: "gamma\n".into()
            }),
            // Arguments its tool refuses preview nothing.
            None,
        ]
    );
}

#[tokio::test]
async fn refused_call_runs_nothing_and_tells_model_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Ok(bash("c1", "touch should-not-exist")),
        Ok(text_reply("ok")),
    ]);
    let mut handle = start(dir.path(), model.clone(), Options::default());
    let (events, end, _) = run_turn(&mut handle, "try", |_| {
        Some(Decision::Deny {
            reason: Some("not today".into()),
        })
    })
    .await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(!dir.path().join("should-not-exist").exists());
    assert_eq!(tool_results(&events)[0].0, ToolStatus::Denied);
    let result = model.main_requests()[1]
        .messages
        .last()
        .unwrap()
        .text()
        .to_string();
    assert!(
        result.contains("denied") && result.contains("not today"),
        "{result}"
    );
}

#[tokio::test]
async fn approve_always_skips_later_prompts_its_rule_covers() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Ok(bash("c1", "echo one")),
        Ok(bash("c2", "echo one more")),
        Ok(text_reply("ok")),
    ]);
    let mut handle = start(dir.path(), model, Options::default());
    let mut asked = 0;
    let (events, end, _) = run_turn(&mut handle, "go", |_| {
        asked += 1;
        Some(Decision::ApproveTool)
    })
    .await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(asked, 1);
    assert_eq!(tool_results(&events).len(), 2);
}

fn write(id: &str, path: &str) -> minicode::provider::Reply {
    tool_reply(&[(
        id,
        "write",
        &serde_json::json!({ "path": path, "content": "x\n" }).to_string(),
    )])
}

#[tokio::test]
async fn protected_paths_are_asked_every_time_even_after_always() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(".git", dir.path().join("innocent")).unwrap();
    let model = Fake::new(vec![
        Ok(write("c1", "notes.txt")),
        Ok(write("c2", ".git/hooks/pre-commit")),
        Ok(write("c3", "./.git/../.git/config")),
        Ok(write("c4", "innocent/description")),
        Ok(write("c5", "config/config.toml")),
        Ok(write("c6", ".minicode/sessions/planted.json")),
        Ok(write("c7", ".minicode/memory/topic.md")),
        Ok(write("c8", "more-notes.txt")),
        Ok(text_reply("ok")),
    ]);
    let mut handle = start(dir.path(), model, Options::default());
    let mut asked = 0;
    let (events, end, _) = run_turn(&mut handle, "go", |_| {
        asked += 1;
        Some(if asked == 1 {
            Decision::ApproveTool
        } else {
            Decision::Deny { reason: None }
        })
    })
    .await;
    assert_eq!(end, TurnEnd::Completed);
    let asked_for: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested { call, .. } => Some(call.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked_for, ["c1", "c2", "c3", "c4", "c5", "c6"]);
    let statuses: Vec<ToolStatus> = tool_results(&events).iter().map(|r| r.0).collect();
    use ToolStatus::{Denied, Succeeded};
    assert_eq!(
        statuses,
        [
            Succeeded, Denied, Denied, Denied, Denied, Denied, Succeeded, Succeeded
        ],
        "memory and ordinary files stay covered by always"
    );
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert!(!dir.path().join(".git/config").exists());
    let warned = events
        .iter()
        .filter(|e| matches!(e, Event::Warning { message } if message.contains("asking again")))
        .count();
    assert_eq!(warned, 5, "each re-ask says why");
}

#[tokio::test]
async fn auto_approve_still_asks_for_protected_paths_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Ok(write("c1", ".git/config")),
        Ok(write("c2", "plain.txt")),
        Ok(text_reply("ok")),
    ]);
    let options = Options {
        auto_approve: true,
        ..Options::default()
    };
    let mut handle = start(dir.path(), model, options);
    let (events, end, _) =
        run_turn(&mut handle, "go", |_| Some(Decision::Deny { reason: None })).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(!dir.path().join(".git/config").exists());
    assert!(dir.path().join("plain.txt").exists());
    let asked_for: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested { call, .. } => Some(call.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked_for, ["c1"], "only the protected path is asked");
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("asking although --yes was given: .git/config (")
            && warnings[0].contains("is protected (inside a .git folder"),
        "{}",
        warnings[0]
    );
}

#[tokio::test]
async fn auto_approve_runs_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![Ok(bash("c1", "echo hi")), Ok(text_reply("ok"))]);
    let options = Options {
        auto_approve: true,
        ..Options::default()
    };
    let mut handle = start(dir.path(), model, options);
    let (events, end, _) = run_turn(&mut handle, "go", |_| panic!("must not ask")).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { .. }))
    );
    assert_eq!(tool_results(&events)[0].0, ToolStatus::Succeeded);
}

#[tokio::test]
async fn two_calls_in_one_reply_get_results_in_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Ok(tool_reply(&[
            ("a", "bash", r#"{"command":"echo first"}"#),
            ("b", "bash", r#"{"command":"echo second"}"#),
        ])),
        Ok(text_reply("ok")),
    ]);
    let mut handle = start(
        dir.path(),
        model.clone(),
        Options {
            auto_approve: true,
            ..Options::default()
        },
    );
    run_turn(&mut handle, "go", approve_all).await;
    let messages = &model.main_requests()[1].messages;
    let ids: Vec<_> = messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(ids, ["a", "b"]);
}

#[tokio::test]
async fn invalid_arguments_are_rejected_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let calls = [
        ("a", "bash", r#"{"cmd":"touch nope"}"#),
        ("b", "nosuchtool", "{}"),
        ("c", "bash", "not json"),
    ];
    // Broken JSON is asked for once more without streaming (same answer here) before the
    // calls are answered.
    let model = Fake::new(vec![
        Ok(tool_reply(&calls)),
        Ok(tool_reply(&calls)),
        Ok(text_reply("ok")),
    ]);
    let mut handle = start(
        dir.path(),
        model,
        Options {
            auto_approve: true,
            ..Options::default()
        },
    );
    let (events, end, _) = run_turn(&mut handle, "go", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 3);
    assert!(
        results.iter().all(|(s, _)| *s == ToolStatus::Rejected),
        "{results:?}"
    );
    assert!(results[1].1.contains("unknown tool"));
    assert!(!dir.path().join("nope").exists());
}

#[tokio::test]
async fn round_limit_asks_for_summary_without_tools_and_fails_turn() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![text_reply("here is my summary")]).with_endless_tool("true");
    let options = Options {
        max_rounds: 3,
        auto_approve: true,
        ..Options::default()
    };
    let mut handle = start(dir.path(), model.clone(), options);
    let (events, end, stats) = run_turn(&mut handle, "loop forever", approve_all).await;
    assert_eq!(end, TurnEnd::RoundLimit { rounds: 3 });
    assert!(!end.is_success());
    assert_eq!(stats.model_calls, 4, "3 tool rounds + 1 summary");
    let seen = model.main_requests();
    assert_eq!(
        seen.last().unwrap().tools,
        0,
        "the summary request offers no tools"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::AssistantMessage { text } if text == "here is my summary"))
    );
}

#[tokio::test]
async fn failed_stream_adds_nothing_and_session_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Answer::FailAfter(
            "partial".into(),
            ProviderError::Protocol("stream ended before [DONE]".into()),
        ),
        Answer::Reply(text_reply("second try works")),
    ]);
    let mut handle = start(dir.path(), model.clone(), Options::default());
    let (_, end, _) = run_turn(&mut handle, "first", approve_all).await;
    assert!(
        matches!(end, TurnEnd::Failed { ref error } if error.contains("[DONE]")),
        "{end:?}"
    );
    let (_, end, _) = run_turn(&mut handle, "second", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    let messages = &model.main_requests()[1].messages;
    assert!(
        messages.iter().all(|m| m.text() != "partial"),
        "nothing half-finished kept"
    );
    // The failed turn left no reply; the request bridges the two prompts with a marked
    // placeholder so strict chat templates still see alternating roles.
    let replies: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.text())
        .collect();
    assert_eq!(replies, [minicode::agent::context::NO_REPLY.text()]);
}

#[tokio::test]
async fn interrupt_while_waiting_for_approval_keeps_history_valid() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Ok(tool_reply(&[
            ("a", "bash", r#"{"command":"touch one"}"#),
            ("b", "bash", r#"{"command":"touch two"}"#),
        ])),
        Ok(text_reply("after")),
    ]);
    let mut handle = start(dir.path(), model.clone(), Options::default());
    let sender = handle.sender();
    let (_, end, _) = run_turn(&mut handle, "go", move |_| {
        sender.send(Op::Interrupt);
        None
    })
    .await;
    assert_eq!(end, TurnEnd::Interrupted);
    assert!(!dir.path().join("one").exists() && !dir.path().join("two").exists());
    let (_, end, _) = run_turn(&mut handle, "continue", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    let messages = &model.main_requests()[1].messages;
    let answered: Vec<_> = messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(
        answered,
        ["a", "b"],
        "every call answered even when interrupted"
    );
}

#[tokio::test]
async fn interrupt_kills_running_command_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let started_file = dir.path().join("started");
    let model = Fake::new(vec![
        Ok(bash("a", "touch started && sleep 30")),
        Ok(text_reply("after")),
    ]);
    let mut handle = start(
        dir.path(),
        model,
        Options {
            auto_approve: true,
            ..Options::default()
        },
    );
    handle.send(Op::Submit("go".into()));
    let started = std::time::Instant::now();
    loop {
        match handle.next_event().await.unwrap() {
            Event::ToolCallBegan { .. } => {
                // Interrupt once the command really runs, not while it is being spawned.
                assert!(
                    wait_until(Duration::from_secs(30), || started_file.exists()).await,
                    "the command never started"
                );
                handle.send(Op::Interrupt);
            }
            Event::TurnEnded { end, .. } => {
                assert_eq!(end, TurnEnd::Interrupted);
                break;
            }
            _ => {}
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "interrupt took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn usage_missing_from_some_replies_is_marked_partial() {
    let dir = tempfile::tempdir().unwrap();
    let mut no_usage = bash("a", "true");
    no_usage.usage = None;
    let model = Fake::new(vec![Ok(no_usage), Ok(text_reply("ok"))]);
    let mut handle = start(
        dir.path(),
        model,
        Options {
            auto_approve: true,
            ..Options::default()
        },
    );
    let (_, _, stats) = run_turn(&mut handle, "go", approve_all).await;
    assert!(stats.tokens.partial());
    assert_eq!(stats.tokens.total_tokens, 15);
}

#[tokio::test]
async fn session_file_holds_history_after_turn_and_shutdown_completes() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![Ok(text_reply("saved reply"))]);
    let mut handle = start(dir.path(), model, Options::default());
    let Event::SessionConfigured {
        session_path,
        session_id,
        ..
    } = handle.next_event().await.unwrap()
    else {
        panic!("first event must configure the session");
    };
    run_turn(&mut handle, "remember me", approve_all).await;
    handle.send(Op::Shutdown);
    while let Some(event) = handle.next_event().await {
        if event == Event::ShutdownComplete {
            break;
        }
    }
    // The snapshot and the journal the saves after it appended to.
    let journal = Path::new(&session_path).with_extension("journal");
    let text = std::fs::read_to_string(&session_path).unwrap()
        + &std::fs::read_to_string(journal).unwrap_or_default();
    assert!(text.contains("remember me") && text.contains("saved reply"));
    assert!(
        !text.contains("You are minicode"),
        "the system prompt is not stored"
    );
    let workspace = dir.path().canonicalize().unwrap();
    let resumed = Session::open(&workspace, &session_id).unwrap();
    assert_eq!(resumed.messages().len(), 2);
}

#[tokio::test]
async fn session_without_messages_leaves_no_file_after_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let mut handle = start(dir.path(), Fake::default(), Options::default());
    let Event::SessionConfigured { session_path, .. } = handle.next_event().await.unwrap() else {
        panic!("first event must configure the session");
    };
    assert!(Path::new(&session_path).exists(), "created at once");
    handle.send(Op::Shutdown);
    while let Some(event) = handle.next_event().await {
        if event == Event::ShutdownComplete {
            break;
        }
    }
    assert!(
        !Path::new(&session_path).exists(),
        "an unused session is removed"
    );
}

#[tokio::test]
async fn repeated_or_missing_call_ids_are_made_unique_and_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        Ok(tool_reply(&[
            ("dup", "bash", r#"{"command":"echo a"}"#),
            ("dup", "bash", r#"{"command":"echo b"}"#),
            ("", "bash", r#"{"command":"echo c"}"#),
        ])),
        Ok(text_reply("ok")),
        Ok(text_reply("still fine")),
    ]);
    let options = Options {
        auto_approve: true,
        ..Options::default()
    };
    let mut handle = start(dir.path(), model.clone(), options);
    let (events, end, _) = run_turn(&mut handle, "go", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(tool_results(&events).len(), 3);
    let (_, end, _) = run_turn(&mut handle, "again", approve_all).await;
    assert_eq!(end, TurnEnd::Completed, "later requests still validate");
    let messages = &model.main_requests()[1].messages;
    let ids: Vec<_> = messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[0] == "dup" && ids[1] != "dup" && !ids[2].is_empty() && ids[1] != ids[2]);
}

#[tokio::test]
async fn an_exchange_far_larger_than_the_window_fails_locally_instead_of_being_sent() {
    let dir = tempfile::tempdir().unwrap();
    let content = "lorem ipsum dolor sit amet ".repeat(2_600);
    let args = serde_json::json!({ "path": "big.txt", "content": content }).to_string();
    let model = Fake::new(vec![
        Ok(tool_reply(&[("w", "write", &args)])),
        Ok(text_reply("never asked")),
    ]);
    let options = Options {
        context_window: 4096,
        auto_approve: true,
        ..Options::default()
    };
    let mut handle = start(dir.path(), model.clone(), options);
    let (_, end, _) = run_turn(&mut handle, "write a big file", approve_all).await;
    match end {
        TurnEnd::Failed { error } => assert!(error.contains("too large"), "{error}"),
        other => panic!("expected a local failure, got {other:?}"),
    }
    let main_requests = model.main_requests().iter().filter(|s| s.tools > 0).count();
    assert_eq!(main_requests, 1, "the oversized request was never sent");
}

#[tokio::test]
async fn clear_forgets_which_files_were_read_so_edit_needs_a_fresh_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
    let edit = |id: &str, from: &str, to: &str| {
        let args = serde_json::json!({"path": "notes.txt", "old_string": from, "new_string": to});
        Ok(tool_reply(&[(id, "edit", &args.to_string())]))
    };
    let model = Fake::new(vec![
        Ok(tool_reply(&[("r1", "read", r#"{"path":"notes.txt"}"#)])),
        Ok(text_reply("read it")),
        edit("e1", "alpha", "beta"),
        Ok(text_reply("edited")),
        edit("e2", "beta", "gamma"),
        Ok(text_reply("tried")),
    ]);
    let mut handle = start(dir.path(), model, Options::default());
    run_turn(&mut handle, "read notes", approve_all).await;
    let (events, _, _) = run_turn(&mut handle, "edit notes", approve_all).await;
    assert_eq!(
        tool_results(&events)[0].0,
        ToolStatus::Succeeded,
        "read earlier"
    );

    handle.send(Op::NewSession);
    crate::support::events::until(&mut handle, |e| {
        matches!(e, Event::SessionConfigured { .. })
    })
    .await;
    let (events, _, _) = run_turn(&mut handle, "edit again", approve_all).await;
    let results = tool_results(&events);
    assert_eq!(
        results[0].0,
        ToolStatus::Rejected,
        "refused before approval"
    );
    assert!(
        results[0].1.contains("has not been read in this session"),
        "{}",
        results[0].1
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "beta\n"
    );
}

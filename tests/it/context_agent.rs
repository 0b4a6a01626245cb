//! Context management inside the agent loop, through ops and events with a scripted model:
//! automatic compaction, overflow recovery without re-running tools, `/compact`, memory
//! loading, reload after a write, and memory errors failing the turn.

use std::path::Path;

use crate::support::events::{turn, until};
use crate::support::fake::{Fake, Request, text_reply as text};
use minicode::agent::Options;
use minicode::agent::budget::MIN_REPLY_TOKENS;
use minicode::chat::{Message, ToolCall};
use minicode::protocol::AgentHandle;
use minicode::protocol::{Decision, Event, Op, TurnEnd};
use minicode::provider::{FinishReason, ProviderError, Reply};

fn call(id: &str, name: &str, args: serde_json::Value) -> Reply {
    Reply {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        finish_reason: Some(FinishReason::ToolCalls),
        ..Reply::default()
    }
}

fn start(dir: &Path, fake: Fake, window: u64) -> AgentHandle {
    start_with(dir, fake, window, Options::default().max_rounds)
}

fn start_with(dir: &Path, fake: Fake, window: u64, max_rounds: u32) -> AgentHandle {
    start_options(
        dir,
        fake,
        Options {
            context_window: window,
            auto_approve: true,
            max_rounds,
            ..Options::default()
        },
    )
}

fn start_options(dir: &Path, fake: Fake, options: Options) -> AgentHandle {
    crate::support::agent::spawn(dir, fake, options)
}

/// (max_tokens, estimated input) of each request.
fn sizes(requests: &[Request]) -> Vec<(u32, u64)> {
    requests
        .iter()
        .map(|r| (r.max_tokens, r.estimate))
        .collect()
}

const FIRST: &str = "First request: port the parser to Rust.\nKeep the public API unchanged.";

#[tokio::test]
async fn overflow_is_compacted_and_retried_once_without_rerunning_tools() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![
        Ok(call(
            "c1",
            "bash",
            serde_json::json!({"command": "echo ran-once"}),
        )),
        Ok(text(&"a".repeat(10_000))),
        Err(ProviderError::ContextLength {
            message: "too long".into(),
            window: Some(6000),
        }),
        Ok(text("done")),
    ])
    .with_summaries(vec![text("## Goal\nport the parser")]);
    let mut handle = start(dir.path(), fake.clone(), 8192);
    let (events, end, _) = turn(&mut handle, FIRST).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ToolCallEnded { .. }))
            .count(),
        1
    );
    let (events, end, stats) = turn(&mut handle, "second").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolCallEnded { .. })),
        "tools re-ran"
    );
    let compacted = events.iter().find_map(|e| match e {
        Event::Compacted {
            messages_summarized,
            tokens_before,
            tokens_after,
        } => Some((*messages_summarized, *tokens_before, *tokens_after)),
        _ => None,
    });
    let (summarized, before, after) = compacted.expect("no Compacted event");
    assert_eq!(summarized, 4);
    assert!(after < before);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Warning { message } if message.contains("6000")))
    );
    assert_eq!(stats.summary_calls, 1);
    assert_eq!(stats.summary_tokens.input_tokens, 10);
    let seen = fake.main_messages();
    assert_eq!(
        seen.len(),
        4,
        "the overflowed request is retried exactly once"
    );
    let retried = &seen[3];
    let ledger = retried
        .iter()
        .find(|m| m.text().contains("<task-ledger>"))
        .expect("no ledger");
    assert!(
        ledger.text().contains(FIRST),
        "first request must be verbatim"
    );
    assert!(ledger.text().contains("## Goal\nport the parser"));
    assert_eq!(retried.last().unwrap().text(), "second");
    assert!(fake.summary_prompts()[0].contains("echo ran-once"));
}

#[tokio::test]
async fn automatic_compaction_runs_before_a_request_that_would_leave_too_little_room() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![Ok(text(&"b".repeat(30_000))), Ok(text("ok"))])
        .with_summaries(vec![text("notes 1"), text("notes 2")]);
    let mut handle = start(dir.path(), fake.clone(), 8192);
    turn(&mut handle, FIRST).await;
    let (events, end, stats) = turn(&mut handle, "next").await;
    assert_eq!(end, TurnEnd::Completed);
    let compacted = events
        .iter()
        .position(|e| matches!(e, Event::Compacted { .. }))
        .unwrap_or_else(|| panic!("not compacted: {events:?}"));
    let request = events
        .iter()
        .position(|e| matches!(e, Event::ModelRequestStarted { .. }))
        .unwrap();
    assert!(
        compacted < request,
        "compaction must happen before the request"
    );
    // The summarised message is larger than one summary call may carry: two chunks.
    assert_eq!(stats.summary_calls, 2);
    assert!(fake.summary_prompts()[1].contains("<previous-notes>\nnotes 1\n</previous-notes>"));
    assert_eq!(stats.model_calls, 1);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ContextUsage { window: 8192, .. }))
    );
    let last = fake.main_messages().pop().unwrap();
    assert!(last.iter().any(|m| m.text().contains(FIRST)));
    assert!(
        !last.iter().any(|m| m.text().contains(&"b".repeat(100))),
        "summarised text was sent"
    );
}

#[tokio::test]
async fn manual_compact_passes_focus_and_reports_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![Ok(text(&"c".repeat(10_000)))]).with_summaries(vec![text("notes")]);
    let mut handle = start(dir.path(), fake.clone(), 8192);
    turn(&mut handle, FIRST).await;
    turn(&mut handle, "small").await;
    handle.send(Op::Compact(Some("the parser API".into())));
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert!(
        matches!(events.first(), Some(Event::TurnStarted { .. })),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{events:?}"
    );
    match events.last() {
        Some(Event::TurnEnded { end, stats, .. }) => {
            assert_eq!(*end, TurnEnd::Completed);
            assert_eq!((stats.model_calls, stats.summary_calls), (0, 1));
            assert_eq!(stats.summary_tokens.input_tokens, 10);
        }
        other => panic!("expected the end of the compaction, got {other:?}"),
    }
    assert!(fake.summary_prompts()[0].contains("<focus>\nthe parser API\n</focus>"));
}

#[tokio::test]
async fn failed_manual_compact_is_reported_and_keeps_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let truncated = Reply {
        text: "partial".into(),
        finish_reason: Some(FinishReason::Length),
        ..Reply::default()
    };
    let fake = Fake::new(vec![
        Ok(text(&"c".repeat(10_000))),
        Ok(text("x")),
        Ok(text("y")),
    ])
    .with_summaries(vec![truncated]);
    let mut handle = start(dir.path(), fake.clone(), 8192);
    turn(&mut handle, FIRST).await;
    turn(&mut handle, "small").await;
    handle.send(Op::Compact(None));
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert!(!events.iter().any(|e| matches!(e, Event::Compacted { .. })));
    match events.last() {
        Some(Event::TurnEnded {
            end: TurnEnd::Failed { error },
            stats,
            ..
        }) => {
            assert!(error.contains("incomplete"), "{error}");
            assert_eq!(
                stats.summary_calls, 1,
                "a rejected summary call still counts"
            );
        }
        other => panic!("expected a failed compaction, got {other:?}"),
    }
    turn(&mut handle, "after").await;
    let last = fake.main_messages().pop().unwrap();
    assert!(!last.iter().any(|m| m.text().contains("<task-ledger>")));
    assert!(last.iter().any(|m| m.text().contains(&"c".repeat(10_000))));
}

#[tokio::test]
async fn memory_is_injected_after_the_system_prompt_and_reloaded_after_a_write() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MiniCode.md"), "rule: spaces").unwrap();
    let fake = Fake::new(vec![
        Ok(call(
            "w1",
            "write",
            serde_json::json!({"path": "MiniCode.md", "content": "rule: tabs"}),
        )),
        Ok(text("saved")),
    ]);
    let mut handle = start(dir.path(), fake.clone(), 262_144);
    let configured = until(&mut handle, |e| matches!(e, Event::MemoryLoaded { .. })).await;
    assert!(
        matches!(configured.last(), Some(Event::MemoryLoaded { path, tokens }) if path == "MiniCode.md" && *tokens > 0)
    );
    let (events, end, _) = turn(&mut handle, "remember tabs").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::MemoryLoaded { .. })),
        "reload not announced"
    );
    let seen = fake.main_messages();
    assert!(
        seen[0][0].text().contains("Project memory:"),
        "memory rules belong in the system prompt"
    );
    assert!(
        seen[0][1].text().starts_with("<project-memory")
            && seen[0][1].text().contains("rule: spaces")
    );
    assert_eq!(
        seen[1][1], seen[0][1],
        "the memory message sent first stays"
    );
    assert!(
        seen[1].last().unwrap().text().contains("rule: tabs"),
        "the request after the write must carry the new memory in a notice"
    );
}

#[tokio::test]
async fn invalid_memory_fails_the_turn_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![Ok(text("never"))]);
    let mut handle = start(dir.path(), fake.clone(), 262_144);
    std::fs::write(dir.path().join("MiniCode.md"), "bad\0byte").unwrap();
    let (_, end, _) = turn(&mut handle, "hi").await;
    match end {
        TurnEnd::Failed { error } => assert!(
            error.contains("MiniCode.md") && error.contains("nul"),
            "{error}"
        ),
        other => panic!("expected failure, got {other:?}"),
    }
    assert!(
        fake.main_messages().is_empty(),
        "nothing may be sent with a broken memory file"
    );
}

/// The round-limit instruction is the last message of the final summary request.
fn is_round_limit_request(messages: &[Message]) -> bool {
    messages
        .last()
        .is_some_and(|m| m.text().contains("maximum number of tool rounds"))
}

#[tokio::test]
async fn round_limit_summary_request_is_compacted_first_when_room_is_short() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(30_000);
    let fake = Fake::new(vec![
        Ok(call(
            "w1",
            "write",
            serde_json::json!({"path": "big.txt", "content": big}),
        )),
        Ok(text("wrapped up")),
    ])
    .with_summaries(vec![text("## Goal\nport the parser")]);
    let mut handle = start_with(dir.path(), fake.clone(), 8192, 1);
    let (events, end, stats) = turn(&mut handle, FIRST).await;
    assert_eq!(end, TurnEnd::RoundLimit { rounds: 1 }, "{events:?}");
    let compacted = events
        .iter()
        .find_map(|e| match e {
            Event::Compacted {
                messages_summarized,
                ..
            } => Some(*messages_summarized),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the summary request was not compacted: {events:?}"));
    assert_eq!(
        compacted, 1,
        "only the first request lies before the kept batch"
    );
    assert_eq!((stats.model_calls, stats.summary_calls), (2, 1));
    let seen = fake.main_messages();
    assert_eq!(seen.len(), 2);
    let last = &seen[1];
    assert!(is_round_limit_request(last));
    let ledger = last
        .iter()
        .find(|m| m.text().contains("<task-ledger>"))
        .expect("the summary request must carry the compacted context");
    assert!(ledger.text().contains(FIRST));
    assert!(fake.summary_prompts()[0].contains(FIRST));
}

#[tokio::test]
async fn round_limit_summary_request_recovers_from_overflow_once_without_rerunning_tools() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![
        Ok(text(&"a".repeat(10_000))),
        Ok(call(
            "c1",
            "bash",
            serde_json::json!({"command": "echo ran-once"}),
        )),
        Err(ProviderError::ContextLength {
            message: "too long".into(),
            window: None,
        }),
        Ok(text("wrapped up")),
    ])
    .with_summaries(vec![text("## Goal\nport the parser")]);
    let mut handle = start_with(dir.path(), fake.clone(), 8192, 1);
    let (_, end, _) = turn(&mut handle, FIRST).await;
    assert_eq!(end, TurnEnd::Completed);
    let (events, end, stats) = turn(&mut handle, "second").await;
    assert_eq!(end, TurnEnd::RoundLimit { rounds: 1 }, "{events:?}");
    let ran = events
        .iter()
        .filter(|e| matches!(e, Event::ToolCallEnded { .. }))
        .count();
    assert_eq!(ran, 1, "the tool must not run again after the overflow");
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{events:?}"
    );
    assert_eq!((stats.model_calls, stats.summary_calls), (3, 1));
    let seen = fake.main_messages();
    assert_eq!(
        seen.len(),
        4,
        "the overflowed summary request is resent exactly once"
    );
    assert!(is_round_limit_request(&seen[2]) && is_round_limit_request(&seen[3]));
    assert!(seen[3].iter().any(|m| m.text().contains("<task-ledger>")));
    assert!(
        !seen[3].iter().any(|m| m.text().contains(&"a".repeat(100))),
        "summarised text was sent again"
    );
    // The turn's reply is the resent request's answer, and the session stays usable.
    let (_, end, _) = turn(&mut handle, "third").await;
    assert_eq!(end, TurnEnd::Completed);
    let after = fake.main_messages().pop().unwrap();
    assert!(after.iter().any(|m| m.text() == "wrapped up"));
}

#[tokio::test]
async fn round_limit_summary_fails_the_turn_when_the_resend_overflows_again() {
    let dir = tempfile::tempdir().unwrap();
    let overflow = || {
        Err(ProviderError::ContextLength {
            message: "too long".into(),
            window: None,
        })
    };
    let fake = Fake::new(vec![
        Ok(text(&"a".repeat(10_000))),
        Ok(call("c1", "bash", serde_json::json!({"command": "true"}))),
        overflow(),
        overflow(),
    ])
    .with_summaries(vec![text("notes")]);
    let mut handle = start_with(dir.path(), fake.clone(), 8192, 1);
    turn(&mut handle, FIRST).await;
    let (events, end, _) = turn(&mut handle, "second").await;
    match end {
        TurnEnd::Failed { error } => assert!(error.contains("too long"), "{error}"),
        other => panic!("expected failure, got {other:?}: {events:?}"),
    }
    assert_eq!(fake.main_messages().len(), 4, "one resend only");
}

/// A reply without usage, so the budget works from the local estimate alone (which is what
/// the test can recompute).
fn uncounted(t: &str) -> Reply {
    Reply {
        usage: None,
        ..text(t)
    }
}

#[tokio::test]
async fn requests_never_ask_for_more_output_than_the_window_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![
        Ok(uncounted(&"b".repeat(30_000))),
        Ok(uncounted("ok")),
    ])
    .with_summaries(vec![text("notes 1"), text("notes 2")]);
    // The default max_tokens (8192) alone would fill an 8K window.
    let mut handle = start(dir.path(), fake.clone(), 8192);
    turn(&mut handle, FIRST).await;
    let (events, end, _) = turn(&mut handle, "next").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    let main = sizes(&fake.main_requests());
    assert_eq!(main.len(), 2);
    for (max, input) in &main {
        assert!(*max >= MIN_REPLY_TOKENS as u32, "{main:?}");
        assert!(u64::from(*max) + input <= 8192, "{main:?}");
    }
    assert!(main[0].0 < 8192, "the configured value must be cut");
    let summaries = sizes(&fake.summary_requests());
    assert!(!summaries.is_empty());
    for (max, input) in &summaries {
        assert!(u64::from(*max) + input <= 8192, "{summaries:?}");
    }
}

#[tokio::test]
async fn memory_rewritten_by_bash_is_sent_with_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MiniCode.md"), "rule: spaces").unwrap();
    let fake = Fake::new(vec![
        Ok(call(
            "b1",
            "bash",
            serde_json::json!({"command": "printf 'rule: tabs, always' > MiniCode.md"}),
        )),
        Ok(text("saved")),
    ]);
    let mut handle = start(dir.path(), fake.clone(), 262_144);
    let (events, end, _) = turn(&mut handle, "remember tabs").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    let reloaded = events
        .iter()
        .rposition(|e| matches!(e, Event::MemoryLoaded { .. }))
        .expect("reload not announced");
    let tool_ended = events
        .iter()
        .position(|e| matches!(e, Event::ToolCallEnded { .. }))
        .unwrap();
    assert!(tool_ended < reloaded);
    let seen = fake.main_messages();
    assert!(seen[0][1].text().contains("rule: spaces"));
    assert_eq!(
        seen[1][1], seen[0][1],
        "the memory message sent first stays"
    );
    assert!(
        seen[1]
            .last()
            .unwrap()
            .text()
            .contains("rule: tabs, always"),
        "the request after the bash call must carry the new memory in a notice"
    );
}

#[tokio::test]
async fn memory_made_invalid_by_bash_fails_the_turn_before_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MiniCode.md"), "rule: spaces").unwrap();
    let fake = Fake::new(vec![
        Ok(call(
            "b1",
            "bash",
            serde_json::json!({"command": "printf 'bad\\000byte' > MiniCode.md"}),
        )),
        Ok(text("never")),
    ]);
    let mut handle = start(dir.path(), fake.clone(), 262_144);
    let (events, end, _) = turn(&mut handle, "break it").await;
    match end {
        TurnEnd::Failed { error } => assert!(
            error.contains("MiniCode.md") && error.contains("nul"),
            "{error}"
        ),
        other => panic!("expected failure, got {other:?}: {events:?}"),
    }
    assert_eq!(
        fake.main_messages().len(),
        1,
        "nothing sent with a broken memory"
    );
    // Removing the file is noticed as well: no memory, and the session goes on.
    std::fs::remove_file(dir.path().join("MiniCode.md")).unwrap();
    let (_, end, _) = turn(&mut handle, "go on").await;
    assert_eq!(end, TurnEnd::Completed);
    let last = fake.main_messages().pop().unwrap();
    let notice = last[last.len() - 3].text();
    assert!(
        notice.starts_with("<session-notice>") && notice.contains("no longer applies"),
        "{notice}"
    );
}

#[tokio::test]
async fn a_failed_memory_load_leaves_no_unanswered_prompt_in_history() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![Ok(text("answer"))]);
    let mut handle = start(dir.path(), fake.clone(), 262_144);
    std::fs::write(dir.path().join("MiniCode.md"), "x".repeat(70_000)).unwrap();
    let (_, end, _) = turn(&mut handle, "the lost prompt").await;
    assert!(matches!(end, TurnEnd::Failed { .. }), "{end:?}");
    std::fs::write(dir.path().join("MiniCode.md"), "fixed").unwrap();
    let (_, end, _) = turn(&mut handle, "second").await;
    assert_eq!(end, TurnEnd::Completed);
    let seen = fake.main_messages();
    assert_eq!(seen.len(), 1);
    assert!(!seen[0].iter().any(|m| m.text() == "the lost prompt"));
    assert_eq!(seen[0].last().unwrap().text(), "second");
}

#[tokio::test]
async fn deny_then_interrupt_never_starts_another_request() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![
        Ok(call("c1", "bash", serde_json::json!({"command": "true"}))),
        Ok(text("must not be asked")),
    ]);
    let mut handle = start_options(
        dir.path(),
        fake.clone(),
        Options {
            auto_approve: false,
            ..Options::default()
        },
    );
    handle.send(Op::Submit("run it".into()));
    until(&mut handle, |e| {
        matches!(e, Event::ApprovalRequested { .. })
    })
    .await;
    handle.send(Op::Decide {
        call: "c1".into(),
        decision: Decision::Deny { reason: None },
    });
    handle.send(Op::Interrupt);
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    match events.last() {
        Some(Event::TurnEnded { end, .. }) => assert_eq!(*end, TurnEnd::Interrupted),
        _ => unreachable!(),
    }
    assert_eq!(fake.main_messages().len(), 1, "a request started after Esc");
}

#[tokio::test]
async fn context_usage_is_reported_at_start_and_after_compaction_and_clear_keeps_the_server_window()
{
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MiniCode.md"), "rule: spaces").unwrap();
    let fake = Fake::new(vec![
        Ok(text(&"a".repeat(10_000))),
        Err(ProviderError::ContextLength {
            message: "too long".into(),
            window: Some(6000),
        }),
        Ok(text("done")),
    ])
    .with_summaries(vec![text("notes")]);
    let mut handle = start(dir.path(), fake.clone(), 8192);
    let start_events = until(&mut handle, |e| matches!(e, Event::ContextUsage { .. })).await;
    assert!(matches!(start_events[0], Event::SessionConfigured { .. }));
    match start_events.last() {
        Some(Event::ContextUsage { tokens, window }) => {
            assert_eq!(*window, 8192);
            assert!(*tokens > 0, "system prompt, memory and tools count");
        }
        _ => unreachable!(),
    }
    turn(&mut handle, FIRST).await;
    let (events, end, _) = turn(&mut handle, "second").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    let compacted = events
        .iter()
        .position(|e| matches!(e, Event::Compacted { .. }))
        .expect("overflow not compacted");
    assert!(
        matches!(
            events.get(compacted + 1),
            Some(Event::ContextUsage { window: 6000, .. })
        ),
        "{events:?}"
    );
    handle.send(Op::NewSession);
    let events = until(&mut handle, |e| matches!(e, Event::ContextUsage { .. })).await;
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::SessionConfigured {
                context_window: 6000,
                ..
            }
        )),
        "{events:?}"
    );
    assert!(matches!(
        events.last(),
        Some(Event::ContextUsage { window: 6000, .. })
    ));
}

#[tokio::test]
async fn manual_compact_summarises_all_but_the_latest_exchange_of_a_short_session() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![
        Ok(text("answer one")),
        Ok(text("answer two")),
        Ok(text("three")),
    ])
    .with_summaries(vec![text("## Goal\nnotes of one")]);
    let mut handle = start(dir.path(), fake.clone(), 262_144);
    turn(&mut handle, FIRST).await;
    turn(&mut handle, "second request").await;
    handle.send(Op::Compact(None));
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    let summarized = events.iter().find_map(|e| match e {
        Event::Compacted {
            messages_summarized,
            ..
        } => Some(*messages_summarized),
        _ => None,
    });
    assert_eq!(summarized, Some(2), "{events:?}");
    assert!(fake.summary_prompts()[0].contains("answer one"));
    assert!(!fake.summary_prompts()[0].contains("answer two"));
    turn(&mut handle, "third request").await;
    let last = fake.main_messages().pop().unwrap();
    let texts: Vec<&str> = last.iter().map(|m| m.text()).collect();
    assert!(texts[1].contains("<task-ledger>") && texts[1].contains(FIRST));
    assert!(texts[1].contains("notes of one"));
    assert!(!texts.contains(&"answer one"), "summarised text was sent");
    assert_eq!(
        texts[2],
        minicode::agent::context::ACKNOWLEDGED.text(),
        "user messages alternate with assistant ones"
    );
    assert_eq!(
        texts[3..],
        ["second request", "answer two", "third request"]
    );
}

#[tokio::test]
async fn duplicate_call_ids_are_renamed_so_the_history_saves() {
    let dir = tempfile::tempdir().unwrap();
    let twice = Reply {
        tool_calls: ["c1", "c1"]
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                name: "bash".into(),
                arguments: "{\"command\":\"true\"}".into(),
            })
            .collect(),
        finish_reason: Some(FinishReason::ToolCalls),
        ..Reply::default()
    };
    let fake = Fake::new(vec![Ok(twice)]);
    let mut handle = start(dir.path(), fake.clone(), 262_144);
    let configured = until(&mut handle, |e| {
        matches!(e, Event::SessionConfigured { .. })
    })
    .await;
    let Some(Event::SessionConfigured { session_path, .. }) = configured.last() else {
        unreachable!()
    };
    let session_path = session_path.clone();
    let (events, _, _) = turn(&mut handle, "go").await;
    assert!(
        !events.iter().any(|e| matches!(e, Event::Warning { .. })),
        "{events:?}"
    );
    let saved = std::fs::read_to_string(&session_path).unwrap();
    assert!(
        saved.contains("\"c1\"") && saved.contains("\"c1_2\""),
        "{saved}"
    );
}

#[tokio::test]
async fn pre_compact_hooks_run_before_an_automatic_compaction_too() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new(vec![Ok(text(&"b".repeat(30_000))), Ok(text("ok"))])
        .with_summaries(vec![text("notes 1"), text("notes 2")]);
    let hook = minicode::hooks::Hook {
        event: minicode::hooks::HookEvent::PreCompact,
        matcher: None,
        command: "cat > pre-compact.json".into(),
        timeout: std::time::Duration::from_secs(30),
        origin: dir.path().join("config.toml"),
        from_workspace: false,
        max_blocks: minicode::hooks::DEFAULT_STOP_MAX_BLOCKS,
        unconfined: false,
    };
    let options = Options {
        context_window: 8192,
        auto_approve: true,
        hooks: std::sync::Arc::new(vec![hook]),
        ..Options::default()
    };
    let mut handle = start_options(dir.path(), fake, options);
    let (events, _, _) = turn(&mut handle, FIRST).await;
    assert!(
        !events.iter().any(|e| matches!(e, Event::Hook { .. })),
        "no compaction, no hook: {events:?}"
    );
    let (events, end, _) = turn(&mut handle, "next").await;
    assert_eq!(end, TurnEnd::Completed);
    let ran = events
        .iter()
        .position(|e| matches!(e, Event::Hook { event, .. } if *event == minicode::hooks::HookEvent::PreCompact))
        .unwrap_or_else(|| panic!("no PreCompact run: {events:?}"));
    let compacted = events
        .iter()
        .position(|e| matches!(e, Event::Compacted { .. }))
        .unwrap();
    assert!(ran < compacted, "the hook runs before compaction");
    let input: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("pre-compact.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "auto");
}

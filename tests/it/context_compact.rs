//! Compaction (`agent::compact`) against a scripted fake model: what the summariser receives,
//! which summaries are accepted, chunking, cancellation, and the task ledger across successive
//! compactions with a resume in between.

use crate::support::fake::{Answer, Fake};
use minicode::agent::budget::Budget;
use minicode::agent::compact::{CompactError, CompactRequest, compact, transcript};
use minicode::agent::context::Context;
use minicode::chat::estimate_text;
use minicode::chat::{Message, Role, ToolCall, Usage};
use minicode::protocol::TurnStats;
use minicode::provider::{FinishReason, ProviderError, Reply};
use minicode::session::{Checkpoint, Session};
use tokio_util::sync::CancellationToken;

fn summary(text: &str) -> Answer {
    Answer::Reply(Reply {
        text: text.to_string(),
        tool_calls: vec![],
        finish_reason: Some(FinishReason::Stop),
        usage: Some(Usage::new(100, 20, 0)),
        ..Reply::default()
    })
}

fn request(keep: u64, input_budget: u64) -> CompactRequest<'static> {
    CompactRequest {
        instructions: None,
        keep_recent_tokens: keep,
        input_budget,
        max_tokens: 1000,
        window: 1_000_000,
        latest_exchange_only: false,
    }
}

/// A user request, a tool batch and an answer, each carrying a fact.
/// One compaction with a fresh cancel token and throw-away stats.
async fn compact_once(
    fake: &Fake,
    messages: &[Message],
    previous: Option<&Checkpoint>,
    req: &CompactRequest<'_>,
) -> Result<minicode::agent::compact::CompactOutcome, CompactError> {
    compact(
        fake,
        messages,
        previous,
        req,
        &CancellationToken::new(),
        &mut TurnStats::default(),
    )
    .await
}

fn exchange(messages: &mut Vec<Message>, fact: &str) {
    let id = format!("call_{}", messages.len());
    messages.push(Message::user(format!("please handle {fact}")));
    messages.push(Message::assistant(
        None,
        vec![ToolCall {
            id: id.clone(),
            name: "bash".into(),
            arguments: format!("{{\"command\":\"grep {fact} src\"}}"),
        }],
    ));
    messages.push(Message::tool_result(
        &id,
        format!("output about {fact}: {}", "x".repeat(400)),
    ));
    messages.push(Message::assistant(Some(format!("handled {fact}")), vec![]));
}

#[tokio::test]
async fn compact_summarises_everything_before_the_kept_part_without_tools() {
    let mut messages = Vec::new();
    for fact in ["alpha", "beta", "gamma", "delta"] {
        exchange(&mut messages, fact);
    }
    let fake = Fake::summaries_only(vec![summary("## Goal\nalpha to delta")]);
    let mut stats = TurnStats::default();
    let out = compact(
        &fake,
        &messages,
        None,
        &request(150, 100_000),
        &CancellationToken::new(),
        &mut stats,
    )
    .await
    .unwrap();
    assert_eq!(out.checkpoint.first_kept_index, 12);
    assert_eq!(out.checkpoint.summary, "## Goal\nalpha to delta");
    assert_eq!(out.messages_summarized, 12);
    assert_eq!((out.summary_calls, out.chunks), (1, 1));
    assert_eq!(stats.summary_calls, 1);
    assert_eq!(stats.summary_tokens.input_tokens, 100);
    assert_eq!(stats.model_calls, 0, "summary calls are not main calls");
    let seen = fake.summary_requests();
    assert_eq!(seen[0].tools, 0);
    assert_eq!(seen[0].max_tokens, 1000);
    assert_eq!(seen[0].messages[0].role, Role::System);
    let prompt = seen[0].prompt();
    for wanted in [
        "please handle alpha",
        "grep gamma src",
        "call_4",
        "output about gamma",
        "## Next steps",
    ] {
        assert!(prompt.contains(wanted), "prompt lacks {wanted:?}");
    }
    assert!(
        !prompt.contains("please handle delta"),
        "kept messages must not be summarised"
    );
    assert!(!prompt.contains("<previous-notes>"));
}

#[tokio::test]
async fn compact_passes_focus_instructions_to_the_summariser() {
    let mut messages = Vec::new();
    for fact in ["alpha", "beta"] {
        exchange(&mut messages, fact);
    }
    let fake = Fake::summaries_only(vec![summary("notes")]);
    let req = CompactRequest {
        instructions: Some("the database schema"),
        ..request(10, 100_000)
    };
    compact_once(&fake, &messages, None, &req).await.unwrap();
    assert!(
        fake.summary_requests()[0]
            .prompt()
            .contains("<focus>\nthe database schema\n</focus>")
    );
}

#[tokio::test]
async fn compact_with_nothing_before_the_kept_part_is_refused() {
    let mut messages = Vec::new();
    exchange(&mut messages, "alpha");
    let fake = Fake::summaries_only(vec![]);
    let err = compact_once(&fake, &messages, None, &request(100_000, 100_000))
        .await
        .unwrap_err();
    assert!(matches!(err, CompactError::NothingToCompact));
    assert!(fake.summary_requests().is_empty());
}

#[tokio::test]
async fn compact_refuses_an_invalid_history_before_calling_the_model() {
    let messages = vec![Message::user("hi"), Message::tool_result("nope", "x")];
    let fake = Fake::summaries_only(vec![]);
    let err = compact_once(&fake, &messages, None, &request(1, 100_000))
        .await
        .unwrap_err();
    assert!(matches!(err, CompactError::Invalid(_)), "{err:?}");
    assert!(fake.summary_requests().is_empty());
}

async fn rejected(reply: Reply) -> (CompactError, TurnStats) {
    let mut messages = Vec::new();
    for fact in ["alpha", "beta", "gamma"] {
        exchange(&mut messages, fact);
    }
    let fake = Fake::summaries_only(vec![Answer::Reply(reply)]);
    let mut stats = TurnStats::default();
    let previous = Checkpoint {
        summary: "old notes".into(),
        first_kept_index: 4,
    };
    let mut ctx = Context::new("sys", &[]);
    ctx.set_checkpoint(Some(previous.clone()), &messages)
        .unwrap();
    let result = compact(
        &fake,
        &messages,
        Some(&previous),
        &request(10, 100_000),
        &CancellationToken::new(),
        &mut stats,
    )
    .await;
    let err = result.unwrap_err();
    // The caller keeps its checkpoint: nothing was adopted.
    assert_eq!(ctx.checkpoint(), Some(&previous));
    (err, stats)
}

#[tokio::test]
async fn truncated_summary_keeps_the_old_checkpoint() {
    let reply = Reply {
        text: "## Goal\npartial".into(),
        finish_reason: Some(FinishReason::Length),
        ..Reply::default()
    };
    let (err, stats) = rejected(reply).await;
    assert!(err.to_string().contains("incomplete"), "{err}");
    assert_eq!(stats.summary_calls, 1, "a rejected call still counts");
}

#[tokio::test]
async fn empty_summary_keeps_the_old_checkpoint() {
    let reply = Reply {
        text: "  \n".into(),
        finish_reason: Some(FinishReason::Stop),
        ..Reply::default()
    };
    let (err, _) = rejected(reply).await;
    assert!(err.to_string().contains("empty"), "{err}");
}

#[tokio::test]
async fn summary_with_a_tool_call_is_rejected() {
    let reply = Reply {
        text: "notes".into(),
        tool_calls: vec![ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }],
        finish_reason: Some(FinishReason::Stop),
        ..Reply::default()
    };
    let (err, _) = rejected(reply).await;
    assert!(err.to_string().contains("tool"), "{err}");
}

#[tokio::test]
async fn summary_without_finish_reason_is_rejected() {
    let reply = Reply {
        text: "notes".into(),
        ..Reply::default()
    };
    let (err, _) = rejected(reply).await;
    assert!(matches!(err, CompactError::Rejected { .. }));
}

#[tokio::test]
async fn failed_summary_request_is_reported_with_its_cause() {
    let mut messages = Vec::new();
    for fact in ["alpha", "beta"] {
        exchange(&mut messages, fact);
    }
    let fake = Fake::summaries_only(vec![Answer::Fail(ProviderError::Network("reset".into()))]);
    let mut stats = TurnStats::default();
    let err = compact(
        &fake,
        &messages,
        None,
        &request(10, 100_000),
        &CancellationToken::new(),
        &mut stats,
    )
    .await
    .unwrap_err();
    assert!(matches!(
        err,
        CompactError::Provider(ProviderError::Network(_))
    ));
    assert!(std::error::Error::source(&err).is_some());
    assert_eq!(stats.summary_calls, 1);
}

#[tokio::test]
async fn cancellation_ends_compaction_promptly() {
    let mut messages = Vec::new();
    for fact in ["alpha", "beta"] {
        exchange(&mut messages, fact);
    }
    let fake = Fake::summaries_only(vec![Answer::Hang]);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let task = tokio::spawn(async move {
        compact(
            &fake,
            &messages,
            None,
            &request(10, 100_000),
            &cancel,
            &mut TurnStats::default(),
        )
        .await
    });
    trigger.cancel();
    let result = tokio::time::timeout(std::time::Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(result, Err(CompactError::Cancelled)));
}

#[tokio::test]
async fn large_history_is_chunked_and_folded_without_dropping_anything() {
    let mut messages = Vec::new();
    for i in 0..40 {
        exchange(&mut messages, &format!("fact{i:02}"));
    }
    let fake = Fake::summaries_only(
        (0..200)
            .map(|i| summary(&format!("notes after part {i}")))
            .collect(),
    );
    let budget = 2000;
    let out = compact_once(&fake, &messages, None, &request(200, budget))
        .await
        .unwrap();
    let seen = fake.summary_requests();
    assert!(
        out.chunks > 3,
        "expected several chunks, got {}",
        out.chunks
    );
    assert_eq!(seen.len() as u32, out.chunks);
    // Every call fits the summariser's budget, and each folds in the notes of the previous one.
    let mut conversation = String::new();
    for (i, call) in seen.iter().enumerate() {
        let total: u64 = call.messages.iter().map(|m| estimate_text(m.text())).sum();
        assert!(total <= budget, "call {i} carries {total} tokens");
        let prompt = call.prompt();
        if i > 0 {
            assert!(prompt.contains(&format!("<previous-notes>\nnotes after part {}\n", i - 1)));
        }
        let start = prompt.find("<conversation>\n").unwrap() + "<conversation>\n".len();
        let end = prompt.rfind("\n</conversation>").unwrap();
        conversation.push_str(&prompt[start..end]);
    }
    let boundary = out.checkpoint.first_kept_index;
    assert_eq!(
        conversation,
        transcript(&messages[..boundary], 0),
        "chunks reassemble the whole history"
    );
    assert_eq!(
        out.checkpoint.summary,
        format!("notes after part {}", out.chunks - 1)
    );
}

#[tokio::test]
async fn context_length_error_on_a_summary_call_shrinks_the_chunk() {
    let mut messages = Vec::new();
    for i in 0..10 {
        exchange(&mut messages, &format!("fact{i}"));
    }
    let fake = Fake::summaries_only(vec![
        Answer::Fail(ProviderError::ContextLength {
            message: "too long".into(),
            window: None,
        }),
        summary("a"),
        summary("b"),
        summary("c"),
        summary("d"),
    ]);
    let mut stats = TurnStats::default();
    let out = compact(
        &fake,
        &messages,
        None,
        &request(200, 100_000),
        &CancellationToken::new(),
        &mut stats,
    )
    .await
    .unwrap();
    let seen = fake.summary_requests();
    assert!(seen.len() >= 3);
    assert!(seen[1].prompt().len() < seen[0].prompt().len());
    assert_eq!(stats.summary_calls as usize, seen.len());
    assert_eq!(out.summary_calls as usize, seen.len());
}

#[tokio::test]
async fn ledger_survives_three_compactions_with_a_resume_in_between() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let first_request =
        "Build a CLI named `frob` in Rust.\nConstraint: no unsafe code, edition 2024.";
    let budget = Budget::new(8192, Some(1024), Some(100)).unwrap();
    let mut session = Session::create(&workspace).unwrap();
    let id = session.id().to_string();
    session.push(Message::user(first_request));
    session.push(Message::assistant(Some("starting".into()), vec![]));
    let facts = [
        ["src/main.rs created", "cargo test fails: E0308"],
        ["E0308 fixed in parse.rs", "tests pass"],
        ["renamed flag --out to --output", "README not yet updated"],
    ];
    let fake = Fake::summaries_only(vec![]);
    for (round, pair) in facts.iter().enumerate() {
        for fact in pair {
            let mut more = Vec::new();
            exchange(&mut more, fact);
            for m in more {
                session.push(m);
            }
        }
        session.push(Message::user(format!("latest instruction {round}")));
        session.push(Message::assistant(Some(format!("ack {round}")), vec![]));
        let previous = session.checkpoint().cloned();
        let notes = format!("notes v{round}: {}", pair.join("; "));
        fake.push_summary(summary(&notes));
        let mut stats = TurnStats::default();
        let out = compact(
            &fake,
            session.messages(),
            previous.as_ref(),
            &CompactRequest::new(&budget, None),
            &CancellationToken::new(),
            &mut stats,
        )
        .await
        .unwrap();
        // What the summariser received: the previous summary and the new facts.
        let seen = fake.summary_requests();
        let prompt = seen.last().unwrap().prompt().to_string();
        for fact in pair {
            assert!(
                prompt.contains(fact),
                "round {round}: summariser did not see {fact:?}"
            );
        }
        match &previous {
            Some(p) => assert!(prompt.contains(&format!(
                "<previous-notes>\n{}\n</previous-notes>",
                p.summary
            ))),
            None => assert!(!prompt.contains("<previous-notes>")),
        }
        // Adopt, save, and resume from disk before the next round.
        let mut ctx = Context::new("sys", &[]);
        ctx.set_checkpoint(previous, session.messages()).unwrap();
        ctx.adopt(out.checkpoint.clone(), session.messages())
            .unwrap();
        session.set_checkpoint(Some(out.checkpoint));
        session.save().unwrap();
        drop(session);
        session = Session::open(&workspace, &id).unwrap();
        let mut resumed = Context::new("sys", &[]);
        resumed
            .set_checkpoint(session.checkpoint().cloned(), session.messages())
            .unwrap();
        let built = resumed.build(session.messages());
        minicode::agent::validate::messages(&built).unwrap();
        let ledger = built[1].text();
        assert!(
            ledger.contains(first_request),
            "round {round}: first request not verbatim"
        );
        assert!(ledger.contains(&notes));
        let all: Vec<&str> = built.iter().map(|m| m.text()).collect();
        assert!(
            all.iter()
                .any(|t| t.contains(&format!("latest instruction {round}")))
        );
        assert_eq!(
            ctx.build(session.messages())
                .iter()
                .map(|m| m.text())
                .collect::<Vec<_>>(),
            all,
            "resume rebuilds exactly the compacted context"
        );
    }
    assert_eq!(fake.summary_requests().len(), 3);
}

#[tokio::test]
async fn manual_compaction_keeps_only_the_latest_exchange() {
    let mut messages = Vec::new();
    for fact in ["alpha", "beta", "gamma"] {
        exchange(&mut messages, fact);
    }
    let fake = Fake::summaries_only(vec![summary("notes")]);
    // keep_recent alone would keep everything: nothing to compact.
    let automatic = compact_once(&fake, &messages, None, &request(1_000_000, 100_000)).await;
    assert!(matches!(automatic, Err(CompactError::NothingToCompact)));
    let manual = CompactRequest {
        latest_exchange_only: true,
        ..request(1_000_000, 100_000)
    };
    let out = compact_once(&fake, &messages, None, &manual).await.unwrap();
    let latest = messages.iter().rposition(|m| m.role == Role::User).unwrap();
    assert_eq!(out.checkpoint.first_kept_index, latest);
    assert_eq!(out.messages_summarized, latest);
    let prompt = fake.summary_requests()[0].prompt().to_string();
    assert!(prompt.contains("alpha") && prompt.contains("beta") && !prompt.contains("gamma"));
}

#[tokio::test]
async fn summary_calls_ask_for_no_more_output_than_the_window_leaves() {
    let mut messages = Vec::new();
    for fact in ["alpha", "beta"] {
        exchange(&mut messages, fact);
    }
    let fake = Fake::summaries_only(vec![summary("notes")]);
    let req = CompactRequest {
        window: 1800,
        max_tokens: 8192,
        ..request(10, 100_000)
    };
    compact_once(&fake, &messages, None, &req).await.unwrap();
    let seen = &fake.summary_requests()[0];
    let input: u64 = seen
        .messages
        .iter()
        .map(|m| estimate_text(m.text()) + 4)
        .sum();
    assert!(seen.max_tokens >= 256 && seen.max_tokens < 8192);
    assert!(
        u64::from(seen.max_tokens) + input <= 1800,
        "{} + {input}",
        seen.max_tokens
    );
}

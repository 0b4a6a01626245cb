//! Token estimates, the budget (`agent::budget`), the keep boundary and request assembly
//! (`agent::context`).

use minicode::agent::budget::{
    Budget, BudgetError, DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS, MIN_REPLY_TOKENS,
    Tracker,
};
use minicode::agent::context::{Context, ContextError, keep_boundary};
use minicode::chat::{Message, Role, ToolCall, ToolSpec, Usage};
use minicode::chat::{estimate_message, estimate_text, estimate_tools, split_at_budget};
use minicode::memory::Memory;
use minicode::session::Checkpoint;

fn call(id: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: "bash".to_string(),
        arguments: args.to_string(),
    }
}

fn text_of(tokens: u64) -> String {
    "abcd".repeat(tokens as usize)
}

#[test]
fn estimate_counts_four_ascii_chars_per_token() {
    assert_eq!(estimate_text(""), 0);
    assert_eq!(estimate_text("abcd"), 1);
    assert_eq!(estimate_text("abcde"), 2);
    assert_eq!(estimate_text(&"x".repeat(4000)), 1000);
}

#[test]
fn estimate_counts_one_token_per_cjk_char() {
    assert_eq!(estimate_text("你好世界"), 4);
    assert_eq!(estimate_text("こんにちは"), 5);
    assert_eq!(estimate_text("한국어"), 3);
    // Mixed: 4 ASCII (1 token) + 2 ideographs (2 tokens).
    assert_eq!(estimate_text("abcd中文"), 3);
    // Other scripts weigh half a token per character.
    assert_eq!(estimate_text("привет"), 3);
}

#[test]
fn estimate_message_counts_tool_call_arguments_and_ids() {
    let plain = Message::assistant(Some(String::new()), vec![]);
    let args = format!("{{\"command\":\"{}\"}}", "x".repeat(400));
    let with_call = Message::assistant(None, vec![call("call_1", &args)]);
    assert!(estimate_message(&with_call) >= estimate_message(&plain) + 100);
    let result = Message::tool_result("call_1", "y".repeat(400));
    assert!(estimate_message(&result) >= 100);
}

#[test]
fn estimate_tools_counts_declarations() {
    let spec = ToolSpec {
        name: "bash".into(),
        description: "run a command".into(),
        parameters: serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    };
    let one = estimate_tools(std::slice::from_ref(&spec));
    assert!(one > 10);
    assert_eq!(estimate_tools(&[spec.clone(), spec]), one * 2);
    assert_eq!(estimate_tools(&[]), 0);
}

#[test]
fn split_at_budget_cuts_at_char_boundaries_and_keeps_everything() {
    let text = "中文字符".repeat(100) + &"ab\n".repeat(50);
    let mut rest = text.as_str();
    let mut parts = Vec::new();
    while !rest.is_empty() {
        let (head, tail) = split_at_budget(rest, 37);
        assert!(!head.is_empty());
        assert!(estimate_text(head) <= 37, "chunk over budget");
        parts.push(head);
        rest = tail;
    }
    assert!(parts.len() > 10);
    assert_eq!(parts.concat(), text);
}

#[test]
fn split_at_budget_prefers_a_line_break() {
    let text = format!("{}\n{}", "a".repeat(30), "b".repeat(30));
    let (head, tail) = split_at_budget(&text, 10);
    assert_eq!(head, format!("{}\n", "a".repeat(30)));
    assert_eq!(tail, "b".repeat(30));
}

#[test]
fn split_at_budget_always_makes_progress() {
    let (head, tail) = split_at_budget("中文", 0);
    assert_eq!(head, "中");
    assert_eq!(tail, "文");
}

#[test]
fn budget_defaults_for_a_large_window() {
    let b = Budget::new(262_144, None, None).unwrap();
    assert_eq!(b.reserve, DEFAULT_RESERVE_TOKENS);
    assert_eq!(b.keep_recent, DEFAULT_KEEP_RECENT_TOKENS);
}

#[test]
fn budget_scales_down_for_small_windows() {
    let b = Budget::new(8192, None, None).unwrap();
    assert_eq!(b.reserve, 1024);
    assert_eq!(b.keep_recent, 2048);
    let b = Budget::new(32_768, None, None).unwrap();
    assert_eq!(b.reserve, 4096);
    assert_eq!(b.keep_recent, 8192);
    assert!(b.summary_input_budget() + u64::from(b.summary_max_tokens()) < b.window);
}

#[test]
fn budget_honours_explicit_values() {
    let b = Budget::new(100_000, Some(5000), Some(7000)).unwrap();
    assert_eq!((b.reserve, b.keep_recent), (5000, 7000));
}

#[test]
fn budget_refuses_configurations_that_cannot_work() {
    assert!(matches!(
        Budget::new(1000, None, None),
        Err(BudgetError::WindowTooSmall { .. })
    ));
    assert!(matches!(
        Budget::new(8192, Some(4096), None),
        Err(BudgetError::ReserveTooLarge { .. })
    ));
    assert!(matches!(
        Budget::new(8192, Some(1000), Some(7192)),
        Err(BudgetError::KeepTooLarge { .. })
    ));
    let message = Budget::new(8192, Some(4096), None).unwrap_err().to_string();
    assert!(message.contains("reserve_tokens 4096"), "{message}");
}

#[test]
fn budget_adopts_a_stated_window_and_rescales() {
    let b = Budget::new(262_144, None, None)
        .unwrap()
        .with_window(16_384);
    assert_eq!(b.window, 16_384);
    assert_eq!(b.reserve, 2048);
    assert_eq!(b.keep_recent, 4096);
    let explicit = Budget::new(262_144, Some(30_000), Some(50_000))
        .unwrap()
        .with_window(16_384);
    assert!(explicit.reserve <= 8192 && explicit.reserve + explicit.keep_recent < 16_384);
}

#[test]
fn compaction_triggers_only_when_remaining_falls_below_reserve() {
    let b = Budget::new(10_000, Some(1000), Some(2000)).unwrap();
    assert!(
        !b.should_compact(9000),
        "exactly the reserve left must not trigger"
    );
    assert!(b.should_compact(9001));
    assert!(!b.should_compact(0));
    assert_eq!(b.remaining(9001), 999);
}

#[test]
fn tracker_calibrates_with_real_usage_and_adds_the_growth() {
    let mut t = Tracker::default();
    assert_eq!(t.current(500), 500);
    t.calibrate(1000, Some(Usage::new(1300, 10, 0)));
    assert!(t.is_calibrated());
    assert_eq!(t.current(1000), 1300);
    assert_eq!(t.current(1100), 1400);
    assert_eq!(t.current(900), 1200);
    // A reply without usage keeps the last calibration.
    t.calibrate(2000, None);
    assert_eq!(t.current(1000), 1300);
    t.reset();
    assert_eq!(t.current(1000), 1000);
}

fn exchange(n: usize, size: u64) -> Vec<Message> {
    let mut messages = Vec::new();
    for i in 0..n {
        messages.push(Message::user(format!("request {i} {}", text_of(size))));
        let id = format!("call_{i}");
        messages.push(Message::assistant(
            None,
            vec![call(&id, "{\"command\":\"ls\"}")],
        ));
        messages.push(Message::tool_result(&id, text_of(size)));
        messages.push(Message::assistant(Some(format!("done {i}")), vec![]));
    }
    messages
}

#[test]
fn keep_boundary_never_splits_a_tool_batch() {
    // One assistant message with three calls and three large results at the end.
    let mut messages = exchange(3, 50);
    messages.push(Message::user("go"));
    let calls: Vec<ToolCall> = (0..3).map(|i| call(&format!("b{i}"), "{}")).collect();
    messages.push(Message::assistant(None, calls));
    for i in 0..3 {
        messages.push(Message::tool_result(format!("b{i}"), text_of(100)));
    }
    for keep in [1, 50, 120, 250, 400, 10_000] {
        let at = keep_boundary(&messages, keep);
        assert!(at < messages.len());
        assert_ne!(
            messages[at].role,
            Role::Tool,
            "keep {keep} split a batch at {at}"
        );
    }
}

#[test]
fn keep_boundary_keeps_at_least_the_latest_unit_even_if_larger() {
    let mut messages = exchange(2, 10);
    messages.push(Message::assistant(None, vec![call("big", "{}")]));
    messages.push(Message::tool_result("big", text_of(5000)));
    assert_eq!(keep_boundary(&messages, 100), messages.len() - 2);
    let single = vec![Message::user(text_of(5000))];
    assert_eq!(keep_boundary(&single, 10), 0);
    assert_eq!(keep_boundary(&[], 10), 0);
}

#[test]
fn keep_boundary_keeps_about_the_recent_budget() {
    let messages: Vec<Message> = (0..100)
        .map(|i| Message::user(format!("{i:04}{}", text_of(99))))
        .collect();
    let per = estimate_message(&messages[0]);
    let at = keep_boundary(&messages, per * 10);
    assert_eq!(at, 90);
    let at = keep_boundary(&messages, per * 10 + per / 2);
    assert_eq!(at, 90, "a partial unit over the budget is not kept");
    assert_eq!(keep_boundary(&messages, u64::MAX), 0);
}

#[test]
fn context_builds_system_memory_ledger_then_kept_messages() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MiniCode.md"), "use tabs").unwrap();
    let memory: Memory = minicode::memory::load(dir.path()).unwrap().unwrap();
    let messages = exchange(5, 10);
    let mut ctx = Context::new("system rules", &[]);
    ctx.set_memory(Some(&memory));
    ctx.set_checkpoint(
        Some(Checkpoint {
            summary: "notes".into(),
            first_kept_index: 8,
        }),
        &messages,
    )
    .unwrap();
    let built = ctx.build(&messages);
    // system, lead, the assistant's acknowledgement, then the kept messages.
    assert_eq!(built.len(), 3 + messages.len() - 8);
    assert_eq!(built[0].role, Role::System);
    assert_eq!(built[0].text(), "system rules");
    // Memory and ledger travel in one user message: strict chat templates refuse two user
    // messages in a row.
    assert_eq!(built[1].role, Role::User);
    let lead = built[1].text();
    assert!(lead.starts_with("<project-memory"));
    assert!(lead.contains("use tabs"));
    assert!(lead.find("</project-memory>") < lead.find("<task-ledger>"));
    assert!(lead.contains(messages[0].text()), "first request verbatim");
    assert!(
        lead.contains(&format!(
            "<last-compacted-user-message>\n{}\n</last-compacted-user-message>",
            messages[4].text()
        )),
        "the last user message of the compacted part is quoted"
    );
    assert!(lead.contains("<summary>\nnotes\n</summary>"));
    assert_eq!(
        built[2].role,
        Role::Assistant,
        "user messages alternate with assistant ones"
    );
    assert!(std::ptr::eq(built[3], &messages[8]));
    minicode::agent::validate::messages(&built).unwrap();
}

#[test]
fn ledger_stays_the_same_when_messages_are_appended_after_a_compaction() {
    // The kept part (from 9) is the tail of exchange 2: no user message in it.
    let mut messages = exchange(3, 10);
    let cp = Checkpoint {
        summary: "notes".into(),
        first_kept_index: 9,
    };
    let mut ctx = Context::new("sys", &[]);
    ctx.set_checkpoint(Some(cp.clone()), &messages).unwrap();
    let ledger = ctx.build(&messages)[1].text().to_string();
    assert!(ledger.contains(&format!(
        "<last-compacted-user-message>\n{}\n</last-compacted-user-message>",
        messages[8].text()
    )));
    assert!(!ledger.contains(messages[4].text()), "only the latest");
    // A newer user message joins the kept part: the ledger sent before it stays byte for byte
    // (a local server's prompt cache keeps serving it).
    messages.push(Message::user("a new instruction"));
    ctx.sync(&messages);
    let built = ctx.build(&messages);
    assert_eq!(built[1].text(), ledger);
    assert_eq!(built.last().unwrap().text(), "a new instruction");
    let sum: u64 = built.iter().map(|m| estimate_message(m)).sum();
    assert_eq!(ctx.estimated_tokens(), sum);
    // A resume from the same history builds the same context.
    let mut resumed = Context::new("sys", &[]);
    resumed.set_checkpoint(Some(cp), &messages).unwrap();
    assert_eq!(resumed.build(&messages)[1].text(), built[1].text());
}

#[test]
fn reply_room_is_cut_to_the_window_but_never_below_the_floor() {
    let b = Budget::new(8192, None, None).unwrap();
    assert_eq!(b.reply_tokens(1000, 8192), 7192);
    assert_eq!(b.reply_tokens(1000, 4096), 4096, "a smaller setting wins");
    assert_eq!(b.reply_tokens(8100, 8192), MIN_REPLY_TOKENS as u32);
    assert_eq!(b.reply_tokens(9000, 8192), MIN_REPLY_TOKENS as u32);
    assert_eq!(b.reply_tokens(1000, 0), 0, "0 leaves it to the server");
}

#[test]
fn a_small_explicit_reserve_still_compacts_before_the_reply_floor() {
    let b = Budget::new(8192, Some(100), None).unwrap();
    assert!(!b.should_compact(8192 - MIN_REPLY_TOKENS));
    assert!(b.should_compact(8192 - MIN_REPLY_TOKENS + 1));
}

#[test]
fn context_without_checkpoint_sends_the_whole_history() {
    let messages = exchange(3, 10);
    let mut ctx = Context::new("sys", &[]);
    ctx.sync(&messages);
    let built = ctx.build(&messages);
    assert_eq!(built.len(), messages.len() + 1);
    assert_eq!(ctx.first_kept_index(), 0);
    let expected: u64 = built.iter().map(|m| estimate_message(m)).sum();
    assert_eq!(ctx.estimated_tokens(), expected);
}

#[test]
fn context_estimate_follows_appends_memory_and_checkpoints() {
    let spec = ToolSpec {
        name: "read".into(),
        description: "read a file".into(),
        parameters: serde_json::json!({}),
    };
    let mut messages = exchange(4, 20);
    let mut ctx = Context::new("sys", std::slice::from_ref(&spec));
    ctx.sync(&messages);
    let tools = estimate_tools(&[spec]);
    let sum = |ms: &[&Message]| ms.iter().map(|m| estimate_message(m)).sum::<u64>();
    assert_eq!(ctx.estimated_tokens(), sum(&ctx.build(&messages)) + tools);
    messages.push(Message::user(text_of(500)));
    ctx.sync(&messages);
    assert_eq!(ctx.estimated_tokens(), sum(&ctx.build(&messages)) + tools);
    ctx.set_checkpoint(
        Some(Checkpoint {
            summary: "s".into(),
            first_kept_index: 12,
        }),
        &messages,
    )
    .unwrap();
    assert_eq!(ctx.estimated_tokens(), sum(&ctx.build(&messages)) + tools);
    assert_eq!(
        ctx.keep_boundary(&messages, 10),
        keep_boundary(&messages, 10)
    );
}

#[test]
fn context_calibration_is_dropped_when_a_checkpoint_is_adopted() {
    let messages = exchange(10, 50);
    let mut ctx = Context::new("sys", &[]);
    ctx.sync(&messages);
    let sent = ctx.estimated_tokens();
    ctx.calibrate(sent, Some(Usage::new(sent * 2, 5, 0)));
    assert_eq!(ctx.used_tokens(), sent * 2);
    assert!(sent * 2 >= 2048, "history too small for the test: {sent}");
    let budget = Budget::new(sent * 2, Some(sent / 2), Some(100)).unwrap();
    assert!(ctx.needs_compaction(&budget));
    let adopted = ctx
        .adopt(
            Checkpoint {
                summary: "short".into(),
                first_kept_index: 36,
            },
            &messages,
        )
        .unwrap();
    assert_eq!(adopted.tokens_before, sent * 2);
    assert!(adopted.tokens_after < sent);
    assert!(!ctx.tracker().is_calibrated());
    // The report scales the new estimate by the calibration the old context had (2x here),
    // so before and after compare on one scale; the live figure starts uncalibrated.
    assert_eq!(adopted.tokens_after, ctx.estimated_tokens() * 2);
    assert_eq!(ctx.used_tokens(), ctx.estimated_tokens());
}

#[test]
fn context_refuses_a_checkpoint_that_does_not_fit_the_history() {
    let messages = exchange(2, 5);
    let mut ctx = Context::new("sys", &[]);
    let beyond = Checkpoint {
        summary: "s".into(),
        first_kept_index: 99,
    };
    assert!(matches!(
        ctx.set_checkpoint(Some(beyond), &messages),
        Err(ContextError::CheckpointBeyondHistory { index: 99, len: 8 })
    ));
    let split = Checkpoint {
        summary: "s".into(),
        first_kept_index: 2,
    };
    assert!(matches!(
        ctx.set_checkpoint(Some(split), &messages),
        Err(ContextError::CheckpointSplitsBatch { index: 2 })
    ));
    let empty = Checkpoint {
        summary: " ".into(),
        first_kept_index: 4,
    };
    assert!(matches!(
        ctx.set_checkpoint(Some(empty), &messages),
        Err(ContextError::EmptySummary)
    ));
    assert!(ctx.checkpoint().is_none());
}

#[test]
fn ledger_is_the_same_after_more_messages_are_appended() {
    let mut messages = exchange(3, 5);
    let cp = Checkpoint {
        summary: "s".into(),
        first_kept_index: 4,
    };
    let mut a = Context::new("sys", &[]);
    a.set_checkpoint(Some(cp.clone()), &messages).unwrap();
    let before = a.build(&messages)[1].text().to_string();
    messages.push(Message::user("a new instruction"));
    let mut b = Context::new("sys", &[]);
    b.set_checkpoint(Some(cp), &messages).unwrap();
    assert_eq!(b.build(&messages)[1].text(), before);
}

#[test]
fn requests_alternate_user_and_assistant_and_the_estimate_counts_the_fillers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MiniCode.md"), "use tabs").unwrap();
    let memory: Memory = minicode::memory::load(dir.path()).unwrap().unwrap();
    // A failed turn kept its prompt: two user messages in a row in the history.
    let messages = vec![
        Message::user("first try"),
        Message::user("second try"),
        Message::assistant(Some("done".into()), Vec::new()),
        Message::user("thanks"),
    ];
    let mut ctx = Context::new("sys", &[]);
    ctx.set_memory(Some(&memory));
    ctx.sync(&messages);
    let built = ctx.build(&messages);
    for pair in built.windows(2) {
        assert!(
            !(pair[0].role == Role::User && pair[1].role == Role::User),
            "two user messages in a row: {:?}",
            built.iter().map(|m| m.text()).collect::<Vec<_>>()
        );
    }
    let sum: u64 = built.iter().map(|m| estimate_message(m)).sum();
    assert_eq!(ctx.estimated_tokens(), sum);
    // After a checkpoint that cuts between the two prompts, the count still matches.
    ctx.set_checkpoint(
        Some(Checkpoint {
            summary: "s".into(),
            first_kept_index: 1,
        }),
        &messages,
    )
    .unwrap();
    let built = ctx.build(&messages);
    let sum: u64 = built.iter().map(|m| estimate_message(m)).sum();
    assert_eq!(ctx.estimated_tokens(), sum);
    minicode::agent::validate::messages(&built).unwrap();
}

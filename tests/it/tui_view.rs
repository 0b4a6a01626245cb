//! View and update of the full-screen session as pure functions: agent events and keys are fed
//! into `State::update`, the state is rendered into ratatui's `TestBackend`, and the screen is
//! compared with insta snapshots or checked for specific content.

use crate::support::screen::text as screen;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use minicode::chat::{ApprovalRequest, ToolStatus};
use minicode::protocol::{Decision, Event, HistoryEntry, Op, TokenStats, TurnEnd, TurnStats};
use minicode::tui::state::{Effect, Msg, State};
use minicode::tui::transcript::Scroll;
use minicode::tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn state(w: u16, h: u16) -> State {
    let mut s = State::new("test-model", 100_000);
    // The approval guard has its own tests (tui_approval_guard); here keys answer at once.
    s.approval_guard = Duration::ZERO;
    s.update(Msg::Resize(w, h));
    s.update(Msg::Agent(Event::SessionConfigured {
        session_id: "0123456789abcdef".into(),
        session_path: "/w/.minicode/sessions/0123456789abcdef.json".into(),
        model: "test-model".into(),
        context_window: 100_000,
        resumed_messages: 0,
    }));
    s
}

fn rows(s: &State) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(s.size.0, s.size.1)).unwrap();
    term.draw(|f| view::render(s, f)).unwrap();
    let buf = term.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            // A wide character covers the next cell too: skip it so rows read as text.
            let mut row = String::new();
            let mut x = 0;
            while x < buf.area.width {
                let sym = buf[(x, y)].symbol();
                row.push_str(sym);
                x += (unicode_width::UnicodeWidthStr::width(sym) as u16).max(1);
            }
            row
        })
        .collect()
}

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn ctrl(s: &mut State, c: char) -> Vec<Effect> {
    s.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

fn type_text(s: &mut State, text: &str) {
    for c in text.chars() {
        key(s, KeyCode::Char(c));
    }
}

fn ev(s: &mut State, e: Event) -> Vec<Effect> {
    s.update(Msg::Agent(e))
}

fn stats() -> TurnStats {
    TurnStats {
        wall: Duration::from_millis(1500),
        model_calls: 2,
        tool_calls: 1,
        tokens: TokenStats {
            input_tokens: 1200,
            output_tokens: 34,
            total_tokens: 1234,
            replies_with_usage: 2,
            replies_without_usage: 0,
            ..TokenStats::default()
        },
        ..TurnStats::default()
    }
}

fn start_turn(s: &mut State, prompt: &str) {
    type_text(s, prompt);
    let effects = key(s, KeyCode::Enter);
    assert_eq!(effects, vec![Effect::Op(Op::Submit(prompt.into()))]);
    ev(s, Event::TurnStarted { turn: 1 });
    ev(s, Event::ModelRequestStarted { round: 1 });
}

fn end_turn(s: &mut State) -> Vec<Effect> {
    ev(
        s,
        Event::TurnEnded {
            turn: 1,
            end: TurnEnd::Completed,
            stats: Box::new(stats()),
        },
    )
}

fn stream(s: &mut State, text: &str, chunk: usize) {
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(chunk) {
        ev(
            s,
            Event::TextDelta {
                text: piece.iter().collect(),
            },
        );
    }
}

const MARKDOWN: &str = "# Plan\n\nSome **bold** and *italic* text with `code`.\n\n1. first\n2. second\n   - nested\n\n> quoted\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 22 |\n";

#[test]
fn empty_session_shows_placeholder_and_status() {
    let s = state(60, 12);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn streamed_markdown_renders_while_arriving() {
    let mut s = state(60, 30);
    start_turn(&mut s, "show me markdown");
    let half = MARKDOWN.len() / 2;
    stream(&mut s, &MARKDOWN[..half], 4);
    let partial = rows(&s).join("\n");
    assert!(partial.contains("Plan"), "{partial}");
    assert!(partial.contains("streaming"), "{partial}");
    stream(&mut s, &MARKDOWN[half..], 4);
    ev(
        &mut s,
        Event::AssistantMessage {
            text: MARKDOWN.into(),
        },
    );
    end_turn(&mut s);
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn tool_call_shows_summary_and_folded_output() {
    let mut s = state(60, 20);
    start_turn(&mut s, "list files");
    let call = "call_1".to_string();
    ev(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: call.clone(),
            tool: "bash".into(),
            summary: "ls -la".into(),
            arguments: serde_json::json!({"command": "ls -la"}),
            change: None,
        },
    );
    assert!(rows(&s).join("\n").contains("running bash"));
    let output = (1..=10)
        .map(|i| format!("file{i}"))
        .collect::<Vec<_>>()
        .join("\n");
    ev(
        &mut s,
        Event::ToolCallEnded {
            call,
            status: ToolStatus::Succeeded,
            output,
        },
    );
    end_turn(&mut s);
    insta::assert_snapshot!(screen(&s));
    ctrl(&mut s, 'o');
    let expanded = rows(&s).join("\n");
    assert!(expanded.contains("file10"), "{expanded}");
}

#[test]
fn approval_with_diff_is_shown_and_answered_with_keys() {
    let mut s = state(70, 22);
    start_turn(&mut s, "fix it");
    let call = "call_9".to_string();
    ev(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: call.clone(),
            tool: "edit".into(),
            summary: "src/lib.rs".into(),
            arguments: serde_json::json!({}),
            change: None,
        },
    );
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn b() { todo!() }\n";
    ev(
        &mut s,
        Event::ApprovalRequested {
            call: call.clone(),
            tool: "edit".into(),
            request: ApprovalRequest::Diff {
                path: "src/lib.rs".into(),
                diff: diff.into(),
            },
            always: Some("edit".into()),
        },
    );
    insta::assert_snapshot!(screen(&s));
    // Scrolling works while the approval waits.
    assert!(key(&mut s, KeyCode::PageUp).is_empty());
    let effects = key(&mut s, KeyCode::Char('y'));
    assert_eq!(
        effects,
        vec![Effect::Op(Op::Decide {
            call: call.clone(),
            decision: Decision::Approve
        })]
    );
    ev(
        &mut s,
        Event::ApprovalDecided {
            call: call.clone(),
            decision: Decision::Approve,
        },
    );
    assert!(s.approval.is_none());
    assert!(rows(&s).join("\n").contains("approved"));
}

#[test]
fn approval_always_and_deny_with_reason() {
    let mut s = state(70, 22);
    start_turn(&mut s, "run");
    request_bash_approval(&mut s, "c1", "make");
    assert!(rows(&s).join("\n").contains("$ make"));
    assert_eq!(
        key(&mut s, KeyCode::Char('a')),
        vec![Effect::Op(Op::Decide {
            call: "c1".into(),
            decision: Decision::ApproveTool
        })]
    );
    // A reason for the next call: `r`, type, Enter.
    request_bash_approval(&mut s, "c2", "make");
    assert!(key(&mut s, KeyCode::Char('r')).is_empty());
    type_text(&mut s, "not now");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::Decide {
            call: "c2".into(),
            decision: Decision::Deny {
                reason: Some("not now".into())
            }
        })]
    );
}

fn request_bash_approval(s: &mut State, call: &str, command: &str) {
    ev(
        s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: call.into(),
            tool: "bash".into(),
            summary: command.into(),
            arguments: serde_json::json!({}),
            change: None,
        },
    );
    ev(
        s,
        Event::ApprovalRequested {
            call: call.into(),
            tool: "bash".into(),
            request: ApprovalRequest::Command {
                command: command.into(),
            },
            always: None,
        },
    );
}

#[test]
fn escape_during_approval_sends_only_an_interrupt() {
    let mut s = state(70, 22);
    start_turn(&mut s, "run");
    request_bash_approval(&mut s, "c1", "rm -rf x");
    // One op: the core answers the waiting call as not run; a separate Decide could race it.
    assert_eq!(key(&mut s, KeyCode::Esc), vec![Effect::Op(Op::Interrupt)]);
    assert!(s.approval.is_none());
    assert!(
        key(&mut s, KeyCode::Char('y')).is_empty(),
        "no answer after the interrupt"
    );
    s.draft.clear();
    ev(
        &mut s,
        Event::TurnEnded {
            turn: 1,
            end: TurnEnd::Interrupted,
            stats: Box::new(stats()),
        },
    );
    let text = rows(&s).join("\n");
    assert!(text.contains("interrupted (approve bash?)"), "{text}");
}

#[test]
fn approval_letters_are_text_while_the_draft_is_not_empty() {
    let mut s = state(80, 22);
    start_turn(&mut s, "run");
    request_bash_approval(&mut s, "c1", "make");
    type_text(&mut s, "try another way");
    assert_eq!(
        s.draft.text(),
        "try another way",
        "y/a/n/r went to the draft"
    );
    assert!(s.approval.is_some(), "the approval still waits");
    assert!(
        rows(&s).join("\n").contains("empty the draft to answer"),
        "{}",
        rows(&s).join("\n")
    );
    // Typing a reason: letters are text too.
    ctrl(&mut s, 'u');
    assert!(key(&mut s, KeyCode::Char('r')).is_empty());
    type_text(&mut s, "any");
    assert_eq!(s.draft.text(), "any");
    key(&mut s, KeyCode::Esc);
    // Back from the reason, with an empty draft a letter answers.
    assert_eq!(
        key(&mut s, KeyCode::Char('n')),
        vec![Effect::Op(Op::Decide {
            call: "c1".into(),
            decision: Decision::Deny { reason: None }
        })]
    );
}

#[test]
fn queued_prompt_is_shown_and_sent_when_the_turn_ends() {
    let mut s = state(60, 20);
    start_turn(&mut s, "first");
    stream(&mut s, "working on it", 3);
    type_text(&mut s, "second");
    assert!(
        key(&mut s, KeyCode::Enter).is_empty(),
        "a busy session queues"
    );
    insta::assert_snapshot!(screen(&s));
    let effects = end_turn(&mut s);
    assert_eq!(effects, vec![Effect::Op(Op::Submit("second".into()))]);
    assert!(s.queue.is_empty());
}

#[test]
fn queue_pauses_after_an_interrupt_or_failure_and_enter_sends_the_next() {
    for end in [
        TurnEnd::Interrupted,
        TurnEnd::Failed {
            error: "boom".into(),
        },
        TurnEnd::RoundLimit { rounds: 3 },
    ] {
        let mut s = state(60, 20);
        start_turn(&mut s, "first");
        for q in ["second", "third"] {
            type_text(&mut s, q);
            key(&mut s, KeyCode::Enter);
        }
        let effects = ev(
            &mut s,
            Event::TurnEnded {
                turn: 1,
                end: end.clone(),
                stats: Box::new(stats()),
            },
        );
        assert!(effects.is_empty(), "{end:?} must not send the queue");
        assert_eq!(s.queue.len(), 2);
        let text = rows(&s).join("\n");
        assert!(
            text.contains("queue paused — Enter sends the next"),
            "{text}"
        );
        assert_eq!(
            key(&mut s, KeyCode::Enter),
            vec![Effect::Op(Op::Submit("second".into()))]
        );
        assert_eq!(s.queue.len(), 1);
        // The next one is sent by itself once a turn completes.
        ev(&mut s, Event::TurnStarted { turn: 2 });
        assert_eq!(
            end_turn(&mut s),
            vec![Effect::Op(Op::Submit("third".into()))]
        );
    }
}

#[test]
fn queued_prompt_can_be_pulled_back_and_canceled() {
    let mut s = state(60, 20);
    start_turn(&mut s, "first");
    type_text(&mut s, "second");
    key(&mut s, KeyCode::Enter);
    key(&mut s, KeyCode::Up);
    assert_eq!(s.draft.text(), "second");
    assert!(s.queue.is_empty());
    ctrl(&mut s, 'u');
    assert!(end_turn(&mut s).is_empty());
}

#[test]
fn scrolled_up_view_stays_put_and_shows_indicator() {
    let mut s = state(50, 14);
    start_turn(&mut s, "long");
    let long: String = (1..=60).map(|i| format!("line {i}\n\n")).collect();
    stream(&mut s, &long, 7);
    key(&mut s, KeyCode::PageUp);
    assert!(matches!(s.scroll, Scroll::Anchor { .. }));
    let before = rows(&s);
    stream(&mut s, "more text arriving\n\n", 4);
    let after = rows(&s);
    let transcript_rows = 8;
    assert_eq!(
        before[..transcript_rows],
        after[..transcript_rows],
        "new output must not move the view"
    );
    insta::assert_snapshot!(screen(&s));
    // The wheel scrolls by 3 rows; End goes back to the live tail.
    s.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollUp,
        column: 0,
        row: 0,
        modifiers: KeyModifiers::NONE,
    }));
    let Scroll::Anchor { .. } = s.scroll else {
        panic!("still scrolled")
    };
    key(&mut s, KeyCode::End);
    assert_eq!(s.scroll, Scroll::Tail);
    assert!(rows(&s).join("\n").contains("more text arriving"));
}

#[test]
fn narrow_window_degrades_without_panicking() {
    let mut s = state(20, 5);
    start_turn(&mut s, "a prompt that is longer than the window");
    stream(
        &mut s,
        "# Heading\n\n| col | col |\n|--|--|\n| x | y |\n",
        2,
    );
    insta::assert_snapshot!(screen(&s));
    for (w, h) in [(1, 1), (3, 2), (0, 0), (200, 3), (10, 60)] {
        s.update(Msg::Resize(w, h));
        let _ = rows(&s);
    }
}

#[test]
fn cjk_and_emoji_wrap_by_display_width() {
    let mut s = state(24, 12);
    start_turn(&mut s, "你好");
    stream(
        &mut s,
        "这是一个很长的中文句子，用来测试按显示宽度换行。😀😀😀 emoji too",
        3,
    );
    insta::assert_snapshot!(screen(&s));
    for row in rows(&s) {
        assert!(
            unicode_width::UnicodeWidthStr::width(row.as_str()) <= 24,
            "{row}"
        );
    }
}

#[test]
fn control_sequences_from_the_model_never_reach_the_screen() {
    let mut s = state(60, 12);
    start_turn(&mut s, "hi");
    stream(&mut s, "evil \x1b[2J\x1b]52;c;aGk=\x07 done \u{9b}31m", 5);
    let text = rows(&s).join("\n");
    assert!(
        !text.contains('\x1b') && !text.contains('\x07') && !text.contains('\u{9b}'),
        "{text:?}"
    );
    assert!(text.contains("␛[2J"), "{text}");
}

#[test]
fn ctrl_c_interrupts_when_busy_and_exits_on_second_press_when_idle() {
    let mut s = state(60, 12);
    start_turn(&mut s, "hi");
    assert_eq!(ctrl(&mut s, 'c'), vec![Effect::Op(Op::Interrupt)]);
    ev(
        &mut s,
        Event::TurnEnded {
            turn: 1,
            end: TurnEnd::Interrupted,
            stats: Box::new(stats()),
        },
    );
    type_text(&mut s, "draft");
    assert!(ctrl(&mut s, 'c').is_empty());
    assert!(s.draft.is_empty(), "first Ctrl+C clears the draft");
    assert!(rows(&s).join("\n").contains("Ctrl+C again"));
    assert_eq!(ctrl(&mut s, 'c'), vec![Effect::Exit]);
}

#[test]
fn escape_interrupts_a_streaming_turn() {
    let mut s = state(60, 12);
    start_turn(&mut s, "hi");
    stream(&mut s, "partial", 3);
    assert_eq!(key(&mut s, KeyCode::Esc), vec![Effect::Op(Op::Interrupt)]);
    ev(
        &mut s,
        Event::TurnEnded {
            turn: 1,
            end: TurnEnd::Interrupted,
            stats: Box::new(stats()),
        },
    );
    assert!(rows(&s).join("\n").contains("interrupted (streaming)"));
}

#[test]
fn ctrl_d_on_empty_draft_exits() {
    let mut s = state(60, 12);
    assert_eq!(ctrl(&mut s, 'd'), vec![Effect::Exit]);
}

#[test]
fn slash_commands_map_to_ops_and_effects() {
    let mut s = state(60, 20);
    type_text(&mut s, "/co");
    assert_eq!(s.completions(), vec!["/copy", "/compact"]);
    assert!(rows(&s).join("\n").contains("/compact"));
    s.draft.clear();
    type_text(&mut s, "/compact keep the tests");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::Compact(Some("keep the tests".into())))]
    );
    type_text(&mut s, "/compact");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::Compact(None))]
    );
    type_text(&mut s, "/clear");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::NewSession)]
    );
    assert!(s.transcript.is_empty());
    type_text(&mut s, "/copy");
    assert!(
        key(&mut s, KeyCode::Enter).is_empty(),
        "nothing to copy yet"
    );
    start_turn(&mut s, "q");
    ev(
        &mut s,
        Event::AssistantMessage {
            text: "the answer".into(),
        },
    );
    end_turn(&mut s);
    type_text(&mut s, "/copy");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Copy("the answer".into())]
    );
    type_text(&mut s, "/session");
    key(&mut s, KeyCode::Enter);
    assert!(rows(&s).join("\n").contains("0123456789abcdef"));
    type_text(&mut s, "/quit");
    assert_eq!(key(&mut s, KeyCode::Enter), vec![Effect::Exit]);
    type_text(&mut s, "/exit");
    assert_eq!(key(&mut s, KeyCode::Enter), vec![Effect::Exit]);
}

#[test]
fn f2_toggles_mouse_capture_and_status_shows_it() {
    let mut s = state(80, 12);
    assert!(rows(&s).join("\n").contains("mouse on"));
    assert_eq!(
        key(&mut s, KeyCode::F(2)),
        vec![Effect::MouseCapture(false)]
    );
    assert!(rows(&s).join("\n").contains("mouse off"));
}

#[test]
fn status_bar_shows_context_and_last_turn() {
    let mut s = state(100, 12);
    start_turn(&mut s, "hi");
    ev(
        &mut s,
        Event::ContextUsage {
            tokens: 25_000,
            window: 100_000,
        },
    );
    end_turn(&mut s);
    let status = rows(&s).last().cloned().unwrap();
    assert!(status.contains("ctx 25.0k (25%)"), "{status}");
    assert!(status.contains("last 1234 tok 1.5s"), "{status}");
    assert!(status.contains("01234567"), "{status}");
}

#[test]
fn status_bar_and_stats_line_show_the_share_served_from_the_prompt_cache() {
    let mut s = state(140, 12);
    start_turn(&mut s, "hi");
    let mut stats = stats();
    stats.tokens.cached_percent = Some(87);
    ev(
        &mut s,
        Event::TurnEnded {
            turn: 1,
            end: TurnEnd::Completed,
            stats: Box::new(stats),
        },
    );
    let rows = rows(&s);
    let status = rows.last().cloned().unwrap();
    assert!(status.contains("cache 87%"), "{status}");
    assert!(
        rows.iter()
            .any(|r| r.contains("87% of the prompt from the cache")),
        "{rows:?}"
    );
}

#[test]
fn resumed_history_rebuilds_the_transcript() {
    let entries = vec![
        HistoryEntry::User {
            text: "earlier question".into(),
        },
        HistoryEntry::ToolCall {
            tool_kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            change: None,
            call: "t1".into(),
            tool: "read".into(),
            summary: "a".into(),
            arguments: serde_json::json!({"path": "a"}),
            status: Some(ToolStatus::Succeeded),
            output: "contents".into(),
        },
        HistoryEntry::Assistant {
            text: "earlier **answer**".into(),
        },
    ];
    let mut s = State::new("m", 1000);
    s.update(Msg::Resize(60, 16));
    s.update(Msg::Agent(Event::HistoryRestored { entries }));
    let text = rows(&s).join("\n");
    assert!(
        text.contains("earlier question")
            && text.contains("read")
            && text.contains("earlier answer"),
        "{text}"
    );
    assert!(!text.contains("sys"));
    key(&mut s, KeyCode::Up);
    assert_eq!(
        s.draft.text(),
        "earlier question",
        "resumed prompts can be recalled"
    );
}

#[test]
fn mouse_drag_copies_the_selected_characters_over_lines() {
    let mut s = state(40, 12);
    start_turn(&mut s, "hi");
    ev(
        &mut s,
        Event::AssistantMessage {
            text: "alpha\n\nbeta".into(),
        },
    );
    end_turn(&mut s);
    let all = rows(&s);
    let top = all.iter().position(|r| r.contains("alpha")).unwrap() as u16;
    let bottom = all.iter().position(|r| r.contains("beta")).unwrap() as u16;
    let mouse = |kind, column, row| MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    use crossterm::event::MouseButton::Left;
    s.update(Msg::Mouse(mouse(MouseEventKind::Down(Left), 0, top)));
    s.update(Msg::Mouse(mouse(MouseEventKind::Drag(Left), 3, bottom)));
    let effects = s.update(Msg::Mouse(mouse(MouseEventKind::Up(Left), 3, bottom)));
    assert_eq!(effects, vec![Effect::Copy("alpha\n\nbeta".into())]);
    // From the middle of a line to the middle of another: exactly those characters. (The
    // "copied" hint took a row: find the lines again.)
    let all = rows(&s);
    let top = all.iter().position(|r| r.contains("alpha")).unwrap() as u16;
    let bottom = all.iter().position(|r| r.contains("beta")).unwrap() as u16;
    s.update(Msg::Mouse(mouse(MouseEventKind::Down(Left), 2, top)));
    s.update(Msg::Mouse(mouse(MouseEventKind::Drag(Left), 1, bottom)));
    let effects = s.update(Msg::Mouse(mouse(MouseEventKind::Up(Left), 1, bottom)));
    assert_eq!(effects, vec![Effect::Copy("pha\n\nbe".into())]);
}

#[test]
fn exit_transcript_prints_the_last_turns() {
    let mut s = state(40, 12);
    start_turn(&mut s, "one");
    ev(
        &mut s,
        Event::AssistantMessage {
            text: "first reply".into(),
        },
    );
    end_turn(&mut s);
    start_turn(&mut s, "two");
    ev(
        &mut s,
        Event::AssistantMessage {
            text: "second reply".into(),
        },
    );
    end_turn(&mut s);
    let all = s.exit_transcript(None, 40);
    assert!(
        all.contains("› one") && all.contains("second reply"),
        "{all}"
    );
    let last = s.exit_transcript(Some(1), 40);
    assert!(
        !last.contains("first reply") && last.contains("› two"),
        "{last}"
    );
    assert!(s.exit_transcript(Some(0), 40).is_empty());
}

#[test]
fn input_box_grows_with_the_draft_up_to_a_third_of_the_window() {
    let mut s = state(40, 18);
    for i in 0..10 {
        type_text(&mut s, &format!("line {i}"));
        s.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT)));
    }
    let a = view::areas(&s, ratatui::layout::Rect::new(0, 0, 40, 18));
    assert_eq!(a.input.height, 6);
    let draft_rows = rows(&s);
    assert!(
        draft_rows.iter().any(|r| r.contains("line 9")),
        "the cursor row stays visible"
    );
}

#[test]
fn home_jumps_to_the_top_without_laying_out_the_whole_transcript() {
    let mut s = state(80, 24);
    for i in 0..3_000 {
        ev(
            &mut s,
            Event::AssistantMessage {
                text: format!("reply {i}\n\nwith a second paragraph"),
            },
        );
    }
    let _ = rows(&s);
    let before = s.transcript.cached_lines();
    key(&mut s, KeyCode::Home);
    assert_eq!(s.scroll, Scroll::Anchor { entry: 0, line: 0 });
    assert!(
        s.transcript.cached_lines() < before + 200,
        "Home laid out {} lines",
        s.transcript.cached_lines() - before
    );
    assert!(rows(&s)[0].contains("reply 0"), "{:?}", rows(&s));
    // A transcript shorter than the window has nothing to scroll.
    let mut short = state(80, 24);
    key(&mut short, KeyCode::Home);
    assert_eq!(short.scroll, Scroll::Tail);
}

#[test]
fn resumed_tool_results_show_their_status() {
    let results = [
        ("t1", Some(ToolStatus::Succeeded), "✓"),
        ("t2", Some(ToolStatus::Failed), "✗"),
        ("t3", Some(ToolStatus::Denied), "⊘"),
        ("t4", Some(ToolStatus::Interrupted), "■"),
        ("t5", Some(ToolStatus::Rejected), "!"),
        ("t6", None, "◦"),
    ];
    let mut entries = vec![HistoryEntry::User {
        text: "do things".into(),
    }];
    for (id, status, _) in &results {
        entries.push(HistoryEntry::ToolCall {
            tool_kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            change: None,
            call: (*id).into(),
            tool: format!("tool_{id}"),
            summary: String::new(),
            arguments: serde_json::json!({}),
            status: *status,
            output: format!("output of {id}"),
        });
    }
    let mut s = State::new("m", 1000);
    s.update(Msg::Resize(70, 60));
    s.update(Msg::Agent(Event::HistoryRestored { entries }));
    let screen = rows(&s);
    for (id, status, mark) in &results {
        let row = screen
            .iter()
            .position(|r| r.contains(&format!("tool_{id}")))
            .unwrap_or_else(|| panic!("{id} missing: {screen:#?}"));
        assert!(
            screen[row].trim_start().starts_with(mark),
            "{id}: {}",
            screen[row]
        );
        // A finished call shows its output; one whose outcome is unknown shows none.
        let output_shown = screen[row + 1].contains(&format!("output of {id}"));
        assert_eq!(output_shown, status.is_some(), "{id}: {screen:#?}");
    }
}

#[test]
fn tiny_window_still_shows_a_pending_approval() {
    for (w, h) in [(20, 5), (30, 3), (12, 1)] {
        let mut s = state(80, 24);
        start_turn(&mut s, "run");
        request_bash_approval(&mut s, "c1", "make");
        s.update(Msg::Resize(w, h));
        let status = rows(&s).last().cloned().unwrap();
        assert!(status.contains("approve"), "{w}x{h}: {status:?}");
    }
    let mut s = state(40, 6);
    start_turn(&mut s, "run");
    request_bash_approval(&mut s, "c1", "make");
    let status = rows(&s).last().cloned().unwrap();
    assert!(status.contains("approve bash? y/a/n/r"), "{status:?}");
    insta::assert_snapshot!(screen(&s));
}

#[test]
fn slash_hint_lists_every_match_and_tab_completes_the_common_prefix_then_cycles() {
    // Wide enough for every command name on the one hint line (room for a few more).
    let mut s = state(160, 16);
    type_text(&mut s, "/");
    let hint = rows(&s).join("\n");
    for (c, _) in minicode::tui::state::COMMANDS {
        assert!(hint.contains(c), "{c} missing from the hint: {hint}");
    }
    s.draft.clear();
    type_text(&mut s, "/c");
    key(&mut s, KeyCode::Tab);
    assert_eq!(
        s.draft.text(),
        "/c",
        "no common prefix beyond /c: nothing picked"
    );
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.draft.text(), "/clear");
    assert_eq!(s.completions(), vec!["/clear", "/copy", "/compact"]);
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.draft.text(), "/copy");
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.draft.text(), "/compact");
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.draft.text(), "/clear", "cycles");
    s.draft.clear();
    type_text(&mut s, "/co");
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.draft.text(), "/co");
    s.draft.clear();
    type_text(&mut s, "/se");
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.draft.text(), "/session ", "a single match completes");
    s.draft.clear();
    type_text(&mut s, "/comp");
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.draft.text(), "/compact ");
}

#[test]
fn paste_keeps_tabs_in_the_prompt_and_shows_them_as_spaces() {
    let mut s = state(60, 12);
    s.update(Msg::Paste("a\tb\r\nc\x1bd".into()));
    assert_eq!(s.draft.text(), "a\tb\nc\x1bd");
    let screen = rows(&s).join("\n");
    assert!(screen.contains("a    b"), "{screen}");
    assert!(screen.contains("c␛d"), "{screen}");
    assert!(
        !screen.contains('\t') && !screen.contains('\x1b'),
        "{screen:?}"
    );
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::Submit("a\tb\nc\x1bd".into()))]
    );
}

#[test]
fn stats_show_summary_calls_and_a_noop_compact_keeps_the_last_turn() {
    let mut s = state(120, 16);
    start_turn(&mut s, "hi");
    let mut with_summary = stats();
    with_summary.summary_calls = 2;
    with_summary.summary_tokens = TokenStats {
        input_tokens: 900,
        output_tokens: 100,
        total_tokens: 1000,
        replies_with_usage: 2,
        replies_without_usage: 0,
        ..TokenStats::default()
    };
    ev(
        &mut s,
        Event::TurnEnded {
            turn: 1,
            end: TurnEnd::Completed,
            stats: Box::new(with_summary),
        },
    );
    let text = rows(&s).join("\n");
    assert!(text.contains("2 summary calls (1000 tokens)"), "{text}");
    let lines_before = s.transcript.len();
    type_text(&mut s, "/compact");
    key(&mut s, KeyCode::Enter);
    ev(&mut s, Event::TurnStarted { turn: 2 });
    ev(
        &mut s,
        Event::Warning {
            message: "nothing to compact: the history fits".into(),
        },
    );
    ev(
        &mut s,
        Event::TurnEnded {
            turn: 2,
            end: TurnEnd::Completed,
            stats: Box::new(TurnStats {
                wall: Duration::from_millis(3),
                ..TurnStats::default()
            }),
        },
    );
    let status = rows(&s).last().cloned().unwrap();
    assert!(status.contains("last 1234 tok 1.5s"), "{status}");
    // The /compact notice and the warning, but no stats line.
    assert_eq!(s.transcript.len(), lines_before + 2);
}

#[test]
fn context_usage_updates_the_status_whenever_it_arrives() {
    let mut s = state(120, 12);
    let status = |s: &State| rows(s).last().cloned().unwrap();
    ev(
        &mut s,
        Event::ContextUsage {
            tokens: 1_500,
            window: 100_000,
        },
    );
    assert!(status(&s).contains("ctx 1500 (1%)"), "{}", status(&s));
    // After compaction, between turns.
    ev(
        &mut s,
        Event::ContextUsage {
            tokens: 40_000,
            window: 100_000,
        },
    );
    assert!(status(&s).contains("ctx 40.0k (40%)"), "{}", status(&s));
    type_text(&mut s, "/clear");
    key(&mut s, KeyCode::Enter);
    assert!(!status(&s).contains("ctx"), "{}", status(&s));
    ev(
        &mut s,
        Event::SessionConfigured {
            session_id: "fedcba9876543210".into(),
            session_path: "/w/s.json".into(),
            model: "test-model".into(),
            context_window: 200_000,
            resumed_messages: 0,
        },
    );
    ev(
        &mut s,
        Event::ContextUsage {
            tokens: 2_000,
            window: 0,
        },
    );
    assert!(status(&s).contains("ctx 2000 (1%)"), "{}", status(&s));
    assert_eq!(s.context_window, 200_000);
}

#[test]
fn keys_after_an_answer_are_text_not_more_answers() {
    let mut s = state(80, 22);
    start_turn(&mut s, "run");
    request_bash_approval(&mut s, "c1", "make");
    let mut effects = Vec::new();
    for c in "any note".chars() {
        effects.extend(key(&mut s, KeyCode::Char(c)));
    }
    assert_eq!(
        effects,
        vec![Effect::Op(Op::Decide {
            call: "c1".into(),
            decision: Decision::ApproveTool
        })],
        "only the first key answers"
    );
    assert_eq!(s.draft.text(), "ny note", "the rest is kept as text");
    assert!(s.approval.is_none());
}

#[test]
fn a_delegate_call_shows_one_live_line_per_sub_agent() {
    use minicode::protocol::SubagentStatus;
    let mut s = state(120, 20);
    start_turn(&mut s, "look around");
    ev(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: "call_1".into(),
            tool: "delegate".into(),
            summary: "2 tasks: tests, api".into(),
            arguments: serde_json::json!({}),
            change: None,
        },
    );
    for task in ["tests", "api"] {
        ev(
            &mut s,
            Event::SubagentStarted {
                call: "call_1".into(),
                task: task.into(),
                session_id: format!("session-{task}"),
            },
        );
    }
    ev(
        &mut s,
        Event::SubagentProgress {
            call: "call_1".into(),
            task: "api".into(),
            rounds: 2,
            tool_calls: 3,
            elapsed_ms: 4200,
        },
    );
    let shown = rows(&s).join("\n");
    assert!(shown.contains("delegate 2 tasks: tests, api"), "{shown}");
    assert!(
        shown.contains("↳ tests · running · 0 rounds · 0 tool calls · 0 s"),
        "{shown}"
    );
    assert!(
        shown.contains("↳ api · running · 2 rounds · 3 tool calls · 4 s"),
        "{shown}"
    );
    ev(
        &mut s,
        Event::SubagentEnded {
            call: "call_1".into(),
            task: "tests".into(),
            status: SubagentStatus::TimedOut,
            rounds: 5,
            tool_calls: 9,
            elapsed_ms: 300_000,
            error: Some("no answer within its deadline of 300 s".into()),
        },
    );
    ev(
        &mut s,
        Event::SubagentEnded {
            call: "call_1".into(),
            task: "api".into(),
            status: SubagentStatus::Completed,
            rounds: 3,
            tool_calls: 4,
            elapsed_ms: 6100,
            error: None,
        },
    );
    let shown = rows(&s).join("\n");
    assert!(
        shown.contains("⏱ tests · timed out · 5 rounds · 9 tool calls · 300 s · no answer"),
        "{shown}"
    );
    assert!(
        shown.contains("✓ api · completed · 3 rounds · 4 tool calls · 6 s"),
        "{shown}"
    );
    // One entry for the call: the two lines are adjacent.
    let rows = rows(&s);
    let t = rows.iter().position(|r| r.contains("⏱ tests")).unwrap();
    assert!(rows[t + 1].contains("✓ api"), "{rows:?}");
}

#[test]
fn mcp_commands_become_ops_and_the_servers_are_listed() {
    use minicode::protocol::{McpServer, McpState};
    let mut s = state(90, 24);
    type_text(&mut s, "/mcp");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::McpServers)]
    );
    type_text(&mut s, "/mcp restart files");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::McpRestart {
            server: "files".into()
        })]
    );
    type_text(&mut s, "/mcp restart");
    assert!(
        key(&mut s, KeyCode::Enter).is_empty(),
        "no id: a usage hint"
    );
    ev(
        &mut s,
        Event::McpServers {
            servers: vec![
                McpServer {
                    id: "files".into(),
                    origin: "/home/u/.config/minicode/config.toml".into(),
                    state: McpState::Ready,
                    tools: vec!["mcp_files__read".into(), "mcp_files__list".into()],
                    log: Some("/w/.minicode/logs/mcp-files.log".into()),
                },
                McpServer {
                    id: "gh".into(),
                    origin: "/w/.mcp.json".into(),
                    state: McpState::Failed {
                        reason: "it exited with code 1".into(),
                    },
                    tools: vec![],
                    log: None,
                },
            ],
        },
    );
    let text = rows(&s).join("\n");
    assert!(text.contains("usage: /mcp, or /mcp restart <id>"), "{text}");
    assert!(text.contains("files — ready, 2 tools"), "{text}");
    assert!(text.contains("mcp_files__read, mcp_files__list"), "{text}");
    assert!(
        text.contains("gh — failed: it exited with code 1"),
        "{text}"
    );
}

#[test]
fn an_mcp_call_approval_shows_the_server_the_tool_and_the_arguments() {
    let mut s = state(80, 20);
    start_turn(&mut s, "look");
    ev(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: "c1".into(),
            tool: "mcp_files__read".into(),
            summary: "files · read {\"path\":\"a.txt\"}".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
            change: None,
        },
    );
    ev(
        &mut s,
        Event::ApprovalRequested {
            call: "c1".into(),
            tool: "mcp_files__read".into(),
            request: ApprovalRequest::McpCall {
                server: "files".into(),
                tool: "read".into(),
                arguments: "{\n  \"path\": \"a.txt\"\n}".into(),
            },
            always: None,
        },
    );
    let text = rows(&s).join("\n");
    assert!(text.contains("MCP server files · tool read"), "{text}");
    assert!(text.contains("\"path\": \"a.txt\""), "{text}");
    assert_eq!(
        key(&mut s, KeyCode::Char('y')),
        vec![Effect::Op(Op::Decide {
            call: "c1".into(),
            decision: Decision::Approve
        })]
    );
}

#[test]
fn a_fetch_call_shows_its_url_and_an_approval_offers_the_host_rule() {
    let mut s = state(80, 20);
    start_turn(&mut s, "read the docs");
    let url = "https://docs.rs/htmd/latest/htmd/";
    ev(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Fetch,
            paths: Vec::new(),
            call: "c1".into(),
            tool: "fetch".into(),
            summary: url.into(),
            arguments: serde_json::json!({ "url": url }),
            change: None,
        },
    );
    ev(
        &mut s,
        Event::ApprovalRequested {
            call: "c1".into(),
            tool: "fetch".into(),
            request: ApprovalRequest::Fetch { url: url.into() },
            always: Some("fetch(domain:docs.rs)".into()),
        },
    );
    let text = rows(&s).join("\n");
    assert!(text.contains(&format!("fetch {url}")), "{text}");
    assert_eq!(
        key(&mut s, KeyCode::Char('y')),
        vec![Effect::Op(Op::Decide {
            call: "c1".into(),
            decision: Decision::Approve
        })]
    );
}

#[test]
fn custom_commands_are_listed_completed_and_sent_expanded() {
    let mut s = state(100, 30);
    s.custom = vec![minicode::protocol::CustomCommand {
        name: "review".into(),
        description: "review a file".into(),
        argument_hint: Some("<file>".into()),
        source: ".minicode/commands/review.md".into(),
        body: "Review $1 for bugs.".into(),
    }];
    type_text(&mut s, "/rev");
    assert_eq!(s.completions(), vec!["/review"]);
    assert!(rows(&s).join("\n").contains("review a file <file>"));
    s.draft.clear();
    type_text(&mut s, "/help");
    key(&mut s, KeyCode::Enter);
    let screen = rows(&s).join("\n");
    assert!(
        screen.contains("/review <file>") && screen.contains(".minicode/commands/review.md"),
        "{screen}"
    );
    type_text(&mut s, "/review src/lib.rs");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Op(Op::Submit("Review src/lib.rs for bugs.".into()))]
    );
}

#[test]
fn memory_command_lists_every_instruction_file() {
    let mut s = state(100, 30);
    type_text(&mut s, "/memory");
    key(&mut s, KeyCode::Enter);
    assert!(rows(&s).join("\n").contains("no instruction file in use"));
    for (path, tokens) in [("AGENTS.md", 12), ("MiniCode.md", 30)] {
        ev(
            &mut s,
            Event::MemoryLoaded {
                path: path.into(),
                tokens,
            },
        );
    }
    type_text(&mut s, "/memory");
    key(&mut s, KeyCode::Enter);
    let screen = rows(&s).join("\n");
    assert!(
        screen.contains("AGENTS.md loaded (12 tokens)")
            && screen.contains("MiniCode.md loaded (30 tokens)"),
        "{screen}"
    );
}

#[test]
fn each_hook_run_is_a_dim_line_in_the_transcript() {
    let mut s = state(100, 20);
    ev(
        &mut s,
        Event::Hook {
            event: minicode::hooks::HookEvent::PreToolUse,
            hook: "PreToolUse (bash) hook `./check.sh`".into(),
            outcome: minicode::protocol::HookOutcome::Blocked,
            ms: 12,
        },
    );
    let mut term = Terminal::new(TestBackend::new(100, 20)).unwrap();
    term.draw(|f| view::render(&s, f)).unwrap();
    let buf = term.backend().buffer().clone();
    let y = (0..20)
        .find(|&y| {
            let row: String = (0..100).map(|x| buf[(x, y)].symbol()).collect();
            row.contains("PreToolUse (bash) hook `./check.sh`: blocked in 12 ms")
        })
        .unwrap_or_else(|| panic!("no hook line:\n{}", rows(&s).join("\n")));
    let text_start = (0..100).find(|&x| buf[(x, y)].symbol() == "P").unwrap();
    assert_eq!(
        buf[(text_start, y)].fg,
        ratatui::style::Color::DarkGray,
        "the line is dim"
    );
}

#[test]
fn hooks_command_lists_the_configured_hooks_and_whether_each_runs() {
    let mut s = state(140, 30);
    type_text(&mut s, "/hooks");
    key(&mut s, KeyCode::Enter);
    assert!(
        rows(&s).join("\n").contains("no hooks configured"),
        "{}",
        rows(&s).join("\n")
    );
    s.hooks = vec![
        "PreToolUse (bash) `./check.sh` · timeout 60 s · user: /h/config.toml · runs".into(),
        "Stop `./ws.sh` · timeout 5 s · workspace: /w/config.toml · not approved: skipped".into(),
    ];
    type_text(&mut s, "/hooks");
    key(&mut s, KeyCode::Enter);
    let screen = rows(&s).join("\n");
    assert!(
        screen.contains(
            "PreToolUse (bash) `./check.sh` · timeout 60 s · user: /h/config.toml · runs"
        ) && screen.contains("not approved: skipped"),
        "{screen}"
    );
}

#[test]
fn a_command_hint_too_wide_for_the_window_says_how_many_commands_it_leaves_out() {
    let mut s = state(40, 12);
    type_text(&mut s, "/");
    let all = s.completions().len();
    assert!(all > 5, "{all}");
    let screen = rows(&s).join("\n");
    let line = screen
        .lines()
        .find(|l| l.contains("more (Tab)"))
        .unwrap_or_else(|| panic!("no count of the commands left out:\n{screen}"));
    let hidden: usize = line
        .split("… ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let shown = line.matches('/').count();
    assert_eq!(shown + hidden, all, "{line}");
}

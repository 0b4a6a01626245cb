//! The approval guard of the full-screen session: answer keys (y/a/n/r) typed within a moment
//! of an approval appearing are ignored, so typing meant for something else never answers a
//! request the user has not read. Time is injected with `State::update_at`; nothing sleeps.

use crate::support::screen::text as screen;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use minicode::chat::ApprovalRequest;
use minicode::protocol::{Decision, Event, Op};
use minicode::tui::state::{APPROVAL_GUARD, Effect, Msg, State};

const MS: Duration = Duration::from_millis(1);

/// A session with a bash approval that appeared at `t0`.
fn pending_approval(t0: Instant) -> State {
    let mut s = State::new("m", 100_000);
    s.update_at(Msg::Resize(90, 20), t0);
    s.update_at(Msg::Agent(Event::TurnStarted { turn: 1 }), t0);
    s.update_at(
        Msg::Agent(Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: "c1".into(),
            tool: "bash".into(),
            summary: "rm -rf build".into(),
            arguments: serde_json::json!({}),
            change: None,
        }),
        t0,
    );
    s.update_at(
        Msg::Agent(Event::ApprovalRequested {
            call: "c1".into(),
            tool: "bash".into(),
            request: ApprovalRequest::Command {
                command: "rm -rf build".into(),
            },
            always: Some("bash(rm*)".into()),
        }),
        t0,
    );
    s
}

fn key_at(s: &mut State, c: char, at: Instant) -> Vec<Effect> {
    s.update_at(
        Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)),
        at,
    )
}

fn approve() -> Vec<Effect> {
    vec![Effect::Op(Op::Decide {
        call: "c1".into(),
        decision: Decision::Approve,
    })]
}

#[test]
fn y_typed_right_after_an_approval_appears_does_not_answer_it() {
    let t0 = Instant::now();
    let mut s = pending_approval(t0);
    assert!(key_at(&mut s, 'y', t0 + 100 * MS).is_empty());
    assert!(s.approval.is_some(), "the approval still waits");
    assert_eq!(s.draft.text(), "", "the ignored key is not typed either");
    // Once the keyboard has been quiet for the guard, y answers.
    let later = t0 + 100 * MS + APPROVAL_GUARD;
    assert_eq!(key_at(&mut s, 'y', later), approve());
    assert!(s.approval.is_none());
}

#[test]
fn every_answer_key_is_ignored_while_a_burst_of_typing_goes_on() {
    let t0 = Instant::now();
    let mut s = pending_approval(t0);
    // Answer letters typed 200 ms apart: each key comes within the guard of the one before.
    let mut at = t0;
    for c in ['n', 'a', 'y', 'r', 'y'] {
        at += 200 * MS;
        assert!(key_at(&mut s, c, at).is_empty(), "{c} answered");
    }
    assert!(s.approval.is_some());
    assert_eq!(key_at(&mut s, 'n', at + APPROVAL_GUARD), {
        vec![Effect::Op(Op::Decide {
            call: "c1".into(),
            decision: Decision::Deny { reason: None },
        })]
    });
}

#[test]
fn other_keys_during_the_guard_are_text_and_keep_later_letters_text() {
    let t0 = Instant::now();
    let mut s = pending_approval(t0);
    key_at(&mut s, 'h', t0 + 50 * MS);
    assert_eq!(s.draft.text(), "h");
    // Long after the guard: the draft is not empty, so y is a letter, not an answer.
    assert!(key_at(&mut s, 'y', t0 + 2000 * MS).is_empty());
    assert_eq!(s.draft.text(), "hy");
    assert!(s.approval.is_some());
}

#[test]
fn y_answers_as_soon_as_the_guard_has_passed() {
    let t0 = Instant::now();
    let mut s = pending_approval(t0);
    assert_eq!(key_at(&mut s, 'y', t0 + APPROVAL_GUARD), approve());
}

#[test]
fn the_answer_keys_are_shown_only_once_they_count() {
    let t0 = Instant::now();
    let mut s = pending_approval(t0);
    s.set_now(t0 + 10 * MS);
    let early = screen(&s);
    assert!(early.contains("answer keys in a moment"), "{early}");
    assert!(!early.contains("y yes"), "{early}");
    assert_eq!(s.approval_arms_at(), Some(t0 + APPROVAL_GUARD));
    s.set_now(t0 + APPROVAL_GUARD);
    let armed = screen(&s);
    assert!(armed.contains("y yes · a always: rm … · n no"), "{armed}");
    assert_eq!(s.approval_arms_at(), None);
}

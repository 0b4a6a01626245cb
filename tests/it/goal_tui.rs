//! Goal mode in the full-screen state: `/goal …` and `/fork` become ops, the goal events
//! become notices and the status bar's goal (phase, armed, rounds), rendered on a `TestBackend`.

use crate::support::screen::text as screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use minicode::protocol::{Event, Goal, GoalBlock, GoalChange, GoalOp, GoalPhase, Op};
use minicode::tui::state::{Effect, Msg, State};

fn state() -> State {
    let mut s = State::new("test-model", 100_000);
    s.update(Msg::Resize(120, 20));
    s.update(Msg::Agent(Event::SessionConfigured {
        session_id: "0123456789abcdef".into(),
        session_path: "/w/s.json".into(),
        model: "test-model".into(),
        context_window: 100_000,
        resumed_messages: 0,
    }));
    s
}

/// Types `line` and presses Enter.
fn enter(s: &mut State, line: &str) -> Vec<Effect> {
    for c in line.chars() {
        s.update(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )));
    }
    s.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
}

fn goal(phase: GoalPhase, rounds_used: u32) -> Goal {
    Goal {
        id: "g-0123456789ab".into(),
        objective: "port the parser".into(),
        phase,
        reason: (phase == GoalPhase::Blocked).then(|| GoalBlock {
            code: "round-limit".into(),
            message: "used all 3 goal rounds".into(),
        }),
        revision: 2,
        max_rounds: 3,
        rounds_used,
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
    }
}

#[test]
fn goal_commands_become_ops() {
    let mut s = state();
    let cases = [
        (
            "/goal port the parser",
            GoalOp::Create {
                objective: "port the parser".into(),
                max_rounds: None,
            },
        ),
        ("/goal pause", GoalOp::Pause { expected: None }),
        (
            "/goal resume",
            GoalOp::Resume {
                expected: None,
                max_rounds: None,
            },
        ),
        ("/goal clear", GoalOp::Clear { expected: None }),
        (
            "/goal edit port it to Rust",
            GoalOp::Edit {
                expected: None,
                objective: "port it to Rust".into(),
            },
        ),
        ("/goal", GoalOp::Show),
    ];
    for (line, op) in cases {
        assert_eq!(
            enter(&mut s, line),
            vec![Effect::Op(Op::Goal(op))],
            "{line}"
        );
    }
    assert_eq!(enter(&mut s, "/fork"), vec![Effect::Op(Op::Fork)]);
    // `/goal edit` needs the new objective.
    assert!(enter(&mut s, "/goal edit").is_empty());
}

#[test]
fn the_status_bar_and_transcript_follow_the_goal() {
    let mut s = state();
    s.update(Msg::Agent(Event::GoalChanged {
        change: GoalChange::Created,
        goal_id: "g-0123456789ab".into(),
        revision: 1,
        goal: Some(goal(GoalPhase::Active, 0)),
        armed: true,
    }));
    s.update(Msg::Agent(Event::GoalRoundStarted {
        goal_id: "g-0123456789ab".into(),
        revision: 1,
        round: 1,
        max_rounds: 3,
    }));
    let text = screen(&s);
    assert!(text.contains("goal active · armed · 1/3"), "{text}");
    assert!(text.contains("◆ goal round 1/3"), "{text}");
    s.update(Msg::Agent(Event::GoalChanged {
        change: GoalChange::Blocked,
        goal_id: "g-0123456789ab".into(),
        revision: 2,
        goal: Some(goal(GoalPhase::Blocked, 3)),
        armed: false,
    }));
    let text = screen(&s);
    assert!(text.contains("goal blocked · disarmed · 3/3"), "{text}");
    assert!(text.contains("round-limit"), "{text}");
    // `/goal` shows the whole state once the core answers.
    enter(&mut s, "/goal");
    s.update(Msg::Agent(Event::GoalStatus {
        goal: Some(goal(GoalPhase::Blocked, 3)),
        armed: false,
        error: None,
    }));
    let text = screen(&s);
    assert!(text.contains("port the parser"), "{text}");
    assert!(text.contains("/goal resume continues it"), "{text}");
    // A refusal is shown as an error; a clear removes the goal from the status bar.
    s.update(Msg::Agent(Event::GoalRefused {
        message: "goal g-0123456789ab has used all of its 3 rounds".into(),
    }));
    assert!(screen(&s).contains("goal: goal g-0123456789ab has used all"));
    s.update(Msg::Agent(Event::GoalChanged {
        change: GoalChange::Cleared,
        goal_id: "g-0123456789ab".into(),
        revision: 3,
        goal: None,
        armed: false,
    }));
    assert!(!screen(&s).contains("goal blocked ·"));
}

//! A goal that makes no progress blocks instead of spending every round: a model that keeps
//! answering text without `goal_update`, or that repeats the same failing call, stops after
//! `[goal] stall_rounds` rounds (default 3) as `awaiting-human`, with the reason.

use crate::support::agent::spawn;
use crate::support::events::{next, shutdown, until};
use crate::support::fake::{Answer, Fake, text_reply, tool_reply};
use crate::support::workspace;
use minicode::agent::Options;
use minicode::protocol::{AgentHandle, BlockCode, Event, Goal, GoalOp, GoalPhase, Op};

fn options(stall_rounds: Option<u32>) -> Options {
    let mut options = Options {
        auto_approve: true,
        goal: minicode::agent::goal::Settings {
            max_rounds: 256,
            ..Default::default()
        },
        ..Options::default()
    };
    if let Some(n) = stall_rounds {
        options.goal.stall_rounds = n;
    }
    options
}

/// Sets a goal and collects events until it stopped (disarmed, no turn running); returns
/// them with the goal as it then stands.
async fn run_goal(handle: &mut AgentHandle) -> (Vec<Event>, Goal) {
    until(handle, |e| matches!(e, Event::SessionConfigured { .. })).await;
    handle.send(Op::Goal(GoalOp::Create {
        objective: "make the tests pass".into(),
        max_rounds: None,
    }));
    let mut events = Vec::new();
    let (mut armed, mut running, mut started) = (false, false, false);
    while !(started && !armed && !running) {
        let event = next(handle).await;
        match &event {
            Event::GoalChanged { armed: a, .. } | Event::GoalStatus { armed: a, .. } => {
                armed = *a;
                started |= *a;
            }
            Event::TurnStarted { .. } => running = true,
            Event::TurnEnded { .. } => running = false,
            _ => {}
        }
        events.push(event);
    }
    handle.send(Op::Goal(GoalOp::Show));
    let shown = until(handle, |e| matches!(e, Event::GoalStatus { .. })).await;
    let Some(Event::GoalStatus {
        goal: Some(goal), ..
    }) = shown.last()
    else {
        panic!("no goal: {shown:?}");
    };
    (events, goal.clone())
}

fn rounds(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::GoalRoundStarted { .. }))
        .count()
}

#[tokio::test]
async fn a_goal_whose_model_only_answers_text_blocks_awaiting_human_after_three_rounds() {
    let (_dir, ws) = workspace();
    // Every reply is text (the script is exhausted at once): no call, no goal_update.
    let fake = Fake::new(Vec::<Answer>::new());
    let mut handle = spawn(&ws, fake.clone(), options(None));
    let (events, goal) = run_goal(&mut handle).await;
    assert_eq!(rounds(&events), 3);
    assert_eq!(fake.main_requests().len(), 3);
    assert_eq!(goal.phase, GoalPhase::Blocked);
    let reason = goal.reason.unwrap();
    assert_eq!(reason.code, BlockCode::AwaitingHuman);
    assert!(
        reason.message.contains("no progress in 3 goal rounds")
            && reason.message.contains("without calling a tool"),
        "{}",
        reason.message
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_goal_whose_model_repeats_the_same_failing_call_blocks_at_the_configured_count() {
    let (_dir, ws) = workspace();
    let failing = || tool_reply(&[("u1", "goal_update", r#"{"status":"done"}"#)]);
    let mut script = Vec::new();
    for _ in 0..10 {
        script.push(failing());
        script.push(text_reply("the goal is done"));
    }
    let fake = Fake::new(script);
    let mut handle = spawn(&ws, fake.clone(), options(Some(2)));
    let (events, goal) = run_goal(&mut handle).await;
    assert_eq!(rounds(&events), 2);
    let reason = goal.reason.unwrap();
    assert_eq!(reason.code, BlockCode::AwaitingHuman);
    assert!(
        reason.message.contains("same failing `goal_update` call"),
        "{}",
        reason.message
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn rounds_that_change_something_keep_the_goal_running() {
    let (_dir, ws) = workspace();
    let mut script = Vec::new();
    for n in 0..4 {
        let args = serde_json::json!({"path": format!("step{n}.txt"), "content": "x"});
        script.push(tool_reply(&[("w", "write", &args.to_string())]));
        script.push(text_reply("a step done"));
    }
    script.push(tool_reply(&[(
        "done",
        "goal_update",
        r#"{"status":"complete"}"#,
    )]));
    script.push(text_reply("all done"));
    let fake = Fake::new(script);
    let mut handle = spawn(&ws, fake, options(Some(2)));
    let (events, goal) = run_goal(&mut handle).await;
    assert_eq!(rounds(&events), 5);
    assert_eq!(goal.phase, GoalPhase::Complete);
    shutdown(&mut handle).await;
}

#[test]
fn stall_rounds_is_read_from_the_goal_table() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = crate::support::user_config::path(&home);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let load = |text: &str| {
        std::fs::write(&file, text).unwrap();
        let home = home.to_str().unwrap().to_string();
        let env = move |name: &str| (name == "HOME").then(|| home.clone());
        let overrides = minicode::config::Overrides {
            demo: true,
            ..Default::default()
        };
        minicode::config::load(dir.path(), &env, &overrides)
    };
    assert_eq!(load("").unwrap().goal.stall_rounds, 3);
    assert_eq!(
        load("[goal]\nstall_rounds = 5\n")
            .unwrap()
            .goal
            .stall_rounds,
        5
    );
    let err = load("[goal]\nstall_rounds = 0\n").unwrap_err();
    assert!(err.to_string().contains("goal.stall_rounds"), "{err}");
}

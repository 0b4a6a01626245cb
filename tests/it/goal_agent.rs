//! Goal mode in the core, against the scripted model: rounds start at once and continue while
//! the goal is active and armed, each opened by a numbered, attributed instruction; the goal
//! tools exist only with a goal; the round limit, a provider failure and an exhausted quota
//! block; an interrupt disarms without a record; prompts go first; resume and fork start
//! disarmed and send nothing; the goal survives compaction.

use std::path::Path;

use crate::support::agent::{spawn, spawn_session};
use crate::support::events::{next, shutdown, turn, until};
use crate::support::fake::{Answer, Fake, text_reply, tool_reply};
use crate::support::workspace;
use minicode::agent::Options;
use minicode::agent::goal::{Goals, record};
use minicode::chat::Message;
use minicode::protocol::{
    AgentHandle, BlockCode, Event, Goal, GoalChange, GoalOp, GoalPhase, Op, TurnEnd,
};
use minicode::provider::ProviderError;
use minicode::session::Session;

fn options(max_rounds: u32) -> Options {
    Options {
        auto_approve: true,
        goal: minicode::agent::goal::Settings {
            max_rounds,
            ..Default::default()
        },
        ..Options::default()
    }
}

fn create(objective: &str) -> Op {
    Op::Goal(GoalOp::Create {
        objective: objective.into(),
        max_rounds: None,
    })
}

fn complete() -> minicode::provider::Reply {
    tool_reply(&[("done-1", "goal_update", r#"{"status":"complete"}"#)])
}

/// Waits for the session id.
async fn configured(handle: &mut AgentHandle) -> String {
    let events = until(handle, |e| matches!(e, Event::SessionConfigured { .. })).await;
    match events.last() {
        Some(Event::SessionConfigured { session_id, .. }) => session_id.clone(),
        _ => unreachable!(),
    }
}

/// Events until the goal stops: disarmed (by a change or a status) and no turn running.
async fn run_out(handle: &mut AgentHandle) -> Vec<Event> {
    stop(handle, false).await
}

/// [`run_out`] once the goal is known to run (its start was already read).
async fn stop(handle: &mut AgentHandle, running_already: bool) -> Vec<Event> {
    let mut events = Vec::new();
    let (mut armed, mut running, mut started) = (running_already, running_already, running_already);
    loop {
        let event = next(handle).await;
        match &event {
            Event::GoalChanged { armed: a, .. } | Event::GoalStatus { armed: a, .. } => {
                armed = *a;
                started |= *a;
            }
            Event::TurnStarted { .. } => running = true,
            Event::TurnEnded { .. } => running = false,
            Event::GoalRefused { message } => panic!("refused: {message}"),
            _ => {}
        }
        events.push(event);
        if started && !armed && !running {
            return events;
        }
    }
}

/// The goal as `GoalOp::Show` reports it.
async fn show(handle: &mut AgentHandle) -> (Option<Goal>, bool, Option<String>) {
    handle.send(Op::Goal(GoalOp::Show));
    let events = until(handle, |e| matches!(e, Event::GoalStatus { .. })).await;
    match events.last() {
        Some(Event::GoalStatus { goal, armed, error }) => (goal.clone(), *armed, error.clone()),
        _ => unreachable!(),
    }
}

fn rounds(events: &[Event]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::GoalRoundStarted { round, .. } => Some(*round),
            _ => None,
        })
        .collect()
}

fn last_user(messages: &[Message]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m.role == minicode::chat::Role::User)
        .map_or("", Message::text)
}

fn session_messages(ws: &Path, id: &str) -> Vec<Message> {
    Session::open(ws, id).unwrap().messages().to_vec()
}

#[tokio::test]
async fn a_goal_runs_numbered_attributed_rounds_until_the_model_completes_it() {
    let (_dir, ws) = workspace();
    let fake = Fake::new(vec![
        text_reply("plain answer"),
        text_reply("step one done"),
        complete(),
        text_reply("all done"),
    ]);
    let mut handle = spawn(&ws, fake.clone(), options(256));
    let id = configured(&mut handle).await;
    // Without a goal the goal tools are not declared.
    turn(&mut handle, "hello").await;
    let plain_tools = fake.main_requests()[0].tools;
    handle.send(create("write the parser"));
    let events = run_out(&mut handle).await;
    assert_eq!(rounds(&events), [1, 2], "{events:?}");
    let created = events.iter().find_map(|e| match e {
        Event::GoalChanged {
            change: GoalChange::Created,
            goal: Some(goal),
            armed: true,
            ..
        } => Some(goal.clone()),
        _ => None,
    });
    let created = created.expect("a created event");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::GoalChanged {
            change: GoalChange::Completed,
            armed: false,
            ..
        }
    )));
    let requests = fake.main_requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[1].tools, plain_tools + 2);
    for (k, request) in requests[1..3].iter().enumerate() {
        let text = last_user(&request.messages);
        let round = k + 1;
        assert!(
            text.starts_with(&format!(
                "<goal_round goal=\"{}\" revision=\"1\" round=\"{round}\" max_rounds=\"256\"/>",
                created.id
            )),
            "{text}"
        );
    }
    // The model sees the goal record in its context.
    assert!(
        requests[1]
            .messages
            .iter()
            .any(|m| m.text().starts_with("<goal_state>") && m.text().contains("write the parser"))
    );
    let (goal, armed, _) = show(&mut handle).await;
    let goal = goal.unwrap();
    assert_eq!(
        (goal.phase, goal.rounds_used, armed),
        (GoalPhase::Complete, 2, false)
    );
    // No round starts by itself after completion.
    assert_eq!(fake.main_requests().len(), 4);
    shutdown(&mut handle).await;
    // The file carries the history, and replaying it gives the same goal.
    let replayed = Goals::replay(&session_messages(&ws, &id));
    assert_eq!(replayed.current().unwrap().unwrap(), &goal);
}

#[tokio::test]
async fn the_round_limit_blocks_and_resume_is_then_refused() {
    let (_dir, ws) = workspace();
    let fake = Fake::new(Vec::<Answer>::new());
    let mut handle = spawn(&ws, fake.clone(), options(256));
    configured(&mut handle).await;
    handle.send(Op::Goal(GoalOp::Create {
        objective: "never ends".into(),
        max_rounds: Some(2),
    }));
    let events = run_out(&mut handle).await;
    assert_eq!(rounds(&events), [1, 2]);
    let (goal, armed, _) = show(&mut handle).await;
    let goal = goal.unwrap();
    assert_eq!(goal.phase, GoalPhase::Blocked);
    assert_eq!(goal.reason.unwrap().code, BlockCode::RoundLimit);
    assert_eq!((goal.rounds_used, armed), (2, false));
    assert_eq!(fake.main_requests().len(), 2);
    handle.send(Op::Goal(GoalOp::Resume {
        expected: None,
        max_rounds: None,
    }));
    let events = until(&mut handle, |e| matches!(e, Event::GoalRefused { .. })).await;
    let Some(Event::GoalRefused { message }) = events.last() else {
        unreachable!()
    };
    assert!(message.contains("all of its 2 rounds"), "{message}");
    assert_eq!(fake.main_requests().len(), 2);
    shutdown(&mut handle).await;
}

async fn blocked_code(answer: Answer) -> (BlockCode, String) {
    let (_dir, ws) = workspace();
    let fake = Fake::new(vec![answer]);
    let mut handle = spawn(&ws, fake, options(256));
    configured(&mut handle).await;
    handle.send(create("fails"));
    run_out(&mut handle).await;
    let (goal, _, _) = show(&mut handle).await;
    shutdown(&mut handle).await;
    let reason = goal.unwrap().reason.unwrap();
    (reason.code, reason.message)
}

#[tokio::test]
async fn a_failed_goal_turn_blocks_with_execution_failed_or_usage_limit() {
    let (code, message) = blocked_code(Answer::Fail(ProviderError::Server {
        status: 500,
        message: "boom".into(),
        retry_after_ms: None,
    }))
    .await;
    assert_eq!(code, BlockCode::ExecutionFailed);
    assert_eq!(code.as_str(), "execution-failed");
    assert!(message.contains("boom"), "{message}");
    let (code, _) = blocked_code(Answer::Fail(ProviderError::RateLimited {
        message: "insufficient_quota".into(),
        retry_after_ms: None,
        quota_exhausted: true,
    }))
    .await;
    assert_eq!(code, BlockCode::UsageLimit);
    assert_eq!(code.as_str(), "usage-limit");
}

#[tokio::test]
async fn the_model_can_block_the_goal_and_ordinary_turns_never_count_as_rounds() {
    let (_dir, ws) = workspace();
    let blocked = tool_reply(&[(
        "b1",
        "goal_update",
        r#"{"status":"blocked","code":"awaiting-human","message":"which database?"}"#,
    )]);
    let fake = Fake::new(vec![blocked, text_reply("I need to know the database.")]);
    let mut handle = spawn(&ws, fake.clone(), options(256));
    let id = configured(&mut handle).await;
    handle.send(create("migrate the data"));
    let events = run_out(&mut handle).await;
    assert_eq!(rounds(&events), [1]);
    turn(&mut handle, "postgres").await;
    turn(&mut handle, "and keep the old table").await;
    let (goal, armed, _) = show(&mut handle).await;
    let goal = goal.unwrap();
    assert_eq!(
        (goal.phase, goal.rounds_used, armed),
        (GoalPhase::Blocked, 1, false)
    );
    assert_eq!(goal.reason.unwrap().message, "which database?");
    shutdown(&mut handle).await;
    // The record follows the whole tool batch, before the model's next reply.
    let messages = session_messages(&ws, &id);
    let at = messages
        .iter()
        .position(|m| m.text().contains("\"change\":\"blocked\""))
        .unwrap();
    assert_eq!(messages[at - 1].role, minicode::chat::Role::Tool);
    assert_eq!(messages[at + 1].text(), "I need to know the database.");
}

#[tokio::test]
async fn an_interrupt_disarms_without_a_record_and_prompts_go_first() {
    let (_dir, ws) = workspace();
    let fake = Fake::new(vec![
        Answer::Reply(text_reply("answer to the question")),
        Answer::Hang,
    ]);
    let mut handle = spawn(&ws, fake.clone(), options(256));
    let id = configured(&mut handle).await;
    // A prompt already waiting when the goal is created is answered before round 1.
    handle.send(create("long task"));
    handle.send(Op::Submit("quick question".into()));
    until(&mut handle, |e| matches!(e, Event::GoalRoundStarted { .. })).await;
    until(&mut handle, |e| {
        matches!(e, Event::ModelRequestStarted { .. })
    })
    .await;
    let requests = fake.main_requests();
    assert_eq!(last_user(&requests[0].messages), "quick question");
    handle.send(Op::Interrupt);
    let events = stop(&mut handle, true).await;
    assert!(events.iter().any(|e| matches!(
        e,
        Event::TurnEnded {
            end: TurnEnd::Interrupted,
            ..
        }
    )));
    let (goal, armed, _) = show(&mut handle).await;
    let goal = goal.unwrap();
    assert_eq!(
        (goal.phase, goal.revision, armed),
        (GoalPhase::Active, 1, false)
    );
    shutdown(&mut handle).await;
    let records = session_messages(&ws, &id)
        .iter()
        .filter(|m| record::is_record(m))
        .count();
    assert_eq!(records, 1);
}

#[tokio::test]
async fn resume_and_fork_start_disarmed_send_nothing_and_count_on() {
    let (_dir, ws) = workspace();
    let fake = Fake::new(vec![Answer::Reply(text_reply("round one")), Answer::Hang]);
    let mut handle = spawn(&ws, fake, options(256));
    let id = configured(&mut handle).await;
    handle.send(create("keep going"));
    until(&mut handle, |e| {
        matches!(e, Event::GoalRoundStarted { round: 2, .. })
    })
    .await;
    until(&mut handle, |e| {
        matches!(e, Event::ModelRequestStarted { .. })
    })
    .await;
    handle.send(Op::Interrupt);
    stop(&mut handle, true).await;
    shutdown(&mut handle).await;

    // Resume: the goal is there, active and disarmed; nothing is sent.
    let quiet = Fake::new(vec![
        text_reply("round three"),
        complete(),
        text_reply("done"),
    ]);
    let session = Session::open(&ws, &id).unwrap();
    let mut handle = spawn_session(session, quiet.clone(), options(256));
    let events = until(&mut handle, |e| matches!(e, Event::GoalStatus { .. })).await;
    let Some(Event::GoalStatus {
        goal: Some(goal),
        armed: false,
        error: None,
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!((goal.phase, goal.rounds_used), (GoalPhase::Active, 2));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::HistoryRestored { entries } if entries.iter().any(|h| matches!(h, minicode::protocol::HistoryEntry::Goal { .. }))
    )));
    show(&mut handle).await;
    assert!(quiet.main_requests().is_empty());

    // Fork: a new session with the same history; the original file is untouched.
    let original =
        std::fs::read(minicode::session::sessions_dir(&ws).join(format!("{id}.json"))).unwrap();
    handle.send(Op::Fork);
    let events = until(&mut handle, |e| matches!(e, Event::GoalStatus { .. })).await;
    let fork_id = events
        .iter()
        .find_map(|e| match e {
            Event::SessionForked {
                parent_id,
                session_id,
            } => {
                assert_eq!(parent_id, &id);
                Some(session_id.clone())
            }
            _ => None,
        })
        .expect("forked");
    assert_ne!(fork_id, id);
    assert!(matches!(
        events.last(),
        Some(Event::GoalStatus { armed: false, goal: Some(g), .. }) if g.phase == GoalPhase::Active
    ));
    show(&mut handle).await;
    assert!(quiet.main_requests().is_empty());
    assert_eq!(
        std::fs::read(minicode::session::sessions_dir(&ws).join(format!("{id}.json"))).unwrap(),
        original
    );

    // An explicit resume arms it and counts on from rounds_used.
    handle.send(Op::Goal(GoalOp::Resume {
        expected: None,
        max_rounds: None,
    }));
    let events = run_out(&mut handle).await;
    assert_eq!(rounds(&events), [3, 4]);
    shutdown(&mut handle).await;
    let listed = Session::list(&ws).unwrap();
    let fork = listed.iter().find(|s| s.id == fork_id).unwrap();
    assert_eq!(fork.forked_from.as_deref(), Some(id.as_str()));
    // The original still has its two rounds and an active goal.
    let original_goal = Goals::replay(&session_messages(&ws, &id));
    assert_eq!(original_goal.current().unwrap().unwrap().rounds_used, 2);
}

#[tokio::test]
async fn the_goal_survives_compaction_in_the_task_ledger() {
    let (_dir, ws) = workspace();
    let fake = Fake::new(vec![
        text_reply("started"),
        text_reply(&"x".repeat(6000)),
        text_reply(&"y".repeat(6000)),
        text_reply("after compaction"),
    ])
    .with_summaries(vec![Answer::Reply(text_reply("notes"))]);
    let opts = Options {
        context_window: 16_384,
        keep_recent_tokens: Some(1000),
        ..options(256)
    };
    let mut handle = spawn(&ws, fake.clone(), opts);
    configured(&mut handle).await;
    handle.send(Op::Goal(GoalOp::Create {
        objective: "the objective that must not be lost".into(),
        max_rounds: Some(1),
    }));
    run_out(&mut handle).await;
    turn(&mut handle, "one").await;
    turn(&mut handle, "two").await;
    handle.send(Op::Compact(None));
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{events:?}"
    );
    turn(&mut handle, "three").await;
    let last = fake.main_requests().pop().unwrap();
    let ledger = last
        .messages
        .iter()
        .map(Message::text)
        .find(|t| t.contains("<task-ledger>"))
        .expect("a ledger");
    let record_text = last
        .messages
        .iter()
        .skip(2)
        .find(|m| record::is_record(m))
        .map(Message::text);
    // The latest record is quoted whole in the ledger, even though its message was compacted.
    assert!(record_text.is_none(), "the record should be compacted away");
    assert!(
        ledger.contains("<goal_state>{\"version\":1,\"change\":\"blocked\""),
        "{ledger}"
    );
    assert!(ledger.contains("the objective that must not be lost"));
    // The user's first request is the user's words, not a goal record.
    assert!(
        ledger.contains("<first-request>\none\n</first-request>"),
        "{ledger}"
    );
    shutdown(&mut handle).await;
}

/// A created record as minicode writes it, hand-written: the format is a contract.
const SEEDED_CREATED: &str = r#"<goal_state>{"version":1,"change":"created","goal":{"id":"g-0123456789ab","objective":"seeded objective","phase":"active","revision":1,"max_rounds":5,"rounds_used":0,"created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z"}}</goal_state>"#;
const SEEDED_PAUSED: &str = r#"<goal_state>{"version":1,"change":"paused","goal":{"id":"g-0123456789ab","objective":"seeded objective","phase":"paused","revision":2,"max_rounds":5,"rounds_used":1,"created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:01:00.000Z"}}</goal_state>"#;

#[tokio::test]
async fn a_seeded_session_file_replays_its_goal_disarmed() {
    let (_dir, ws) = workspace();
    let id = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    let round = record::Round {
        goal_id: "g-0123456789ab".into(),
        revision: 1,
        round: 1,
        max_rounds: 5,
    }
    .render();
    let messages = serde_json::json!([
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": SEEDED_CREATED},
        {"role": "user", "content": round},
        {"role": "assistant", "content": "did a step"},
        {"role": "user", "content": SEEDED_PAUSED},
    ]);
    let file = serde_json::json!({
        "version": 3,
        "id": id,
        "workspace": ws,
        "created": "2026-01-01T00:00:00Z",
        "updated": "2026-01-01T00:01:00Z",
        "messages": messages,
    });
    let dir = minicode::session::sessions_dir(&ws);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), file.to_string()).unwrap();
    let fake = Fake::new(vec![text_reply("answer")]);
    let session = Session::open(&ws, id).unwrap();
    let mut handle = spawn_session(session, fake.clone(), options(256));
    let events = until(&mut handle, |e| matches!(e, Event::GoalStatus { .. })).await;
    let Some(Event::GoalStatus {
        goal: Some(goal),
        armed: false,
        error: None,
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(goal.id, "g-0123456789ab");
    assert_eq!(
        (goal.phase, goal.revision, goal.rounds_used),
        (GoalPhase::Paused, 2, 1)
    );
    // The model sees the goal and has its tools in the next ordinary turn; the goal stays.
    turn(&mut handle, "what is the goal?").await;
    let request = &fake.main_requests()[0];
    assert!(request.messages.iter().any(|m| m.text() == SEEDED_PAUSED));
    // Two user messages in a row never reach the server: the round follows an acknowledgement.
    let roles: Vec<_> = request.messages.iter().map(|m| m.role).collect();
    assert!(
        roles
            .windows(2)
            .all(|w| !(w[0] == minicode::chat::Role::User && w[1] == minicode::chat::Role::User)),
        "{roles:?}"
    );
    let (goal, armed, _) = show(&mut handle).await;
    assert_eq!((goal.unwrap().rounds_used, armed), (1, false));
    shutdown(&mut handle).await;
}

/// Events up to the goal run's end, which must come after the run's last turn ended.
async fn until_run_ended(handle: &mut AgentHandle) -> (Vec<Event>, Option<Goal>, bool) {
    let events = until(handle, |e| matches!(e, Event::GoalRunEnded { .. })).await;
    let Some(Event::GoalRunEnded { goal, interrupted }) = events.last().cloned() else {
        unreachable!()
    };
    let last = |f: fn(&Event) -> bool| events.iter().rposition(f);
    let started = last(|e| matches!(e, Event::TurnStarted { .. }));
    let ended = last(|e| matches!(e, Event::TurnEnded { .. }));
    assert!(
        ended.is_some() && started < ended,
        "a turn still runs: {events:?}"
    );
    (events, goal, interrupted)
}

#[tokio::test]
async fn the_core_says_once_when_a_goal_run_ends_and_how() {
    let (_dir, ws) = workspace();
    let fake = Fake::new(vec![Answer::Reply(text_reply("one")), Answer::Hang]);
    let mut handle = spawn(&ws, fake.clone(), options(256));
    configured(&mut handle).await;
    handle.send(Op::Goal(GoalOp::Create {
        objective: "never ends".into(),
        max_rounds: Some(1),
    }));
    // Blocked by the round limit after its only round's turn.
    let (events, goal, interrupted) = until_run_ended(&mut handle).await;
    assert_eq!(rounds(&events), [1]);
    let goal = goal.unwrap();
    assert_eq!(goal.phase, GoalPhase::Blocked);
    assert_eq!(goal.reason.unwrap().code, BlockCode::RoundLimit);
    assert!(!interrupted);
    // Commands that start no run (a refusal, a show) end none.
    handle.send(Op::Goal(GoalOp::Resume {
        expected: None,
        max_rounds: None,
    }));
    let (_, armed, _) = show(&mut handle).await;
    assert!(!armed);
    // A resume with a higher limit is a new run; an interrupt ends it, the goal still active.
    handle.send(Op::Goal(GoalOp::Resume {
        expected: None,
        max_rounds: Some(5),
    }));
    let started = until(&mut handle, |e| {
        matches!(
            e,
            Event::ModelRequestStarted { .. } | Event::GoalRunEnded { .. }
        )
    })
    .await;
    assert!(
        !started
            .iter()
            .any(|e| matches!(e, Event::GoalRunEnded { .. })),
        "a run ended twice or early: {started:?}"
    );
    handle.send(Op::Interrupt);
    let (_, goal, interrupted) = until_run_ended(&mut handle).await;
    assert_eq!(goal.unwrap().phase, GoalPhase::Active);
    assert!(interrupted);
    let (_, armed, _) = show(&mut handle).await;
    assert!(!armed);
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn goal_status_refuses_arguments_its_schema_does_not_declare() {
    // The schema declares no parameters and closes the object: an argument the model invents
    // is refused like any other tool's, not silently ignored.
    let (_dir, ws) = workspace();
    let status = tool_reply(&[("s1", "goal_status", r#"{"verbose":true}"#)]);
    let fake = Fake::new(vec![status, complete(), text_reply("all done")]);
    let mut handle = spawn(&ws, fake.clone(), options(256));
    let id = configured(&mut handle).await;
    handle.send(create("tidy the readme"));
    run_out(&mut handle).await;
    shutdown(&mut handle).await;
    let messages = session_messages(&ws, &id);
    let result = messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("s1"))
        .unwrap();
    assert!(
        result
            .text()
            .contains("invalid arguments: unknown field `verbose`"),
        "{}",
        result.text()
    );
}

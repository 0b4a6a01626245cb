//! Waiting for the agent core: the next event, events until one matches, a whole turn. Every
//! wait has one generous deadline, so a hung core fails the test instead of hanging it.

use std::time::Duration;

use minicode::protocol::{AgentHandle, Decision, Event, Op, TurnEnd, TurnStats};

/// How long any single event may take.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// The next event.
pub async fn next(handle: &mut AgentHandle) -> Event {
    tokio::time::timeout(DEADLINE, handle.next_event())
        .await
        .expect("timed out waiting for the core")
        .expect("core stopped")
}

/// Events until (and including) the first one matching `last`.
pub async fn until(handle: &mut AgentHandle, last: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut events = Vec::new();
    loop {
        let event = next(handle).await;
        let done = last(&event);
        events.push(event);
        if done {
            return events;
        }
    }
}

/// The first event `pred` matches (those before it are dropped).
pub async fn first(handle: &mut AgentHandle, pred: impl Fn(&Event) -> bool) -> Event {
    loop {
        let event = next(handle).await;
        if pred(&event) {
            return event;
        }
    }
}

/// How the turn whose events end with `TurnEnded` ended.
pub fn ended(events: &[Event]) -> (TurnEnd, TurnStats) {
    match events.last() {
        Some(Event::TurnEnded { end, stats, .. }) => (end.clone(), **stats),
        other => panic!("expected TurnEnded, got {other:?}"),
    }
}

/// Submits `prompt` and collects events until the turn ends, answering each approval request
/// with `decide(tool)` (`None` leaves it unanswered).
pub async fn run_turn(
    handle: &mut AgentHandle,
    prompt: &str,
    mut decide: impl FnMut(&str) -> Option<Decision>,
) -> (Vec<Event>, TurnEnd, TurnStats) {
    handle.send(Op::Submit(prompt.to_string()));
    let mut events = Vec::new();
    loop {
        let event = next(handle).await;
        if let Event::ApprovalRequested { call, tool, .. } = &event
            && let Some(decision) = decide(tool)
        {
            handle.send(Op::Decide {
                call: call.clone(),
                decision,
            });
        }
        let done = matches!(event, Event::TurnEnded { .. });
        events.push(event);
        if done {
            let (end, stats) = ended(&events);
            return (events, end, stats);
        }
    }
}

/// [`run_turn`] answering no approval (for cores that approve by themselves).
pub async fn turn(handle: &mut AgentHandle, prompt: &str) -> (Vec<Event>, TurnEnd, TurnStats) {
    run_turn(handle, prompt, |_| None).await
}

/// Sends `Shutdown` and waits for `ShutdownComplete`.
pub async fn shutdown(handle: &mut AgentHandle) -> Vec<Event> {
    handle.send(Op::Shutdown);
    until(handle, |e| matches!(e, Event::ShutdownComplete)).await
}

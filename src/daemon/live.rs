//! One session open in the daemon: its core's events numbered (strictly increasing from 1),
//! written to the event log and only then published; the run in progress, its cancel and the
//! approvals pending, so that one run at a time runs and the first answer to an approval wins.
//! Subscribers follow the log with their own cursor (memory first, disk for older lines), so
//! a replay and the live stream are one sequence. It never runs agent logic: ops go to the core.

mod track;

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::log::{CallJournal, EventLog, read_range, segment_bytes};
use super::wire::{self, EndReason, Line, RpcError};
use crate::protocol::{AgentHandle, Decision, Event, Op, OpSender, RunMarker};
use crate::sync::lock;

/// Recent lines kept in memory per session for subscribers; older ones are read from disk.
const RING_BYTES: usize = 4 * 1024 * 1024;

/// Why a subscription must end, for its `subscription.ended`.
pub(super) struct Ended {
    pub(crate) reason: EndReason,
    pub(crate) message: String,
    pub(crate) first_sequence: Option<u64>,
}

impl Ended {
    fn unreadable(e: String) -> Ended {
        Ended {
            reason: EndReason::LogUnreadable,
            message: format!("could not read the event log: {e}"),
            first_sequence: None,
        }
    }
}

/// The run in progress.
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub(crate) id: String,
    pub(crate) cancel_requested: bool,
    /// Its turn has started (the next `turn_ended` ends the run).
    pub(crate) bound: bool,
}

struct State {
    log: EventLog,
    last: u64,
    ring: VecDeque<(u64, Line)>,
    ring_bytes: usize,
    run: Option<Run>,
    pending: BTreeSet<String>,
    /// The sequence of the last `session_configured`: replaying from just before it shows
    /// the session as it stands (its restored history, then everything since).
    configured: u64,
    closed: bool,
    /// Why the event log could not be written: the session stopped storing (and publishing)
    /// events, its run was stopped and its core shut down.
    broken: Option<String>,
    /// A turn is running (`turn_started` without its `turn_ended` yet).
    turn_active: bool,
    /// A goal round began while a prompt's run waited for its turn: that turn is not the
    /// run's.
    foreign_turn: bool,
}

/// An open session.
pub(crate) struct Live {
    pub(crate) id: String,
    pub(crate) workspace: PathBuf,
    ops: OpSender,
    state: Mutex<State>,
    published: watch::Sender<u64>,
    journal: Arc<CallJournal>,
    /// Images a client sent for its next prompts (`session.store_image`).
    pub(super) images: super::images::Held,
}

/// Lines to append, built under the lock.
struct Batch {
    bytes: String,
    lines: Vec<(u64, Line)>,
    sync: bool,
}

impl State {
    fn line(&mut self, session: &str, run: Option<&str>, event: &str, batch: &mut Batch) {
        self.last += 1;
        let line = event_line(session, self.last, run, event);
        batch.bytes.push_str(&line);
        batch.lines.push((self.last, Line::from(line)));
    }

    /// The daemon's own events, numbered and logged like the core's.
    fn daemon_event(&mut self, session: &str, event: &RunMarker, batch: &mut Batch) {
        let text = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
        self.line(session, Some(event.run_id()), &text, batch);
        batch.sync = true;
    }

    /// Writes the batch to the log, then keeps it in memory for subscribers. A batch that
    /// cannot be stored is never published: the session is marked broken (the caller stops
    /// it) and, when the log was rolled back, its sequences are given back (nobody saw them).
    /// Returns whether the batch was stored.
    fn commit(&mut self, batch: Batch) -> bool {
        let (Some(first), Some(last)) = (
            batch.lines.first().map(|(s, _)| *s),
            batch.lines.last().map(|(s, _)| *s),
        ) else {
            return true;
        };
        if self.broken.is_some() {
            // Numbered and dropped: nobody will see these.
            self.last = first - 1;
            return false;
        }
        let appended = self
            .log
            .append(batch.bytes.as_bytes(), (first, last), batch.sync);
        if let Err(e) = appended {
            tracing::error!(error = %e, "could not write the event log; stopping the session");
            if e.rolled_back {
                self.last = first - 1;
            }
            self.broken = Some(format!("the event log could not be written: {e}"));
            return false;
        }
        for (sequence, line) in batch.lines {
            self.ring_bytes += line.len();
            self.ring.push_back((sequence, line));
        }
        // A test that shrinks the segments (`segment_bytes`) shrinks memory alike, so the log
        // can rotate past what memory still holds.
        let ring_limit = RING_BYTES.min(usize::try_from(segment_bytes()).unwrap_or(RING_BYTES));
        while self.ring_bytes > ring_limit
            && let Some((_, old)) = self.ring.pop_front()
        {
            self.ring_bytes -= old.len();
        }
        true
    }
}

/// The `event` notification for an event already serialized: written by hand (the event's
/// JSON is made once and stored as it is sent), in the shape of `protocol::envelope::
/// EventEnvelope`.
fn event_line(session: &str, sequence: u64, run: Option<&str>, event: &str) -> String {
    let run = match run {
        Some(id) => format!("\"{id}\""),
        None => "null".to_string(),
    };
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{{\"session_id\":\"{session}\",\
         \"sequence\":{sequence},\"run_id\":{run},\"event\":{event}}}}}\n"
    )
}

fn stopped_session() -> RpcError {
    RpcError::new(
        wire::UNKNOWN_SESSION,
        "the session is closed (or stopped because its event log could not be written)",
    )
}

fn empty_batch() -> Batch {
    Batch {
        bytes: String::new(),
        lines: Vec::new(),
        sync: false,
    }
}

impl Live {
    /// Starts serving a core whose first event (`first`, its `session_configured`) was read
    /// already. `run` is a run a crash left open (announced as `run_resumed`).
    pub(super) fn start(
        id: String,
        workspace: PathBuf,
        handle: AgentHandle,
        first: Event,
        (log, last): (EventLog, u64),
        journal: Arc<CallJournal>,
        run: Option<Run>,
    ) -> Arc<Live> {
        let (ops, events) = handle.split();
        let (published, _) = watch::channel(last);
        let live = Arc::new(Live {
            id,
            workspace,
            ops,
            state: Mutex::new(State {
                log,
                last,
                ring: VecDeque::new(),
                ring_bytes: 0,
                run: None,
                pending: BTreeSet::new(),
                configured: 0,
                closed: false,
                broken: None,
                turn_active: false,
                foreign_turn: false,
            }),
            published,
            journal,
            images: super::images::Held::default(),
        });
        if let Some(run) = run {
            let mut state = lock(&live.state);
            let mut batch = empty_batch();
            let event = RunMarker::RunResumed {
                run_id: run.id.clone(),
            };
            state.daemon_event(&live.id, &event, &mut batch);
            state.run = Some(run);
            live.commit(&mut state, batch);
        }
        live.append_core(std::slice::from_ref(&first));
        live.publish_all();
        tokio::spawn(super::pump::pump(live.clone(), events));
        live
    }

    fn publish(&self, last: u64) {
        self.published.send_replace(last);
    }

    /// Numbers and logs core events, keeping the run and approvals in step; the caller
    /// publishes them. Returns whether one of them should be published at once.
    pub(super) fn append_core(&self, events: &[Event]) -> bool {
        let mut urgent = false;
        let mut state = lock(&self.state);
        let mut batch = empty_batch();
        for event in events {
            // Streamed text waits for the next publication; anything else goes out at once.
            urgent |= !matches!(
                event,
                Event::TextDelta { .. } | Event::ReasoningDelta { .. }
            );
            state.track(event, &mut batch);
            let text = match serde_json::to_string(event) {
                Ok(text) => text,
                Err(e) => {
                    tracing::error!(error = %e, "could not serialize an event");
                    continue;
                }
            };
            let run = state.run.as_ref().map(|r| r.id.clone());
            state.line(&self.id, run.as_deref(), &text, &mut batch);
            if let Event::TurnEnded { end, .. } = event {
                state.turn_active = false;
                if std::mem::take(&mut state.foreign_turn) {
                    continue;
                }
                if let Some(run) = state.run.take_if(|r| r.bound) {
                    state.pending.clear();
                    let ended = RunMarker::RunEnded {
                        run_id: run.id,
                        end: end.clone(),
                    };
                    state.daemon_event(&self.id, &ended, &mut batch);
                    self.journal.clear();
                }
            }
            // A goal round is a run of its own, started by the core (after this event).
            if let Event::GoalRoundStarted { goal_id, .. } = event {
                if state.run.is_none() {
                    let run_id = uuid::Uuid::new_v4().to_string();
                    let started = RunMarker::RunStarted {
                        run_id: run_id.clone(),
                        prompt: None,
                        goal_id: Some(goal_id.clone()),
                    };
                    state.daemon_event(&self.id, &started, &mut batch);
                    state.run = Some(Run {
                        id: run_id,
                        cancel_requested: false,
                        bound: false,
                    });
                } else {
                    state.foreign_turn = true;
                }
            }
        }
        self.commit(&mut state, batch);
        urgent
    }

    /// Commits a batch; when it cannot be stored, stops the run and the core (each once).
    fn commit(&self, state: &mut State, batch: Batch) -> bool {
        let was_broken = state.broken.is_some();
        let stored = state.commit(batch);
        if !stored && !was_broken {
            state.run = None;
            state.pending.clear();
            self.ops.send(Op::Interrupt);
            self.ops.send(Op::Shutdown);
        }
        stored
    }

    /// Wakes subscribers for everything appended so far.
    pub(super) fn publish_all(&self) {
        let last = lock(&self.state).last;
        self.publish(last);
    }

    pub(super) fn mark_closed(&self) {
        let mut state = lock(&self.state);
        state.closed = true;
        // A clean end: the mark is exactly the last event.
        let last = state.last;
        if state.broken.is_none()
            && let Err(e) = state.log.mark(last)
        {
            tracing::warn!(error = %e, "could not write the event log's high-water mark");
        }
        let last = state.last;
        drop(state);
        self.publish(last);
    }

    /// A prompt (`submit`, or `submit_images` with `prompt` its text): refused while a run is
    /// in progress (never queued).
    pub(super) fn start_run(&self, op: Op, prompt: String) -> Result<String, RpcError> {
        let mut state = lock(&self.state);
        if state.closed || state.broken.is_some() {
            return Err(stopped_session());
        }
        if let Some(run) = &state.run {
            return Err(RpcError::new(
                wire::BUSY,
                format!(
                    "a run is in progress in this session ({}); wait for its run_ended or cancel it",
                    run.id
                ),
            )
            .with_data(json!({ "run_id": run.id })));
        }
        if state.turn_active {
            return Err(RpcError::new(
                wire::BUSY,
                "a turn is running in this session; wait for its turn_ended",
            ));
        }
        let run_id = uuid::Uuid::new_v4().to_string();
        let mut batch = empty_batch();
        let event = RunMarker::RunStarted {
            run_id: run_id.clone(),
            prompt: Some(prompt.clone()),
            goal_id: None,
        };
        state.daemon_event(&self.id, &event, &mut batch);
        if !self.commit(&mut state, batch) {
            drop(state);
            self.publish_all();
            return Err(stopped_session());
        }
        state.run = Some(Run {
            id: run_id.clone(),
            cancel_requested: false,
            bound: false,
        });
        // Sent under the lock, so the core's events for it follow `run_started`.
        self.ops.send(op);
        let last = state.last;
        drop(state);
        self.publish(last);
        Ok(run_id)
    }

    /// `interrupt`: cancels the run in progress (recorded first), or stops a turn that is no
    /// run (a compaction, a `shell` command). Returns the run cancelled; an error when nothing
    /// runs.
    pub(super) fn interrupt(&self) -> Result<Option<String>, RpcError> {
        let run = lock(&self.state).run.as_ref().map(|r| r.id.clone());
        if let Some(run_id) = run
            && self.cancel(&run_id).is_some()
        {
            return Ok(Some(run_id));
        }
        if lock(&self.state).turn_active {
            self.ops.send(Op::Interrupt);
            return Ok(None);
        }
        Err(RpcError::new(
            wire::UNKNOWN_RUN,
            "no run is in progress in this session",
        ))
    }

    /// Cancels this session's run: `None` when `run_id` is not its run in progress.
    pub(crate) fn cancel(&self, run_id: &str) -> Option<()> {
        let mut state = lock(&self.state);
        let run = state.run.as_mut().filter(|r| r.id == run_id)?;
        let first = !run.cancel_requested;
        run.cancel_requested = true;
        if first {
            // Recorded before the core hears of it, so a restart still ends the run cancelled.
            let mut batch = empty_batch();
            let event = RunMarker::CancelRequested {
                run_id: run_id.to_string(),
            };
            state.daemon_event(&self.id, &event, &mut batch);
            self.commit(&mut state, batch);
        }
        self.ops.send(Op::Interrupt);
        let last = state.last;
        drop(state);
        self.publish(last);
        Some(())
    }

    /// `decide`: the first answer to a pending approval wins.
    pub(super) fn decide(&self, call: &str, decision: Decision) -> Result<(), RpcError> {
        let mut state = lock(&self.state);
        if !state.pending.remove(call) {
            return Err(RpcError::new(
                wire::NO_PENDING_APPROVAL,
                format!(
                    "no approval is pending for call {call:?}: it was answered already or never asked"
                ),
            ));
        }
        self.ops.send(Op::Decide {
            call: call.to_string(),
            decision,
        });
        Ok(())
    }

    /// An op the core answers on the event stream (a goal command, a rewind, a listing…);
    /// while a turn runs the core applies or queues it as in any frontend.
    pub(super) fn forward(&self, op: Op) -> Result<(), RpcError> {
        if self.is_closed() {
            return Err(RpcError::new(
                wire::UNKNOWN_SESSION,
                "the session is closed",
            ));
        }
        self.ops.send(op);
        Ok(())
    }

    /// Asks the core to stop (it interrupts a run, saves and says `shutdown_complete`).
    pub(super) fn shutdown(&self) {
        self.ops.send(Op::Shutdown);
    }

    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Resolves once the core has stopped.
    pub(crate) async fn closed(&self) {
        let mut published = self.published.subscribe();
        while !self.is_closed() {
            if published.changed().await.is_err() {
                return;
            }
        }
    }

    /// What `session.open` and `session.list` say about the session.
    pub(crate) fn info(&self) -> Value {
        let state = lock(&self.state);
        json!({
            "session_id": self.id,
            "workspace": self.workspace.display().to_string(),
            "last_sequence": state.last,
            "resume_after": state.configured.saturating_sub(1),
            "run_id": state.run.as_ref().map(|r| r.id.clone()),
            "pending_approvals": state.pending.iter().collect::<Vec<_>>(),
            "closed": state.closed,
        })
    }

    /// Whether a subscription may start after `after`: not beyond the last event, not before
    /// what the log still holds.
    pub(crate) fn check_after(&self, after: u64) -> Result<(), RpcError> {
        {
            let state = lock(&self.state);
            if after > state.last {
                return Err(RpcError::params(format!(
                    "after_sequence {after} is beyond the last event ({})",
                    state.last
                )));
            }
            let first = state.log.first_sequence();
            if after + 1 < first {
                return Err(RpcError::new(
                    wire::EVENTS_GONE,
                    format!("events before {first} were rotated out of the log"),
                )
                .with_data(json!({ "first_sequence": first })));
            }
        }
        Ok(())
    }

    /// Starts sending every line after `after` to `out`, then each new one as it is
    /// published, until the session closes or `out` is gone.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        after: u64,
        out: super::outbox::Outbox,
    ) -> tokio::task::JoinHandle<()> {
        let receiver = self.published.subscribe();
        tokio::spawn(super::pump::follow(self.clone(), after, out, receiver))
    }

    /// Up to `max` lines after `cursor`: from memory when it still holds them, else from disk
    /// (read on the blocking pool: the log is in the repository's folder).
    /// Never skips: a cursor older than what the log still holds ends the subscription.
    pub(super) async fn lines_after(
        &self,
        cursor: u64,
        max: usize,
    ) -> Result<Vec<(u64, Line)>, Ended> {
        let behind = |first: u64| Ended {
            reason: EndReason::FellBehind,
            message: format!(
                "events after {cursor} were rotated out of the log before they were sent; \
                 the oldest left is {first}"
            ),
            first_sequence: Some(first),
        };
        let (segments, upto) = {
            let state = lock(&self.state);
            if cursor >= state.last {
                return Ok(Vec::new());
            }
            let first = state.log.first_sequence();
            if cursor + 1 < first
                && state
                    .ring
                    .front()
                    .is_none_or(|(front, _)| *front > cursor + 1)
            {
                return Err(behind(first));
            }
            match state.ring.front() {
                Some((front, _)) if *front <= cursor + 1 => {
                    let skip = usize::try_from(cursor + 1 - front).unwrap_or(usize::MAX);
                    let end = state.ring.len().min(skip.saturating_add(max));
                    return Ok(state.ring.range(skip.min(end)..end).cloned().collect());
                }
                Some((front, _)) => (state.log.segments(), front - 1),
                None => (state.log.segments(), state.last),
            }
        };
        let read = tokio::task::spawn_blocking(move || read_range(&segments, cursor, upto)).await;
        match read {
            Ok(Ok(lines)) => Ok(lines),
            // Rotated away between the look at the segments and the read.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(behind(self.first_available()))
            }
            Ok(Err(e)) => Err(Ended::unreadable(e.to_string())),
            Err(e) => Err(Ended::unreadable(e.to_string())),
        }
    }

    /// The oldest sequence a subscriber can still get.
    pub(super) fn first_available(&self) -> u64 {
        lock(&self.state).log.first_sequence()
    }

    /// Why the session stopped storing events, if it did.
    pub(super) fn broken(&self) -> Option<String> {
        lock(&self.state).broken.clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::event_line;
    use crate::protocol::envelope::{Notification, Streamed};
    use crate::protocol::{Event, RunMarker};

    #[test]
    fn an_event_line_reads_back_as_the_typed_envelope() {
        let event = Event::TextDelta { text: "hi".into() };
        let json = serde_json::to_string(&event).unwrap();
        let line = event_line("s1", 7, Some("r1"), &json);
        let Notification::Event(envelope) = serde_json::from_str(&line).unwrap() else {
            panic!("not an event: {line}");
        };
        assert_eq!((envelope.session_id.as_str(), envelope.sequence), ("s1", 7));
        assert_eq!(envelope.run_id.as_deref(), Some("r1"));
        assert_eq!(envelope.event, Streamed::Core(event));
        let marker = RunMarker::RunResumed {
            run_id: "r1".into(),
        };
        let line = event_line("s1", 8, None, &serde_json::to_string(&marker).unwrap());
        let Notification::Event(envelope) = serde_json::from_str(&line).unwrap() else {
            panic!("not an event: {line}");
        };
        assert_eq!(envelope.run_id, None);
        assert_eq!(envelope.event, Streamed::Marker(marker));
    }
}

//! The two loops of an open session: the pump (the core's events → numbered, logged lines,
//! published in bursts) and a subscriber's cursor (lines after it → one chunk per wake-up to
//! its connection). They hold no state of their own beyond a cursor; `live.rs` owns the rest.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::live::{Ended, Live};
use super::outbox::{Outbox, SUBSCRIBER_QUEUE_BYTES};
use super::wire::{EndReason, Line, SubscriptionEnded};
use crate::protocol::Event;

/// Lines a subscriber takes per lock (and the pump per batch).
const FOLLOW_BATCH: usize = 4096;
/// The most one chunk for a subscriber holds (a single larger line goes alone).
const CHUNK_BYTES: usize = 256 * 1024;
/// While events stream, subscribers are woken at most this often: each wake-up then carries
/// many events in one write per subscriber, which keeps the cost of fan-out low.
const PUBLISH_EVERY: std::time::Duration = std::time::Duration::from_millis(2);

/// The core's events → the log and subscribers, in batches (one write per batch). Streamed
/// text is published at most every [`PUBLISH_EVERY`]; anything else at once.
pub(super) async fn pump(live: Arc<Live>, mut events: mpsc::UnboundedReceiver<Event>) {
    let mut batch: Vec<Event> = Vec::with_capacity(64);
    let mut last_publish = tokio::time::Instant::now();
    let mut unpublished = false;
    loop {
        let next = if unpublished {
            tokio::select! {
                event = events.recv() => event,
                _ = tokio::time::sleep_until(last_publish + PUBLISH_EVERY) => {
                    live.publish_all();
                    last_publish = tokio::time::Instant::now();
                    unpublished = false;
                    continue;
                }
            }
        } else {
            events.recv().await
        };
        let Some(event) = next else {
            break;
        };
        batch.push(event);
        while batch.len() < FOLLOW_BATCH
            && let Ok(event) = events.try_recv()
        {
            batch.push(event);
        }
        let urgent = live.append_core(&batch);
        batch.clear();
        let now = tokio::time::Instant::now();
        if urgent || now >= last_publish + PUBLISH_EVERY {
            live.publish_all();
            last_publish = now;
            unpublished = false;
        } else {
            unpublished = true;
        }
    }
    live.mark_closed();
}

/// One subscription: a cursor over the session's lines. It never skips: whatever stops it
/// (the session closed, the log lost what it needed, the client stopped reading) is said in
/// one `subscription.ended` with the last sequence sent and the oldest still available.
pub(super) async fn follow(
    live: Arc<Live>,
    mut cursor: u64,
    out: Outbox,
    mut published: watch::Receiver<u64>,
) {
    loop {
        published.borrow_and_update();
        let lines = match live.lines_after(cursor, FOLLOW_BATCH).await {
            Ok(lines) => lines,
            Err(ended) => {
                out.send(end_line(&live, cursor, ended)).await;
                return;
            }
        };
        if lines.is_empty() {
            if let Some(ended) = ended_at_tail(&live) {
                out.send(end_line(&live, cursor, ended)).await;
                return;
            }
            if published.changed().await.is_err() {
                return;
            }
            continue;
        }
        let Some((last, chunk)) = chunk(lines) else {
            continue;
        };
        let queued = out.queued();
        if queued > 0 && queued + chunk.len() > SUBSCRIBER_QUEUE_BYTES {
            out.send(end_line(&live, cursor, queue_full(&live))).await;
            return;
        }
        if !out.send(chunk).await {
            return;
        }
        cursor = last;
    }
}

/// The `subscription.ended` line for a subscriber whose last line sent is `cursor`.
fn end_line(live: &Live, cursor: u64, ended: Ended) -> Line {
    SubscriptionEnded {
        session_id: live.id.clone(),
        after_sequence: cursor,
        reason: ended.reason,
        message: ended.message,
        first_sequence: ended.first_sequence,
    }
    .line()
}

/// Why a subscriber that has read everything stops, if it does: the log could not be written
/// or the session closed. `None`: it waits for more.
fn ended_at_tail(live: &Live) -> Option<Ended> {
    let (reason, message) = if let Some(message) = live.broken() {
        (EndReason::LogWriteFailed, message)
    } else if live.is_closed() {
        (EndReason::SessionClosed, "the session closed".to_string())
    } else {
        return None;
    };
    Some(Ended {
        reason,
        message,
        first_sequence: Some(live.first_available()),
    })
}

/// The end of a subscriber that let its queue fill: it resubscribes from its last sequence.
fn queue_full(live: &Live) -> Ended {
    Ended {
        reason: EndReason::QueueFull,
        message: format!(
            "this client did not read {SUBSCRIBER_QUEUE_BYTES} bytes of events; \
             subscribe again from after_sequence"
        ),
        first_sequence: Some(live.first_available()),
    }
}

/// One chunk per batch (one queue entry and one write for many events), of a bounded size so
/// the queue's bound is checked often enough; with the sequence of its last line.
fn chunk(mut lines: Vec<(u64, Line)>) -> Option<(u64, Line)> {
    let mut bytes = 0;
    let keep = lines
        .iter()
        .position(|(_, line)| {
            bytes += line.len();
            bytes > CHUNK_BYTES
        })
        .map_or(lines.len(), |i| i.max(1));
    lines.truncate(keep);
    let (last, _) = lines.last()?;
    let last = *last;
    let chunk: Line = if lines.len() == 1 {
        lines.swap_remove(0).1
    } else {
        let mut text = String::with_capacity(lines.iter().map(|(_, l)| l.len()).sum());
        for (_, line) in &lines {
            text.push_str(line);
        }
        text.into()
    };
    Some((last, chunk))
}

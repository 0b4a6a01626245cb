//! The two loops of an open session: the pump (the core's events → numbered, logged lines,
//! published in bursts) and a subscriber's cursor (lines after it → one chunk per wake-up to
//! its connection). They hold no state of their own beyond a cursor; `live.rs` owns the rest.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::live::Live;
use super::wire::{self, Line};
use crate::protocol::Event;

/// Lines a subscriber takes per lock (and the pump per batch).
const FOLLOW_BATCH: usize = 4096;
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

/// One subscription: a cursor over the session's lines.
pub(super) async fn follow(
    live: Arc<Live>,
    mut cursor: u64,
    out: mpsc::Sender<Line>,
    mut published: watch::Receiver<u64>,
) {
    loop {
        published.borrow_and_update();
        let lines = match live.lines_after(cursor, FOLLOW_BATCH).await {
            Ok(lines) => lines,
            Err(e) => {
                let params =
                    json!({"session_id": live.id, "after_sequence": cursor, "reason": e.message});
                let _ = out
                    .send(wire::notification("subscription.ended", params))
                    .await;
                return;
            }
        };
        if lines.is_empty() {
            if live.is_closed() {
                let params = json!({"session_id": live.id, "after_sequence": cursor, "reason": "the session closed"});
                let _ = out
                    .send(wire::notification("subscription.ended", params))
                    .await;
                return;
            }
            if published.changed().await.is_err() {
                return;
            }
            continue;
        }
        // One chunk per batch: one queue entry and one write for many events.
        let Some((last, _)) = lines.last() else {
            continue;
        };
        let last = *last;
        let chunk: Line = if lines.len() == 1 {
            lines[0].1.clone()
        } else {
            let mut text = String::with_capacity(lines.iter().map(|(_, l)| l.len()).sum());
            for (_, line) in &lines {
                text.push_str(line);
            }
            text.into()
        };
        if out.send(chunk).await.is_err() {
            return;
        }
        cursor = last;
    }
}

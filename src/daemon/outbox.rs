//! A connection's queue of lines for its writer, counted in bytes as well as in entries, so a
//! subscriber that stops reading is noticed at a bound instead of holding without end what
//! the session produces. It knows nothing of what the lines say.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

use super::wire::Line;

/// The most a subscription lets pile up for a client that does not read: past it, the
/// subscription ends (`queue_full`) and the client subscribes again when it reads.
pub(crate) const SUBSCRIBER_QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// The sending side, shared by the connection's answers and its subscriptions.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Line>,
    queued: Arc<AtomicUsize>,
}

/// The writer's side.
pub(crate) struct Inbox {
    rx: mpsc::Receiver<Line>,
    queued: Arc<AtomicUsize>,
}

/// A queue of at most `entries` lines.
pub(crate) fn channel(entries: usize) -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::channel(entries);
    let queued = Arc::new(AtomicUsize::new(0));
    (
        Outbox {
            tx,
            queued: queued.clone(),
        },
        Inbox { rx, queued },
    )
}

impl Outbox {
    /// Queues a line (waiting while the queue has no free entry); false once the writer is
    /// gone.
    pub(super) async fn send(&self, line: Line) -> bool {
        let len = line.len();
        self.queued.fetch_add(len, Ordering::Relaxed);
        if self.tx.send(line).await.is_err() {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Bytes queued and not yet taken by the writer.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

impl Inbox {
    pub(crate) async fn recv(&mut self) -> Option<Line> {
        let line = self.rx.recv().await?;
        self.queued.fetch_sub(line.len(), Ordering::Relaxed);
        Some(line)
    }

    pub(crate) fn try_recv(&mut self) -> Option<Line> {
        let line = self.rx.try_recv().ok()?;
        self.queued.fetch_sub(line.len(), Ordering::Relaxed);
        Some(line)
    }
}

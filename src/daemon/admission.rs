//! Who may hold a connection. Anyone who can reach the socket or the port may connect, token
//! or not, so connections that have not passed the handshake are few, short-lived and cheap:
//! at most [`MAX_UNAUTHENTICATED`] at once (a new one pushes out the oldest, so a flood of idle
//! connections cannot lock the real client out), each given [`HANDSHAKE_DEADLINE`] and a
//! handshake line of at most [`HANDSHAKE_MAX_LINE`] bytes. All connections together stay under
//! [`MAX_CONNECTIONS`], far below the descriptors a process gets. It knows nothing of the wire.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// Connections at once, authenticated or not.
pub(crate) const MAX_CONNECTIONS: usize = 256;
/// Connections waiting for their handshake at once.
pub(crate) const MAX_UNAUTHENTICATED: usize = 32;
/// How long a connection may take to present the token.
pub(crate) const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
/// The longest line read before the handshake (a handshake is well under 1 KiB).
pub(crate) const HANDSHAKE_MAX_LINE: usize = 4096;

/// The daemon's count of connections.
#[derive(Default)]
pub(crate) struct Admission {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    total: usize,
    next: u64,
    /// Connections still before their handshake, oldest first, with what pushes them out.
    waiting: VecDeque<(u64, CancellationToken)>,
}

/// One admitted connection; dropping it frees its place.
pub(crate) struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    /// Cancelled when a newer connection pushed this one out before its handshake.
    pub(crate) evicted: CancellationToken,
}

impl Admission {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// A place for a new connection, or `None` when every place is held by an authenticated
    /// one. When full, the oldest connection still waiting for its handshake makes room.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Ticket> {
        let mut inner = self.inner();
        if inner.waiting.len() >= MAX_UNAUTHENTICATED || inner.total >= MAX_CONNECTIONS {
            let (_, oldest) = inner.waiting.pop_front()?;
            oldest.cancel();
        }
        inner.total += 1;
        inner.next += 1;
        let id = inner.next;
        let evicted = CancellationToken::new();
        inner.waiting.push_back((id, evicted.clone()));
        Some(Ticket {
            admission: self.clone(),
            id,
            evicted,
        })
    }
}

impl Ticket {
    /// The handshake passed: the connection can no longer be pushed out.
    pub(crate) fn authenticated(&self) {
        let mut inner = self.admission.inner();
        inner.waiting.retain(|(id, _)| *id != self.id);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut inner = self.admission.inner();
        inner.total = inner.total.saturating_sub(1);
        inner.waiting.retain(|(id, _)| *id != self.id);
    }
}

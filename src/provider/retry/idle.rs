//! The idle limit and the deadline of one streamed body, kept by a single timer armed once per
//! body. It only waits: it never decodes, retries or names an HTTP client.
//!
//! A fast stream makes tens of thousands of reads; a fresh `tokio::time::Timeout` per read
//! registered and removed a timer-wheel entry each time (8 % of a 200 KB stream's CPU). Here the
//! one timer stays armed and only its deadline is moved, and only when it fires early: a read
//! notes when it started waiting (a clock read), and a timer that fires before the current
//! wait has lasted the idle limit is pushed back to where that wait would end.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

/// Which limit a wait ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expired {
    /// No item for the whole idle limit.
    Idle,
    /// The whole call's deadline passed.
    Deadline,
}

/// The timer of one body: see the module doc.
#[derive(Debug)]
pub(super) struct Watch {
    sleep: Pin<Box<Sleep>>,
    idle: Duration,
    deadline: Instant,
}

impl Watch {
    /// A watch whose waits each last at most `idle`, and none past `deadline`.
    pub(super) fn new(idle: Duration, deadline: Instant) -> Self {
        let first = Instant::now().checked_add(idle).unwrap_or(deadline);
        Self {
            sleep: Box::pin(tokio::time::sleep_until(first.min(deadline))),
            idle,
            deadline,
        }
    }

    /// The next item of `body`, or the limit this wait ran into. An item already there is
    /// taken without touching the timer. Cancel-safe as `next()` is: dropping the wait loses
    /// nothing.
    pub(super) async fn next<S>(&mut self, body: &mut S) -> Result<Option<S::Item>, Expired>
    where
        S: Stream + Unpin,
    {
        let started = Instant::now();
        if started >= self.deadline {
            return Err(Expired::Deadline);
        }
        // When this wait ends for lack of data: the idle limit or the deadline, the earlier.
        let ends = started
            .checked_add(self.idle)
            .map_or(self.deadline, |idle_at| idle_at.min(self.deadline));
        let expired = if ends == self.deadline {
            Expired::Deadline
        } else {
            Expired::Idle
        };
        poll_fn(|cx| {
            if let Poll::Ready(item) = body.poll_next_unpin(cx) {
                return Poll::Ready(Ok(item));
            }
            loop {
                if self.sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                if Instant::now() >= ends {
                    return Poll::Ready(Err(expired));
                }
                // Armed for an earlier wait: this one ends later.
                self.sleep.as_mut().reset(ends);
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use futures_util::stream;

    // Real time (the crate's tests do not pause tokio's clock): short limits, and only lower
    // bounds on how long a wait took, so a loaded machine cannot fail them.
    const IDLE: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn an_item_already_there_is_taken() {
        let mut watch = Watch::new(IDLE, Instant::now() + IDLE * 10);
        let mut body = stream::iter([1, 2]);
        assert_eq!(watch.next(&mut body).await, Ok(Some(1)));
        assert_eq!(watch.next(&mut body).await, Ok(Some(2)));
        assert_eq!(watch.next(&mut body).await, Ok(None));
    }

    #[tokio::test]
    async fn a_silent_body_runs_into_the_idle_limit() {
        let start = Instant::now();
        let mut watch = Watch::new(IDLE, start + IDLE * 10);
        let mut body = stream::pending::<u8>();
        assert_eq!(watch.next(&mut body).await, Err(Expired::Idle));
        assert!(start.elapsed() >= IDLE);
    }

    #[tokio::test]
    async fn the_idle_limit_counts_from_the_start_of_each_wait() {
        let start = Instant::now();
        let mut watch = Watch::new(IDLE, start + IDLE * 20);
        // Items keep coming for longer than the idle limit: the timer armed at the start
        // fires during a later wait, which must still get the whole limit.
        let mut body = Box::pin(
            stream::iter(0..4)
                .then(|i| async move {
                    tokio::time::sleep(IDLE * 3 / 4).await;
                    i
                })
                .chain(stream::pending()),
        );
        for i in 0..4 {
            assert_eq!(watch.next(&mut body).await, Ok(Some(i)));
        }
        let last_item = Instant::now();
        assert_eq!(watch.next(&mut body).await, Err(Expired::Idle));
        assert!(last_item.elapsed() >= IDLE);
    }

    #[tokio::test]
    async fn the_deadline_ends_a_wait_shorter_than_the_idle_limit() {
        let start = Instant::now();
        let mut watch = Watch::new(IDLE * 10, start + IDLE);
        let mut body = stream::pending::<u8>();
        assert_eq!(watch.next(&mut body).await, Err(Expired::Deadline));
        assert!(start.elapsed() >= IDLE);
        // Once it has passed, a read fails at once, even with an item there.
        let mut ready = stream::iter([1]);
        assert_eq!(watch.next(&mut ready).await, Err(Expired::Deadline));
    }
}

//! Retries and the streaming driver: exponential backoff with jitter, `Retry-After`, the
//! stream idle timeout, the deadline of the whole call, and the rule that a request is sent
//! again only while no response has started. It knows nothing of HTTP clients: a provider hands
//! it a function that opens one attempt and yields body bytes, and gets back an [`EventStream`].
//!
//! Everything is awaited inside the returned stream, so dropping it cancels a backoff wait or
//! an open connection at once. It never falls back to a non-streaming request.

mod idle;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;
use tracing::Instrument;

use super::sse::{Decoder, ReplyLimits};
use super::{EventStream, ProviderError, StreamEvent};
use idle::{Expired, Watch};

/// Response body bytes of one attempt; errors are already mapped (mid-stream → `Network`).
pub(crate) type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

/// What opening one attempt gave.
pub(crate) enum Opened {
    /// The response began: its body.
    Body(ByteStream),
    /// The server refused a parameter and the request was adapted (`compat`): send it again
    /// at once. `reason` is announced like any retry.
    Adapted { reason: String },
}

/// Adapted resends one call may make (there are only a handful of parameters to adapt).
const MAX_ADAPTATIONS: u32 = 6;

/// When and how often to send a request again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Attempts in total, the first included; 1 disables retries.
    pub max_attempts: u32,
    /// The wait after the first failure; doubled after each further one.
    pub base_delay: Duration,
    /// Upper bound of the computed (not server-requested) wait.
    pub max_delay: Duration,
    /// Upper bound of a server's `Retry-After`, so a hostile header cannot park us for hours.
    pub retry_after_cap: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            max_attempts: crate::defaults::RETRY_ATTEMPTS,
            base_delay: crate::defaults::RETRY_BASE_DELAY,
            max_delay: crate::defaults::RETRY_MAX_DELAY,
            retry_after_cap: crate::defaults::RETRY_AFTER_CAP,
        }
    }
}

impl Policy {
    /// The wait after failed attempt number `failed` (1-based). A server-requested wait wins
    /// (capped); otherwise `base × 2^(failed-1)` with ±25 % jitter so clients spread out.
    pub fn delay(&self, failed: u32, retry_after_ms: Option<u64>) -> Duration {
        if let Some(ms) = retry_after_ms {
            return Duration::from_millis(ms).min(self.retry_after_cap);
        }
        let exp = 2u32.saturating_pow(failed.saturating_sub(1).min(20));
        let nominal = self.base_delay.saturating_mul(exp).min(self.max_delay);
        let jitter = 0.75 + fastrand::f64() * 0.5;
        nominal.mul_f64(jitter)
    }

    /// Whether another attempt follows failed attempt `failed` with this error.
    pub(crate) fn should_retry(&self, failed: u32, err: &ProviderError) -> bool {
        failed < self.max_attempts && err.is_retryable()
    }
}

/// Runs `call` until it succeeds, fails for good, or attempts run out (non-streaming calls).
pub(crate) async fn call_with_retry<T, F, Fut>(
    policy: Policy,
    mut call: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(v) => return Ok(v),
            Err(e) if policy.should_retry(attempt, &e) => {
                let delay = policy.delay(attempt, e.retry_after_ms());
                tracing::debug!(attempt, delay_ms = delay.as_millis() as u64, error = %e, "retrying model call");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Limits of one streamed call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamLimits {
    pub policy: Policy,
    /// Longest silence (no bytes at all, heartbeats included) before the call times out.
    pub idle_timeout: Duration,
    /// The whole call, from the first send to `[DONE]`, retries and waits included. Bytes
    /// arriving (a heartbeat every few milliseconds) do not extend it.
    pub deadline: Duration,
    /// Bounds of the assembled reply.
    pub reply: ReplyLimits,
}

/// The error of a call that outlived its deadline.
pub(crate) fn deadline_error(limit: Duration) -> ProviderError {
    ProviderError::Timeout(format!(
        "no complete reply within the request deadline of {} s (request_timeout_secs)",
        limit.as_secs_f64()
    ))
}

/// Moved by value at every step, that is for every event of a stream: the opener (which holds
/// a whole provider) is boxed so that each move copies a pointer, not hundreds of bytes.
enum State<F> {
    Connect {
        open: Box<F>,
        attempt: u32,
        /// Attempts that were adapted resends: they do not use up the retry budget.
        adapted: u32,
        decoder: Box<Decoder>,
    },
    Backoff {
        open: Box<F>,
        attempt: u32,
        adapted: u32,
        delay: Duration,
        decoder: Box<Decoder>,
    },
    Streaming {
        body: ByteStream,
        /// The idle limit and the deadline, one timer for the whole body.
        watch: Watch,
        decoder: Box<Decoder>,
        /// What the last read decoded, last first: events are popped off the end, so one
        /// buffer serves the whole body instead of one allocation per read.
        pending: Vec<StreamEvent>,
    },
    Draining {
        /// As in `Streaming`, last first.
        pending: Vec<StreamEvent>,
    },
    Finished,
}

/// Drives a streamed call: `open` sends one attempt and returns the body of a successful
/// (status 200) response, an adapted request to send again at once (announced with
/// `StreamEvent::Retrying`, without a wait and without using up a retry), or the classified
/// error. Failures of `open` are retried per
/// `limits.policy`, announcing each retry with `StreamEvent::Retrying` (whose `attempt` is the
/// number of the attempt that failed, 1 for the first, of `max_attempts`) before waiting; once a
/// body is returned nothing is retried, and `decoder` reads it. The whole call ends at
/// `limits.deadline` (counted from the first poll), whatever the server sends. The stream ends
/// with one `Done` or one `Err`.
pub(crate) fn drive<F, Fut>(
    limits: StreamLimits,
    decoder: Decoder,
    open: F,
    span: tracing::Span,
) -> EventStream
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<Opened, ProviderError>> + Send + 'static,
{
    let state = State::Connect {
        open: Box::new(open),
        attempt: 1,
        adapted: 0,
        decoder: Box::new(decoder),
    };
    let stream = futures_util::stream::unfold((state, None), move |(state, deadline)| {
        let deadline = deadline.unwrap_or_else(|| Instant::now() + limits.deadline);
        let span = span.clone();
        async move {
            let (item, state) = step(limits, deadline, state).instrument(span).await?;
            Some((item, (state, Some(deadline))))
        }
    });
    Box::pin(stream)
}

type Step<F> = Option<(Result<StreamEvent, ProviderError>, State<F>)>;

/// What a state's handler decided: another state to run at once, or an item to yield.
enum Next<F> {
    Go(State<F>),
    Yield(Step<F>),
}

/// An item to yield, then `state`.
fn emit<F>(item: Result<StreamEvent, ProviderError>, state: State<F>) -> Next<F> {
    Next::Yield(Some((item, state)))
}

/// The call's last item: an error.
fn fail<F>(e: ProviderError) -> Next<F> {
    emit(Err(e), State::Finished)
}

async fn step<F, Fut>(limits: StreamLimits, deadline: Instant, mut state: State<F>) -> Step<F>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<Opened, ProviderError>> + Send + 'static,
{
    loop {
        let next = match state {
            State::Finished => return None,
            State::Draining { mut pending } => {
                let ev = pending.pop()?;
                return Some((Ok(ev), State::Draining { pending }));
            }
            State::Backoff {
                open,
                attempt,
                adapted,
                delay,
                decoder,
            } => {
                tokio::time::sleep(delay).await;
                Next::Go(State::Connect {
                    open,
                    attempt,
                    adapted,
                    decoder,
                })
            }
            State::Connect {
                open,
                attempt,
                adapted,
                decoder,
            } => connect(limits, deadline, open, (attempt, adapted), decoder).await,
            State::Streaming {
                body,
                watch,
                decoder,
                pending,
            } => read(limits, body, watch, decoder, pending).await,
        };
        state = match next {
            Next::Go(state) => state,
            Next::Yield(step) => return step,
        };
    }
}

/// Sends one attempt: its body starts the stream; an adapted request is sent again at once;
/// an error is retried after a backoff while the policy and the deadline allow.
async fn connect<F, Fut>(
    limits: StreamLimits,
    deadline: Instant,
    mut open: Box<F>,
    (attempt, adapted): (u32, u32),
    decoder: Box<Decoder>,
) -> Next<F>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<Opened, ProviderError>> + Send + 'static,
{
    match tokio::time::timeout_at(deadline, open()).await {
        Err(_) => fail(deadline_error(limits.deadline)),
        Ok(Ok(Opened::Adapted { reason })) => {
            if adapted >= MAX_ADAPTATIONS {
                return fail(ProviderError::Protocol(format!(
                    "the server kept refusing request parameters: {reason}"
                )));
            }
            tracing::debug!(attempt, %reason, "sending an adapted request");
            let ev = StreamEvent::Retrying {
                attempt,
                max_attempts: limits.policy.max_attempts + adapted + 1,
                delay_ms: 0,
                reason,
            };
            let again = State::Connect {
                open,
                attempt: attempt + 1,
                adapted: adapted + 1,
                decoder,
            };
            emit(Ok(ev), again)
        }
        Ok(Ok(Opened::Body(body))) => {
            tracing::debug!(attempt, "response streaming");
            let pending = Vec::new();
            Next::Go(State::Streaming {
                body,
                watch: Watch::new(limits.idle_timeout, deadline),
                decoder,
                pending,
            })
        }
        Ok(Err(e)) => {
            let delay = limits.policy.delay(attempt - adapted, e.retry_after_ms());
            // A wait that would outlast the deadline ends the call with this error, which
            // says more than a timeout would.
            if !limits.policy.should_retry(attempt - adapted, &e)
                || Instant::now() + delay >= deadline
            {
                tracing::debug!(attempt, error = %e, "model call failed");
                return fail(e);
            }
            let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
            let max_attempts = limits.policy.max_attempts + adapted;
            tracing::debug!(attempt, delay_ms, error = %e, "retrying model call");
            let ev = StreamEvent::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason: e.to_string(),
            };
            let wait = State::Backoff {
                open,
                attempt: attempt + 1,
                adapted,
                delay,
                decoder,
            };
            emit(Ok(ev), wait)
        }
    }
}

/// Yields what the last read decoded, else reads the body once more (bounded by the idle limit
/// and the deadline, whichever comes first: `watch`) and decodes it.
async fn read<F>(
    limits: StreamLimits,
    mut body: ByteStream,
    mut watch: Watch,
    mut decoder: Box<Decoder>,
    mut pending: Vec<StreamEvent>,
) -> Next<F> {
    if let Some(ev) = pending.pop() {
        let more = State::Streaming {
            body,
            watch,
            decoder,
            pending,
        };
        return emit(Ok(ev), more);
    }
    let next = match watch.next(&mut body).await {
        Ok(next) => next,
        Err(Expired::Deadline) => return fail(deadline_error(limits.deadline)),
        Err(Expired::Idle) => {
            let secs = limits.idle_timeout.as_secs_f64();
            return fail(ProviderError::Timeout(format!(
                "no data from the server for {secs:.1} s"
            )));
        }
    };
    // `pending` is empty here: it takes this read's events, reversed below.
    let mut out = pending;
    let fed = match next {
        Some(Ok(bytes)) => decoder.feed(&bytes, &mut out),
        Some(Err(e)) => Err(e),
        None => decoder.end(),
    };
    if let Err(e) = fed {
        tracing::debug!(error = %e, "stream failed");
        return fail(e);
    }
    out.reverse();
    if decoder.is_done() {
        finish_body(body).await;
        tracing::debug!("stream complete");
        Next::Go(State::Draining { pending: out })
    } else {
        Next::Go(State::Streaming {
            body,
            watch,
            decoder,
            pending: out,
        })
    }
}

/// Reads what is left of a finished body (the end of the chunked encoding, sent right after
/// `[DONE]` by real servers) so the connection returns to the pool instead of being closed.
/// Bounded in time and size: a server that keeps talking after `[DONE]` costs at most 100 ms.
async fn finish_body(mut body: ByteStream) {
    let drain = async {
        let mut left: usize = 64 * 1024;
        while let Some(Ok(b)) = body.next().await {
            left = match left.checked_sub(b.len()) {
                Some(l) => l,
                None => return,
            };
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(100), drain).await;
}

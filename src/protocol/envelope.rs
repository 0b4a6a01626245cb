//! The daemon's wire vocabulary that both ends read: the `op` request carrying the protocol's
//! `Op`, the `event` notification's envelope (session, sequence, run) around an `Event` or a
//! run marker, and `subscription.ended`. Plain serde types shared by `daemon` (which writes
//! them) and `attach` (which reads them); the framing and the methods are the daemon's.

use serde::{Deserialize, Serialize};

use super::{Event, Op, RunMarker};

/// The daemon's method that carries an op. Its other methods are not ops (the connection, a
/// session's place in the daemon); everything a session does (prompts, cancels, approvals,
/// goal commands, rewinds…) is one `op` request carrying the protocol's own `Op`.
pub(crate) const OP_METHOD: &str = "op";

/// The params of an `op` request: which session, and the protocol's `Op` itself
/// (`{"session_id":"…","op":{"type":"submit","text":"fix the tests"}}`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpRequest {
    pub(crate) session_id: String,
    pub(crate) op: Op,
}

/// The daemon's method that takes an image's bytes for a later `submit_images` op: the wire's
/// `Op` carries an image by its reference only (`chat::Image` serializes format, hash and
/// size), so the bytes travel once, here, and the op names what this returned.
pub(crate) const STORE_IMAGE_METHOD: &str = "session.store_image";

/// The params of `session.store_image`: the session and the image file's bytes in base64
/// (standard alphabet, padded).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreImageRequest {
    pub(crate) session_id: String,
    pub(crate) data: String,
}

/// The result of `session.store_image`: the image's reference, to name in `submit_images`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredImage {
    pub(crate) session_id: String,
    pub(crate) image: crate::chat::Image,
}

/// The params of an `event` notification: the session, the event's place in its log, the run
/// in progress, and the event (the protocol's `Event`, or one of the daemon's run markers).
/// The daemon writes these lines itself (`daemon/live.rs`, for speed); a test there checks
/// they read back as this type.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventEnvelope {
    pub(crate) session_id: String,
    pub(crate) sequence: u64,
    pub(crate) run_id: Option<String>,
    pub(crate) event: Streamed,
}

/// An event as the daemon streams it: one of its run markers or a core event (the names never
/// clash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Streamed {
    Marker(RunMarker),
    Core(Event),
}

/// The error code of an `interrupt` that found nothing running (`-32007`): `attach` treats it
/// as no news.
pub(crate) const UNKNOWN_RUN: i64 = -32007;

/// Why a subscription ended: the `reason` of `subscription.ended`, one code per cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EndReason {
    /// The session closed (the daemon stopped it or is shutting down).
    SessionClosed,
    /// The subscriber's cursor is older than anything the log still holds.
    FellBehind,
    /// The subscriber did not read and its queue reached its bound.
    QueueFull,
    /// The event log could not be written: the session stopped, nothing unstored was sent.
    LogWriteFailed,
    /// The event log could not be read back.
    LogUnreadable,
}

/// The `subscription.ended` notification: after it, no more events of that session come on
/// this connection. `first_sequence` is the oldest event still available (subscribe again
/// from `after_sequence` when it is not above it, else from `first_sequence - 1`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SubscriptionEnded {
    pub(crate) session_id: String,
    /// The last event this subscription delivered.
    pub(crate) after_sequence: u64,
    pub(crate) reason: EndReason,
    pub(crate) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_sequence: Option<u64>,
}

/// What a client receives besides answers: `event` and `subscription.ended` notifications,
/// read by `attach` through this one type.
#[derive(Debug, Deserialize)]
#[serde(tag = "method", content = "params")]
pub(crate) enum Notification {
    #[serde(rename = "event")]
    Event(EventEnvelope),
    #[serde(rename = "subscription.ended")]
    SubscriptionEnded(SubscriptionEnded),
}

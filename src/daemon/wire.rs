//! The daemon's wire: JSON-RPC 2.0, one message per line, each at most a configured number of
//! bytes, carrying the protocol's `Op` in (`op`) and `Event` out (`event`) inside a session
//! and sequence envelope. Reading a line stops at the limit (an oversize message is never
//! buffered whole); answers, errors and notifications are built here as ready-to-write lines.
//! It knows no session.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

pub(crate) use crate::protocol::envelope::{
    EndReason, OP_METHOD, OpRequest, StoreImageRequest, StoredImage, SubscriptionEnded, UNKNOWN_RUN,
};

/// The largest message a client may send, by default (8 MiB): room for one image at
/// `chat::MAX_IMAGE_BYTES` in base64 (`session.store_image`), far below what would let one
/// client exhaust the daemon's memory.
pub(crate) const DEFAULT_MAX_MESSAGE: usize = 8 * 1024 * 1024;

/// JSON-RPC's own error codes.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// The daemon's codes (documented in docs/headless.md).
pub(crate) const UNAUTHORIZED: i64 = -32001;
pub(crate) const WORKSPACE_REFUSED: i64 = -32002;
pub(crate) const UNKNOWN_SESSION: i64 = -32003;
pub(crate) const BUSY: i64 = -32004;
pub(crate) const NO_PENDING_APPROVAL: i64 = -32005;
pub(crate) const EVENTS_GONE: i64 = -32006;
pub(crate) const OPEN_FAILED: i64 = -32008;
pub(crate) const SHUTTING_DOWN: i64 = -32009;
/// An op a daemon session cannot carry out (it would change which session the daemon serves).
pub(crate) const NOT_REMOTE: i64 = -32010;

/// A line ready to write (with its newline), shared between the subscribers it goes to.
pub(crate) type Line = Arc<str>;

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("message larger than {0} bytes")]
    TooLarge(usize),
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one line (without its newline) into `buf`. `Ok(false)` at the end of the stream (a
/// last line without a newline is dropped: the client went away mid-message).
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
) -> Result<bool, ReadError> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(false);
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (available.len(), false),
        };
        if buf.len() + take > limit {
            return Err(ReadError::TooLarge(limit));
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(take + usize::from(done));
        if done {
            return Ok(true);
        }
    }
}

/// A request as it arrives; `id` is `None` for a notification.
#[derive(Debug, Deserialize)]
pub(crate) struct Request {
    pub(crate) jsonrpc: String,
    #[serde(default)]
    pub(crate) id: Option<Value>,
    pub(crate) method: String,
    #[serde(default)]
    pub(crate) params: Value,
}

/// An error to answer with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }
}

/// Parses a request line, or says what to answer (with the id when one could be read).
/// The refusal is boxed: a `Value` is large (ordered maps) and refusals are rare.
pub(crate) fn parse(line: &[u8]) -> Result<Request, Box<(Value, RpcError)>> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        Box::new((
            Value::Null,
            RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
        ))
    })?;
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let request: Request = serde_json::from_value(value).map_err(|e| {
        Box::new((
            id.clone(),
            RpcError::new(INVALID_REQUEST, format!("invalid request: {e}")),
        ))
    })?;
    if request.jsonrpc != "2.0" {
        return Err(Box::new((
            id,
            RpcError::new(INVALID_REQUEST, "jsonrpc must be \"2.0\""),
        )));
    }
    Ok(request)
}

/// Reads a method's params into `T`, or an invalid-params error.
pub(crate) fn params<T: serde::de::DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    let params = if params.is_null() { &json!({}) } else { params };
    serde_json::from_value(params.clone())
        .map_err(|e| RpcError::params(format!("invalid params: {e}")))
}

/// The line answering `id` with `result`.
pub(crate) fn result(id: &Value, result: Value) -> Line {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    line.push('\n');
    line.into()
}

/// The line answering `id` with an error.
pub(crate) fn error(id: &Value, error: &RpcError) -> Line {
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": body}).to_string();
    line.push('\n');
    line.into()
}

/// A notification line.
pub(crate) fn notification(method: &str, params: Value) -> Line {
    let mut line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
    line.push('\n');
    line.into()
}

impl SubscriptionEnded {
    pub(crate) fn line(&self) -> Line {
        notification(
            "subscription.ended",
            serde_json::to_value(self).unwrap_or(Value::Null),
        )
    }
}

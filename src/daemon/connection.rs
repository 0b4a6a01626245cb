//! One client connection: the token handshake first (anything else closes it), then requests
//! answered in order and subscriptions' events, all through one writer so lines never
//! interleave. Its methods are the daemon's own (sessions, subscriptions, shutdown) plus `op`,
//! which hands the protocol's `Op` to `ops.rs`. A client going away ends its subscriptions,
//! never its runs.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::task::JoinHandle;

use super::admission::{HANDSHAKE_DEADLINE, HANDSHAKE_MAX_LINE, Ticket};
use super::hub::Hub;
use super::outbox::{self, Inbox, Outbox};
use super::wire::{
    self, Line, OpRequest, ReadError, Request, RpcError, StoreImageRequest, StoredImage,
};

/// Lines queued for one connection's writer; a subscriber that gets this far ahead waits.
const WRITE_QUEUE: usize = 1024;

/// What every connection shares.
pub(crate) struct Shared {
    pub(crate) hub: Arc<Hub>,
    pub(crate) token: String,
    pub(crate) max_message: usize,
}

/// Serves one connection to its end.
pub(crate) async fn serve<S>(stream: S, shared: Arc<Shared>, ticket: Ticket)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (read, write) = tokio::io::split(stream);
    let mut reader = BufReader::new(read);
    let (out, queue) = outbox::channel(WRITE_QUEUE);
    let writer = tokio::spawn(write_lines(write, queue));
    let mut connection = Connection {
        shared,
        out,
        subscriptions: HashMap::new(),
        ticket,
    };
    connection.run(&mut reader).await;
    for (_, task) in connection.subscriptions.drain() {
        task.abort();
    }
    drop(connection);
    let _ = writer.await;
}

/// Writes queued lines, flushing whenever the queue runs dry.
async fn write_lines<W: AsyncWrite + Unpin>(write: W, mut queue: Inbox) {
    let mut writer = BufWriter::with_capacity(64 * 1024, write);
    while let Some(line) = queue.recv().await {
        if writer.write_all(line.as_bytes()).await.is_err() {
            return;
        }
        while let Some(line) = queue.try_recv() {
            if writer.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

struct Connection {
    shared: Arc<Shared>,
    out: Outbox,
    /// By session id: this connection's subscription to it (a new subscribe replaces it).
    subscriptions: HashMap<String, JoinHandle<()>>,
    /// Its place among the daemon's connections.
    ticket: Ticket,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Handshake {
    token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Open {
    workspace: String,
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unsubscribe {
    session_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Subscribe {
    session_id: String,
    #[serde(default)]
    after_sequence: u64,
}

/// Compares in constant time through `subtle`, a maintained and audited primitive, rather than
/// a hand-written loop the optimiser is free to shortcut. Only the length may leak, and the
/// daemon's tokens all have the same length.
fn same_token(given: &str, expected: &str) -> bool {
    use subtle::ConstantTimeEq;
    bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

impl Connection {
    async fn send(&self, line: Line) -> bool {
        self.out.send(line).await
    }

    async fn run<R: tokio::io::AsyncBufRead + Unpin>(&mut self, reader: &mut R) {
        let mut buf = Vec::new();
        let mut authenticated = false;
        let deadline = tokio::time::sleep(HANDSHAKE_DEADLINE);
        tokio::pin!(deadline);
        let evicted = self.ticket.evicted.clone();
        loop {
            // Before the handshake a line is short and must come soon.
            let limit = if authenticated {
                self.shared.max_message
            } else {
                HANDSHAKE_MAX_LINE.min(self.shared.max_message)
            };
            let line = tokio::select! {
                line = wire::read_line(reader, &mut buf, limit) => line,
                _ = self.shared.hub.stop.cancelled() => return,
                _ = evicted.cancelled(), if !authenticated => return,
                _ = &mut deadline, if !authenticated => {
                    let error = RpcError::new(
                        wire::UNAUTHORIZED,
                        format!("no handshake within {} s", HANDSHAKE_DEADLINE.as_secs()),
                    );
                    self.send(wire::error(&Value::Null, &error)).await;
                    return;
                }
            };
            if !self.line_read(line).await {
                return;
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let request = match wire::parse(&buf) {
                Ok(request) => request,
                Err(refusal) => {
                    let (id, error) = *refusal;
                    self.send(wire::error(&id, &error)).await;
                    if !authenticated {
                        return;
                    }
                    continue;
                }
            };
            let go_on = if authenticated {
                self.answer(&request).await
            } else {
                authenticated = self.greet(&request).await;
                authenticated
            };
            if !go_on {
                return;
            }
        }
    }

    /// Whether the loop goes on after reading a line: not at the end of the stream or after
    /// an I/O error, and not after a line over the limit (answered, then the connection
    /// closes, since the rest of that message is never read).
    async fn line_read(&self, line: Result<bool, ReadError>) -> bool {
        match line {
            Ok(true) => true,
            Ok(false) | Err(ReadError::Io(_)) => false,
            Err(e @ ReadError::TooLarge(_)) => {
                let error = RpcError::new(wire::INVALID_REQUEST, e.to_string());
                self.send(wire::error(&Value::Null, &error)).await;
                false
            }
        }
    }

    /// The first request, which must be the handshake; `false` (after the answer) closes the
    /// connection.
    async fn greet(&self, request: &Request) -> bool {
        let id = request.id.clone().unwrap_or(Value::Null);
        let answer = self.handshake(&request.method, &request.params);
        let ok = answer.is_ok();
        let line = match answer {
            Ok(result) => wire::result(&id, result),
            Err(error) => wire::error(&id, &error),
        };
        self.send(line).await;
        if ok {
            self.ticket.authenticated();
        }
        ok
    }

    /// A request after the handshake, answered; `false` when the connection ends (the client
    /// stopped reading, or asked the daemon to shut down).
    async fn answer(&mut self, request: &Request) -> bool {
        let id = request.id.clone().unwrap_or(Value::Null);
        let answer = self.call(&id, &request.method, &request.params).await;
        // A notification (no id) gets no answer; a subscribe answered itself.
        if request.id.is_some() && answer != Ok(Value::Null) {
            let line = match answer {
                Ok(result) => wire::result(&id, result),
                Err(error) => wire::error(&id, &error),
            };
            if !self.send(line).await {
                return false;
            }
        }
        if request.method == "server.shutdown" {
            self.shared.hub.stop.cancel();
            return false;
        }
        true
    }

    fn handshake(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let refused = || {
            RpcError::new(
                wire::UNAUTHORIZED,
                "the first request must be handshake with the daemon's token",
            )
        };
        if method != "handshake" {
            return Err(refused());
        }
        let Ok(Handshake { token }) = wire::params::<Handshake>(params) else {
            return Err(refused());
        };
        if !same_token(&token, &self.shared.token) {
            return Err(RpcError::new(wire::UNAUTHORIZED, "wrong token"));
        }
        Ok(json!({
            "server": "minicode",
            "version": env!("CARGO_PKG_VERSION"),
            "protocol": 1,
            "max_message_bytes": self.shared.max_message,
        }))
    }

    /// Carries out one request; `Ok(Value::Null)` means it was answered already.
    async fn call(&mut self, id: &Value, method: &str, params: &Value) -> Result<Value, RpcError> {
        let hub = self.shared.hub.clone();
        match method {
            wire::OP_METHOD => {
                let request: OpRequest = wire::params(params)?;
                let live = hub.get(&request.session_id)?;
                super::ops::apply(&live, request.op)
            }
            // `protocol::envelope::STORE_IMAGE_METHOD`, spelled out for the docs' check.
            "session.store_image" => store_image(&hub, params),
            "session.open" => {
                let p: Open = wire::params(params)?;
                hub.open(&p.workspace, p.session_id).await
            }
            "session.list" => Ok(hub.list()),
            "session.subscribe" => self.subscribe(id, params).await,
            "session.unsubscribe" => {
                let p: Unsubscribe = wire::params(params)?;
                let had = self.subscriptions.remove(&p.session_id);
                if let Some(task) = &had {
                    task.abort();
                }
                Ok(json!({ "unsubscribed": had.is_some() }))
            }
            "server.shutdown" => Ok(json!({ "stopping": true })),
            "handshake" => Err(RpcError::new(
                wire::INVALID_REQUEST,
                "already authenticated",
            )),
            other => Err(RpcError::new(
                wire::METHOD_NOT_FOUND,
                format!("no method {other:?}"),
            )),
        }
    }

    /// `session.subscribe`: answers before the first event (the queue keeps order).
    async fn subscribe(&mut self, id: &Value, params: &Value) -> Result<Value, RpcError> {
        let p: Subscribe = wire::params(params)?;
        let live = self.shared.hub.get(&p.session_id)?;
        if let Some(old) = self.subscriptions.remove(&p.session_id) {
            old.abort();
        }
        live.check_after(p.after_sequence)?;
        let info = live.info();
        let answer = json!({
            "session_id": p.session_id,
            "after_sequence": p.after_sequence,
            "last_sequence": info["last_sequence"],
        });
        self.send(wire::result(id, answer)).await;
        let task = live.subscribe(p.after_sequence, self.out.clone());
        self.subscriptions.insert(p.session_id.clone(), task);
        Ok(Value::Null)
    }
}

/// `session.store_image`: the image checked and held by its session; its reference is the
/// answer.
fn store_image(hub: &Hub, params: &Value) -> Result<Value, RpcError> {
    let request: StoreImageRequest = wire::params(params)?;
    let live = hub.get(&request.session_id)?;
    let image = live.images.store(&request.data)?;
    let stored = StoredImage {
        session_id: request.session_id,
        image,
    };
    serde_json::to_value(stored).map_err(|e| RpcError::new(wire::INVALID_PARAMS, e.to_string()))
}

//! `minicode attach`: a client of a running daemon that hands the full-screen UI an ordinary
//! `AgentHandle`. The wire carries the protocol's own types: each UI `Op` goes out as it is
//! (an `op` request), each `event` notification's `Event` comes back as it is, so the UI runs
//! unchanged and nothing is translated; a prompt's images go ahead of it, their bytes once each
//! (`session.store_image`), since the op names them by reference. Leaving detaches: the session and its run go on in the
//! daemon. It owns no agent logic and draws nothing.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::envelope::{self, Notification, Streamed};
use crate::protocol::{AgentHandle, Event, HistoryEntry, Op, RunMarker};
use crate::sync::lock;

/// The largest line accepted from the daemon (a restored history can be large).
const MAX_LINE: usize = 256 * 1024 * 1024;

/// Where the daemon is.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    Unix(PathBuf),
    Tcp(std::net::SocketAddr),
}

/// Why attaching failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttachError {
    #[error("cannot connect to the daemon at {what}: {source} (is `minicode serve` running?)")]
    Connect {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the daemon refused {method}: {message}")]
    Refused {
        method: String,
        code: i64,
        message: String,
    },
    #[error("the daemon closed the connection")]
    Closed,
}

/// The attached session.
pub(crate) struct Attached {
    pub(crate) handle: AgentHandle,
    pub(crate) session_id: String,
}

trait Io: AsyncRead + AsyncWrite + Send {}
impl<T: AsyncRead + AsyncWrite + Send> Io for T {}

/// An error answer: its code and message.
type Refusal = (i64, String);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, Refusal>>>>>;

/// Requests over one connection, answers matched by id.
#[derive(Clone)]
struct Client {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: Arc<AtomicU64>,
}

impl Client {
    async fn call(&self, method: &str, params: Value) -> Result<Value, AttachError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.out
            .send(format!("{line}\n"))
            .map_err(|_| AttachError::Closed)?;
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err((code, message))) => Err(AttachError::Refused {
                method: method.to_string(),
                code,
                message,
            }),
            Err(_) => Err(AttachError::Closed),
        }
    }
}

/// What the reader shares with the op side.
#[derive(Default)]
struct Shared {
    /// The run in progress, from `run_started` / `run_resumed` / `run_ended`.
    run: Option<String>,
    /// Prompts this client sent whose `run_started` has not come back yet: the UI shows them
    /// already.
    own_prompts: VecDeque<String>,
}

/// Connects, authenticates, opens (or creates) the session and subscribes from where its
/// current state can be rebuilt; returns a handle the UI drives like a local core.
pub(crate) async fn connect(
    endpoint: &Endpoint,
    token: &str,
    workspace: &std::path::Path,
    session_id: Option<&str>,
) -> Result<Attached, AttachError> {
    let stream: Box<dyn Io + Unpin> = match endpoint {
        Endpoint::Unix(path) => Box::new(tokio::net::UnixStream::connect(path).await.map_err(
            |source| AttachError::Connect {
                what: path.display().to_string(),
                source,
            },
        )?),
        Endpoint::Tcp(addr) => Box::new(tokio::net::TcpStream::connect(addr).await.map_err(
            |source| AttachError::Connect {
                what: addr.to_string(),
                source,
            },
        )?),
    };
    let (read, mut write) = tokio::io::split(stream);
    let (out, mut lines) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            if write.write_all(line.as_bytes()).await.is_err() || write.flush().await.is_err() {
                return;
            }
        }
    });
    let client = Client {
        out,
        pending: Arc::default(),
        next: Arc::new(AtomicU64::new(1)),
    };
    let shared = Arc::new(Mutex::new(Shared::default()));
    let (events_tx, events_rx) = mpsc::unbounded_channel::<Event>();
    tokio::spawn(read_lines(
        read,
        client.pending.clone(),
        shared.clone(),
        events_tx.clone(),
    ));
    client.call("handshake", json!({ "token": token })).await?;
    let info = client
        .call(
            "session.open",
            json!({"workspace": workspace.display().to_string(), "session_id": session_id}),
        )
        .await?;
    let session_id = info["session_id"].as_str().unwrap_or_default().to_string();
    let after = info["resume_after"].as_u64().unwrap_or(0);
    client
        .call(
            "session.subscribe",
            json!({"session_id": session_id, "after_sequence": after}),
        )
        .await?;
    let (ops_tx, ops_rx) = mpsc::unbounded_channel::<Op>();
    tokio::spawn(forward_ops(
        ops_rx,
        client,
        session_id.clone(),
        shared,
        events_tx,
    ));
    Ok(Attached {
        handle: AgentHandle::new(ops_tx, events_rx),
        session_id,
    })
}

/// The daemon's lines: answers to pending requests, and events for the UI.
async fn read_lines<R: AsyncRead + Unpin>(
    read: R,
    pending: Pending,
    shared: Arc<Mutex<Shared>>,
    events: mpsc::UnboundedSender<Event>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, read);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buf.len() > MAX_LINE {
            break;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&buf) else {
            continue;
        };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let answer = match message.get("error") {
                Some(error) => Err((
                    error["code"].as_i64().unwrap_or_default(),
                    error["message"].as_str().unwrap_or("error").to_string(),
                )),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let waiting = lock(&pending).remove(&id);
            if let Some(tx) = waiting {
                let _ = tx.send(answer);
            }
            continue;
        }
        match serde_json::from_value::<Notification>(message) {
            Ok(Notification::Event(envelope)) => {
                if let Some(event) = to_core_event(envelope.event, &shared) {
                    let _ = events.send(event);
                }
            }
            Ok(Notification::SubscriptionEnded(ended)) => {
                let _ = events.send(Event::Error {
                    message: format!(
                        "the daemon ended this view of the session: {}",
                        ended.message
                    ),
                });
            }
            Err(e) => tracing::debug!(error = %e, "ignoring a line from the daemon"),
        }
    }
    let _ = events.send(Event::Error {
        message: "the daemon closed the connection".into(),
    });
}

/// A logged event → what the UI shows: core events as they are; the daemon's run markers
/// keep the run id, and another client's prompt appears as a user entry.
fn to_core_event(event: Streamed, shared: &Mutex<Shared>) -> Option<Event> {
    let mut shared = lock(shared);
    match event {
        Streamed::Marker(RunMarker::RunStarted { run_id, prompt, .. }) => {
            shared.run = Some(run_id);
            // A goal round's run has no prompt: the core's goal events show it.
            let prompt = prompt?;
            if shared.own_prompts.front() == Some(&prompt) {
                shared.own_prompts.pop_front();
                return None;
            }
            Some(Event::HistoryRestored {
                entries: vec![HistoryEntry::User { text: prompt }],
            })
        }
        Streamed::Marker(RunMarker::RunResumed { run_id }) => {
            shared.run = Some(run_id);
            None
        }
        Streamed::Marker(RunMarker::RunEnded { .. }) => {
            shared.run = None;
            None
        }
        Streamed::Marker(RunMarker::CancelRequested { .. }) => None,
        Streamed::Core(event) => Some(event),
    }
}

/// The UI's ops, each sent as it is in an `op` request. `Shutdown` detaches (the daemon's
/// session goes on); what the daemon refuses comes back as an `error` event.
async fn forward_ops(
    mut ops: mpsc::UnboundedReceiver<Op>,
    client: Client,
    session_id: String,
    shared: Arc<Mutex<Shared>>,
    events: mpsc::UnboundedSender<Event>,
) {
    while let Some(op) = ops.recv().await {
        let prompt = match &op {
            Op::Shutdown => {
                let _ = events.send(Event::ShutdownComplete);
                return;
            }
            // The UI shows its own prompt already: its `run_started` is not shown again.
            Op::Submit(text) | Op::SubmitImages { text, .. } => Some(text.clone()),
            Op::Decide { .. }
            | Op::Interrupt
            | Op::Compact(_)
            | Op::NewSession
            | Op::McpServers
            | Op::McpRestart { .. }
            | Op::ListSkills
            | Op::Goal(_)
            | Op::Fork
            | Op::SetPlan { .. }
            | Op::Model { .. }
            | Op::ListRewind
            | Op::Rewind { .. }
            | Op::ListSessions
            | Op::Resume { .. }
            | Op::Shell { .. }
            | Op::CompletePath { .. }
            | Op::KillBackground { .. } => None,
        };
        if let Some(prompt) = &prompt {
            lock(&shared).own_prompts.push_back(prompt.clone());
        }
        let interrupt = op == Op::Interrupt;
        if let Op::SubmitImages { images, .. } = &op
            && let Err(e) = send_images(&client, &session_id, images).await
        {
            if let Some(prompt) = prompt {
                lock(&shared).own_prompts.retain(|p| *p != prompt);
            }
            let _ = events.send(Event::Error {
                message: e.to_string(),
            });
            continue;
        }
        let params = json!({ "session_id": session_id, "op": op });
        let Err(e) = client.call(envelope::OP_METHOD, params).await else {
            continue;
        };
        if let Some(prompt) = prompt {
            lock(&shared).own_prompts.retain(|p| *p != prompt);
        }
        // An interrupt that found nothing running (the turn had just ended) is no news.
        if interrupt
            && matches!(&e, AttachError::Refused { code, .. } if *code == envelope::UNKNOWN_RUN)
        {
            continue;
        }
        let _ = events.send(Event::Error {
            message: e.to_string(),
        });
    }
}

/// The bytes of a prompt's images, each sent once (`session.store_image`) before the op that
/// names them by reference: the op itself carries no bytes.
async fn send_images(
    client: &Client,
    session_id: &str,
    images: &[crate::chat::Image],
) -> Result<(), AttachError> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    for image in images {
        let params = json!({ "session_id": session_id, "data": b64.encode(&image.data) });
        client.call(envelope::STORE_IMAGE_METHOD, params).await?;
    }
    Ok(())
}

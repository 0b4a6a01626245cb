//! A scripted OpenAI-compatible model server for tests: real TCP on 127.0.0.1, a small
//! hand-written HTTP/1.1 loop (keep-alive, concurrent connections) with byte-level control of
//! SSE chunking, disconnects and stalls. It records every request it reads.
//!
//! It understands only what our client sends (Content-Length bodies) and must never be used as
//! a general HTTP server or reach beyond the loopback interface.
//!
//! Only requests to `…/chat/completions` take replies from the script and show in
//! `requests()`. Any other path (the server probe's `/v1/models`, `/props`, …) is answered by a
//! fixed [`MockServer::route`] for that path, or 404, every time, and recorded apart
//! (`other_requests()`), so a client that probes does not eat the chat script.
//!
//! ```ignore
//! let server = MockServer::start(vec![text_reply("hello world", 4)]).await; // async tests
//! let server = MockServer::start_in_thread(vec![error_reply(401, "bad key")]); // process tests
//! // point the client at server.base_url() ("http://127.0.0.1:PORT/v1"), then:
//! assert_eq!(server.requests()[0].path, "/v1/chat/completions");
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Token counts the ready-made replies report in their usage chunk.
pub const USAGE_PROMPT_TOKENS: u64 = 11;
pub const USAGE_COMPLETION_TOKENS: u64 = 7;

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, or `Value::Null` when it is not JSON.
    pub body: Value,
    /// The body as text (lossy UTF-8), to assert what must never be sent.
    pub raw_body: String,
    /// When the request was read, and when its answer was written in full (or the client
    /// hung up); `None` while it is still being answered.
    pub arrived: Instant,
    pub finished: Option<Instant>,
}

impl Recorded {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum MockReply {
    /// `200 text/event-stream`, chunked transfer; each chunk is written and flushed on its own,
    /// with `delay` before every chunk after the first (so a UI can watch a reply stream).
    Sse {
        chunks: Vec<Vec<u8>>,
        delay: Duration,
    },
    /// A plain response with a Content-Length body (`application/json` unless a
    /// `content-type` header is given).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// SSE response headers, then the first `after` bytes of `body`, then the connection is
    /// closed mid-body (the client sees a broken stream).
    DropAfter { body: Vec<u8>, after: usize },
    /// The connection is closed right after the request was read; nothing is answered.
    DropBeforeAnswer,
    /// SSE response headers, then silence until the client hangs up (idle-timeout tests).
    Stall,
    /// SSE response headers, the `first` chunks, then `repeat` as a chunk again and again
    /// (with `every` between writes) until the client hangs up: a server that never ends.
    /// `repeat` must not be empty (an empty chunk would end the body).
    Endless {
        first: Vec<Vec<u8>>,
        repeat: Vec<u8>,
        every: Duration,
    },
    /// `reply`, held back until the test opens `gate` (see [`MockReply::after`]).
    Gated {
        gate: Arc<tokio::sync::Semaphore>,
        reply: Box<MockReply>,
    },
}

/// Lets a held-back reply go (see [`MockReply::after`]); usable from plain threads.
#[derive(Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Gate {
    pub fn new() -> Self {
        Gate(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    /// Releases one reply waiting on this gate.
    pub fn open(&self) {
        self.0.add_permits(1);
    }
}

impl MockReply {
    /// An SSE reply from raw chunks, written one by one.
    pub fn sse(chunks: Vec<Vec<u8>>) -> Self {
        MockReply::Sse {
            chunks,
            delay: Duration::ZERO,
        }
    }

    /// An SSE reply from raw bytes split every `n` bytes.
    pub fn sse_split(bytes: &[u8], n: usize) -> Self {
        Self::sse(split_every(bytes, n))
    }

    /// Waits `delay` between SSE chunks; no effect on other kinds.
    pub fn with_delay(mut self, d: Duration) -> Self {
        if let MockReply::Sse { delay, .. } = &mut self {
            *delay = d;
        }
        self
    }

    /// A stream that sends `repeat` every `every`, forever (after the `first` chunks).
    pub fn endless(first: Vec<Vec<u8>>, repeat: impl Into<Vec<u8>>, every: Duration) -> Self {
        MockReply::Endless {
            first,
            repeat: repeat.into(),
            every,
        }
    }

    /// A plain status reply with the given body.
    pub fn status(status: u16, body: impl Into<Vec<u8>>) -> Self {
        MockReply::Status {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A plain status reply with a JSON body.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::status(status, body.to_string())
    }

    /// This reply, sent only once `gate` is opened: the test decides when the client gets it
    /// (e.g. after it typed something the client must not see yet).
    pub fn after(self, gate: &Gate) -> Self {
        MockReply::Gated {
            gate: gate.0.clone(),
            reply: Box::new(self),
        }
    }

    /// Adds a response header; no effect on other kinds than `Status`.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let MockReply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }
}

/// Streams `text` in pieces of `piece_chars` characters, then `finish_reason: "stop"`, then a
/// usage chunk with empty `choices`, then `[DONE]`; one SSE event per written chunk.
pub fn text_reply(text: &str, piece_chars: usize) -> MockReply {
    MockReply::sse(sse_events(&text_payloads(text, piece_chars)))
}

/// The chunk payloads of [`text_reply`] (without `[DONE]`), for custom framing.
pub fn text_payloads(text: &str, piece_chars: usize) -> Vec<Value> {
    let mut out: Vec<Value> = pieces(text, piece_chars)
        .iter()
        .map(|p| chunk_text(p))
        .collect();
    out.push(chunk_finish("stop"));
    out.push(chunk_usage(USAGE_PROMPT_TOKENS, USAGE_COMPLETION_TOKENS));
    out
}

/// A reply with tool calls `(id, name, arguments)`: id and name arrive in each call's first
/// piece, the arguments split over chunks of `piece_chars` characters; then
/// `finish_reason: "tool_calls"`, usage and `[DONE]`.
pub fn tool_calls_reply(calls: &[(&str, &str, &str)], piece_chars: usize) -> MockReply {
    MockReply::sse(sse_events(&tool_call_payloads(calls, piece_chars)))
}

/// The chunk payloads of [`tool_calls_reply`] (without `[DONE]`).
pub fn tool_call_payloads(calls: &[(&str, &str, &str)], piece_chars: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for (index, (id, name, args)) in calls.iter().enumerate() {
        out.push(chunk_tool_start(index, id, name));
        for piece in pieces(args, piece_chars) {
            out.push(chunk_tool_args(index, &piece));
        }
    }
    out.push(chunk_finish("tool_calls"));
    out.push(chunk_usage(USAGE_PROMPT_TOKENS, USAGE_COMPLETION_TOKENS));
    out
}

/// An error reply with OpenAI's nested body `{"error":{"message","type","code"}}`.
pub fn error_reply(status: u16, message: &str) -> MockReply {
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    MockReply::json(
        status,
        &json!({"error": {"message": message, "type": kind, "code": null}}),
    )
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
}

/// A chunk payload carrying a piece of assistant text.
pub fn chunk_text(text: &str) -> Value {
    chunk(json!({"content": text}), Value::Null)
}

/// The first piece of tool call `index`: id, type and name, empty arguments.
pub fn chunk_tool_start(index: usize, id: &str, name: &str) -> Value {
    let call = json!({"index": index, "id": id, "type": "function",
        "function": {"name": name, "arguments": ""}});
    chunk(
        json!({"role": "assistant", "content": null, "tool_calls": [call]}),
        Value::Null,
    )
}

/// A later piece of tool call `index`: arguments only.
pub fn chunk_tool_args(index: usize, args: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": args}}]}),
        Value::Null,
    )
}

/// An empty delta with a finish reason.
pub fn chunk_finish(reason: &str) -> Value {
    chunk(json!({}), json!(reason))
}

/// A usage-only chunk with empty `choices`, as sent after `finish_reason` with
/// `stream_options.include_usage`.
pub fn chunk_usage(prompt: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion}
    })
}

/// One SSE event: `data: <json>\n\n`.
pub fn sse_event(payload: &Value) -> Vec<u8> {
    format!("data: {payload}\n\n").into_bytes()
}

/// One SSE event per payload, then `data: [DONE]\n\n`, each as its own chunk.
pub fn sse_events(payloads: &[Value]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = payloads.iter().map(sse_event).collect();
    out.push(b"data: [DONE]\n\n".to_vec());
    out
}

/// The payloads as one SSE byte string ending in `data: [DONE]\n\n`.
pub fn sse_bytes(payloads: &[Value]) -> Vec<u8> {
    sse_events(payloads).concat()
}

/// Splits bytes into chunks of `n` (the last may be shorter); `n == 0` is treated as 1.
pub fn split_every(bytes: &[u8], n: usize) -> Vec<Vec<u8>> {
    bytes.chunks(n.max(1)).map(<[u8]>::to_vec).collect()
}

/// Splits bytes at the given positions (sorted, deduplicated, out-of-range ignored).
pub fn split_at_positions(bytes: &[u8], positions: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = positions
        .iter()
        .copied()
        .filter(|&p| p > 0 && p < bytes.len())
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain(std::iter::once(bytes.len())) {
        out.push(bytes[start..cut].to_vec());
        start = cut;
    }
    out
}

/// `text` in pieces of `n` characters (never splitting a character).
pub fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// Polls `cond` until it holds or `timeout` passes, yielding to the runtime in between.
pub async fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Polls `cond` until it holds or `timeout` passes, blocking the thread (plain `#[test]`s).
pub fn wait_until_blocking(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Chooses the reply to a request from its content (see [`MockServer::respond_with`]).
pub type Responder = Arc<dyn Fn(&Recorded) -> Option<MockReply> + Send + Sync>;

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<MockReply>>,
    requests: Mutex<Vec<Recorded>>,
    /// Fixed answers by exact path, for everything that is not a chat request.
    routes: Mutex<Vec<(String, MockReply)>>,
    others: Mutex<Vec<Recorded>>,
    responder: Mutex<Option<Responder>>,
    open: AtomicUsize,
    accepted: AtomicUsize,
    /// Requests read and not yet answered in full, and the most there ever were at once.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running mock server; it stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockServer {
    /// Starts on the current tokio runtime (for `#[tokio::test]`).
    pub async fn start(script: Vec<MockReply>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let server = Self::new(addr, script, None);
        tokio::spawn(accept_loop(
            listener,
            server.shared.clone(),
            server.stop.clone(),
        ));
        server
    }

    /// Starts on a background thread with its own runtime (for plain `#[test]`s that run the
    /// built binary as a process).
    pub fn start_in_thread(script: Vec<MockReply>) -> MockServer {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        std_listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let addr = std_listener.local_addr().expect("local addr");
        let mut server = Self::new(addr, script, None);
        let (shared, stop) = (server.shared.clone(), server.stop.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("mock server runtime");
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("tokio listener");
                accept_loop(listener, shared, stop).await;
            });
        });
        server.thread = Some(thread);
        server
    }

    fn new(
        addr: SocketAddr,
        script: Vec<MockReply>,
        thread: Option<std::thread::JoinHandle<()>>,
    ) -> Self {
        let shared = Arc::new(Shared::default());
        *lock(&shared.script) = script.into();
        MockServer {
            addr,
            shared,
            stop: CancellationToken::new(),
            thread,
        }
    }

    /// `http://127.0.0.1:PORT/v1`; the client posts to `{base_url}/chat/completions`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request read so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// Answers every request to `path` (exact, query included) with `reply`, replacing an
    /// earlier route for it. Chat requests always use the script (or the responder).
    pub fn route(&self, path: &str, reply: MockReply) {
        let mut routes = lock(&self.shared.routes);
        routes.retain(|(p, _)| p != path);
        routes.push((path.to_string(), reply));
    }

    /// Requests to paths other than `…/chat/completions`, in arrival order.
    pub fn other_requests(&self) -> Vec<Recorded> {
        lock(&self.shared.others).clone()
    }

    /// Answers every later request with `f`'s reply when it gives one (else the script's
    /// next): for clients that send concurrent requests in no fixed order (sub-agents).
    pub fn respond_with(&self, f: impl Fn(&Recorded) -> Option<MockReply> + Send + Sync + 'static) {
        *lock(&self.shared.responder) = Some(Arc::new(f));
    }

    /// Requests being answered right now.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests that were ever being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// Connections currently open (accepted and not yet closed by either side).
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Connections accepted since start (keep-alive reuse shows as fewer than requests).
    pub fn connections_accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((sock, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let _ = sock.set_nodelay(true);
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        shared.open.fetch_add(1, Ordering::SeqCst);
        let guard = OpenGuard(shared.clone());
        let stop = stop.clone();
        tokio::spawn(async move {
            let shared = guard.0.clone();
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = serve_connection(sock, &shared) => {}
            }
            drop(guard);
        });
    }
}

async fn serve_connection(mut sock: TcpStream, shared: &Shared) {
    let mut buf = Vec::new();
    loop {
        let Some((request, keep_alive)) = read_request(&mut sock, &mut buf).await else {
            return;
        };
        let (reply, _flight) = if request.path.ends_with("/chat/completions") {
            let responder = lock(&shared.responder).clone();
            let routed = responder.and_then(|f| f(&request));
            let index = {
                let mut requests = lock(&shared.requests);
                requests.push(request);
                requests.len() - 1
            };
            let flight = InFlight::start(shared, index);
            let reply = routed
                .or_else(|| lock(&shared.script).pop_front())
                .unwrap_or_else(|| {
                    MockReply::json(
                        500,
                        &json!({"error": {"message": "script exhausted", "type": "mock_error"}}),
                    )
                });
            (reply, Some(flight))
        } else {
            let routed = lock(&shared.routes)
                .iter()
                .find(|(p, _)| *p == request.path)
                .map(|(_, r)| r.clone());
            lock(&shared.others).push(request);
            let reply = routed.unwrap_or_else(|| {
                MockReply::json(
                    404,
                    &json!({"error": {"message": "not found", "type": "not_found_error"}}),
                )
            });
            (reply, None)
        };
        let reply = match reply {
            MockReply::Gated { gate, reply } => {
                let _ = gate.acquire().await.map(|p| p.forget());
                *reply
            }
            other => other,
        };
        let open = answer(&mut sock, &mut buf, reply).await;
        if !open || !keep_alive {
            let _ = sock.shutdown().await;
            return;
        }
    }
}

/// Counts a request as in flight from when it was read until it is dropped (its answer was
/// written in full, the client hung up, or the server stopped), and stamps its finish.
struct InFlight<'a> {
    shared: &'a Shared,
    index: usize,
}

impl<'a> InFlight<'a> {
    fn start(shared: &'a Shared, index: usize) -> Self {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight { shared, index }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(r) = lock(&self.shared.requests).get_mut(self.index) {
            r.finished = Some(Instant::now());
        }
        self.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads one request; `None` when the client closed the connection or sent garbage.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(Recorded, bool)> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if !read_more(sock, buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let len: usize = find("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let keep_alive = !find("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    while buf.len() < head_end + len {
        if !read_more(sock, buf).await {
            return None;
        }
    }
    let body_bytes: Vec<u8> = buf.drain(..head_end + len).skip(head_end).collect();
    let body = serde_json::from_slice(&body_bytes).unwrap_or(Value::Null);
    let raw_body = String::from_utf8_lossy(&body_bytes).into_owned();
    Some((
        Recorded {
            method,
            path,
            headers,
            body,
            raw_body,
            arrived: Instant::now(),
            finished: None,
        },
        keep_alive,
    ))
}

async fn read_more(sock: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut tmp = [0u8; 8192];
    match sock.read(&mut tmp).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            true
        }
    }
}

const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";

/// Writes one reply; returns whether the connection may serve another request.
async fn answer(sock: &mut TcpStream, buf: &mut Vec<u8>, reply: MockReply) -> bool {
    match reply {
        MockReply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                head.push_str("content-type: application/json\r\n");
            }
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            let mut out = head.into_bytes();
            out.extend_from_slice(&body);
            sock.write_all(&out).await.is_ok()
        }
        MockReply::Sse { chunks, delay } => {
            if sock.write_all(SSE_HEAD).await.is_err() {
                return false;
            }
            for (i, data) in chunks.iter().filter(|c| !c.is_empty()).enumerate() {
                if i > 0 && !delay.is_zero() && !pause(sock, buf, delay).await {
                    return false;
                }
                if write_chunk(sock, data).await.is_err() {
                    return false;
                }
            }
            sock.write_all(b"0\r\n\r\n").await.is_ok()
        }
        MockReply::DropAfter { body, after } => {
            if sock.write_all(SSE_HEAD).await.is_ok() && after > 0 {
                let _ = write_chunk(sock, &body[..after.min(body.len())]).await;
            }
            false
        }
        MockReply::DropBeforeAnswer => false,
        MockReply::Stall => {
            if sock.write_all(SSE_HEAD).await.is_err() {
                return false;
            }
            while read_more(sock, buf).await {}
            false
        }
        MockReply::Endless {
            first,
            repeat,
            every,
        } => {
            if sock.write_all(SSE_HEAD).await.is_err() {
                return false;
            }
            for data in first.iter().filter(|c| !c.is_empty()) {
                if write_chunk(sock, data).await.is_err() {
                    return false;
                }
            }
            loop {
                if write_chunk(sock, &repeat).await.is_err() {
                    return false;
                }
                if !every.is_zero() && !pause(sock, buf, every).await {
                    return false;
                }
            }
        }
        // Opened in `serve_connection`; a gate inside a gate waits no further.
        MockReply::Gated { reply, .. } => Box::pin(answer(sock, buf, *reply)).await,
    }
}

async fn write_chunk(sock: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    sock.write_all(&out).await?;
    sock.flush().await
}

/// Waits `d` while watching the socket, so a client hang-up is seen at once; false if closed.
async fn pause(sock: &mut TcpStream, buf: &mut Vec<u8>, d: Duration) -> bool {
    let sleep = tokio::time::sleep(d);
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            _ = &mut sleep => return true,
            more = read_more(sock, buf) => if !more { return false },
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

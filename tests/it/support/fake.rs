//! The one scripted model for tests of the agent core and of compaction: no server, no bytes,
//! just `Provider` answers in the order a test scripts them, and a record of every request.
//!
//! Main requests (`stream`) and summary requests (`chat`) have separate scripts, because
//! compaction interleaves summary calls with the conversation. Each answer is a reply (its text
//! streamed in small pieces, then the whole reply), an error before any text, an error after
//! some partial text, or a hang until the request is dropped (cancelled). An exhausted main
//! script answers "(script exhausted)"; an exhausted summary script fails the call.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures_util::stream;
use minicode::chat::{Message, ToolCall, Usage, estimate_message, estimate_tools};
use minicode::provider::{
    ChatRequest, EventStream, FinishReason, Provider, ProviderError, Reply, ReplyFuture,
    StreamEvent,
};
use tokio::sync::mpsc;

/// Characters per streamed text piece: small, so a reply arrives as several deltas.
const PIECE_CHARS: usize = 3;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// The reply's text streams in pieces, then the reply is done.
    Reply(Reply),
    /// The request fails before any text.
    Fail(ProviderError),
    /// This text streams, then the request fails.
    FailAfter(String, ProviderError),
    /// Never answers: the request stays in flight until it is dropped.
    Hang,
}

impl From<Reply> for Answer {
    fn from(reply: Reply) -> Self {
        Answer::Reply(reply)
    }
}

impl From<Result<Reply, ProviderError>> for Answer {
    fn from(result: Result<Reply, ProviderError>) -> Self {
        match result {
            Ok(reply) => Answer::Reply(reply),
            Err(e) => Answer::Fail(e),
        }
    }
}

/// A request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub messages: Vec<Message>,
    /// Tools offered (0 for a plain-text request).
    pub tools: usize,
    pub max_tokens: u32,
    /// The local estimate of the request, as the agent's budget counts it.
    pub estimate: u64,
}

impl Request {
    fn of(request: &ChatRequest<'_>) -> Self {
        Self {
            messages: request.messages.iter().map(|m| (*m).clone()).collect(),
            tools: request.tools.len(),
            max_tokens: request.max_tokens,
            estimate: request
                .messages
                .iter()
                .map(|m| estimate_message(m))
                .sum::<u64>()
                + estimate_tools(request.tools),
        }
    }

    /// The text of the last message (a summary call's prompt).
    pub fn prompt(&self) -> &str {
        self.messages.last().map_or("", Message::text)
    }
}

#[derive(Default)]
struct Shared {
    main: Mutex<VecDeque<Answer>>,
    summaries: Mutex<VecDeque<Answer>>,
    main_seen: Mutex<Vec<Request>>,
    summary_seen: Mutex<Vec<Request>>,
    summary_started: Mutex<Option<mpsc::UnboundedSender<()>>>,
}

/// A scripted model. Clones share the scripts and the record, so a test keeps one clone to
/// inspect while the agent owns another.
#[derive(Clone, Default)]
pub struct Fake {
    shared: Arc<Shared>,
    /// Every main request that offers tools is answered by a fresh `bash` call with this
    /// command (to reach round limits); the script answers the others.
    endless_tool: Option<String>,
    /// A streamed request is a test failure (for tests of compaction alone).
    summaries_only: bool,
}

impl Fake {
    /// A model with this script for main (streamed) requests and none for summary calls.
    pub fn new<A: Into<Answer>>(main: Vec<A>) -> Self {
        let fake = Self::default();
        fake.shared
            .main
            .lock()
            .unwrap()
            .extend(main.into_iter().map(Into::into));
        fake
    }

    /// A model that only answers summary calls, with this script.
    pub fn summaries_only(summaries: Vec<Answer>) -> Self {
        Self {
            summaries_only: true,
            ..Self::default()
        }
        .with_summaries(summaries)
    }

    /// Adds this script for summary (chat) calls.
    pub fn with_summaries<A: Into<Answer>>(self, summaries: Vec<A>) -> Self {
        self.shared
            .summaries
            .lock()
            .unwrap()
            .extend(summaries.into_iter().map(Into::into));
        self
    }

    /// Answers every main request that offers tools with a new `bash` call running `command`.
    pub fn with_endless_tool(mut self, command: &str) -> Self {
        self.endless_tool = Some(command.to_string());
        self
    }

    /// Announces each summary call on the returned channel once it is in flight, so a test can
    /// act while one runs.
    pub fn summary_starts(&self) -> mpsc::UnboundedReceiver<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.shared.summary_started.lock().unwrap() = Some(tx);
        rx
    }

    /// Appends to the summary script.
    pub fn push_summary(&self, answer: impl Into<Answer>) {
        self.shared
            .summaries
            .lock()
            .unwrap()
            .push_back(answer.into());
    }

    /// Every main request so far, oldest first.
    pub fn main_requests(&self) -> Vec<Request> {
        self.shared.main_seen.lock().unwrap().clone()
    }

    /// Every summary request so far, oldest first.
    pub fn summary_requests(&self) -> Vec<Request> {
        self.shared.summary_seen.lock().unwrap().clone()
    }

    /// The messages of every main request.
    pub fn main_messages(&self) -> Vec<Vec<Message>> {
        let seen = self.shared.main_seen.lock().unwrap();
        seen.iter().map(|r| r.messages.clone()).collect()
    }

    /// The prompt (last message) of every summary request.
    pub fn summary_prompts(&self) -> Vec<String> {
        let seen = self.shared.summary_seen.lock().unwrap();
        seen.iter().map(|r| r.prompt().to_string()).collect()
    }

    fn next_main(&self, request: &ChatRequest<'_>) -> Answer {
        let mut seen = self.shared.main_seen.lock().unwrap();
        seen.push(Request::of(request));
        if let Some(command) = &self.endless_tool
            && !request.tools.is_empty()
        {
            let arguments = serde_json::json!({ "command": command }).to_string();
            return Answer::Reply(tool_reply(&[(
                &format!("call_{}", seen.len()),
                "bash",
                &arguments,
            )]));
        }
        let next = self.shared.main.lock().unwrap().pop_front();
        next.unwrap_or_else(|| Answer::Reply(text_reply("(script exhausted)")))
    }
}

impl Provider for Fake {
    fn stream(&self, request: &ChatRequest<'_>) -> EventStream {
        assert!(
            !self.summaries_only,
            "this test expects summary calls only, not a streamed request"
        );
        let pieces = |text: &str| -> Vec<Result<StreamEvent, ProviderError>> {
            let chars: Vec<char> = text.chars().collect();
            chars
                .chunks(PIECE_CHARS)
                .map(|c| Ok(StreamEvent::Text(c.iter().collect())))
                .collect()
        };
        match self.next_main(request) {
            Answer::Reply(reply) => {
                let mut events = pieces(&reply.text);
                events.push(Ok(StreamEvent::Done(Box::new(reply))));
                Box::pin(stream::iter(events))
            }
            Answer::Fail(e) => Box::pin(stream::iter(vec![Err(e)])),
            Answer::FailAfter(partial, e) => {
                let mut events = pieces(&partial);
                events.push(Err(e));
                Box::pin(stream::iter(events))
            }
            Answer::Hang => Box::pin(stream::pending()),
        }
    }

    fn chat(&self, request: &ChatRequest<'_>) -> ReplyFuture {
        // A whole (non-streamed) request with tools is the core asking a main request again
        // after broken streamed tool arguments: it takes the main script's next answer.
        if !request.tools.is_empty() {
            let next = self.next_main(request);
            return Box::pin(async move {
                match next {
                    Answer::Reply(reply) => Ok(reply),
                    Answer::Fail(e) | Answer::FailAfter(_, e) => Err(e),
                    Answer::Hang => std::future::pending().await,
                }
            });
        }
        self.shared
            .summary_seen
            .lock()
            .unwrap()
            .push(Request::of(request));
        let next = self.shared.summaries.lock().unwrap().pop_front();
        let started = self.shared.summary_started.lock().unwrap().clone();
        Box::pin(async move {
            if let Some(started) = started {
                let _ = started.send(());
            }
            match next {
                Some(Answer::Reply(reply)) => Ok(reply),
                Some(Answer::Fail(e)) | Some(Answer::FailAfter(_, e)) => Err(e),
                Some(Answer::Hang) => std::future::pending().await,
                None => Err(ProviderError::Network("no summary scripted".into())),
            }
        })
    }

    fn model(&self) -> &str {
        "fake"
    }
}

/// A finished text reply with usage 10 in / 5 out (total filled in by `Usage::new`).
pub fn text_reply(text: &str) -> Reply {
    Reply {
        text: text.to_string(),
        finish_reason: Some(FinishReason::Stop),
        usage: Some(Usage::new(10, 5, 0)),
        ..Reply::default()
    }
}

/// A reply asking for these `(id, tool, arguments)` calls, with usage 10 / 5 / 15.
pub fn tool_reply(calls: &[(&str, &str, &str)]) -> Reply {
    Reply {
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        finish_reason: Some(FinishReason::ToolCalls),
        usage: Some(Usage::new(10, 5, 15)),
        ..Reply::default()
    }
}

/// A reply asking for one `bash` call.
pub fn bash(id: &str, command: &str) -> Reply {
    let arguments = serde_json::json!({ "command": command }).to_string();
    tool_reply(&[(id, "bash", &arguments)])
}

//! How the history is stored in a version 3 snapshot: each message in the chat wire shape, and
//! on a tool result also how the call ended (`status`) and its one-line `summary`. Those two
//! fields stay in the file: the model is never sent them (requests serialize `chat::Message`),
//! but a resumed session shows each call as it ended instead of guessing from its wording.
//!
//! Pure serde work, one pass each way: no intermediate copy of the history is built, so
//! loading a large session costs no more memory than its messages.

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::chat::{Image, Message, Role, ToolCall, ToolStatus};

use super::ResultInfo;

/// The messages of a session and, by message index in ascending order, what is known about
/// its tool results. Tool results without a record (pushed as plain messages) have none.
#[derive(Debug, Default)]
pub(super) struct History {
    pub(crate) messages: Vec<Message>,
    pub(crate) results: Vec<(usize, ResultInfo)>,
}

/// The stored history, serialized as it grows: the JSON of `messages[..count]` (the elements
/// of the `messages` array, comma-separated), so each save serializes only the messages
/// appended since the last one. A session's history is append-only; a shorter one (which a
/// session never has) starts over.
#[derive(Debug, Default)]
pub(super) struct Appended {
    json: Vec<u8>,
    count: usize,
    /// How many of the result records belong to the serialized messages.
    results: usize,
}

impl Appended {
    /// Serializes what was appended since the last call and returns the elements of the whole
    /// array. On an error the cache is dropped (the next call starts over).
    pub(crate) fn extend(
        &mut self,
        messages: &[Message],
        results: &[(usize, ResultInfo)],
    ) -> serde_json::Result<&[u8]> {
        if self.count > messages.len() || self.results > results.len() {
            *self = Appended::default();
        }
        for (index, message) in messages.iter().enumerate().skip(self.count) {
            let info = match results.get(self.results) {
                Some((at, info)) if *at == index => {
                    self.results += 1;
                    Some(info)
                }
                _ => None,
            };
            if index > 0 {
                self.json.push(b',');
            }
            if let Err(e) = serde_json::to_writer(&mut self.json, &StoredRef::of(message, info)) {
                *self = Appended::default();
                return Err(e);
            }
        }
        self.count = messages.len();
        Ok(&self.json)
    }
}

/// One stored message, borrowed. The first four fields and `reasoning_content` are
/// `chat::Message`'s wire shape (`content` stays `null` rather than omitted, as there).
#[derive(Serialize)]
struct StoredRef<'a> {
    role: Role,
    content: &'a Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tool_calls: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<ToolStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
    #[serde(rename = "reasoning_content", skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<&'a crate::sandbox::Report>,
    /// References only: the bytes are in the image store (`session/images.rs`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    images: &'a [Image],
}

impl<'a> StoredRef<'a> {
    fn of(m: &'a Message, info: Option<&'a ResultInfo>) -> Self {
        StoredRef {
            role: m.role,
            content: &m.content,
            tool_calls: &m.tool_calls,
            tool_call_id: m.tool_call_id.as_deref(),
            status: info.and_then(|i| i.status),
            summary: info.and_then(|i| i.summary.as_deref()),
            reasoning: m.reasoning.as_deref(),
            sandbox: info.and_then(|i| i.sandbox.as_ref()),
            images: &m.images,
        }
    }
}

/// One stored message as read.
#[derive(Deserialize)]
struct Stored {
    role: Role,
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    status: Option<ToolStatus>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default, rename = "reasoning_content")]
    reasoning: Option<String>,
    #[serde(default)]
    sandbox: Option<crate::sandbox::Report>,
    #[serde(default)]
    images: Vec<Image>,
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(HistoryVisitor)
    }
}

struct HistoryVisitor;

impl<'de> Visitor<'de> for HistoryVisitor {
    type Value = History;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<History, A::Error> {
        let mut history = History {
            messages: Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16)),
            results: Vec::new(),
        };
        while let Some(stored) = seq.next_element::<Stored>()? {
            let index = history.messages.len();
            let recorded =
                stored.status.is_some() || stored.summary.is_some() || stored.sandbox.is_some();
            if recorded {
                if stored.role != Role::Tool {
                    return Err(A::Error::custom(format!(
                        "message {index} is not a tool result but has a status or summary"
                    )));
                }
                history.results.push((
                    index,
                    ResultInfo {
                        status: stored.status,
                        summary: stored.summary,
                        sandbox: stored.sandbox,
                    },
                ));
            }
            history.messages.push(Message {
                role: stored.role,
                content: stored.content,
                tool_calls: stored.tool_calls,
                tool_call_id: stored.tool_call_id,
                reasoning: stored.reasoning,
                images: stored.images,
            });
        }
        Ok(history)
    }
}

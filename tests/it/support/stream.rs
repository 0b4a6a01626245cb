//! Drains a provider stream for tests: every event, plus the final error if there was one.

use futures_util::StreamExt;
use minicode::chat::Message;
use minicode::provider::{ChatRequest, Provider, ProviderError, StreamEvent};

/// Streams a one-message request ("hi") and returns every event plus the final error, if any.
pub async fn run(p: &dyn Provider) -> (Vec<StreamEvent>, Option<ProviderError>) {
    run_messages(p, &[&Message::user("hi")]).await
}

/// Streams a request of `messages` (no tools) and returns what [`run`] returns.
pub async fn run_messages(
    p: &dyn Provider,
    messages: &[&Message],
) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut stream = p.stream(&ChatRequest {
        messages,
        tools: &[],
        max_tokens: 0,
        statuses: &[],
    });
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ev) => events.push(ev),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

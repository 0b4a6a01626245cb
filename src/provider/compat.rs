//! Request parameters a server may refuse, and what to send instead: learned from the server's
//! own 400 answer, once, then remembered (in memory and in the server cache, `probe/cache.rs`).
//! OpenAI's newer models want `max_completion_tokens` instead of `max_tokens`; some servers
//! reject `stream_options`, `parallel_tool_calls` or `tool_choice` outright.
//!
//! Pure: it reads error messages and flips flags. It never decides to retry (the client does)
//! and never learns from an answer about a parameter that was not sent.

use serde::{Deserialize, Serialize};

use super::ProviderError;

/// How the reply's token limit is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimit {
    /// `max_tokens`, understood by nearly every server.
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI's reasoning and newer models refuse `max_tokens`).
    MaxCompletionTokens,
    /// Neither: the server refused both.
    Omit,
}

/// What this server is known to refuse. The default sends everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Quirks {
    pub token_limit: TokenLimit,
    /// Leave out `stream_options` (then usage comes only if the server sends it anyway).
    pub no_stream_options: bool,
    /// Leave out `parallel_tool_calls`.
    pub no_parallel_tool_calls: bool,
    /// Leave out `tool_choice` (a forced call cannot be asked for).
    pub no_tool_choice: bool,
}

/// A request parameter the compatibility rules know about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Param {
    MaxTokens,
    MaxCompletionTokens,
    StreamOptions,
    ParallelToolCalls,
    ToolChoice,
}

impl Param {
    /// Its name on the wire.
    pub fn name(self) -> &'static str {
        crate::chat::serde_name(&self)
    }
}

impl Quirks {
    /// Records that the server refused `param`; returns what changes, for the announcement,
    /// or `None` when there is nothing left to change (the caller then reports the error).
    pub(crate) fn learn(&mut self, param: Param) -> Option<String> {
        let change = match param {
            Param::MaxTokens if self.token_limit == TokenLimit::MaxTokens => {
                self.token_limit = TokenLimit::MaxCompletionTokens;
                "sending max_completion_tokens instead of max_tokens"
            }
            Param::MaxCompletionTokens if self.token_limit == TokenLimit::MaxCompletionTokens => {
                self.token_limit = TokenLimit::Omit;
                "sending no token limit"
            }
            Param::StreamOptions if !self.no_stream_options => {
                self.no_stream_options = true;
                "leaving out stream_options (usage only if the server sends it anyway)"
            }
            Param::ParallelToolCalls if !self.no_parallel_tool_calls => {
                self.no_parallel_tool_calls = true;
                "leaving out parallel_tool_calls"
            }
            Param::ToolChoice if !self.no_tool_choice => {
                self.no_tool_choice = true;
                "leaving out tool_choice"
            }
            _ => return None,
        };
        Some(format!(
            "the server does not accept {}; {change} (remembered for this server)",
            param.name()
        ))
    }

    /// The adaptations in effect, in words (for `doctor`); empty when none.
    pub fn describe(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        match self.token_limit {
            TokenLimit::MaxTokens => {}
            TokenLimit::MaxCompletionTokens => {
                out.push("max_completion_tokens instead of max_tokens")
            }
            TokenLimit::Omit => out.push("no token limit sent"),
        }
        if self.no_stream_options {
            out.push("no stream_options");
        }
        if self.no_parallel_tool_calls {
            out.push("no parallel_tool_calls");
        }
        if self.no_tool_choice {
            out.push("no tool_choice");
        }
        out
    }
}

/// Words servers use when they refuse a parameter (OpenAI, vLLM's pydantic validation, Rust
/// servers' serde errors, Azure, gateways).
const REFUSALS: &[&str] = &[
    "unsupported parameter",
    "not supported",
    "unsupported",
    "unrecognized",
    "unknown field",
    "unknown parameter",
    "extra inputs are not permitted",
    "extra_forbidden",
    "not permitted",
    "not allowed",
    "unexpected keyword",
    "is invalid for this model",
];

/// The parameter a refused request was refused for: only a 400 or 422 answer whose message
/// names one of `sent` next to a refusal. A limit that is merely too large ("max_tokens is too
/// large") is not a refusal of the parameter.
pub(crate) fn refused_param(error: &ProviderError, sent: &[Param]) -> Option<Param> {
    let ProviderError::Request { status, message } = error else {
        return None;
    };
    if !matches!(status, 400 | 422) {
        return None;
    }
    let lower = message.to_ascii_lowercase();
    if !REFUSALS.iter().any(|r| lower.contains(r)) {
        return None;
    }
    // The parameter named first wins: "'max_tokens' is not supported ... use
    // 'max_completion_tokens' instead" refuses the first, not the suggestion.
    sent.iter()
        .filter_map(|p| find_name(&lower, p.name()).map(|at| (at, *p)))
        .min_by_key(|(at, _)| *at)
        .map(|(_, p)| p)
}

/// Where `name` occurs in `text` as a whole word (not inside a longer identifier).
fn find_name(text: &str, name: &str) -> Option<usize> {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find(name) {
        let at = from + found;
        let end = at + name.len();
        let before_ok = at == 0 || !ident(bytes[at - 1]);
        let after_ok = end >= bytes.len() || !ident(bytes[end]);
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Whether a server's error says the model or server cannot take tools at all. Ollama ("does
/// not support tools"), vLLM started without tool parsing ("auto" tool choice requires
/// --enable-auto-tool-choice), llama.cpp without `--jinja` ("tools param requires --jinja"),
/// OpenRouter ("no endpoints found that support tool use"), templates that cannot render them.
pub(crate) fn says_no_tools(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "does not support tools",
        "doesn't support tools",
        "tools are not supported",
        "tool use is not supported",
        "tool calling is not supported",
        "tool calls are not supported",
        "does not support function calling",
        "function calling is not supported",
        "support tool use",
        "requires --enable-auto-tool-choice",
        "tools param requires --jinja",
        "template does not support tool",
        "not support tool calling",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

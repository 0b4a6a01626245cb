//! Secret values (the API key) and how they are kept out of what tools produce: blanked out of
//! text, JSON arguments and approval requests, out of a byte stream written to disk, and out of
//! every cut a tool makes (head/tail of bash output, a long line of `read`), so no part of a
//! key survives a cut. This module only transforms text; it must not log, print or store the
//! values it holds, and `Debug` shows only how many there are.

use crate::chat::ApprovalRequest;

/// What a secret is replaced with.
const REDACTED: &str = "[redacted]";

/// Secret values (the API key) to blank out of tool output. A tool can still read a config
/// file or print an environment a user exported by hand; this keeps the key itself out of
/// history whichever way it surfaced.
#[derive(Clone, Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// Values shorter than 8 bytes are ignored: blanking them would mangle ordinary output.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        Self(values.into_iter().filter(|v| v.len() >= 8).collect())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: String) -> String {
        self.0.iter().fold(text, |text, secret| {
            if text.contains(secret.as_str()) {
                text.replace(secret.as_str(), REDACTED)
            } else {
                text
            }
        })
    }

    /// Redacts every string (and object key) inside a JSON value, e.g. a call's arguments.
    pub(crate) fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if self.0.iter().any(|k| s.contains(k.as_str())) {
                    *s = self.redact(std::mem::take(s));
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut v) in entries {
                    self.redact_json(&mut v);
                    map.insert(self.redact(key), v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// An approval request as a frontend may show it: the command or the diff redacted.
    pub(crate) fn redact_request(&self, request: ApprovalRequest) -> ApprovalRequest {
        match request {
            ApprovalRequest::Command { command } => ApprovalRequest::Command {
                command: self.redact(command),
            },
            ApprovalRequest::Diff { path, diff } => ApprovalRequest::Diff {
                path: self.redact(path),
                diff: self.redact(diff),
            },
            ApprovalRequest::McpCall {
                server,
                tool,
                arguments,
            } => ApprovalRequest::McpCall {
                server,
                tool,
                arguments: self.redact(arguments),
            },
            ApprovalRequest::OutsideSandbox { command, reason } => {
                ApprovalRequest::OutsideSandbox {
                    command: self.redact(command),
                    reason: self.redact(reason),
                }
            }
            ApprovalRequest::Fetch { url } => ApprovalRequest::Fetch {
                url: self.redact(url),
            },
        }
    }

    /// The length of the longest secret: how far a cut must look around itself.
    pub(crate) fn longest(&self) -> usize {
        self.0.iter().map(String::len).max().unwrap_or(0)
    }

    /// The earliest complete occurrence of any secret in `hay` starting at or after `from`,
    /// as (start, length); the longest one when several start at the same place.
    fn find(&self, hay: &[u8], from: usize) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for secret in &self.0 {
            let needle = secret.as_bytes();
            let Some(&first) = needle.first() else {
                continue;
            };
            let mut at = from;
            while at + needle.len() <= hay.len() {
                if best.is_some_and(|(s, _)| at > s) {
                    break;
                }
                let Some(i) = hay[at..].iter().position(|&b| b == first) else {
                    break;
                };
                let start = at + i;
                if hay.get(start..start + needle.len()) == Some(needle) {
                    best = match best {
                        Some((s, n)) if s < start || (s == start && n >= needle.len()) => {
                            Some((s, n))
                        }
                        _ => Some((start, needle.len())),
                    };
                    break;
                }
                at = start + 1;
            }
        }
        best
    }

    /// Where to cut `bytes` to keep its start (`bytes[..cut]`): at `at`, or later if a secret
    /// runs across `at`, so the whole secret is kept (and then redacted) rather than a part of
    /// it. `bytes` must hold at least [`Secrets::longest`] bytes past `at` (or all there is).
    pub(crate) fn head_cut(&self, bytes: &[u8], at: usize) -> usize {
        let mut cut = at.min(bytes.len());
        let mut from = cut.saturating_sub(self.longest());
        while let Some((start, len)) = self.find(bytes, from) {
            if start >= cut {
                break;
            }
            cut = cut.max(start + len);
            from = start + 1;
        }
        cut
    }

    /// Where to cut `bytes` to keep its end (`bytes[cut..]`): at `at`, or earlier if a secret
    /// runs across `at`, so the whole secret is kept (and then redacted). `bytes` must hold at
    /// least [`Secrets::longest`] bytes before `at` (or all there is).
    pub(crate) fn tail_cut(&self, bytes: &[u8], at: usize) -> usize {
        let mut cut = at.min(bytes.len());
        loop {
            let mut from = cut.saturating_sub(self.longest());
            let mut moved = false;
            while let Some((start, len)) = self.find(bytes, from) {
                if start >= cut {
                    break;
                }
                if start + len > cut {
                    cut = start;
                    moved = true;
                    break;
                }
                from = start + 1;
            }
            if !moved {
                return cut;
            }
        }
    }

    /// How many bytes at the end of `bytes` begin a secret without completing it: a stream
    /// shown live holds just those back until it knows whether the secret follows.
    pub(crate) fn open_suffix(&self, bytes: &[u8]) -> usize {
        let mut held = 0;
        for secret in &self.0 {
            let s = secret.as_bytes();
            let longest = (s.len() - 1).min(bytes.len());
            for k in (held + 1..=longest).rev() {
                if bytes.ends_with(&s[..k]) {
                    held = k;
                    break;
                }
            }
        }
        held
    }

    /// `bytes` with every secret replaced (for bytes that may not be UTF-8).
    pub(crate) fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        let mut at = 0;
        while let Some((start, len)) = self.find(bytes, at) {
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = start + len;
        }
        out.extend_from_slice(&bytes[at..]);
        out
    }

    /// A redactor for a byte stream that arrives in pieces (a secret may be split across two).
    pub(crate) fn stream(&self) -> Redactor<'_> {
        Redactor {
            secrets: self,
            pending: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} hidden)", self.0.len())
    }
}

/// Redacts a stream: holds back the last `longest - 1` bytes of what it was given (they may
/// be the start of a secret that the next piece completes) and hands out the rest redacted.
/// What it hands out never contains any part of a secret that the stream contains whole.
pub(crate) struct Redactor<'a> {
    secrets: &'a Secrets,
    pending: Vec<u8>,
}

impl Redactor<'_> {
    /// Takes the next piece; appends to `out` what is safe to write now.
    pub(crate) fn push(&mut self, piece: &[u8], out: &mut Vec<u8>) {
        if self.secrets.is_empty() {
            out.extend_from_slice(piece);
            return;
        }
        self.pending.extend_from_slice(piece);
        // Any secret starting before `safe` lies wholly inside `pending`, so it is found.
        let safe = self
            .pending
            .len()
            .saturating_sub(self.secrets.longest() - 1);
        let mut at = 0;
        while let Some((start, len)) = self.secrets.find(&self.pending, at) {
            if start >= safe {
                break;
            }
            out.extend_from_slice(&self.pending[at..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = start + len;
        }
        let end = safe.max(at);
        out.extend_from_slice(&self.pending[at..end]);
        self.pending.drain(..end);
    }

    /// The end of the stream: the held-back bytes, redacted.
    pub(crate) fn finish(self, out: &mut Vec<u8>) {
        out.extend(self.secrets.redact_bytes(&self.pending));
    }
}

//! The offline demo model: a deterministic `Provider` that needs no key and no network.
//!
//! It behaves like a small, careful agent so a new user sees the real loop at work: it lists
//! the workspace with `bash`, reads the file the prompt names (or the README), proposes an
//! `edit` when asked to change something, and ends with a Markdown summary built from what the
//! tools actually returned. Each step is decided from the conversation alone, so resuming a
//! demo session continues where it stopped.
//!
//! In a goal round it works on the goal's objective (read from the latest goal record, as a
//! model would) and then reports the goal complete, or blocked when its edit was refused, with
//! `goal_update`; it never writes the goal's protocol markers into a file. Whether a call went
//! through it learns from the results' statuses the request carries, never from their text.

use std::borrow::Cow;
use std::time::Duration;

use futures_util::stream;

use super::{ChatRequest, EventStream, FinishReason, Provider, Reply, ReplyFuture, StreamEvent};
use crate::chat::{Builtin, Message, Role, ToolCall, ToolStatus, Usage};

/// Pause between streamed pieces, so the reply visibly arrives like a real model's.
const PIECE_DELAY: Duration = Duration::from_millis(6);
const PIECE_CHARS: usize = 12;

/// Words that mean the user wants something changed.
const CHANGE_WORDS: &[&str] = &[
    "change", "edit", "fix", "add", "update", "rename", "replace", "modify", "append", "insert",
    "improve", "refactor", "write",
];

/// How goal records and goal rounds open, as the model reads them in the conversation (the
/// demo reads text like a model; it does not link the goal code).
const GOAL_STATE_OPEN: &str = "<goal_state>";
const GOAL_STATE_CLOSE: &str = "</goal_state>";
const GOAL_ROUND_OPEN: &str = "<goal_round ";
const GOAL_UPDATE: &str = "goal_update";

/// The listing command the demo runs first.
const LIST_COMMAND: &str = "find . -maxdepth 2 -type f -not -path './.git/*' -not -path './target/*' \
-not -path './.minicode/*' -not -path './node_modules/*' | sort | head -n 200";

pub(crate) struct Demo {
    piece_delay: Duration,
}

impl Default for Demo {
    fn default() -> Self {
        Self {
            piece_delay: PIECE_DELAY,
        }
    }
}

impl Provider for Demo {
    fn reads_statuses(&self) -> bool {
        true
    }

    fn stream(&self, request: &ChatRequest<'_>) -> EventStream {
        let reply = plan(request);
        let delay = self.piece_delay;
        let mut events: Vec<StreamEvent> = chunk_text(&reply.text).map(StreamEvent::Text).collect();
        events.push(StreamEvent::Done(Box::new(reply)));
        Box::pin(stream::unfold(
            events.into_iter(),
            move |mut rest| async move {
                let next = rest.next()?;
                if !delay.is_zero() && matches!(next, StreamEvent::Text(_)) {
                    tokio::time::sleep(delay).await;
                }
                Some((Ok(next), rest))
            },
        ))
    }

    fn chat(&self, request: &ChatRequest<'_>) -> ReplyFuture {
        let reply = plan(request);
        Box::pin(async move { Ok(reply) })
    }

    fn model(&self) -> &str {
        "demo"
    }
}

fn chunk_text(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .nth(PIECE_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece.to_string())
    })
}

/// What the demo has learned since the user's latest prompt.
#[derive(Default)]
struct Progress<'a> {
    prompt: Cow<'a, str>,
    listing: Option<&'a str>,
    read: Option<(String, &'a str)>,
    /// The edit's path, result and how it ended (`None`: not known).
    edit: Option<(String, &'a str, Option<ToolStatus>)>,
    /// In a goal round (the goal tools are offered): whether `goal_update` was called.
    goal_round: bool,
    goal_updated: bool,
    calls: usize,
}

/// Decides the next reply from the conversation.
fn plan(request: &ChatRequest<'_>) -> Reply {
    let mut progress = progress(request.messages, request.statuses);
    progress.goal_round &= request.tools.iter().any(|t| t.name == GOAL_UPDATE);
    let tools_tokens = serde_json::to_string(request.tools).map_or(0, |t| t.len() as u64 / 4);
    let input_tokens: u64 = tools_tokens
        + request
            .messages
            .iter()
            .map(|m| m.text().len() as u64 / 4 + 4)
            .sum::<u64>();
    let mut reply = if request.tools.is_empty() {
        Reply {
            text: summary(&progress),
            ..Reply::default()
        }
    } else {
        next_step(&progress)
    };
    let output_tokens = (reply.text.len()
        + reply
            .tool_calls
            .iter()
            .map(|c| c.arguments.len())
            .sum::<usize>()) as u64
        / 4
        + 1;
    reply.finish_reason = Some(if reply.tool_calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    });
    reply.usage = Some(Usage::new(input_tokens, output_tokens, 0));
    reply
}

fn progress<'a>(messages: &[&'a Message], statuses: &[(&str, ToolStatus)]) -> Progress<'a> {
    let start = messages
        .iter()
        .rposition(|m| {
            m.role == Role::User
                && !m.text().starts_with("<project-memory")
                && !m.text().starts_with("<task-ledger>")
                && !m.text().starts_with(GOAL_STATE_OPEN)
        })
        .unwrap_or(0);
    // Only the user's words: context a hook appended ("… added …") must not change the plan.
    let latest = messages.get(start).map_or("", |m| m.text());
    let latest = latest
        .split_once(crate::chat::HOOK_CONTEXT_HEADING)
        .map_or(latest, |(words, _)| words);
    let goal_round = latest.starts_with(GOAL_ROUND_OPEN);
    let mut p = Progress {
        // A goal round's instruction is the driver's; the work is the goal's objective.
        prompt: if goal_round {
            Cow::Owned(objective(messages).unwrap_or_default())
        } else {
            Cow::Borrowed(latest)
        },
        goal_round,
        ..Default::default()
    };
    let mut pending: Vec<&ToolCall> = Vec::new();
    for message in &messages[start..] {
        match message.role {
            Role::Assistant => pending.extend(message.tool_calls.iter()),
            Role::Tool => {
                let Some(call) = pending
                    .iter()
                    .find(|c| Some(&c.id) == message.tool_call_id.as_ref())
                else {
                    continue;
                };
                p.calls += 1;
                let path = argument(call, "path");
                let status = statuses
                    .iter()
                    .find(|(id, _)| *id == call.id)
                    .map(|(_, status)| *status);
                match Builtin::of(&call.name) {
                    Some(Builtin::Bash) => p.listing = Some(message.text()),
                    Some(Builtin::Read) => p.read = Some((path, message.text())),
                    Some(Builtin::Edit) => p.edit = Some((path, message.text(), status)),
                    _ if call.name == GOAL_UPDATE => p.goal_updated = true,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    p
}

/// The objective of the latest goal record in the conversation.
fn objective(messages: &[&Message]) -> Option<String> {
    let record = messages.iter().rev().find_map(|m| {
        let text = m.text();
        (m.role == Role::User && text.starts_with(GOAL_STATE_OPEN)).then_some(text)
    })?;
    let json = record
        .strip_prefix(GOAL_STATE_OPEN)?
        .trim_end()
        .strip_suffix(GOAL_STATE_CLOSE)?;
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    Some(value.get("goal")?.get("objective")?.as_str()?.to_string())
}

fn argument(call: &ToolCall, key: &str) -> String {
    serde_json::from_str::<serde_json::Value>(&call.arguments)
        .ok()
        .and_then(|v| v.get(key).and_then(|s| s.as_str()).map(str::to_string))
        .unwrap_or_default()
}

fn next_step(p: &Progress<'_>) -> Reply {
    let call = |name: &str, args: serde_json::Value, text: &str| Reply {
        text: text.to_string(),
        tool_calls: vec![ToolCall {
            id: format!("demo_{}_{}", name, p.calls + 1),
            name: name.to_string(),
            arguments: args.to_string(),
        }],
        ..Reply::default()
    };
    let Some(listing) = p.listing else {
        return call(
            Builtin::Bash.name(),
            serde_json::json!({ "command": LIST_COMMAND }),
            "I'll start by looking at what is in this workspace.\n",
        );
    };
    let files = listed_files(listing);
    if p.read.is_none()
        && let Some(target) = target_file(&p.prompt, &files)
    {
        return call(
            Builtin::Read.name(),
            serde_json::json!({ "path": target }),
            &format!("Let me read `{target}`.\n"),
        );
    }
    if let (Some((path, content)), None) = (&p.read, &p.edit)
        && wants_change(&p.prompt)
        && let Some((old, new)) = proposed_edit(path, content, &p.prompt)
    {
        return call(
            Builtin::Edit.name(),
            serde_json::json!({ "path": path, "old_string": old, "new_string": new }),
            &format!("You asked for a change, so I'll propose a small edit to `{path}`.\n"),
        );
    }
    if p.goal_round && !p.goal_updated {
        let args = match &p.edit {
            Some((path, _, status)) if *status != Some(ToolStatus::Succeeded) => {
                serde_json::json!({
                    "status": "blocked",
                    "code": "awaiting-human",
                    "message": format!("the edit to {path} did not go through; it needs approval"),
                })
            }
            _ => serde_json::json!({ "status": "complete" }),
        };
        return call(
            GOAL_UPDATE,
            args,
            "The goal's work is done here; I'll report it.\n",
        );
    }
    Reply {
        text: summary(p),
        ..Reply::default()
    }
}

/// File paths from the listing output (lines starting with `./`).
fn listed_files(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter_map(|l| l.trim().strip_prefix("./"))
        .collect()
}

/// The file the prompt names, else a README, else the first listed file.
fn target_file(prompt: &str, files: &[&str]) -> Option<String> {
    let named = prompt
        .split(|c: char| c.is_whitespace() || "`'\",;:()".contains(c))
        .map(|w| w.trim_start_matches("./").trim_end_matches(['.', '?', '!']))
        .find(|w| {
            !w.is_empty()
                && files
                    .iter()
                    .any(|f| f == w || f.ends_with(&format!("/{w}")))
        });
    if let Some(word) = named {
        return files
            .iter()
            .find(|f| **f == word || f.ends_with(&format!("/{word}")))
            .map(|f| f.to_string());
    }
    if files.is_empty() {
        // The listing was refused or empty: take a word that looks like a file name (has an
        // extension or a folder), else a README is the best first guess.
        let looks_like_file = |w: &&str| {
            w.contains('/')
                || w.rsplit_once('.').is_some_and(|(stem, ext)| {
                    !stem.is_empty()
                        && (1..=5).contains(&ext.len())
                        && ext.chars().all(|c| c.is_ascii_alphanumeric())
                })
        };
        let named = prompt
            .split(|c: char| c.is_whitespace() || "`'\",;:()".contains(c))
            .map(|w| w.trim_start_matches("./").trim_end_matches(['.', '?', '!']))
            .find(looks_like_file);
        return Some(named.unwrap_or("README.md").to_string());
    }
    files
        .iter()
        .find(|f| f.to_ascii_lowercase().starts_with("readme"))
        .or_else(|| files.first())
        .map(|f| f.to_string())
}

fn wants_change(prompt: &str) -> bool {
    let lower = prompt.to_lowercase();
    lower.split(|c: char| !c.is_alphanumeric()).any(|w| {
        CHANGE_WORDS
            .iter()
            .any(|c| w == *c || (w.starts_with(c) && w.len() <= c.len() + 2))
    })
}

/// Strips the `read` tool's line numbers (`     1\tline`).
fn file_lines(read_output: &str) -> Vec<&str> {
    read_output
        .lines()
        .filter_map(|l| {
            l.split_once('\t')
                .filter(|(n, _)| n.trim().parse::<u64>().is_ok())
                .map(|(_, t)| t)
        })
        .collect()
}

/// Inserts a note after the first non-empty line that occurs once in the file.
fn proposed_edit(path: &str, read_output: &str, prompt: &str) -> Option<(String, String)> {
    let lines = file_lines(read_output);
    let anchor = lines
        .iter()
        .find(|l| !l.trim().is_empty() && lines.iter().filter(|o| o == l).count() == 1)?;
    let request: String = without_tags(prompt.lines().next().unwrap_or(""))
        .chars()
        .take(60)
        .collect();
    let note = format!("minicode demo: noted request \"{}\"", request.trim());
    let comment = match path.rsplit('.').next().unwrap_or("") {
        "rs" | "js" | "ts" | "go" | "c" | "h" | "cpp" | "java" | "kt" | "swift" => {
            format!("// {note}")
        }
        "md" | "html" | "xml" => format!("<!-- {note} -->"),
        _ => format!("# {note}"),
    };
    Some((anchor.to_string(), format!("{anchor}\n{comment}")))
}

/// `text` without anything shaped like a markup tag (`<goal_round …/>`, `<goal_state>`): a
/// note written into the user's file must never carry protocol markers.
fn without_tags(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        match rest[open..].find('>') {
            Some(close) => rest = &rest[open + close + 1..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn summary(p: &Progress<'_>) -> String {
    let mut out = String::from("## What I found\n\n");
    let files = p.listing.map(listed_files).unwrap_or_default();
    if files.is_empty() {
        out.push_str("The workspace listing came back empty (or was not run).\n");
    } else {
        let noun = if files.len() == 1 { "file" } else { "files" };
        out.push_str(&format!(
            "The workspace has **{}** {noun} (top two levels).",
            files.len()
        ));
        let mut kinds: Vec<(String, usize)> = Vec::new();
        for f in &files {
            let ext = f
                .rsplit_once('.')
                .map_or("(none)".to_string(), |(_, e)| format!(".{e}"));
            match kinds.iter_mut().find(|(k, _)| *k == ext) {
                Some((_, n)) => *n += 1,
                None => kinds.push((ext, 1)),
            }
        }
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.push_str(" By kind:\n\n| kind | files |\n| --- | --- |\n");
        for (kind, n) in kinds.iter().take(6) {
            out.push_str(&format!("| `{kind}` | {n} |\n"));
        }
    }
    if let Some((path, content)) = &p.read {
        let lines = file_lines(content);
        if lines.is_empty() {
            let why = content.lines().next().unwrap_or("no output");
            out.push_str(&format!("\nI could not read `{path}`: {why}\n"));
        } else {
            let noun = if lines.len() == 1 { "line" } else { "lines" };
            out.push_str(&format!("\n### `{path}`\n\n{} {noun} shown", lines.len()));
            let heading = lines.iter().find(|l| l.starts_with('#'));
            match heading.or_else(|| lines.iter().find(|l| !l.trim().is_empty())) {
                Some(first) => out.push_str(&format!("; it opens with:\n\n> {}\n", first.trim())),
                None => out.push_str(".\n"),
            }
        }
    }
    if let Some((path, result, status)) = &p.edit {
        let verdict = match status {
            Some(ToolStatus::Succeeded) => "was applied".to_string(),
            Some(ToolStatus::Denied) => "was **denied**, so nothing changed".to_string(),
            _ => {
                let why = result.lines().next().unwrap_or("no result");
                format!("did not go through ({why})")
            }
        };
        out.push_str(&format!("\nThe proposed edit to `{path}` {verdict}.\n"));
    }
    out.push_str(
        "\n### Next steps\n\n- This was the built-in **offline demo model**: it follows a fixed plan.\n\
         - Point minicode at a real model server (see `config/config.example.toml`) to get real work done.\n",
    );
    out
}

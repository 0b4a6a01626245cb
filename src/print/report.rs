//! The one-shot frontend's stderr lines: one per event worth telling, the closing stats line,
//! and goal mode's lines (each round, each change). Pure formatting; `print.rs` decides what
//! to write where.

use std::io::Write;

use crate::protocol::{Event, Goal, TurnEnd, TurnStats};
use crate::sanitize::sanitize;
use crate::sanitize::text::truncate;

/// One stderr line per event worth telling.
pub(super) fn report(err: &mut impl Write, event: &Event) {
    if let Some(line) = line(event) {
        let _ = writeln!(err, "{}", sanitize(&line));
    }
}

/// The line an event is told by, if it is worth one; each group of events has its helper.
fn line(event: &Event) -> Option<String> {
    Some(match event {
        Event::ToolCallBegan { .. } | Event::ToolCallEnded { .. } => tool_line(event)?,
        Event::SubagentStarted { .. } | Event::SubagentEnded { .. } => subagent_line(event)?,
        Event::GoalRoundStarted { .. }
        | Event::GoalChanged { .. }
        | Event::GoalStatus { .. }
        | Event::GoalRefused { .. } => goal_event_line(event)?,
        Event::Retrying {
            attempt,
            max_attempts,
            delay_ms,
            reason,
        } => format!(
            "retrying ({attempt}/{max_attempts}) in {:.1}s: {reason}",
            *delay_ms as f64 / 1000.0
        ),
        Event::Warning { message } => format!("warning: {message}"),
        Event::Hook {
            hook, outcome, ms, ..
        } => crate::protocol::hook_line(hook, *outcome, *ms),
        Event::Error { message } => format!("error: {message}"),
        Event::Compacted {
            tokens_before,
            tokens_after,
            messages_summarized,
        } => format!(
            "context compacted: {tokens_before} → {tokens_after} tokens ({} summarised)",
            count(*messages_summarized as u64, "message")
        ),
        Event::MemoryLoaded { path, tokens } => format!("project memory: {path} ({tokens} tokens)"),
        Event::SkillLoaded {
            name,
            source,
            trigger,
        } => match trigger {
            Some(word) => format!("skill {name} loaded from {source} (trigger: {word})"),
            None => format!("skill {name} loaded from {source}"),
        },
        Event::SessionForked {
            parent_id,
            session_id,
        } => format!("forked session {parent_id} into {session_id}"),
        Event::ModelSwitched { previous, model } => {
            format!("model switched to {model} (was {previous})")
        }
        Event::SessionConfigured { .. }
        | Event::SandboxChanged { .. }
        | Event::HistoryRestored { .. }
        | Event::TurnStarted { .. }
        | Event::ModelRequestStarted { .. }
        | Event::TextDelta { .. }
        | Event::ReasoningDelta { .. }
        | Event::ContextWindowSet { .. }
        | Event::AssistantMessage { .. }
        | Event::ApprovalRequested { .. }
        | Event::ApprovalDecided { .. }
        | Event::ContextUsage { .. }
        | Event::McpServers { .. }
        | Event::ServerUnreachable { .. }
        | Event::SubagentProgress { .. }
        | Event::ToolOutputDelta { .. }
        | Event::SkillsListed { .. }
        | Event::SessionsListed { .. }
        | Event::PathCompletions { .. }
        | Event::BackgroundChanged { .. }
        | Event::ModelsListed { .. }
        | Event::RewindList { .. }
        | Event::Rewound { .. }
        | Event::TurnEnded { .. }
        | Event::GoalRunEnded { .. }
        | Event::ShutdownComplete => return None,
    })
}

/// The end of a call refused because nobody could be asked: its reason alone, which says it
/// did not run (not "denied:", which would read as the user's answer).
pub(super) fn unasked(err: &mut impl Write, event: &Event) {
    if let Event::ToolCallEnded { output, .. } = event {
        let _ = writeln!(err, "{}", sanitize(&format!("  {output}")));
    }
}

/// A tool call's start (its summary) and end (its status and first line).
fn tool_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::ToolCallBegan { tool, summary, .. } => format!("▶ {tool} {summary}"),
        Event::ToolCallEnded { status, output, .. } => {
            let output = crate::sanitize::collapse_rewrites(output);
            let first = output.lines().next().unwrap_or("");
            let status = serde_json::to_value(status).ok();
            let status = status.as_ref().and_then(|v| v.as_str()).unwrap_or("ended");
            format!("  {status}: {}", truncate(first, 120))
        }
        _ => return None,
    })
}

/// A sub-agent's start and its end with what it cost.
fn subagent_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::SubagentStarted {
            task, session_id, ..
        } => format!("  ↳ sub-agent {task} started (session {session_id})"),
        Event::SubagentEnded {
            task,
            status,
            rounds,
            tool_calls,
            elapsed_ms,
            error,
            ..
        } => {
            let mut line = format!(
                "  ↳ sub-agent {task} {} in {:.1}s · {} · {}",
                status.as_str(),
                *elapsed_ms as f64 / 1000.0,
                count(u64::from(*rounds), "round"),
                count(u64::from(*tool_calls), "tool call"),
            );
            if let Some(error) = error {
                line.push_str(&format!(": {}", truncate(error, 120)));
            }
            line
        }
        _ => return None,
    })
}

/// Goal mode's events: a round, a change, a status answer, a refusal.
fn goal_event_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::GoalRoundStarted {
            round, max_rounds, ..
        } => format!("goal round {round}/{max_rounds}"),
        Event::GoalChanged {
            change,
            goal_id,
            goal,
            ..
        } => {
            let mut line = format!("goal {goal_id} {}", change.as_str());
            if let Some(goal) = goal {
                if let Some(reason) = &goal.reason {
                    line.push_str(&format!(" ({}): {}", reason.code, reason.message));
                }
                if change.as_str() == "created" {
                    line.push_str(&format!(": {}", truncate(&goal.objective, 120)));
                }
            }
            line
        }
        Event::GoalStatus {
            goal: Some(goal),
            armed,
            error: None,
        } => goal_line(goal, *armed, true),
        Event::GoalStatus {
            error: Some(error), ..
        } => format!("goal unavailable: {error}"),
        Event::GoalStatus { .. } => "no goal in this session".to_string(),
        Event::GoalRefused { message } => format!("goal refused: {message}"),
        _ => return None,
    })
}

/// The closing stats line.
pub(crate) fn describe_end(end: &TurnEnd, stats: &TurnStats) -> String {
    let status = match end {
        TurnEnd::Completed => "completed".to_string(),
        TurnEnd::RoundLimit { rounds } => format!("stopped at the limit of {rounds} tool rounds"),
        TurnEnd::Interrupted => "interrupted".to_string(),
        TurnEnd::Failed { error } => format!("failed: {error}"),
    };
    let t = &stats.tokens;
    let tokens = if t.unavailable() {
        "tokens unavailable".to_string()
    } else {
        let partial = if t.partial() { " (partial)" } else { "" };
        let cache = t
            .cached_percent
            .map(|pct| format!(" ({pct}% of the prompt from the cache)"))
            .unwrap_or_default();
        format!(
            "tokens in {} / out {} / total {}{partial}{cache}",
            t.input_tokens, t.output_tokens, t.total_tokens
        )
    };
    let summaries = if stats.summary_calls > 0 {
        format!(
            " · {} ({} tokens)",
            count(u64::from(stats.summary_calls), "summary call"),
            stats.summary_tokens.total_tokens
        )
    } else {
        String::new()
    };
    let subagents = if stats.subagents > 0 {
        let tokens = if stats.subagent_tokens.unavailable() {
            "tokens unavailable".to_string()
        } else {
            format!("{} tokens", stats.subagent_tokens.total_tokens)
        };
        format!(
            " · {} ({}, {tokens})",
            count(u64::from(stats.subagents), "sub-agent"),
            count(u64::from(stats.subagent_calls), "model call")
        )
    } else {
        String::new()
    };
    format!(
        "{status} in {:.1}s · {} · {} · {tokens}{summaries}{subagents}{}",
        stats.wall.as_secs_f64(),
        count(u64::from(stats.model_calls), "model call"),
        count(u64::from(stats.tool_calls), "tool call"),
        small_model_figures(stats)
    )
}

/// [`describe_end`] for a run in which the user took `waited` to answer approval questions:
/// the time is the run's own, with the wait beside it (`completed in 12.3s (+146.6s waiting
/// for you)`), so a slow answer is not read as a slow model.
pub(crate) fn describe_end_waited(
    end: &TurnEnd,
    stats: &TurnStats,
    waited: std::time::Duration,
) -> String {
    // Under a twentieth of a second is not worth a mention.
    if waited.as_millis() < 50 {
        return describe_end(end, stats);
    }
    let own = TurnStats {
        wall: stats.wall.saturating_sub(waited),
        ..*stats
    };
    let line = describe_end(end, &own);
    let seconds = format!("{:.1}s", own.wall.as_secs_f64());
    let with_wait = format!("{seconds} (+{:.1}s waiting for you)", waited.as_secs_f64());
    line.replacen(&format!("in {seconds}"), &format!("in {with_wait}"), 1)
}

/// What a small model needed, when it needed anything: calls recovered from its text, nudges,
/// cut replies, edits of files it had not read.
fn small_model_figures(stats: &TurnStats) -> String {
    [
        (stats.recovered_calls, "recovered from text"),
        (stats.nudges, "nudged"),
        (stats.cut_replies, "cut"),
        (stats.unread_edits, "unread edits refused"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!(" · {n} {what}"))
    .collect()
}

/// `1 model call`, `2 model calls`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `goal g-… active · armed · rounds 3/256`, with the reason when blocked and `with_reason`.
pub(super) fn goal_line(goal: &Goal, armed: bool, with_reason: bool) -> String {
    let mut line = format!(
        "goal {} {} · {} · rounds {}/{}",
        goal.id,
        goal.phase.as_str(),
        if armed { "armed" } else { "disarmed" },
        goal.rounds_used,
        goal.max_rounds
    );
    if let Some(reason) = goal.reason.as_ref().filter(|_| with_reason) {
        line.push_str(&format!(" · {}: {}", reason.code, reason.message));
    }
    line
}

//! The live lines of a `delegate` call's sub-agents: one transcript entry per call, below it,
//! with one line per child (task id, state, rounds, tool calls, elapsed time), updated by the
//! core's `Subagent*` events. Elapsed time moves with each event (every model request and
//! tool call of the child), so an idle screen needs no timer.
//!
//! Part of `update` (the event handlers) and of `view` (the lines); no I/O.

use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::state::State;
use super::transcript::Kind;
use super::wrap::{self, Run, sanitize};
use crate::protocol::SubagentStatus;

/// The children of one `delegate` call, in the order they started.
#[derive(Debug, Clone)]
pub struct Children {
    pub(crate) call: String,
    pub(crate) children: Vec<Child>,
}

/// One sub-agent as the user sees it.
#[derive(Debug, Clone)]
pub(crate) struct Child {
    pub(crate) task: String,
    /// `None` while it runs.
    pub(crate) ended: Option<SubagentStatus>,
    pub(crate) rounds: u32,
    pub(crate) tool_calls: u32,
    pub(crate) elapsed: Duration,
    pub(crate) error: Option<String>,
}

impl State {
    /// Index of the sub-agents entry of `call`, searching from the end.
    fn children_entry(&self, call: &str) -> Option<usize> {
        self.transcript
            .entries()
            .iter()
            .rposition(|e| matches!(e.kind(), Kind::Subagents(c) if c.call == call))
    }

    pub(crate) fn subagent_started(&mut self, call: String, task: String) {
        let child = Child {
            task,
            ended: None,
            rounds: 0,
            tool_calls: 0,
            elapsed: Duration::ZERO,
            error: None,
        };
        match self.children_entry(&call) {
            Some(i) => self.transcript.edit(i, |k| {
                if let Kind::Subagents(c) = k {
                    c.children.push(child);
                }
            }),
            None => self.transcript.push(Kind::Subagents(Children {
                call,
                children: vec![child],
            })),
        }
    }

    /// Applies `f` to the child `task` of `call`, when it is shown.
    pub(crate) fn subagent_update(&mut self, call: &str, task: &str, f: impl FnOnce(&mut Child)) {
        if let Some(i) = self.children_entry(call) {
            self.transcript.edit(i, |k| {
                if let Kind::Subagents(c) = k
                    && let Some(child) = c.children.iter_mut().rev().find(|c| c.task == task)
                {
                    f(child);
                }
            });
        }
    }
}

/// One line per child: `↳ task · running · 3 rounds · 2 tool calls · 12 s`.
pub(crate) fn lines(children: &Children, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for child in &children.children {
        let (mark, state, style) = match child.ended {
            None => ("↳ ", "running", Style::new().fg(Color::Yellow)),
            Some(SubagentStatus::Completed) => ("✓ ", "completed", Style::new().fg(Color::Green)),
            Some(SubagentStatus::Failed) => ("✗ ", "failed", Style::new().fg(Color::Red)),
            Some(SubagentStatus::TimedOut) => ("⏱ ", "timed out", Style::new().fg(Color::Red)),
            Some(SubagentStatus::Interrupted) => {
                ("■ ", "interrupted", Style::new().fg(Color::Yellow))
            }
        };
        let mut detail = format!(
            " · {state} · {} · {} · {} s",
            plural(child.rounds, "round"),
            plural(child.tool_calls, "tool call"),
            child.elapsed.as_secs()
        );
        if let Some(error) = &child.error {
            detail.push_str(&format!(" · {error}"));
        }
        let runs = [
            Run::new(
                sanitize(&child.task),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Run::new(sanitize(&detail), Style::new().fg(Color::Gray)),
        ];
        let first = [Span::raw("  "), Span::styled(mark, style)];
        out.extend(wrap::wrap(&runs, width, &first, &[Span::raw("    ")]));
    }
    out
}

fn plural(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

//! What a run did, read back from its stream-json events (the one-shot run's own record, kept
//! as the run's transcript), parsed as the protocol's `Event`s: the tools in order, the
//! approvals asked, the final answer, the status and the figures. Lines that are no event this
//! binary knows are skipped, so newer event kinds never break a report.

use std::collections::HashMap;

use serde::Serialize;

use crate::chat::ToolStatus;
use crate::protocol::{Event, TurnEnd, TurnStats};

/// Token counts as the run's `turn_ended` reported them.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Tokens {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) total: u64,
}

/// The run as its events tell it.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Trajectory {
    pub(crate) session_id: Option<String>,
    #[serde(skip)]
    pub(crate) session_path: Option<String>,
    /// Tool names in the order the calls began.
    pub(crate) tools: Vec<String>,
    /// Tools an approval was asked for, in order.
    pub(crate) approvals: Vec<String>,
    /// `completed`, `round_limit`, `interrupted`, `failed`; `None` when no turn ended.
    pub(crate) status: Option<String>,
    pub(crate) error: Option<String>,
    /// The answer: the last text after the last tool call.
    pub(crate) final_text: String,
    pub(crate) rounds: u32,
    pub(crate) model_calls: u64,
    pub(crate) tool_calls: u64,
    pub(crate) tokens: Tokens,
    /// The agent's own wall time for the turn, in milliseconds.
    pub(crate) agent_wall_ms: u64,
    pub(crate) retries: u32,
    pub(crate) compactions: u32,
    /// `edit` calls that ended failed (the piece not found, not unique, …).
    pub(crate) edit_failures: u32,
    /// Tool calls the model wrote as text that were recovered and run.
    pub(crate) recovered_calls: u64,
    /// Nudges sent because a reply only announced a call.
    pub(crate) nudges: u64,
}

impl Trajectory {
    /// Reads the stream-json lines of one run, each a `protocol::Event`.
    pub(crate) fn from_events(text: &str) -> Trajectory {
        let mut t = Trajectory::default();
        let mut call_tools: HashMap<String, String> = HashMap::new();
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<Event>(line) else {
                continue;
            };
            t.take(event, &mut call_tools);
        }
        t
    }

    fn take(&mut self, event: Event, call_tools: &mut HashMap<String, String>) {
        match event {
            Event::SessionConfigured {
                session_id,
                session_path,
                ..
            } => {
                self.session_id = Some(session_id);
                self.session_path = Some(session_path);
            }
            Event::ModelRequestStarted { .. } => self.rounds += 1,
            Event::AssistantMessage { text } => self.final_text = text,
            Event::ToolCallBegan { call, tool, .. } => {
                self.final_text.clear();
                call_tools.insert(call, tool.clone());
                self.tools.push(tool);
            }
            Event::ApprovalRequested { tool, .. } => self.approvals.push(tool),
            Event::ToolCallEnded { call, status, .. } => {
                let tool = call_tools.get(&call).map(String::as_str);
                if tool == Some("edit") && status == ToolStatus::Failed {
                    self.edit_failures += 1;
                }
            }
            Event::Retrying { .. } => self.retries += 1,
            Event::Compacted { .. } => self.compactions += 1,
            Event::TurnEnded { end, stats, .. } => self.turn_ended(&end, &stats),
            // Not part of a trajectory's figures: every event is named, so a new one is a
            // decision here too.
            Event::HistoryRestored { .. }
            | Event::TurnStarted { .. }
            | Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::SandboxChanged { .. }
            | Event::ApprovalDecided { .. }
            | Event::ToolOutputDelta { .. }
            | Event::SubagentStarted { .. }
            | Event::SubagentProgress { .. }
            | Event::SubagentEnded { .. }
            | Event::Warning { .. }
            | Event::Hook { .. }
            | Event::MemoryLoaded { .. }
            | Event::ContextWindowSet { .. }
            | Event::ServerUnreachable { .. }
            | Event::SkillLoaded { .. }
            | Event::SkillsListed { .. }
            | Event::ModelsListed { .. }
            | Event::ModelSwitched { .. }
            | Event::GoalChanged { .. }
            | Event::GoalStatus { .. }
            | Event::GoalRoundStarted { .. }
            | Event::GoalRunEnded { .. }
            | Event::GoalRefused { .. }
            | Event::RewindList { .. }
            | Event::Rewound { .. }
            | Event::SessionsListed { .. }
            | Event::BackgroundChanged { .. }
            | Event::PathCompletions { .. }
            | Event::SessionForked { .. }
            | Event::ContextUsage { .. }
            | Event::McpServers { .. }
            | Event::Error { .. }
            | Event::ShutdownComplete => {}
        }
    }

    fn turn_ended(&mut self, end: &TurnEnd, stats: &TurnStats) {
        // The status word as the event spells it (`completed`, `round_limit`, …).
        self.status = serde_json::to_value(end)
            .ok()
            .and_then(|v| v.get("status")?.as_str().map(str::to_string));
        self.error = match end {
            TurnEnd::Failed { error } => Some(error.clone()),
            _ => None,
        };
        self.model_calls += u64::from(stats.model_calls);
        self.tool_calls += u64::from(stats.tool_calls);
        self.recovered_calls += u64::from(stats.recovered_calls);
        self.nudges += u64::from(stats.nudges);
        self.agent_wall_ms += stats.wall.as_millis() as u64;
        self.tokens.input += stats.tokens.input_tokens;
        self.tokens.output += stats.tokens.output_tokens;
        self.tokens.total += stats.tokens.total_tokens;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::Trajectory;
    use crate::chat::{ToolKind, ToolStatus};
    use crate::protocol::{Event, TurnEnd, TurnStats};

    /// The lines a one-shot run prints, written from the protocol's own events: what eval reads
    /// is what the binary writes, by the same types.
    #[test]
    fn a_run_is_read_from_the_protocols_events() {
        let events = [
            Event::SessionConfigured {
                session_id: "s1".into(),
                session_path: "/w/s1.json".into(),
                model: "m".into(),
                context_window: 8192,
                resumed_messages: 0,
            },
            Event::ModelRequestStarted { round: 1 },
            Event::ToolCallBegan {
                call: "c1".into(),
                tool: "edit".into(),
                summary: "a.txt".into(),
                arguments: serde_json::json!({}),
                kind: ToolKind::Edit,
                paths: vec!["a.txt".into()],
                change: None,
            },
            Event::ToolCallEnded {
                call: "c1".into(),
                status: ToolStatus::Failed,
                output: "not found".into(),
            },
            Event::ModelRequestStarted { round: 2 },
            Event::AssistantMessage {
                text: "Done.".into(),
            },
            Event::TurnEnded {
                turn: 1,
                end: TurnEnd::Failed {
                    error: "boom".into(),
                },
                stats: Box::new(TurnStats {
                    model_calls: 2,
                    tool_calls: 1,
                    ..TurnStats::default()
                }),
            },
        ];
        let mut text: String = events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap() + "\n")
            .collect();
        text.push_str("{\"type\":\"from_a_newer_binary\"}\nnot json\n");
        let t = Trajectory::from_events(&text);
        assert_eq!(t.session_id.as_deref(), Some("s1"));
        assert_eq!(t.session_path.as_deref(), Some("/w/s1.json"));
        assert_eq!(t.tools, ["edit"]);
        assert_eq!(t.edit_failures, 1);
        assert_eq!(t.rounds, 2);
        assert_eq!(t.final_text, "Done.");
        assert_eq!(t.status.as_deref(), Some("failed"));
        assert_eq!(t.error.as_deref(), Some("boom"));
        assert_eq!((t.model_calls, t.tool_calls), (2, 1));
    }
}

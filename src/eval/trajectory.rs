//! What a run did, read back from its stream-json events (the one-shot run's own record, kept
//! as the run's transcript): the tools in order, the approvals asked, the final answer, the
//! status and the figures. Lines it does not know are skipped, so older or newer event kinds
//! never break a report.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

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
    /// Reads the stream-json lines of one run.
    pub(crate) fn from_events(text: &str) -> Trajectory {
        let mut t = Trajectory::default();
        let mut call_tools: HashMap<String, String> = HashMap::new();
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            t.take(&event, &mut call_tools);
        }
        t
    }

    fn take(&mut self, event: &Value, call_tools: &mut HashMap<String, String>) {
        let text = |key: &str| event.get(key).and_then(Value::as_str).map(str::to_string);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "session_configured" => {
                self.session_id = text("session_id");
                self.session_path = text("session_path");
            }
            "model_request_started" => self.rounds += 1,
            "assistant_message" => self.final_text = text("text").unwrap_or_default(),
            "tool_call_began" => {
                self.final_text.clear();
                let tool = text("tool").unwrap_or_default();
                if let Some(call) = text("call") {
                    call_tools.insert(call, tool.clone());
                }
                self.tools.push(tool);
            }
            "approval_requested" => self.approvals.push(text("tool").unwrap_or_default()),
            "tool_call_ended" => {
                let tool = text("call").and_then(|c| call_tools.get(&c).cloned());
                if tool.as_deref() == Some("edit") && text("status").as_deref() == Some("failed") {
                    self.edit_failures += 1;
                }
            }
            "retrying" => self.retries += 1,
            "compacted" => self.compactions += 1,
            "turn_ended" => self.turn_ended(event),
            _ => {}
        }
    }

    fn turn_ended(&mut self, event: &Value) {
        let end = event.get("end");
        self.status = end
            .and_then(|e| e.get("status"))
            .and_then(Value::as_str)
            .map(str::to_string);
        self.error = end
            .and_then(|e| e.get("message").or_else(|| e.get("error")))
            .and_then(Value::as_str)
            .map(str::to_string);
        let stats = event.get("stats");
        let number = |v: Option<&Value>, key: &str| {
            v.and_then(|s| s.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        self.model_calls += number(stats, "model_calls");
        self.tool_calls += number(stats, "tool_calls");
        self.recovered_calls += number(stats, "recovered_calls");
        self.nudges += number(stats, "nudges");
        self.agent_wall_ms += number(stats, "wall");
        let tokens = stats.and_then(|s| s.get("tokens"));
        self.tokens.input += number(tokens, "input_tokens");
        self.tokens.output += number(tokens, "output_tokens");
        self.tokens.total += number(tokens, "total_tokens");
    }
}

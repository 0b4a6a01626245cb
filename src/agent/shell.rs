//! `!command` in the full-screen session: the user runs a command themselves. It goes through
//! the `bash` tool as the model's calls do (the same sandbox, supervisor, timeout, redaction
//! and output cap), without an approval since the user typed it, and is reported like a
//! tool call inside a turn of its own so a frontend shows it, its live output, and can
//! interrupt it. Its output is not a turn of the conversation: it waits here and goes into
//! the next prompt, so the model sees what the user saw.

use std::collections::VecDeque;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Core;
use super::busy::serve_ops;
use crate::chat::{ToolCall, ToolKind, ToolStatus};
use crate::protocol::{Event, Op, TurnEnd, TurnStats};

/// The part: the commands run since the last prompt, waiting to be sent with the next one.
#[derive(Debug, Default)]
pub(crate) struct Shell {
    /// Commands run by this core, for their call ids.
    ran: u32,
    /// One block per command, oldest first.
    pending: Vec<String>,
}

impl Shell {
    /// Puts the waiting command outputs before `prompt` (and forgets them).
    pub(crate) fn with_pending(&mut self, prompt: String) -> String {
        if self.pending.is_empty() {
            return prompt;
        }
        let blocks = std::mem::take(&mut self.pending).join("\n\n");
        format!("{blocks}\n\n{prompt}")
    }

    fn record(&mut self, command: &str, status: ToolStatus, output: &str) {
        let status = crate::chat::serde_name(&status);
        self.pending.push(format!(
            "<user-shell command=\"{}\" status=\"{status}\">\n{}\n</user-shell>\n(the user \
             ran this command themselves; its output is context for the message below)",
            command.replace('"', "'"),
            output.trim_end()
        ));
    }
}

impl Core {
    /// Runs `command` for the user. Returns true if a shutdown was asked for meanwhile.
    pub(super) async fn shell(
        &mut self,
        command: String,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        queue: &mut VecDeque<Op>,
    ) -> bool {
        self.shell.ran += 1;
        let call = ToolCall {
            id: format!("user-shell-{}", self.shell.ran),
            name: "bash".to_string(),
            arguments: serde_json::json!({ "command": command }).to_string(),
        };
        let turn = self.store.start_turn();
        self.emit(Event::ToolCallBegan {
            call: call.id.clone(),
            tool: call.name.clone(),
            summary: format!("! {command}"),
            arguments: serde_json::json!({ "command": command }),
            kind: ToolKind::Execute,
            paths: Vec::new(),
            change: None,
        });
        let cancel = CancellationToken::new();
        let started = std::time::Instant::now();
        let args = crate::tools::bash::Args::command(command.clone());
        let running = async { self.run_bash(&call, &args, &cancel).await.output };
        let busy = super::busy::Busy {
            tools: self.tool_ctx.clone(),
            events: &self.events,
            skills: &self.skills,
            mcp: &self.mcp,
        };
        let (output, shutdown) = serve_ops(running, ops, queue, &cancel, None, busy).await;
        self.emit(Event::ToolCallEnded {
            call: call.id.clone(),
            status: output.status,
            output: output.content.clone(),
        });
        self.shell.record(&command, output.status, &output.content);
        let stats = TurnStats {
            wall: started.elapsed(),
            tool_calls: 1,
            ..TurnStats::default()
        };
        let end = if output.status == ToolStatus::Interrupted {
            TurnEnd::Interrupted
        } else {
            TurnEnd::Completed
        };
        self.store.finish_turn(turn, end, stats, false);
        shutdown
    }
}

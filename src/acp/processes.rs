//! The session's background processes for an editor: `/ps` lists them (id, state, runtime,
//! command) and `/ps kill <id>` ends one, spelled as in the full-screen session. The listing
//! is the one the core sends on every change (`Event::BackgroundChanged`, kept here by the
//! pump); a kill is the core's (`Op::KillBackground`), and its prompt is answered once the
//! listing shows the process ended. No process is touched here.

use std::sync::Mutex;

use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{PromptResponse, SessionUpdate, StopReason};

use super::convert;
use crate::chat::Background;
use crate::protocol::{Op, OpSender};
use crate::sync::lock;

/// What `/ps` knows: the core's last listing and the kills waiting for their process to end.
#[derive(Default)]
pub(super) struct Processes {
    listing: Mutex<Vec<Background>>,
    kills: Mutex<Vec<(String, Responder<PromptResponse>)>>,
}

/// The argument of a `/ps` prompt (empty for the listing), or `None` for any other prompt.
pub(super) fn command_arg(text: &str) -> Option<&str> {
    let rest = text.trim().strip_prefix("/ps")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

impl Processes {
    /// Carries out `/ps <arg>`: `say` shows the client a message; the prompt is answered at
    /// once, or for a kill once its process has ended.
    pub(super) fn command(
        &self,
        arg: &str,
        ops: &OpSender,
        say: impl Fn(SessionUpdate),
        responder: Responder<PromptResponse>,
    ) -> Result<(), Error> {
        let done = |responder: Responder<PromptResponse>| {
            responder.respond(PromptResponse::new(StopReason::EndTurn))
        };
        let (verb, id) = arg
            .split_once(char::is_whitespace)
            .map_or((arg, ""), |(verb, id)| (verb, id.trim()));
        match (verb, id) {
            ("", _) => {
                say(convert::message(&listing(
                    &lock(&self.listing),
                    crate::protocol::sessions::unix_secs(std::time::SystemTime::now()),
                )));
                done(responder)
            }
            ("kill", id) if !id.is_empty() => {
                let state = lock(&self.listing).iter().find(|b| b.id == id).cloned();
                match state {
                    Some(process) if process.is_running() => {
                        lock(&self.kills).push((id.to_string(), responder));
                        ops.send(Op::KillBackground { id: id.to_string() });
                        Ok(())
                    }
                    Some(process) => {
                        say(convert::message(&format!(
                            "{id} is not running: {}\n",
                            process.line(crate::protocol::sessions::unix_secs(
                                std::time::SystemTime::now()
                            ))
                        )));
                        done(responder)
                    }
                    None => {
                        say(convert::message(&format!("No background process {id}.\n")));
                        done(responder)
                    }
                }
            }
            _ => responder.respond_with_error(Error::new(
                agent_client_protocol::ErrorCode::INVALID_PARAMS,
                "usage: /ps, or /ps kill <id>",
            )),
        }
    }

    /// The core's new listing: a kill whose process it shows ended is answered.
    pub(super) fn changed(&self, processes: Vec<Background>, say: impl Fn(SessionUpdate)) {
        let now = crate::protocol::sessions::unix_secs(std::time::SystemTime::now());
        let mut kills = lock(&self.kills);
        let mut waiting = Vec::new();
        for (id, responder) in kills.drain(..) {
            let ended = processes.iter().find(|b| b.id == id && !b.is_running());
            match ended {
                Some(process) => {
                    say(convert::message(&format!("Ended: {}\n", process.line(now))));
                    if let Err(e) = responder.respond(PromptResponse::new(StopReason::EndTurn)) {
                        tracing::debug!(error = %e, "could not answer a /ps kill prompt");
                    }
                }
                None => waiting.push((id, responder)),
            }
        }
        *kills = waiting;
        *lock(&self.listing) = processes;
    }

    /// The session stopped: no kill will be answered by a listing any more.
    pub(super) fn close(&self) {
        for (_, responder) in lock(&self.kills).drain(..) {
            let _ = responder.respond(PromptResponse::new(StopReason::Cancelled));
        }
    }
}

/// The `/ps` answer: one line per process in a code block, or why there is none.
fn listing(processes: &[Background], now: u64) -> String {
    if processes.is_empty() {
        return "No background processes (the model starts one with `bash` and \
                `background: true`).\n"
            .to_string();
    }
    let lines: Vec<String> = processes.iter().map(|b| b.line(now)).collect();
    format!(
        "Background processes (`/ps kill <id>` ends one):\n```\n{}\n```\n",
        lines.join("\n").replace("```", "'''")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::BackgroundState;

    #[test]
    fn ps_prompts_are_recognised_and_listed_with_state_and_runtime() {
        assert_eq!(command_arg("/ps"), Some(""));
        assert_eq!(command_arg(" /ps kill bg1 "), Some("kill bg1"));
        assert_eq!(command_arg("/pseudo"), None);
        assert_eq!(command_arg("run /ps"), None);
        let bg = Background {
            id: "bg1".into(),
            command: "sleep 300".into(),
            started: 100,
            state: BackgroundState::Running,
        };
        let text = listing(&[bg], 112);
        assert!(text.contains("bg1  running  12s  sleep 300"), "{text}");
        assert!(listing(&[], 0).contains("No background processes"));
    }
}

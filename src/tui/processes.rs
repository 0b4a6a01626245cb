//! The session's background processes in the full-screen session: the listing the core
//! sends on every change (`Event::BackgroundChanged`), `/ps` to show it (id, state, runtime,
//! command) and `/ps kill <id>` to end one, and the status bar's count of running ones.
//!
//! Part of `update` and `view`; no I/O (a kill becomes `Op::KillBackground`).

use super::state::{Effect, State};
use super::transcript::Level;
use crate::chat::Background;
use crate::protocol::Op;

impl State {
    /// The core's new listing.
    pub(crate) fn background_changed(&mut self, processes: Vec<Background>) {
        self.background = processes;
    }

    /// `/ps` lists, `/ps kill <id>` ends one.
    pub(crate) fn ps_command(&mut self, arg: &str) -> Vec<Effect> {
        let (verb, id) = arg
            .split_once(' ')
            .map_or((arg, ""), |(a, b)| (a, b.trim()));
        match (verb, id) {
            ("", _) => {
                let text = listing(
                    &self.background,
                    crate::protocol::sessions::unix_secs(std::time::SystemTime::now()),
                );
                self.notice(Level::Info, text);
                Vec::new()
            }
            ("kill", id) if !id.is_empty() => {
                if !self.background.iter().any(|b| b.id == id) {
                    self.notice(Level::Warning, format!("no background process {id}"));
                    return Vec::new();
                }
                self.notice(Level::Info, format!("ending {id}…"));
                vec![Effect::Op(Op::KillBackground { id: id.to_string() })]
            }
            _ => {
                self.notice(Level::Warning, "usage: /ps, or /ps kill <id>");
                Vec::new()
            }
        }
    }

    /// How many run now: the status bar shows it when there are any.
    pub(crate) fn running_background(&self) -> usize {
        self.background.iter().filter(|b| b.is_running()).count()
    }
}

/// The `/ps` text: one line per process, commands made safe for the terminal.
fn listing(processes: &[Background], now: u64) -> String {
    if processes.is_empty() {
        return "no background processes (the model starts one with bash and \
                background: true)"
            .to_string();
    }
    let lines: Vec<String> = processes
        .iter()
        .map(|b| crate::sanitize::visible(&b.line(now)))
        .collect();
    format!(
        "background processes (/ps kill <id> ends one):\n{}",
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::BackgroundState;

    fn bg(id: &str, state: BackgroundState) -> Background {
        Background {
            id: id.into(),
            command: "npm run dev".into(),
            started: 100,
            state,
        }
    }

    #[test]
    fn the_listing_names_each_process_and_says_how_to_end_one() {
        let text = listing(
            &[
                bg("bg1", BackgroundState::Running),
                bg("bg2", BackgroundState::Exited(0)),
            ],
            130,
        );
        assert!(text.contains("bg1  running  30s  npm run dev"), "{text}");
        assert!(text.contains("bg2  exited 0"), "{text}");
        assert!(text.contains("/ps kill"), "{text}");
        assert!(listing(&[], 0).contains("no background processes"));
    }

    #[test]
    fn ps_kill_of_a_known_id_asks_the_core_and_an_unknown_one_is_refused() {
        let mut state = State::new("m", 1000);
        state.background_changed(vec![bg("bg1", BackgroundState::Running)]);
        assert_eq!(state.running_background(), 1);
        let effects = state.ps_command("kill bg1");
        assert!(matches!(
            effects.as_slice(),
            [Effect::Op(Op::KillBackground { id })] if id == "bg1"
        ));
        assert!(state.ps_command("kill bg9").is_empty());
    }
}

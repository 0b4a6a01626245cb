//! `/rewind`: the turns the core can go back before, as one transcript notice, the command
//! that asks for a rewind, and its result (the turn's prompt put back in the input box).
//! The prompt put back is an offer: a slash command typed over it replaces it (see
//! [`State::typed_over_restored`]), so `/exit` after a rewind exits rather than being sent as
//! the end of the old prompt. Minimal by design: a numbered listing and `/rewind <turn> [code|conversation|both]`.

use super::state::{Effect, State};
use super::transcript::Level;
use crate::protocol::rewind::turn_lines;
use crate::protocol::{Event, Op, RewindScope, RewindTurn};

/// The usage line `/rewind` shows.
const USAGE: &str = "usage: /rewind lists turns; /rewind <turn> [code|conversation|both] \
                     (default both) goes back to before that turn";

impl State {
    /// `/rewind [turn [scope]]`.
    pub(crate) fn rewind_command(&mut self, arg: &str) -> Vec<Effect> {
        if self.busy {
            self.notice(Level::Warning, "/rewind waits for an idle session");
            return Vec::new();
        }
        let mut words = arg.split_whitespace();
        let Some(turn) = words.next() else {
            return vec![Effect::Op(Op::ListRewind)];
        };
        let scope = match words.next() {
            None | Some("both") => Some(RewindScope::Both),
            Some("code") => Some(RewindScope::Code),
            Some("conversation") => Some(RewindScope::Conversation),
            Some(_) => None,
        };
        match (turn.parse::<u32>(), scope) {
            (Ok(turn), Some(scope)) if turn > 0 => {
                vec![Effect::Op(Op::Rewind {
                    turn,
                    scope,
                    force: false,
                })]
            }
            _ => {
                self.notice(Level::Warning, USAGE);
                Vec::new()
            }
        }
    }

    pub(crate) fn rewind_event(&mut self, e: Event) {
        match e {
            Event::RewindList { turns, enabled } => {
                self.notice(Level::Info, listing(&turns, enabled));
            }
            Event::Rewound {
                turn,
                restored,
                conflicts,
                overwritten,
                skipped,
                prompt,
                error,
            } => {
                let mut text = format!("rewound to before turn {turn}");
                if !restored.is_empty() {
                    text.push_str(&format!("; restored: {}", restored.join(", ")));
                }
                if !conflicts.is_empty() {
                    text.push_str(&format!(
                        "; left as they are (changed since the agent wrote them): {}",
                        conflicts.join(", ")
                    ));
                }
                if !overwritten.is_empty() {
                    text.push_str(&format!(
                        "; overwritten anyway (their content is in the rewind's own \
                         checkpoint): {}",
                        overwritten.join(", ")
                    ));
                }
                if !skipped.is_empty() {
                    text.push_str(&format!(
                        "; not recorded (too large): {}",
                        skipped.join(", ")
                    ));
                }
                match error {
                    Some(error) => self.notice(Level::Warning, format!("{text}: {error}")),
                    None => self.notice(Level::Info, text),
                }
                if let Some(prompt) = prompt.filter(|_| self.draft.is_empty()) {
                    self.draft.set_text(&prompt);
                    self.restored_prompt = Some(prompt);
                }
            }
            _ => {}
        }
    }
}

impl State {
    /// Called before `text` is typed or pasted into the draft: while the draft still holds,
    /// untouched, the prompt a rewind put back, a slash command typed at its end replaces it
    /// (otherwise `/exit` would be appended and sent to the model as part of the prompt).
    pub(crate) fn typed_over_restored(&mut self, text: &str) {
        let Some(restored) = self.restored_prompt.take() else {
            return;
        };
        if self.draft.text() != restored {
            return;
        }
        if text.starts_with('/') {
            self.draft.clear();
        } else {
            self.restored_prompt = Some(restored);
        }
    }
}

/// The notice for a `RewindList` event, newest turn first.
pub(crate) fn listing(turns: &[RewindTurn], enabled: bool) -> String {
    if !enabled {
        return "checkpoints are off ([checkpoints] enabled = false): nothing to rewind".into();
    }
    if turns.is_empty() {
        return "no turn of this session changed files".into();
    }
    let mut text = String::from("turns that changed files (newest first):");
    for t in turns {
        for (i, line) in turn_lines(t).iter().enumerate() {
            let indent = if i == 0 { "" } else { "   " };
            text.push_str(&format!("\n{indent}{line}"));
        }
    }
    text.push_str(&format!("\n{USAGE}"));
    text
}

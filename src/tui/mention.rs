//! Prompt extras typed in the input box: `@path` completion on Tab (the core lists the
//! workspace's paths with the walk rules of `list`; the file contents are attached by the core
//! on submit) and `!command` (run by the core for the user, its output sent with the next
//! prompt).
//!
//! Part of `update`; no I/O.

use super::state::{Effect, Hint, State};
use super::transcript::Level;
use crate::protocol::Op;

/// Matches a hint line names before "…".
const HINT_MATCHES: usize = 8;

impl State {
    /// The `@` word at the end of the draft, if the draft ends in one (the path being typed).
    fn mention_prefix(&self) -> Option<String> {
        let text = self.draft.text();
        let last = text.rsplit([' ', '\n', '\t']).next()?;
        last.strip_prefix('@').map(str::to_string)
    }

    /// Tab on an `@path` being typed: asks the core for the completions.
    pub(crate) fn mention_tab(&mut self) -> Option<Effect> {
        let prefix = self.mention_prefix()?;
        Some(Effect::Op(Op::CompletePath { prefix }))
    }

    /// The core's completions of `prefix`: applied if the draft still ends in `@prefix`. One
    /// match completes (a file with a space after it); several complete their common part and
    /// are named in the hint line.
    pub(crate) fn path_completions(&mut self, prefix: String, paths: Vec<String>) {
        if self.mention_prefix().as_deref() != Some(prefix.as_str()) {
            return;
        }
        let text = self.draft.text();
        let base = &text[..text.len() - prefix.len()];
        match paths.as_slice() {
            [] => self.hint = Some(Hint::Text(format!("no path starts with {prefix:?}"))),
            [one] => {
                let space = if one.ends_with('/') { "" } else { " " };
                self.draft.set_text(&format!("{base}{one}{space}"));
                self.hint = None;
            }
            many => {
                let common = super::commands::common_prefix(many);
                self.draft.set_text(&format!("{base}{common}"));
                let mut names: Vec<&str> = many
                    .iter()
                    .take(HINT_MATCHES)
                    .map(|p| p.rsplit_once('/').map_or(p.as_str(), |(_, n)| n))
                    .collect();
                if many.len() > HINT_MATCHES {
                    names.push("…");
                }
                self.hint = Some(Hint::Text(names.join("  ")));
            }
        }
    }

    /// `!command`: the core runs it for the user; its output goes with the next prompt.
    pub(crate) fn shell_command(&mut self, line: &str) -> Vec<Effect> {
        let command = line.trim_start_matches('!').trim();
        if command.is_empty() {
            self.notice(
                Level::Warning,
                "usage: !command (runs it here; its output goes with your next prompt)",
            );
            return Vec::new();
        }
        if self.busy {
            self.notice(Level::Warning, "!command waits for an idle session");
            self.draft.set_text(line);
            return Vec::new();
        }
        self.header_live = false;
        self.hint = Some(Hint::Text(
            "its output goes with your next prompt".to_string(),
        ));
        vec![Effect::Op(Op::Shell {
            command: command.to_string(),
        })]
    }
}

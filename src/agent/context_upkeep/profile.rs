//! The model profile a session runs with (`provider::profiles`): chosen once, before the first
//! main request (after the probe, so a probed window counts), from the configuration, the
//! table of model profiles and the window then in use. The small profile hides the optional
//! tools, declares the others briefly (`tools::lean`) and swaps in the short system prompt.
//! It is never chosen again in the session, so every later request extends the first byte
//! for byte (a window learned later does not change what the model was shown), with one
//! exception the user asks for: a prompt that names a tool the small profile left out ("use the
//! `find` tool") gets it offered from then on.

use super::Upkeep;
use crate::chat::{Message, Role};
use crate::provider::profiles::{Profile, Settings};
use crate::tools::lean::Lean;

/// What the choice is made from, and its outcome once made.
pub(crate) struct ProfileChoice {
    settings: Settings,
    /// The short system prompt; `None`: this core keeps its prompt and tools whatever the
    /// window (a sub-agent, a session without tools).
    small_prompt: Option<String>,
    chosen: Option<Profile>,
}

impl ProfileChoice {
    pub(crate) fn new(settings: Settings, small_prompt: Option<String>) -> Self {
        Self {
            settings,
            small_prompt,
            chosen: None,
        }
    }
}

impl Upkeep {
    /// Whether the small profile is in force.
    pub(crate) fn is_small(&self) -> bool {
        self.profile.chosen == Some(Profile::Small)
    }

    /// Chooses the profile unless it was chosen already; the small one takes effect at once.
    /// In the small profile, a tool it leaves out that the user's latest prompt names is
    /// offered from now on.
    pub(crate) fn settle_profile(&mut self, messages: &[Message]) {
        if self.profile.chosen.is_some() {
            if self.is_small() {
                self.offer_named(messages);
            }
            return;
        }
        let Some(small_prompt) = self.profile.small_prompt.take() else {
            self.profile.chosen = Some(Profile::Full);
            return;
        };
        let profile = self.profile.settings.decide(
            self.provider.model(),
            self.provider.server_kind(),
            self.budget.window,
        );
        self.profile.chosen = Some(profile);
        tracing::info!(
            profile = profile.name(),
            window = self.budget.window,
            "model profile"
        );
        if profile == Profile::Small {
            self.offer_named(messages);
            self.registry
                .set_lean(Some(Lean::hiding(self.profile.settings.hidden())));
            self.context.set_system_prompt(small_prompt);
        }
    }

    /// Adds to the offered tools those left out that the latest user prompt names, and puts
    /// the new view in force when one was added (the tool list changes only then).
    fn offer_named(&mut self, messages: &[Message]) {
        let Some(prompt) = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !m.is_notice())
        else {
            return;
        };
        let named: Vec<String> = self
            .profile
            .settings
            .hidden()
            .into_iter()
            .filter(|tool| names_tool(prompt.text(), tool))
            .collect();
        if named.is_empty() {
            return;
        }
        tracing::info!(tools = ?named, "the prompt names tools the small profile left out");
        self.profile.settings.tools.extend(named);
        if self.profile.chosen.is_some() {
            self.registry
                .set_lean(Some(Lean::hiding(self.profile.settings.hidden())));
        }
    }
}

/// Whether `prompt` asks for the tool `name` by name: `` `name` `` or "name tool" (any case).
/// A bare word is not enough, since tool names are common verbs ("find the bug").
fn names_tool(prompt: &str, name: &str) -> bool {
    let prompt = prompt.to_lowercase();
    prompt.contains(&format!("`{name}`")) || prompt.contains(&format!("{name} tool"))
}

#[cfg(test)]
mod tests {
    use super::names_tool;

    #[test]
    fn a_tool_is_named_in_backticks_or_as_a_tool_not_as_a_bare_verb() {
        assert!(names_tool("Use the find tool to locate it.", "find"));
        assert!(names_tool("try `find` first", "find"));
        assert!(names_tool("Use the FIND TOOL", "find"));
        assert!(!names_tool("Find the bug in main.rs", "find"));
        assert!(!names_tool("delegate this to someone", "delegate"));
    }
}

//! The model profile a session runs with (`provider::profiles`): chosen once, before the first
//! main request (after the probe, so a probed window counts), from the configuration, the
//! table of model profiles and the window then in use. The small profile hides the optional
//! tools, declares the others briefly (`tools::lean`) and swaps in the short system prompt.
//! It is never chosen again in the session, so every later request extends the first byte
//! for byte (a window learned later does not change what the model was shown).

use super::Upkeep;
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
    /// Chooses the profile unless it was chosen already; the small one takes effect at once.
    pub(crate) fn settle_profile(&mut self) {
        if self.profile.chosen.is_some() {
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
            self.registry
                .set_lean(Some(Lean::hiding(self.profile.settings.hidden())));
            self.context.set_system_prompt(small_prompt);
        }
    }
}

//! What a turn has done so far, kept for the reminders a small model may get before the turn
//! ends: when it began, whether it looked at anything, changed anything, which identifiers it
//! renamed, and the read-only calls it made since the last change. The turn loop notes each batch here and asks, when a reply
//! would end the turn, for the one reminder due (at most one per turn: the loop keeps count).

use std::time::SystemTime;

use super::{Repeats, claimed, renamed};
use crate::agent::Core;
use crate::chat::{Builtin, ToolCall, ToolSpec};

/// A turn's progress, as far as the reminders need it.
#[derive(Debug)]
pub(in crate::agent) struct Progress {
    /// When the turn began: a file not modified since was not changed by it.
    since: SystemTime,
    /// A tool may have run in this turn (a reply after one has looked at something).
    looked: bool,
    /// An edit or a command succeeded (see `small::change_first`).
    changed: bool,
    /// The old names of identifiers renamed with `edit` (see `small/renamed.rs`).
    renames: Vec<String>,
    /// Read-only calls made since the last change (see `small/repeat.rs`).
    pub(in crate::agent) repeats: Repeats,
}

impl Progress {
    /// A turn's progress at its start; `resumed` when it goes on from earlier rounds (which
    /// may have looked at something).
    pub(in crate::agent) fn new(resumed: bool) -> Progress {
        Progress {
            since: SystemTime::now(),
            looked: resumed,
            changed: false,
            renames: Vec::new(),
            repeats: Repeats::default(),
        }
    }

    /// Notes a batch of `calls` that ran (their results are the session's last messages).
    pub(in crate::agent) fn ran(&mut self, core: &Core, calls: &[ToolCall]) {
        super::ran(core, calls, &mut self.repeats);
        self.looked = true;
        self.changed = self.changed || super::changed_something(core, calls);
        if !core.upkeep.is_small() {
            return;
        }
        let edits = super::succeeded(core, calls).filter(|c| c.name == Builtin::Edit.name());
        self.renames
            .extend(edits.filter_map(|c| renamed::renamed_identifier(&c.arguments)));
    }

    /// The reminder due before a reply with no call (`text`; `unknown`: names of call-shaped
    /// text that named no offered tool) ends the turn, with what the user is told; `None`
    /// when the turn may end. In order: an announced call, an unlooked answer, a change only
    /// described, a change claimed but not made, a rename left half done.
    pub(in crate::agent) fn reminder(
        &self,
        core: &Core,
        text: &str,
        unknown: &[String],
        specs: &[ToolSpec],
    ) -> Option<(&'static str, String)> {
        if let Some(text) = super::nudge(text, unknown, specs) {
            return Some(("the model announced a tool call without making it", text));
        }
        if !self.looked
            && let Some(text) = super::look_first(core, text, specs)
        {
            return Some(("the model answered without looking at the workspace", text));
        }
        if !self.changed
            && let Some(text) = super::change_first(core, text, specs)
        {
            return Some(("the model described a change without making it", text));
        }
        // Only a prompt that orders a change is checked: asked a question, the 1.5B model
        // answered "I updated the file …" and the reminder sent it to edit a file it was
        // only asked about.
        let ordered = || {
            super::last_prompt(core).is_some_and(|p| super::unchanged::asks_for_change(p.text()))
        };
        if core.upkeep.is_small() && ordered() {
            let unmade = claimed::unmade(text, &core.tool_ctx.workspace, self.since);
            if let Some(text) = claimed::reminder(&unmade) {
                return Some(("the model's answer claims a change no tool call made", text));
            }
        }
        if core.upkeep.is_small() && !self.renames.is_empty() {
            let seen = core.tool_ctx.seen_paths();
            let left = renamed::left_behind(&core.tool_ctx.workspace, &seen, &self.renames);
            if let Some(text) = renamed::reminder(&left) {
                let why =
                    "the model renamed an identifier but files it read still hold the old name";
                return Some((why, text));
            }
        }
        None
    }
}

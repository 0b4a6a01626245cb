//! `/permissions` in the full-screen session: the rules in force with the file each came from,
//! and `/permissions save`, which keeps the rule an "always" answer suggested as an allow rule
//! in the user's config. Typing the command is the user's confirmation: an "always" alone only
//! lasts the session, and a key typed ahead can never write the config.
//!
//! It knows nothing of the configuration: the CLI hands it the listing and how a rule is saved
//! ([`Rulebook`]); the rule an "always" adds comes from the core with the approval request.

use std::sync::Arc;

use super::state::State;
use super::transcript::Level;

/// How a rule is saved: the file written, or why not.
pub(crate) type SaveRule = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// What the CLI gives the session about permission rules.
pub struct Rulebook {
    /// The rules in force, one line each (`deny bash(rm *) (from <file>)`).
    pub listing: Vec<String>,
    pub save: SaveRule,
}

/// The session's view of the rules: the book, and the rule the last "always" offered.
#[derive(Default)]
pub struct Permissions {
    book: Option<Rulebook>,
    offer: Option<String>,
    /// Rules saved during this session, listed after the book's.
    saved: Vec<String>,
}

impl Permissions {
    pub fn new(book: Rulebook) -> Self {
        Self {
            book: Some(book),
            offer: None,
            saved: Vec::new(),
        }
    }
}

impl State {
    /// After an "always": says what it allows for the session and offers its rule (the one
    /// the core added) for `/permissions save`.
    pub(crate) fn offer_rule(&mut self, rule: String) {
        let label = crate::protocol::always_label(&rule);
        let save = if self.permissions.book.is_some() {
            format!(
                "; /permissions save keeps `{rule}` as an allow rule in your user config for \
                 later sessions"
            )
        } else {
            String::new()
        };
        self.notice(
            Level::Info,
            format!("`{label}` is allowed for this session{save}"),
        );
        if self.permissions.book.is_some() {
            self.permissions.offer = Some(rule);
        }
    }

    /// `/permissions` (list) and `/permissions save`.
    pub(crate) fn permissions_command(&mut self, arg: &str) {
        if self.permissions.book.is_none() {
            self.notice(
                Level::Warning,
                "/permissions is not available here (the rules are the daemon's)",
            );
            return;
        }
        match arg {
            "" => {
                let p = &self.permissions;
                let mut lines: Vec<String> =
                    p.book.iter().flat_map(|b| b.listing.clone()).collect();
                lines.extend(p.saved.iter().cloned());
                let text = if lines.is_empty() {
                    "no permission rules: add [permissions] allow, ask or deny to your config \
                     (see docs/configuration.md)"
                        .to_string()
                } else {
                    format!(
                        "permission rules (deny beats ask beats allow):\n{}",
                        lines.join("\n")
                    )
                };
                self.notice(Level::Info, text);
            }
            "save" => self.save_offer(),
            _ => self.notice(Level::Warning, "usage: /permissions, or /permissions save"),
        }
    }

    fn save_offer(&mut self) {
        let (Some(book), Some(rule)) = (&self.permissions.book, self.permissions.offer.clone())
        else {
            self.notice(
                Level::Warning,
                "nothing to save: answer an approval with `a` (always) first",
            );
            return;
        };
        match (book.save)(&rule) {
            Ok(file) => {
                self.permissions
                    .saved
                    .push(format!("allow {rule} (from {file})"));
                self.permissions.offer = None;
                self.notice(Level::Info, format!("saved `{rule}` to {file}"));
            }
            Err(e) => self.notice(Level::Error, format!("could not save `{rule}`: {e}")),
        }
    }
}

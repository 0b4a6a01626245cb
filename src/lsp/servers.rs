//! The session's language servers: at most one per language, started on the first `write` or
//! `edit` of a file in it, asked after each such change, and shut down when the session ends.
//! A server that is missing, cannot start, stops or does not answer in time costs one note
//! per language and session, appended to that call's result; then its language is left alone
//! (a slow one keeps running and is asked again). Files of no known language cost nothing.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::Settings;
use super::language::Language;
use crate::sandbox::Policy;
use crate::tools::ToolCtx;

/// One language's server (without the `lsp` feature there is never one).
#[cfg_attr(not(feature = "lsp"), allow(dead_code))]
enum Slot {
    #[cfg(feature = "lsp")]
    Running(Box<super::client::Client>),
    /// None found, or it failed: not asked again this session.
    Gone,
}

/// The session's servers, by language.
pub struct Servers {
    settings: Settings,
    slots: HashMap<Language, Slot>,
    /// The languages a note was already given for.
    noted: HashSet<Language>,
}

impl Servers {
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            slots: HashMap::new(),
            noted: HashSet::new(),
        }
    }

    /// After a successful `write` or `edit` of `path` (absolute, inside the workspace): what
    /// to append to the call's result, `None` when the server found nothing new (or there is
    /// no server). A server this starts runs under `policy` (the core's sandbox part's).
    pub async fn after_edit(
        &mut self,
        path: &Path,
        ctx: &ToolCtx,
        policy: &Policy,
    ) -> Option<String> {
        if !self.settings.enabled {
            return None;
        }
        let language = Language::of(path)?;
        if matches!(self.slots.get(&language), Some(Slot::Gone)) {
            return None;
        }
        self.ask(language, path, (ctx, policy)).await
    }

    #[cfg(not(feature = "lsp"))]
    async fn ask(&mut self, _: Language, _: &Path, _: (&ToolCtx, &Policy)) -> Option<String> {
        None
    }

    #[cfg(feature = "lsp")]
    async fn ask(
        &mut self,
        language: Language,
        path: &Path,
        (ctx, policy): (&ToolCtx, &Policy),
    ) -> Option<String> {
        use super::client::{Client, Problem};
        let started = tokio::time::Instant::now();
        let deadline = if self.slots.contains_key(&language) {
            started + self.settings.timeout
        } else {
            let configured = self.settings.servers.get(language.key());
            let path_var = std::env::var_os("PATH");
            let choice =
                super::language::choose(language, configured, &ctx.workspace, path_var.as_deref());
            let Some(choice) = choice else {
                self.slots.insert(language, Slot::Gone);
                return None;
            };
            match Client::start(&choice.command, ctx, policy) {
                Ok(client) => {
                    self.slots.insert(language, Slot::Running(Box::new(client)));
                }
                Err(e) => {
                    self.slots.insert(language, Slot::Gone);
                    let what = format!("`{}` {e}", choice.command.command);
                    return self.note(language, &what, true);
                }
            }
            started + self.settings.start_timeout
        };
        let text = read_text(path, ctx)?;
        let Some(Slot::Running(client)) = self.slots.get_mut(&language) else {
            return None;
        };
        let checked = client
            .check(path, language.id_of(path), text, deadline)
            .await;
        tracing::debug!(
            language = language.key(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            ok = checked.is_ok(),
            "language server diagnostics"
        );
        match checked {
            Ok((before, after)) => {
                let fresh = super::report::fresh(&before, &after, self.settings.warnings);
                let display = crate::fsutil::display_path(&ctx.workspace, path);
                super::report::render(&display, language.key(), &fresh, self.settings.max_errors)
            }
            Err(Problem::Slow) => {
                let waited = deadline.saturating_duration_since(started);
                let what = format!(
                    "did not report diagnostics within {} ms",
                    waited.as_millis()
                );
                self.note(language, &what, false)
            }
            Err(Problem::Stopped(why)) => {
                if let Some(Slot::Running(client)) = self.slots.insert(language, Slot::Gone) {
                    tokio::spawn(client.shut_down());
                }
                self.note(language, &why, true)
            }
        }
    }

    /// The note for `language`'s server, the first time only.
    #[cfg(feature = "lsp")]
    fn note(&mut self, language: Language, what: &str, gone: bool) -> Option<String> {
        tracing::warn!(language = language.key(), problem = what, "language server");
        if !self.noted.insert(language) {
            return None;
        }
        let after = if gone {
            "no diagnostics for these files this session"
        } else {
            "the change itself is done"
        };
        Some(format!(
            "\n\n[note: the {} language server {what}; {after}]",
            language.key()
        ))
    }

    /// Shuts every server down (asked to exit, then killed): the session ends.
    pub async fn shut_down(&mut self) {
        let slots = std::mem::take(&mut self.slots);
        self.noted.clear();
        #[cfg(feature = "lsp")]
        {
            let running = slots.into_values().filter_map(|slot| match slot {
                Slot::Running(client) => Some(client.shut_down()),
                Slot::Gone => None,
            });
            futures_util::future::join_all(running).await;
        }
        #[cfg(not(feature = "lsp"))]
        drop(slots);
    }

    /// How many servers run now (doctor, tests).
    #[cfg(test)]
    fn running(&self) -> usize {
        self.slots
            .values()
            .filter(|s| !matches!(s, Slot::Gone))
            .count()
    }
}

/// The file's new text: an editor's buffer over ACP when the tools work through one, the
/// disk otherwise. `None` (unreadable, not UTF-8): nothing is asked.
#[cfg(feature = "lsp")]
fn read_text(path: &Path, ctx: &ToolCtx) -> Option<String> {
    if ctx.files.is_some()
        && let Some(text) = ctx.recall_text(path)
    {
        return Some(text.to_string());
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_of_no_language_and_a_disabled_part_ask_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(
            dir.path().to_path_buf(),
            std::time::Duration::from_secs(5),
            vec![],
        );
        let mut servers = Servers::new(Settings::default());
        let file = dir.path().join("notes.md");
        std::fs::write(&file, "# hi").unwrap();
        let policy = Policy::unconfined();
        assert_eq!(servers.after_edit(&file, &ctx, &policy).await, None);
        assert_eq!(servers.running(), 0);
        let mut off = Servers::new(Settings {
            enabled: false,
            ..Settings::default()
        });
        let py = dir.path().join("a.py");
        assert_eq!(off.after_edit(&py, &ctx, &policy).await, None);
        assert_eq!(off.running(), 0);
    }
}

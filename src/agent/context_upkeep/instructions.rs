//! The instruction files (`MiniCode.md`, `AGENTS.md`) in the model context. They are read
//! into the memory message sent after the system prompt at session start, after each
//! compaction and on `/clear`; between those, an edit is announced in a notice appended to
//! history (`agent::notice`), so every request extends the one before it byte for byte and a
//! local server's prompt cache keeps serving the prefix.

use super::Upkeep;
use crate::chat::Message;
use crate::protocol::Event;

impl Upkeep {
    /// Reads the instruction files into the memory message, whatever their stamps (session
    /// start, compaction, `/clear`). An error clears the memory (never stale content) and is
    /// returned for the caller to fail with. Announces each file of a changed memory. The
    /// outcome is remembered with the files' stamps for [`Upkeep::memory_notice`].
    pub(crate) fn reload_memory(&mut self) -> Result<(), String> {
        // Stat before reading: a change racing the read leaves a stale stamp, so the next
        // check reads again rather than missing it.
        let stamps = self.memory_sources.stamps();
        let outcome = match self.memory_sources.load() {
            Ok(loaded) => {
                let message = loaded.message();
                if self.context.memory_message().map(Message::text)
                    != message.as_ref().map(Message::text)
                {
                    self.context.set_memory_message(message);
                    self.announce_files(&loaded);
                }
                self.memory_known = self.context.memory_message().map(|m| m.text().to_string());
                Ok(())
            }
            Err(e) => {
                self.context.set_memory(None);
                self.memory_known = None;
                Err(e.to_string())
            }
        };
        self.memory_seen = Some((stamps, outcome.clone()));
        outcome
    }

    /// Before the user's prompt and before every main request: re-reads the instruction files
    /// only if a stat shows one touched since the last read (by a tool, a bash command or the
    /// user). When their content differs from what the model was last given, returns the
    /// notice text carrying it; the memory message itself is left as sent. An untouched file
    /// that was invalid is still an error.
    pub(crate) fn memory_notice(&mut self) -> Result<Option<String>, String> {
        if let Some((seen, outcome)) = &self.memory_seen {
            let now = self.memory_sources.stamps();
            if now.len() == seen.len() && now.iter().zip(seen).all(|(a, b)| a.unchanged_since(b)) {
                return outcome.clone().map(|()| None);
            }
        }
        let stamps = self.memory_sources.stamps();
        let loaded = match self.memory_sources.load() {
            Ok(loaded) => loaded,
            Err(e) => {
                self.memory_seen = Some((stamps, Err(e.to_string())));
                return Err(e.to_string());
            }
        };
        self.memory_seen = Some((stamps, Ok(())));
        let text = loaded.message().map(|m| m.text().to_string());
        if text == self.memory_known {
            return Ok(None);
        }
        self.memory_known = text.clone();
        self.announce_files(&loaded);
        Ok(Some(match text {
            Some(text) => format!(
                "The project's instruction files changed. This is their content now; it \
                 replaces the project memory given earlier in this conversation:\n\n{text}"
            ),
            None => "The project's instruction files were removed or emptied: the project \
                     memory given earlier in this conversation no longer applies."
                .to_string(),
        }))
    }

    fn announce_files(&self, loaded: &crate::memory::Loaded) {
        for file in &loaded.files {
            self.events.emit(Event::MemoryLoaded {
                path: file.path.display().to_string(),
                tokens: file.tokens,
            });
        }
    }
}

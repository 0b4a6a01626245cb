//! How one model has fared with what small models most often get wrong, counted across runs:
//! which `edit` tier its edits needed, how many of its edits failed, how many streamed replies
//! came with broken tool-call arguments and had to be asked for again, how many calls it wrote
//! as text (recovered), how often it was nudged and how many of its edits touched unread files. The agent counts
//! ([`super::Provider::count`]), the server cache keeps the numbers beside the learned quirks
//! (`probe/cache.rs`), and `minicode doctor` shows them. Nothing here decides anything.

use serde::{Deserialize, Serialize};

/// One thing worth counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// An edit that landed, with the tier that found its text.
    EditExact,
    EditTrailingWhitespace,
    EditIndentation,
    EditPunctuation,
    EditWords,
    /// An edit that failed (its text not found or not unique, or refused otherwise).
    EditFailed,
    /// A streamed reply whose tool-call arguments were not valid JSON, asked again without
    /// streaming.
    StreamFallback,
    /// A tool call the model wrote as text, recovered and run.
    RecoveredCall,
    /// A turn that would have ended on an announced (or mis-named) call, nudged once.
    Nudge,
    /// An `edit` refused because its file had not been read in the session.
    UnreadEdit,
}

/// The running totals for one server and model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tally {
    pub edits_exact: u64,
    pub edits_trailing_whitespace: u64,
    pub edits_indentation: u64,
    pub edits_punctuation: u64,
    pub edits_words: u64,
    pub edit_failures: u64,
    pub stream_fallbacks: u64,
    pub recovered_calls: u64,
    pub nudges: u64,
    pub unread_edits: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, what: Count) {
        let field = match what {
            Count::EditExact => &mut self.edits_exact,
            Count::EditTrailingWhitespace => &mut self.edits_trailing_whitespace,
            Count::EditIndentation => &mut self.edits_indentation,
            Count::EditPunctuation => &mut self.edits_punctuation,
            Count::EditWords => &mut self.edits_words,
            Count::EditFailed => &mut self.edit_failures,
            Count::StreamFallback => &mut self.stream_fallbacks,
            Count::RecoveredCall => &mut self.recovered_calls,
            Count::Nudge => &mut self.nudges,
            Count::UnreadEdit => &mut self.unread_edits,
        };
        *field = field.saturating_add(1);
    }

    /// Edits that landed, at any tier.
    pub fn edits_landed(&self) -> u64 {
        self.edits_exact
            + self.edits_trailing_whitespace
            + self.edits_indentation
            + self.edits_punctuation
            + self.edits_words
    }

    /// One line for a person: `12 edits: 9 exact, 2 trailing whitespace, 1 indentation, 0
    /// punctuation; 3 failed; 1 stream fallback`, then what small models needed, when any.
    pub fn describe(&self) -> String {
        let mut line = self.describe_edits();
        if self.recovered_calls + self.nudges + self.unread_edits > 0 {
            line.push_str(&format!(
                "; {} tool call{} recovered from text, {} nudge{}, {} edit{} of unread files \
                 refused",
                self.recovered_calls,
                if self.recovered_calls == 1 { "" } else { "s" },
                self.nudges,
                if self.nudges == 1 { "" } else { "s" },
                self.unread_edits,
                if self.unread_edits == 1 { "" } else { "s" },
            ));
        }
        line
    }

    fn describe_edits(&self) -> String {
        let landed = self.edits_landed();
        // Word-for-word matches are named only when there were any, so a tally without them
        // reads as it always did.
        let words = match self.edits_words {
            0 => String::new(),
            n => format!(", {n} word for word"),
        };
        format!(
            "{landed} edit{} landed: {} exact, {} ignoring trailing whitespace, {} ignoring \
             indentation, {} with punctuation normalised{words}; {} failed; {} streamed repl{} with \
             broken tool arguments asked again",
            if landed == 1 { "" } else { "s" },
            self.edits_exact,
            self.edits_trailing_whitespace,
            self.edits_indentation,
            self.edits_punctuation,
            self.edit_failures,
            self.stream_fallbacks,
            if self.stream_fallbacks == 1 {
                "y"
            } else {
                "ies"
            },
        )
    }

    pub fn is_empty(&self) -> bool {
        *self == Tally::default()
    }
}

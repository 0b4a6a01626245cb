//! What the core counts per model for `minicode doctor` (see `provider::tally`): each `edit`
//! result, by the tier that found its text or as a failure. It only reads results; it never
//! changes what the model or the user sees.

use crate::chat::{ToolCall, ToolStatus};
use crate::protocol::TurnStats;
use crate::provider::Provider;
use crate::provider::tally::Count;
use crate::tools::ToolOutput;
use crate::tools::edit::{NOT_READ, Tier};

/// Counts the result of a call to the built-in `edit` (other tools are not counted). A denial
/// or an interrupt says nothing about the model, so only landed and failed edits count; an
/// edit refused because its file was never read is counted apart too, per model and in `stats`.
pub(super) fn edit_result(
    provider: &dyn Provider,
    call: &ToolCall,
    output: &ToolOutput,
    stats: &mut TurnStats,
) {
    if crate::chat::Builtin::of(&call.name) != Some(crate::chat::Builtin::Edit) {
        return;
    }
    if output.status == ToolStatus::Rejected && output.content.contains(NOT_READ) {
        stats.unread_edits += 1;
        provider.count(Count::UnreadEdit);
    }
    let count = match (output.status, output.matched) {
        (ToolStatus::Succeeded, Some(tier)) => match tier {
            Tier::Exact => Count::EditExact,
            Tier::TrailingWhitespace => Count::EditTrailingWhitespace,
            Tier::Indentation => Count::EditIndentation,
            Tier::Punctuation => Count::EditPunctuation,
            Tier::Words => Count::EditWords,
        },
        (ToolStatus::Failed | ToolStatus::Rejected, _) => Count::EditFailed,
        _ => return,
    };
    provider.count(count);
}

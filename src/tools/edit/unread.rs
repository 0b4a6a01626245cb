//! What `edit` answers when the model edits a file it has not read in this session. The
//! refusal stands (a file is seen before it is changed), but it carries the file's current
//! content, numbered as `read` shows it, and that counts as the read: small models answer a
//! bare "read it first" by editing blind again, while with the text in front of them the next
//! edit can land. It never writes; a file `read` would not show gets the bare refusal.

use std::path::Path;

use super::super::{Fingerprint, ToolCtx, read};
use super::NOT_READ;

/// Lines of the file a refusal shows at most (the end says how to read on).
const SHOWN_LINES: u64 = 400;
/// Bytes of the file a refusal shows at most.
const SHOWN_BYTES: usize = 16 * 1024;

/// What the refused edit asked to replace.
pub(super) struct Wanted<'a> {
    pub(super) old: &'a str,
    pub(super) all: bool,
}

/// The refusal of an edit of `path` (content `bytes`, fingerprint `current`), which the model
/// has not read; when it shows the content, the file counts as read from now on.
pub(super) fn refusal(
    display: &str,
    path: &Path,
    bytes: &[u8],
    current: Fingerprint,
    wanted: Wanted,
    ctx: &ToolCtx,
) -> String {
    let bare = format!("cannot edit {display}: {NOT_READ}");
    // Through an editor the text read is kept apart; a denied or memory file keeps `read`'s
    // own checks.
    if ctx.files.is_some()
        || ctx.read_denied(path).is_some()
        || crate::memory::is_detail_file(&ctx.workspace, path)
    {
        return bare;
    }
    let max_bytes = SHOWN_BYTES.min(ctx.output_limit());
    let Some(shown) = read::numbered(bytes, display, SHOWN_LINES, max_bytes, &ctx.secrets) else {
        return bare;
    };
    ctx.remember(path, current);
    format!(
        "{bare}. Nothing was changed. Its current content follows, and it now counts as read: \
         {}\n{shown}",
        next_step(bytes, &wanted)
    )
}

/// What the model should do next. Qwen2.5-Coder 1.5B, refused three right edits of a rename,
/// read "copy old_string from these lines" as the end of the task; when its old text is in
/// the file as the edit needs it (once, or at all with `replace_all`), the step is plainer.
fn next_step(bytes: &[u8], wanted: &Wanted) -> String {
    let found = match std::str::from_utf8(bytes) {
        Ok(text) if !wanted.old.is_empty() => text.matches(wanted.old).count(),
        _ => 0,
    };
    match (found, wanted.all) {
        (1, _) => "your old_string is in it once, so the same edit applies now: send the same \
                   edit call again."
            .to_string(),
        (n, true) if n > 1 => format!(
            "your old_string is in it {n} times and replace_all is set, so the same edit \
             applies now: send the same edit call again."
        ),
        _ => "call edit again with old_string copied exactly from these lines (without the \
              line numbers)."
            .to_string(),
    }
}

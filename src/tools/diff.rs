//! Unified diffs of text, for the approvals of `write` and `edit` (what the user must see before
//! a file changes) and for `edit` results (what the model reads back). Pure: no I/O here.

use std::time::Duration;

use similar::TextDiff;

/// How long the diff algorithm may search for a minimal diff before settling for a coarser
/// (still correct) one, so a huge rewrite cannot stall an approval.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// A unified diff (3 lines of context) from `old` to `new`, labelled with `path`.
/// `old = None` means the file does not exist yet: the old side is `/dev/null` and every line
/// is added. Identical texts give an empty string.
pub(crate) fn unified(path: &str, old: Option<&str>, new: &str) -> String {
    let old_label = match old {
        Some(_) => format!("a/{path}"),
        None => "/dev/null".to_string(),
    };
    let new_label = format!("b/{path}");
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old.unwrap_or(""), new);
    if diff
        .ops()
        .iter()
        .all(|op| matches!(op, similar::DiffOp::Equal { .. }))
    {
        return String::new();
    }
    diff.unified_diff()
        .context_radius(3)
        .header(&old_label, &new_label)
        .to_string()
}

/// Shortens `diff` to at most `max_lines` lines and `max_bytes` bytes, ending with a note of
/// how many lines were left out, so a large change cannot flood the model's context or the
/// approval prompt.
pub(crate) fn cap(diff: &str, max_lines: usize, max_bytes: usize) -> String {
    let total_lines = diff.lines().count();
    let mut out = String::new();
    let mut kept = 0;
    for line in diff.split_inclusive('\n') {
        if kept == max_lines || out.len() + line.len() > max_bytes {
            break;
        }
        out.push_str(line);
        kept += 1;
    }
    if kept < total_lines {
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "[... diff cut: {} more lines not shown ...]\n",
            total_lines - kept
        ));
    }
    out
}

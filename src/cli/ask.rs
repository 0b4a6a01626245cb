//! One yes/no question on the controlling terminal, for what is approved before a session
//! starts (a `.mcp.json` server, a workspace's hook); the terminal itself is the one-shot
//! printer's (`print::ask_line`), which discards typed-ahead input first.

use crate::sanitize::sanitize;

/// Asks `question`, then "`action`? [y]es (remembered …) / [n]o". `None` when there is no
/// terminal to ask on.
pub(super) fn remembered_yes(question: &str, action: &str) -> Option<bool> {
    let line = crate::print::ask_line(&format!(
        "{}\n{action}? [y]es (remembered until its definition changes) / [n]o: ",
        sanitize(question)
    ))?;
    Some(matches!(line.trim().to_lowercase().as_str(), "y" | "yes"))
}

//! One yes/no question on the controlling terminal, for what is approved before a session
//! starts (a `.mcp.json` server, a workspace's hook). Typed-ahead input is discarded first, so
//! only an answer to this very question counts.

use std::io::{BufRead, Write};

use crate::sanitize::sanitize;

/// Asks `question`, then "`action`? [y]es (remembered …) / [n]o". `None` when there is no
/// terminal to ask on.
pub(super) fn remembered_yes(question: &str, action: &str) -> Option<bool> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    // A failure (not a terminal after all) leaves nothing to discard.
    let _ = nix::sys::termios::tcflush(&tty, nix::sys::termios::FlushArg::TCIFLUSH);
    let mut writer = tty.try_clone().ok()?;
    let _ = write!(
        writer,
        "{}\n{action}? [y]es (remembered until its definition changes) / [n]o: ",
        sanitize(question)
    );
    let _ = writer.flush();
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(matches!(line.trim().to_lowercase().as_str(), "y" | "yes"))
}

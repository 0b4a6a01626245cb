//! Text hygiene for anything shown on a terminal: text from a model, a tool, a server or a
//! repository file is made inert here before any frontend writes it. Shared by the one-shot
//! printer, the full-screen UI and the CLI's own messages; it knows nothing about either.

/// Columns a tab expands to (tabs have no width of their own in a cell grid).
pub const TAB: &str = "    ";

/// Replaces every control character except `\n` with something inert, so text from a model or
/// a tool can never move the cursor, switch screens or set the clipboard. ESC becomes a visible
/// `␛`; `\t` becomes spaces; `\r` is dropped (CRLF is the common case).
pub fn sanitize(text: &str) -> String {
    if !text.chars().any(needs_sanitizing) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str(TAB),
            '\r' => {}
            '\u{1b}' => out.push('␛'),
            c if is_control(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn needs_sanitizing(c: char) -> bool {
    c != '\n' && is_control(c)
}

/// C0, DEL and C1 controls (C1 includes the 8-bit CSI `\u{9b}`).
pub fn is_control(c: char) -> bool {
    let n = c as u32;
    n < 0x20 || (0x7f..=0x9f).contains(&n)
}

/// `text` on one line with every control character shown as an escape (`\u{1b}`, `\n`), for
/// names and paths that come from files (a session's first prompt, a config key): the user
/// sees exactly what is there, and nothing in it can act on the terminal.
pub fn visible(text: &str) -> String {
    if !text.chars().any(is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_control(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

//! `\r` rewrites collapsed: a progress bar redraws its line with `\r`, so a terminal keeps only
//! its last state, while a transcript or a model reading the raw text sees every state. One
//! function for both the result the model reads (the `bash` tool) and the result a frontend
//! shows; the saved full output keeps the raw bytes. Pure text, no terminal knowledge.

use std::borrow::Cow;

/// Each line as a terminal leaves it after `\r` rewrites: the text after its last `\r`. A
/// `\r` at the end of a line is a line end, not a rewrite: kept once before `\n` (CRLF), and
/// dropped at the end of the text (a bar that never printed its newline keeps its last state).
pub(crate) fn collapse_rewrites(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(64 * 1024));
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let body = line.trim_end_matches('\r');
        out.push_str(body.rsplit('\r').next().unwrap_or(body));
        if lines.peek().is_some() {
            if body.len() < line.len() {
                out.push('\r');
            }
            out.push('\n');
        }
    }
    Cow::Owned(out)
}

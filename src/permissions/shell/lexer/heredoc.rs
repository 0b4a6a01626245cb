//! The lexer's here-documents: the bodies pending after a line's newline, skipped up to
//! their delimiter. A body whose delimiter was unquoted is expanded by bash, so one holding
//! `$(…)` or backquotes marks the script unknown.

use super::Lexer;

impl Lexer<'_> {
    /// Reads the bodies of the pending here-documents, which start at the cursor.
    pub(super) fn here_documents(&mut self) {
        for doc in std::mem::take(&mut self.pending) {
            loop {
                if self.i >= self.chars.len() {
                    break;
                }
                let line = self.body_line(doc.literal);
                let check = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if check == doc.delimiter {
                    break;
                }
                if !doc.literal && (line.contains('`') || line.contains("$(")) {
                    self.script.unsure("a here-document that runs commands");
                }
            }
        }
    }

    /// One line of a here-document body, the cursor moved past its newline; in a body that is
    /// not literal, a backslash before the newline joins the next line.
    pub(super) fn body_line(&mut self, literal: bool) -> String {
        let mut line = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            if c != '\n' {
                line.push(c);
                continue;
            }
            let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
            if literal || trailing % 2 == 0 {
                break;
            }
            line.pop();
        }
        line
    }
}

//! The lexer's expansions: what follows a `$` (`$'…'`, `$"…"`, `$(…)`, `$((…))`, `${…}`,
//! `$[…]`), backquotes and arithmetic commands. Substitutions are lexed in place, so their
//! commands are reported; what cannot be read with certainty marks the script unknown.

use super::{Level, Lexer, MAX_DEPTH, Stop, Word, lex, quoted};

impl Lexer<'_> {
    /// `$` and what follows it; `in_double` inside `"…"`, where `$'` and `$"` are plain.
    pub(super) fn dollar(&mut self, lv: &mut Level, depth: usize, in_double: bool) {
        match self.peek(1) {
            Some('\'') if !in_double => self.ansi_c(lv),
            Some('"') if !in_double => {
                // `$"…"`: translated by the locale, quoted like `"…"`.
                self.i += 2;
                self.double_quoted(lv, depth);
            }
            Some('(') => self.dollar_paren(lv, depth),
            Some('{') => self.parameter(lv),
            Some('[') => {
                self.script.unsure("`$[…]` arithmetic");
                self.skip_past(']', lv);
            }
            _ => {
                let word = lv.word.get_or_insert_with(Word::new);
                word.expands = true;
                word.literal = false;
                word.text.push('$');
                self.i += 1;
            }
        }
    }

    /// `$'…'`: backslash escapes are decoded, and `\'` does not end the quote.
    pub(super) fn ansi_c(&mut self, lv: &mut Level) {
        let word = quoted(lv.word.get_or_insert_with(Word::new));
        self.i += 2;
        loop {
            match self.chars.get(self.i) {
                None => {
                    self.script.opaque = Some("an unterminated quote");
                    return;
                }
                Some('\'') => {
                    self.i += 1;
                    return;
                }
                Some('\\') => {
                    let next = self.chars.get(self.i + 1).copied();
                    match next.and_then(simple_escape) {
                        Some(c) => word.text.push(c),
                        None => {
                            // Octal, hex, Unicode and control escapes: a value this
                            // splitter does not compute.
                            word.expands = true;
                            word.text.push('\\');
                            word.text.extend(next);
                            if next == Some('c') {
                                self.script.unsure("a `\\c` escape in `$'…'`");
                            }
                        }
                    }
                    self.i += 2;
                }
                Some(&c) => {
                    word.text.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// `$(…)` (a command substitution) or `$((…))` (arithmetic).
    pub(super) fn dollar_paren(&mut self, lv: &mut Level, depth: usize) {
        let start = self.i;
        if self.peek(2) == Some('(')
            && let Some((end, safe)) = self.arithmetic_end(self.i + 1)
        {
            if !safe {
                self.script
                    .unsure("arithmetic with quotes or substitutions");
            }
            self.i = end;
            self.append_raw(lv, start);
            return;
        }
        self.script.opaque = Some("command substitution");
        self.i += 2;
        self.nested(depth);
        self.append_raw(lv, start);
    }

    /// Lexes the commands of a substitution in place, up to its `)`.
    pub(super) fn nested(&mut self, depth: usize) {
        if depth >= MAX_DEPTH {
            self.script.unsure("substitutions nested too deep");
            self.i = self.chars.len();
            return;
        }
        self.level(Stop::Paren, depth + 1);
    }

    /// Adds the raw text from `start` to the cursor to the current word, as an expansion.
    pub(super) fn append_raw(&mut self, lv: &mut Level, start: usize) {
        let raw = self.text(start, self.i.min(self.chars.len()));
        let word = lv.word.get_or_insert_with(Word::new);
        word.expands = true;
        word.literal = false;
        word.text.push_str(&raw);
    }

    /// `((…))` at the start of a command: arithmetic, unless its parentheses say it is two
    /// nested subshells.
    pub(super) fn arithmetic_command(&mut self, lv: &mut Level) {
        match self.arithmetic_end(self.i) {
            Some((end, safe)) => {
                if !safe {
                    self.script
                        .unsure("arithmetic with quotes or substitutions");
                }
                self.i = end - 1;
                self.separator(lv);
            }
            None => {
                lv.parens += 1;
                self.separator(lv);
            }
        }
    }

    /// Where the arithmetic opened by `((` at `open` ends (just past `))`), and whether it is
    /// free of quotes and substitutions; `None` when the first of the two parentheses closes
    /// alone, which makes it `( (…) … )`, or when it never closes.
    pub(super) fn arithmetic_end(&self, open: usize) -> Option<(usize, bool)> {
        let mut depth = 0usize;
        let mut safe = true;
        let mut j = open;
        while let Some(&c) = self.chars.get(j) {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 1 {
                        return (self.chars.get(j + 1) == Some(&')')).then_some((j + 2, safe));
                    }
                }
                '\'' | '"' | '`' | '\\' => safe = false,
                '$' if matches!(self.chars.get(j + 1), Some('(' | '{' | '[')) => safe = false,
                _ => {}
            }
            j += 1;
        }
        None
    }

    /// `${…}`: read when it holds only a name and plain operators, unknown otherwise.
    pub(super) fn parameter(&mut self, lv: &mut Level) {
        let start = self.i;
        let close = (self.i + 2..self.chars.len()).find(|&j| self.chars[j] == '}');
        let Some(close) = close else {
            self.script.unsure("an unterminated `${`");
            self.i = self.chars.len();
            return;
        };
        let inside = &self.chars[self.i + 2..close];
        if inside
            .iter()
            .any(|c| matches!(c, '\'' | '"' | '`' | '\\' | '$' | '(' | '{' | '\n'))
        {
            self.script.unsure("a parameter expansion it cannot read");
        }
        self.i = close + 1;
        self.append_raw(lv, start);
    }

    /// Skips to just past `close` (or the end), as part of the current word.
    pub(super) fn skip_past(&mut self, close: char, lv: &mut Level) {
        let start = self.i;
        while self.peek(0).is_some_and(|c| c != close) {
            self.i += 1;
        }
        self.i = (self.i + 1).min(self.chars.len());
        self.append_raw(lv, start);
    }

    /// A backquoted substitution: its text, unescaped as bash does, is lexed on its own.
    pub(super) fn backticks(&mut self, lv: &mut Level, depth: usize) {
        let start = self.i;
        let mut inner = String::new();
        let mut j = self.i + 1;
        loop {
            match self.chars.get(j) {
                None => {
                    self.script.opaque = Some("an unterminated quote");
                    break;
                }
                Some('`') => {
                    j += 1;
                    break;
                }
                Some('\\') => {
                    match self.chars.get(j + 1) {
                        Some(&c @ ('$' | '`' | '\\')) => inner.push(c),
                        Some(&c) => {
                            inner.push('\\');
                            inner.push(c);
                        }
                        None => inner.push('\\'),
                    }
                    j += 2;
                }
                Some(&c) => {
                    inner.push(c);
                    j += 1;
                }
            }
        }
        self.i = j.min(self.chars.len());
        self.script.opaque = Some("command substitution");
        if depth >= MAX_DEPTH {
            self.script.unsure("substitutions nested too deep");
        } else {
            lex(&inner, depth + 1, self.script);
        }
        self.append_raw(lv, start);
    }
}

/// A backslash escape of `$'…'` whose value is one plain character.
fn simple_escape(c: char) -> Option<char> {
    Some(match c {
        'a' => '\u{7}',
        'b' => '\u{8}',
        'e' | 'E' => '\u{1b}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\u{b}',
        '\\' | '\'' | '"' | '?' => c,
        _ => return None,
    })
}

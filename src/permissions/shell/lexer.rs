//! The lexer behind [`super::split`]: it reads a `bash` line the way bash's own tokenizer does
//! for every construct that decides where a command starts or ends — quotes of all kinds
//! (`'…'`, `"…"`, `$'…'`, `$"…"`), escapes, line continuations, comments, substitutions
//! (`$(…)`, backticks, `<(…)`, `>(…)`), arithmetic, parameter expansions and here-documents —
//! and hands words and operators to the grouping in `shell.rs`. Commands inside a
//! substitution are lexed in place, so they are reported like any other.
//!
//! Whatever it cannot read with certainty marks the script unknown (`Script::unsure`); it
//! never guesses in the direction of fewer commands.

mod expansion;
mod heredoc;

use super::{MAX_DEPTH, Script};

/// One word as bash sees it before expansion.
#[derive(Debug, Default, Clone)]
pub(super) struct Word {
    /// Quotes and escapes removed; substitutions and expansions kept as written.
    pub(crate) text: String,
    /// Some part was quoted or escaped: then it is no keyword, and as a here-document's
    /// delimiter it keeps the body literal.
    pub(crate) quoted: bool,
    /// Something in it changes at run time (a variable, a substitution, a glob, a brace, a
    /// tilde, an escape bash decodes): the word bash uses may differ from `text`.
    pub(crate) expands: bool,
    /// `NAME=…` (or `NAME+=…`, `NAME[…]=…`) with the name unquoted: an assignment when it
    /// comes before the command word.
    pub(crate) assign: bool,
    /// The unquoted, unexpanded start of the word, to tell an assignment.
    prefix: String,
    /// Whether `prefix` still follows the word from its start.
    literal: bool,
    /// An unquoted `{` or `[` was seen: brace expansion or a glob, unless the word is the
    /// keyword or test command itself.
    bracket: bool,
}

impl Word {
    fn new() -> Self {
        Self {
            literal: true,
            ..Self::default()
        }
    }

    /// Ends the word: decides whether it is an assignment and whether a bracket expands.
    fn finish(mut self) -> Self {
        if self.bracket && !matches!(self.text.as_str(), "{" | "[" | "[[") {
            self.expands = true;
        }
        self.assign = is_assignment(&self.prefix);
        self
    }
}

/// `NAME=`, `NAME+=` or `NAME[…]=` at the start of `prefix`.
fn is_assignment(prefix: &str) -> bool {
    let Some(eq) = prefix.find('=') else {
        return false;
    };
    let name = prefix[..eq].strip_suffix('+').unwrap_or(&prefix[..eq]);
    let name = match name.split_once('[') {
        Some((name, subscript)) if subscript.ends_with(']') => name,
        Some(_) => return false,
        None => name,
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What the lexer hands the grouping.
pub(super) enum Token {
    Word(Word),
    /// `;`, `&`, `&&`, `||`, a newline, a parenthesis: a command ends.
    Separator,
    /// `|` or `|&`: a command ends, and the next one is in the same pipeline (where `time`
    /// is no keyword).
    Pipe,
    /// An output redirection: the next word is a file written (or a descriptor after `>&`).
    Write,
    /// An input redirection: the next word is read, not part of the command.
    Read,
}

/// Where a level of lexing stops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The end of the text.
    End,
    /// The `)` that closes a `$(`, `<(` or `>(`.
    Paren,
}

/// A here-document whose body starts after the next newline.
struct Pending {
    delimiter: String,
    /// The delimiter was quoted: the body is literal text, nothing in it runs.
    literal: bool,
    /// `<<-`: leading tabs are stripped from the body and the delimiter line.
    strip_tabs: bool,
}

/// One level of commands: the whole line, or the inside of one substitution.
struct Level {
    tokens: Vec<Token>,
    word: Option<Word>,
    /// Subshell parentheses open at this level.
    parens: usize,
    /// `<<` was just read: the next word is a delimiter (`Some(strip_tabs)`).
    delimiter_next: Option<bool>,
}

pub(super) struct Lexer<'a> {
    chars: Vec<char>,
    i: usize,
    script: &'a mut Script,
    pending: Vec<Pending>,
}

/// Lexes `line` and groups every level's tokens into `script`.
pub(super) fn lex(line: &str, depth: usize, script: &mut Script) {
    let mut lexer = Lexer {
        chars: line.chars().collect(),
        i: 0,
        script,
        pending: Vec::new(),
    };
    lexer.level(Stop::End, depth);
    if !lexer.pending.is_empty() && depth > 0 {
        // A here-document opened inside backquotes whose body lies outside them.
        lexer.script.unsure("a here-document inside backquotes");
    }
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.chars[from.min(to)..to].iter().collect()
    }

    /// Lexes commands up to `stop`, then groups them into the script.
    fn level(&mut self, stop: Stop, depth: usize) {
        let mut lv = Level {
            tokens: Vec::new(),
            word: None,
            parens: 0,
            delimiter_next: None,
        };
        while let Some(c) = self.peek(0) {
            if c == ')' && lv.parens == 0 && stop == Stop::Paren {
                self.i += 1;
                self.end_word(&mut lv);
                super::group(lv.tokens, depth, self.script);
                return;
            }
            self.step(c, &mut lv, depth);
        }
        if stop == Stop::Paren {
            // bash would fail on the missing `)`, but not before running what came first.
            self.script.opaque = Some("an unterminated substitution");
        }
        self.end_word(&mut lv);
        super::group(lv.tokens, depth, self.script);
    }

    fn step(&mut self, c: char, lv: &mut Level, depth: usize) {
        match c {
            ' ' | '\t' => {
                self.end_word(lv);
                self.i += 1;
            }
            '\n' => {
                self.separator(lv);
                self.here_documents();
            }
            '&' if self.peek(1) == Some('>') => {
                self.end_word(lv);
                self.i += if self.peek(2) == Some('>') { 3 } else { 2 };
                lv.tokens.push(Token::Write);
            }
            '|' if self.peek(1) == Some('|') => {
                self.i += 1;
                self.separator(lv);
            }
            '|' => {
                self.separator(lv);
                if let Some(Token::Separator) = lv.tokens.last() {
                    lv.tokens.pop();
                }
                lv.tokens.push(Token::Pipe);
                if self.peek(0) == Some('&') {
                    self.i += 1;
                }
            }
            ';' | '&' => self.separator(lv),
            '(' if lv.word.is_none() && self.peek(1) == Some('(') => self.arithmetic_command(lv),
            '(' => {
                lv.parens += 1;
                self.separator(lv);
            }
            ')' => {
                lv.parens = lv.parens.saturating_sub(1);
                self.separator(lv);
            }
            '#' if lv.word.is_none() => {
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
            }
            '\\' => self.escape(lv),
            '\'' => self.single_quoted(lv),
            '"' => {
                self.i += 1;
                self.double_quoted(lv, depth);
            }
            '`' => self.backticks(lv, depth),
            '$' => self.dollar(lv, depth, false),
            '<' | '>' => self.redirection(c, lv, depth),
            _ => {
                let word = lv.word.get_or_insert_with(Word::new);
                match c {
                    '*' | '?' => word.expands = true,
                    '~' if word.text.is_empty() => word.expands = true,
                    '{' | '[' => word.bracket = true,
                    _ => {}
                }
                push_plain(word, c);
                self.i += 1;
            }
        }
    }

    fn separator(&mut self, lv: &mut Level) {
        self.end_word(lv);
        lv.delimiter_next = None;
        lv.tokens.push(Token::Separator);
        self.i += 1;
    }

    fn end_word(&mut self, lv: &mut Level) {
        let Some(word) = lv.word.take() else {
            return;
        };
        let word = word.finish();
        match lv.delimiter_next.take() {
            Some(strip_tabs) => {
                if word.text.contains(['`', '\n']) || word.text.contains("$(") {
                    self.script
                        .unsure("a here-document delimiter it cannot read");
                }
                self.pending.push(Pending {
                    delimiter: word.text,
                    literal: word.quoted,
                    strip_tabs,
                });
            }
            None => lv.tokens.push(Token::Word(word)),
        }
    }

    fn escape(&mut self, lv: &mut Level) {
        match self.peek(1) {
            Some('\n') => self.i += 2,
            Some(next) => {
                let word = lv.word.get_or_insert_with(Word::new);
                quoted(word).text.push(next);
                self.i += 2;
            }
            None => {
                push_plain(lv.word.get_or_insert_with(Word::new), '\\');
                self.i += 1;
            }
        }
    }

    fn single_quoted(&mut self, lv: &mut Level) {
        let word = quoted(lv.word.get_or_insert_with(Word::new));
        self.i += 1;
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
                Some(&c) => {
                    word.text.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// The inside of `"…"` (the opening quote already passed).
    fn double_quoted(&mut self, lv: &mut Level, depth: usize) {
        quoted(lv.word.get_or_insert_with(Word::new));
        loop {
            match self.peek(0) {
                None => {
                    self.script.opaque = Some("an unterminated quote");
                    return;
                }
                Some('"') => {
                    self.i += 1;
                    return;
                }
                Some('\\') => {
                    let word = lv.word.get_or_insert_with(Word::new);
                    match self.peek(1) {
                        Some(c @ ('$' | '`' | '"' | '\\')) => {
                            word.text.push(c);
                            self.i += 2;
                        }
                        Some('\n') => self.i += 2,
                        _ => {
                            word.text.push('\\');
                            self.i += 1;
                        }
                    }
                }
                Some('`') => self.backticks(lv, depth),
                Some('$') => self.dollar(lv, depth, true),
                Some(c) => {
                    lv.word.get_or_insert_with(Word::new).text.push(c);
                    self.i += 1;
                }
            }
        }
    }

    fn redirection(&mut self, c: char, lv: &mut Level, depth: usize) {
        // A descriptor written right before the operator (`2>`, `{fd}>`) is not a word.
        if lv.word.as_ref().is_some_and(is_descriptor) {
            lv.word = None;
        }
        self.end_word(lv);
        if self.peek(1) == Some('(') {
            // Process substitution, `<(…)` or `>(…)`.
            let start = self.i;
            self.script.opaque = Some("command substitution");
            self.i += 2;
            self.nested(depth);
            self.append_raw(lv, start);
            self.end_word(lv);
            return;
        }
        let (len, token) = match (c, self.peek(1), self.peek(2)) {
            ('>', Some('>' | '|' | '&'), _) => (2, Token::Write),
            ('>', ..) => (1, Token::Write),
            ('<', Some('<'), Some('<')) => (3, Token::Read),
            ('<', Some('<'), next) => {
                let strip_tabs = next == Some('-');
                self.i += if strip_tabs { 3 } else { 2 };
                self.script.opaque = Some("a here-document");
                lv.delimiter_next = Some(strip_tabs);
                return;
            }
            ('<', Some('>'), _) => (2, Token::Write),
            ('<', Some('&'), _) => (2, Token::Read),
            _ => (1, Token::Read),
        };
        self.i += len;
        lv.tokens.push(token);
    }
}

/// A word made only of digits or `{name}`: the descriptor of a redirection right after it.
fn is_descriptor(word: &Word) -> bool {
    let text = word.text.as_str();
    if !word.literal || text.is_empty() {
        return false;
    }
    text.bytes().all(|b| b.is_ascii_digit())
        || text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .is_some_and(|name| is_assignment(&format!("{name}=")))
}

/// Adds an unquoted character.
fn push_plain(word: &mut Word, c: char) {
    word.text.push(c);
    if word.literal {
        word.prefix.push(c);
    }
}

/// Marks the word quoted from here on.
fn quoted(word: &mut Word) -> &mut Word {
    word.quoted = true;
    word.literal = false;
    word
}

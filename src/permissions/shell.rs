//! A small shell-word splitter, just enough for permission rules: it cuts a `bash` command into
//! its simple commands (at `&&`, `||`, `;`, `|`, `&`, newlines and parentheses), removes quotes
//! and escapes from their words, and notes what no rule may auto-allow: command substitution
//! (`$(…)`, backticks, `<(…)`), `eval`, here-documents and unbalanced quotes. Commands inside
//! a substitution are reported too, so a deny rule still sees them. Files written through
//! redirections are collected for the caller to check against the protected paths.
//!
//! It is not a shell: it never expands anything and errs towards "cannot tell", which only
//! ever means "ask".

/// What [`split`] found in a command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Script {
    /// The simple commands, in order, those inside substitutions included.
    pub commands: Vec<Command>,
    /// Why no rule may allow the line without asking, when something makes it opaque.
    pub opaque: Option<&'static str>,
    /// The targets of output redirections (`>`, `>>`, `>|`, `&>`, `<>`), as written.
    pub writes: Vec<String>,
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its words without quotes, joined by single spaces, leading shell keywords (`then`,
    /// `do`, `!`, `{` …) dropped: what allow rules match.
    pub text: String,
    /// The same without leading variable assignments (`FOO=1 rm x` → `rm x`): what deny and
    /// ask rules also match, so an assignment cannot hide a command from them.
    pub bare: String,
}

/// Substitutions nested deeper than this are not looked into (the line is opaque anyway).
const MAX_DEPTH: usize = 8;

/// Words that open or close compound commands; they are dropped from the front of a command.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "time",
];

/// Splits `line` into its simple commands (see the module's note).
pub fn split(line: &str) -> Script {
    let mut script = Script::default();
    split_into(line, 0, &mut script);
    script
}

fn split_into(line: &str, depth: usize, script: &mut Script) {
    if depth > MAX_DEPTH {
        script.opaque = Some("command substitution");
        return;
    }
    let tokens = Lexer::new(line, depth, script).run();
    group(tokens, script);
}

enum Token {
    Word(String),
    Separator,
    /// An output redirection: the next word is a file written (or a descriptor after `>&`).
    Write,
    /// An input redirection: the next word is read, not part of the command.
    Read,
    /// `<<`: the next word is the delimiter; the body follows on later lines.
    HereDoc,
}

struct Lexer<'a> {
    chars: Vec<char>,
    i: usize,
    word: Option<String>,
    tokens: Vec<Token>,
    depth: usize,
    script: &'a mut Script,
}

impl<'a> Lexer<'a> {
    fn new(line: &str, depth: usize, script: &'a mut Script) -> Self {
        Self {
            chars: line.chars().collect(),
            i: 0,
            word: None,
            tokens: Vec::new(),
            depth,
            script,
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn push(&mut self, c: char) {
        self.word.get_or_insert_with(String::new).push(c);
    }

    fn end_word(&mut self) {
        if let Some(word) = self.word.take() {
            self.tokens.push(Token::Word(word));
        }
    }

    fn run(mut self) -> Vec<Token> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => {
                    self.end_word();
                    self.i += 1;
                }
                '&' if self.peek(1) == Some('>') => {
                    self.end_word();
                    self.i += 2;
                    if self.peek(0) == Some('>') {
                        self.i += 1;
                    }
                    self.tokens.push(Token::Write);
                }
                '\n' | ';' | '&' | '|' | '(' | ')' => {
                    self.end_word();
                    self.tokens.push(Token::Separator);
                    self.i += 1;
                }
                '#' if self.word.is_none() => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(next) => self.push(next),
                        None => {}
                    }
                    self.i += 2;
                }
                '\'' => self.single_quoted(),
                '"' => self.double_quoted(),
                '`' => self.backticks(),
                '$' if self.peek(1) == Some('(') => {
                    self.push('$');
                    self.i += 1;
                    self.parenthesised();
                }
                '>' | '<' => self.redirection(c),
                _ => {
                    self.push(c);
                    self.i += 1;
                }
            }
        }
        self.end_word();
        self.tokens
    }

    fn single_quoted(&mut self) {
        self.i += 1;
        self.word.get_or_insert_with(String::new);
        loop {
            match self.peek(0) {
                None => {
                    self.script.opaque = Some("an unterminated quote");
                    return;
                }
                Some('\'') => {
                    self.i += 1;
                    return;
                }
                Some(c) => {
                    self.push(c);
                    self.i += 1;
                }
            }
        }
    }

    fn double_quoted(&mut self) {
        self.i += 1;
        self.word.get_or_insert_with(String::new);
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
                Some('\\') => match self.peek(1) {
                    Some(c @ ('$' | '`' | '"' | '\\')) => {
                        self.push(c);
                        self.i += 2;
                    }
                    Some('\n') => self.i += 2,
                    _ => {
                        self.push('\\');
                        self.i += 1;
                    }
                },
                Some('`') => self.backticks(),
                Some('$') if self.peek(1) == Some('(') => {
                    self.push('$');
                    self.i += 1;
                    self.parenthesised();
                }
                Some(c) => {
                    self.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// A backquoted substitution: its text up to the next unescaped backquote.
    fn backticks(&mut self) {
        let start = self.i + 1;
        let mut end = start;
        while end < self.chars.len() && self.chars[end] != '`' {
            end += if self.chars[end] == '\\' { 2 } else { 1 };
        }
        let end = end.min(self.chars.len());
        let inner: String = self.chars[start..end].iter().collect();
        self.i = (end + 1).min(self.chars.len());
        self.substitution(&inner, '`', '`');
    }

    /// `(…)` after `$`, `<` or `>`, up to its matching parenthesis (quotes respected).
    fn parenthesised(&mut self) {
        let start = self.i + 1;
        let (mut end, mut depth, mut quote) = (start, 1usize, None::<char>);
        while end < self.chars.len() {
            let c = self.chars[end];
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some('"') | None, '\\') => end += 1,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        let end = end.min(self.chars.len());
        let inner: String = self.chars[start..end].iter().collect();
        self.i = (end + 1).min(self.chars.len());
        self.substitution(&inner, '(', ')');
    }

    fn substitution(&mut self, inner: &str, open: char, close: char) {
        self.script.opaque = Some("command substitution");
        let word = self.word.get_or_insert_with(String::new);
        word.push(open);
        word.push_str(inner);
        word.push(close);
        split_into(inner, self.depth + 1, self.script);
    }

    fn redirection(&mut self, c: char) {
        // A descriptor number written right before the operator (`2>`) is not a word.
        if self
            .word
            .as_deref()
            .is_some_and(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
        {
            self.word = None;
        }
        self.end_word();
        if self.peek(1) == Some('(') {
            // Process substitution, `<(…)` or `>(…)`.
            self.push(c);
            self.i += 1;
            self.parenthesised();
            self.end_word();
            return;
        }
        let token = match (c, self.peek(1), self.peek(2)) {
            ('>', Some('>' | '|' | '&'), _) => {
                self.i += 2;
                Token::Write
            }
            ('>', ..) => {
                self.i += 1;
                Token::Write
            }
            ('<', Some('<'), Some('<')) => {
                self.i += 3;
                Token::Read
            }
            ('<', Some('<'), _) => {
                self.i += 2;
                if self.peek(0) == Some('-') {
                    self.i += 1;
                }
                Token::HereDoc
            }
            ('<', Some('>'), _) => {
                self.i += 2;
                Token::Write
            }
            ('<', Some('&'), _) => {
                self.i += 2;
                Token::Read
            }
            _ => {
                self.i += 1;
                Token::Read
            }
        };
        self.tokens.push(token);
    }
}

/// Turns tokens into simple commands and redirection targets.
fn group(tokens: Vec<Token>, script: &mut Script) {
    let mut words: Vec<String> = Vec::new();
    let mut target: Option<Token> = None;
    for token in tokens {
        match token {
            Token::Word(word) => match target.take() {
                // `>&2`, `>&-`: a descriptor, not a file.
                Some(Token::Write) if word == "-" || word.bytes().all(|b| b.is_ascii_digit()) => {}
                Some(Token::Write) => script.writes.push(word),
                Some(_) => {}
                None => words.push(word),
            },
            Token::Separator => finish(&mut words, script),
            Token::HereDoc => {
                script.opaque = Some("a here-document");
                target = Some(Token::HereDoc);
            }
            other => target = Some(other),
        }
    }
    finish(&mut words, script);
}

fn finish(words: &mut Vec<String>, script: &mut Script) {
    let all = std::mem::take(words);
    let start = all
        .iter()
        .position(|w| !KEYWORDS.contains(&w.as_str()))
        .unwrap_or(all.len());
    let words = &all[start..];
    if words.is_empty() {
        return;
    }
    let bare_start = words
        .iter()
        .position(|w| !is_assignment(w))
        .unwrap_or(words.len());
    let bare = &words[bare_start..];
    if bare.first().is_some_and(|w| w == "eval") {
        script.opaque = Some("eval");
    }
    script.commands.push(Command {
        text: words.join(" "),
        bare: bare.join(" "),
    });
}

/// `NAME=value`, a variable assignment before a command.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

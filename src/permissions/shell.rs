//! A shell-word splitter, just enough for permission rules: it cuts a `bash` command line into
//! its simple commands, removes quotes and escapes from their words, and says what no rule may
//! auto-allow. It reads quotes of every kind (`'…'`, `"…"`, `$'…'`, `$"…"`), escapes, line
//! continuations, comments, substitutions (`$(…)`, backticks, `<(…)`, `>(…)`), arithmetic and
//! here-documents as bash does (`shell/lexer.rs`); commands inside a substitution, and what
//! `eval`, `command`, `builtin` and `exec` run, are reported too, so a deny rule still sees
//! them. Files written through redirections are collected for the caller to check against the
//! protected paths.
//!
//! It is not a shell: it never expands anything. Two levels of doubt: `opaque` (it read the
//! line, but something in it — a substitution, `eval`, a here-document — must not be allowed
//! by a rule) and `unknown` (it cannot be sure it saw every command bash would run: a command
//! name that expands, `source`, `trap`, a parameter expansion it cannot read …). Both only
//! ever mean "ask"; `tests/it/shell_oracle.rs` holds it to what bash itself runs.

mod lexer;
#[cfg(test)]
mod tests;

use lexer::{Token, Word};

/// What [`split`] found in a command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Script {
    /// The simple commands, in order, those inside substitutions included.
    pub commands: Vec<Command>,
    /// Why no rule may allow the line without asking, when something makes it opaque.
    pub opaque: Option<&'static str>,
    /// Why the splitter cannot be sure it saw every command bash would run: then no rule
    /// allows the line, and a deny or ask rule that matched nothing still asks.
    pub unknown: Option<&'static str>,
    /// The targets of output redirections (`>`, `>>`, `>|`, `&>`, `<>`), as written.
    pub writes: Vec<String>,
}

impl Script {
    /// Marks the line unknown (and so opaque too).
    pub(crate) fn unsure(&mut self, why: &'static str) {
        self.unknown.get_or_insert(why);
        self.opaque.get_or_insert(why);
    }
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its words without quotes, joined by single spaces, leading shell keywords (`then`,
    /// `do`, `!`, `{` …) dropped: what allow rules match.
    pub text: String,
    /// The same without leading variable assignments (`FOO=1 rm x` → `rm x`): what deny and
    /// ask rules also match, so an assignment cannot hide a command from them.
    pub(crate) bare: String,
    /// The command word (quotes removed), or empty when the command only assigns variables.
    pub program: String,
}

/// Substitutions nested deeper than this are not looked into (the line is unknown then).
const MAX_DEPTH: usize = 8;

/// Words that open or close compound commands; they are dropped from the front of a command.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "time",
];

/// Splits `line` into its simple commands (see the module's note).
pub fn split(line: &str) -> Script {
    let mut script = Script::default();
    lexer::lex(line, 0, &mut script);
    script
}

/// Turns one level's tokens into simple commands and redirection targets.
fn group(tokens: Vec<Token>, depth: usize, script: &mut Script) {
    let mut words: Vec<Word> = Vec::new();
    let mut target: Option<Token> = None;
    let mut piped = false;
    for token in tokens {
        match token {
            Token::Word(word) => match target.take() {
                // `>&2`, `>&-`: a descriptor, not a file.
                Some(Token::Write)
                    if word.text == "-" || word.text.bytes().all(|b| b.is_ascii_digit()) => {}
                Some(Token::Write) => script.writes.push(word.text),
                Some(_) => {}
                None => words.push(word),
            },
            Token::Separator | Token::Pipe => {
                finish(std::mem::take(&mut words), piped, depth, script);
                piped = matches!(token, Token::Pipe);
            }
            other => target = Some(other),
        }
    }
    finish(words, piped, depth, script);
}

/// Records one simple command, and what a builtin among its words runs in turn. `piped`: it
/// follows a `|`, where `time` is a program, not the keyword.
fn finish(all: Vec<Word>, piped: bool, depth: usize, script: &mut Script) {
    let mut start = 0;
    while let Some(word) = all
        .get(start)
        .filter(|w| is_keyword(w) && !(piped && start == 0 && w.text == "time"))
    {
        start += 1;
        // `time -p` takes its option.
        if word.text == "time" && all.get(start).is_some_and(|w| w.text == "-p") {
            start += 1;
        }
    }
    let words = &all[start..];
    if words.is_empty() {
        return;
    }
    let bare_start = words.iter().position(|w| !w.assign).unwrap_or(words.len());
    let bare = &words[bare_start..];
    record(words, bare, script);
    runs(bare, depth, script);
}

fn record(words: &[Word], bare: &[Word], script: &mut Script) {
    let join = |ws: &[Word]| {
        ws.iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let program = bare.first();
    if program.is_some_and(|w| w.expands) {
        script.unsure("a command name that expands");
    }
    script.commands.push(Command {
        text: join(words),
        bare: join(bare),
        program: program.map(|w| w.text.clone()).unwrap_or_default(),
    });
}

/// What the builtins that run other commands run: `eval`'s words are split again,
/// `command`, `builtin` and `exec` report the command they start; `source`, `.`, `trap` and
/// `coproc` make the line unknown.
fn runs(bare: &[Word], depth: usize, script: &mut Script) {
    let Some((program, args)) = bare.split_first() else {
        return;
    };
    match program.text.as_str() {
        "eval" => {
            script.opaque = Some("eval");
            if args.iter().any(|w| w.expands) {
                script.unsure("eval of words that expand");
            } else if depth >= MAX_DEPTH {
                script.unsure("eval nested too deep");
            } else {
                let text: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
                lexer::lex(&text.join(" "), depth + 1, script);
            }
        }
        "command" | "builtin" | "exec" => {
            if let Some(inner) = wrapped(&program.text, args)
                && !inner.is_empty()
            {
                record(inner, inner, script);
                runs(inner, depth, script);
            }
        }
        "source" | "." | "trap" | "coproc" if !args.is_empty() => {
            script.unsure("a builtin that runs commands it does not show");
        }
        _ => {}
    }
}

/// The command a `command`, `builtin` or `exec` word starts, after its options; `None` when
/// it starts none (`command -v`).
fn wrapped<'w>(wrapper: &str, args: &'w [Word]) -> Option<&'w [Word]> {
    let mut rest = args;
    while let Some((first, others)) = rest.split_first() {
        let option = first.text.as_str();
        if option == "--" {
            return Some(others);
        }
        if !option.starts_with('-') || option == "-" || wrapper == "builtin" {
            break;
        }
        if wrapper == "command" && option.contains(['v', 'V']) {
            return None;
        }
        rest = others;
        if wrapper == "exec" && option.ends_with('a') {
            // `exec -a NAME`: the next word is the name, not the command.
            rest = rest.get(1..).unwrap_or_default();
        }
    }
    Some(rest)
}

/// An unquoted shell keyword.
fn is_keyword(word: &Word) -> bool {
    !word.quoted && !word.expands && KEYWORDS.contains(&word.text.as_str())
}

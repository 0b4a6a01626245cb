//! Custom slash commands: a prompt the user keeps in a Markdown file and runs by name. This is
//! the data and the filling-in of arguments, shared by every frontend; finding and reading the
//! files is the CLI's (`cli/commands.rs`), so no frontend touches the disk for them.

/// One custom command, read and checked by the CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// The name without the slash: the file name without `.md`.
    pub name: String,
    /// From the front matter; empty when there is none.
    pub description: String,
    /// From the front matter's `argument-hint`.
    pub argument_hint: Option<String>,
    /// Where it came from, as `minicode commands` shows it.
    pub source: String,
    /// The prompt template.
    pub body: String,
}

impl CustomCommand {
    /// `/name`, as menus show it.
    pub(crate) fn slash(&self) -> String {
        format!("/{}", self.name)
    }

    /// The prompt with `$ARGUMENTS` (all of `args`) and `$1`…`$9` (its words; quotes group
    /// words) filled in, in one pass so an argument is never expanded again. A template that
    /// uses neither gets the arguments appended after a blank line, so they are never lost.
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let words = split_words(args);
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut used = false;
        let mut rest = self.body.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                used = true;
                rest = tail;
            } else if let Some(d) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
                let index = d as usize - '1' as usize;
                out.push_str(words.get(index).map_or("", String::as_str));
                used = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        if !used && !args.is_empty() {
            out = format!("{}\n\n{args}", out.trim_end());
        }
        out
    }
}

/// The command a line names (`/name` or `/name args`) among `commands`, with its arguments.
pub fn find_custom<'a>(
    commands: &'a [CustomCommand],
    line: &'a str,
) -> Option<(&'a CustomCommand, &'a str)> {
    let rest = line.trim_start().strip_prefix('/')?;
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(at) => (&rest[..at], rest[at..].trim()),
        None => (rest, ""),
    };
    commands.iter().find(|c| c.name == name).map(|c| (c, args))
}

/// Words of `args`: split on whitespace, with single or double quotes grouping words.
fn split_words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            None => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

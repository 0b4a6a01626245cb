//! A one-word prompt that is a near miss of a subcommand (`minicode doctr`) is almost surely a
//! typo: sending it to the model would cost a request and leave a session behind. It is
//! refused with a suggestion before anything is loaded; `minicode -- doctr` sends it anyway.

use clap::CommandFactory;

use super::{Args, Failure, usage};

/// The refusal for `args`, when its prompt looks like a mistyped subcommand and the command
/// line did not mark it as a prompt with `--` (`argv` is the command line without the program).
pub(super) fn check(args: &Args, argv: &[std::ffi::OsString]) -> Result<(), Failure> {
    let Some(prompt) = args.prompt.as_deref() else {
        return Ok(());
    };
    if argv.iter().any(|a| a == "--") {
        return Ok(());
    }
    match suggestion(prompt) {
        Some(name) => Err(usage(format!(
            "unknown subcommand `{prompt}`: did you mean `{name}`? (to send `{prompt}` to the \
             model as the task, run: minicode -- {prompt})"
        ))),
        None => Ok(()),
    }
}

/// The subcommand `word` is a near miss of, if any. Only a single lowercase word is a
/// candidate; the allowed distance is 2, or 1 for names of four letters or fewer, where 2
/// edits would turn ordinary words (`hello` → `help`) into suggestions.
fn suggestion(word: &str) -> Option<String> {
    if word.is_empty() || !word.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
        return None;
    }
    let cmd = Args::command();
    let names = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .chain(std::iter::once("help".to_string()));
    names
        .filter_map(|name| {
            let allowed = if name.len() <= 4 { 1 } else { 2 };
            let d = distance(word, &name);
            (d <= allowed).then_some((d, name))
        })
        .min()
        .map(|(_, name)| name)
}

/// Levenshtein distance over bytes (the candidates are ASCII).
fn distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

//! A one-word prompt that is a near miss of a subcommand (`minicode doctr`) is almost surely a
//! typo: sending it to the model would cost a request and leave a session behind. It is
//! refused with a suggestion before anything is loaded; `minicode -- doctr` sends it anyway.
//! An unknown flag that is a near miss of a real one (`--yse`) gets the same kind of
//! suggestion, which clap leaves out when a positional argument could take the word.

use clap::CommandFactory;

use super::{Args, Failure, usage};

/// The refusal for `args`, when its prompt looks like a mistyped subcommand and the command
/// line did not mark it as a prompt with `--` (`argv` is the command line without the program).
pub(super) fn check(args: &Args, argv: &[std::ffi::OsString]) -> Result<(), Failure> {
    let [prompt] = args.prompt.as_slice() else {
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

/// `error` with a "similar argument" tip when it is about an unknown `--flag` clap found no
/// suggestion for and one flag is close enough.
pub(super) fn suggest_flag(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument || error.get(ContextKind::SuggestedArg).is_some()
    {
        return error;
    }
    let Some(ContextValue::String(given)) = error.get(ContextKind::InvalidArg) else {
        return error;
    };
    let Some(word) = given.strip_prefix("--") else {
        return error;
    };
    let word = word.split('=').next().unwrap_or(word);
    let cmd = Args::command();
    let nearest = cmd
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter_map(|name| {
            let allowed = if name.len() <= 4 { 1 } else { 2 };
            let d = distance(word, name);
            (d <= allowed).then_some((d, name))
        })
        .min();
    if let Some((_, name)) = nearest {
        error.insert(
            ContextKind::SuggestedArg,
            ContextValue::String(format!("--{name}")),
        );
    }
    error
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

/// Edit distance over bytes where swapping two neighbours counts as one edit (optimal string
/// alignment), so `yse` is one edit from `yes`, as a typist would count it. The candidates
/// are ASCII.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::distance;

    #[test]
    fn a_swap_of_neighbours_is_one_edit() {
        assert_eq!(distance("yse", "yes"), 1);
        assert_eq!(distance("doctr", "doctor"), 1);
        assert_eq!(distance("hello", "help"), 2);
        assert_eq!(distance("", "abc"), 3);
    }
}

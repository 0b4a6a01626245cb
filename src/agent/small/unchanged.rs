//! Whether a prompt asks for a change to the workspace, for the reminder a small model gets
//! when its turn would end with nothing changed. Qwen2.5-Coder 1.5B, asked to fix a typo or
//! add a function, often writes the plan ("1. Open the file. 2. Correct the heading. …") or
//! describes the edit, and stops: the turn ends `completed` with the workspace untouched.
//! Conservative on purpose: English only, and a sentence must *open* with the verb (an order),
//! so a question that mentions a change ("What does `make` change?") is not one.

/// Verbs that, opening a sentence, order a change to files.
const CHANGE_VERBS: [&str; 20] = [
    "add",
    "append",
    "change",
    "create",
    "delete",
    "edit",
    "fix",
    "implement",
    "insert",
    "make",
    "move",
    "refactor",
    "remove",
    "rename",
    "replace",
    "rewrite",
    "set",
    "turn",
    "update",
    "write",
];

/// Whether some sentence of `prompt` opens with an order to change something. Text that
/// minicode attached to the prompt (`@file`, a first look) is not read.
pub(super) fn asks_for_change(prompt: &str) -> bool {
    let own = prompt.split("\n<attached-").next().unwrap_or(prompt);
    own.split(['.', '!', '?', '\n', ';'])
        .filter_map(|sentence| sentence.split_whitespace().next())
        .map(|word| word.trim_matches(|c: char| !c.is_ascii_alphabetic()))
        .any(|word| CHANGE_VERBS.contains(&word.to_ascii_lowercase().as_str()))
}

#[cfg(test)]
mod tests {
    use super::asks_for_change;

    #[test]
    fn orders_to_change_files_are_found_in_any_sentence() {
        for prompt in [
            "README.md has a typo in one of its headings. Fix it.",
            "Turn debug on in config.json.",
            "Add a shell function `mul` to lib.sh.",
            "`sh test.sh` fails. Fix the code so that it passes.",
            "Rename the function fetch_data to load_data everywhere.",
            "please\nCreate CHANGELOG.md",
        ] {
            assert!(asks_for_change(prompt), "{prompt}");
        }
    }

    #[test]
    fn questions_and_attachments_are_not_orders() {
        for prompt in [
            "What port does the server in config.ini listen on?",
            "How many .txt files are in the data folder? Answer with the number only.",
            "Which function does the fix in parse.rs change?",
            "Explain lib.sh\n<attached-file path=\"lib.sh\">\nfix() { :; }\n</attached-file>",
            "",
        ] {
            assert!(!asks_for_change(prompt), "{prompt}");
        }
    }
}

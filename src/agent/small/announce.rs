//! Whether a reply ends by announcing an action it did not take ("I'll read the file.",
//! "Let me check the tests:"): conservative on purpose, English patterns on the reply's last
//! sentence only, so an answer that merely mentions a plan is left alone.

/// The longest last sentence looked at: an announcement is short.
const MAX_SENTENCE: usize = 200;

/// What may open an announcement, after an optional "Now," or "First,".
const SUBJECTS: [&str; 8] = [
    "i'll ",
    "i will ",
    "let me ",
    "let's ",
    "i'm going to ",
    "i am going to ",
    "i need to ",
    "i'll now ",
];

/// Words that may stand between the subject and the verb.
const ADVERBS: [&str; 5] = ["first ", "now ", "just ", "quickly ", "then "];

/// Verbs of the actions the tools take.
const VERBS: [&str; 24] = [
    "read", "check", "look", "open", "list", "run", "create", "write", "edit", "search", "inspect",
    "examine", "update", "modify", "add", "fix", "view", "use", "call", "execute", "find",
    "change", "start", "explore",
];

/// Whether `text` ends with an announcement of a tool action.
pub(super) fn announces(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() || text.ends_with("```") || text.ends_with('?') {
        return false;
    }
    // Only the end is read: a long reply costs no more than a short one.
    let last_line = text.rsplit('\n').next().unwrap_or("").trim();
    let sentence = last_sentence(last_line);
    // Lowercasing changes a character's length by at most 3 bytes to 1 (the Kelvin sign).
    if sentence.len() > 3 * MAX_SENTENCE {
        return false;
    }
    let sentence = sentence.to_lowercase();
    if sentence.len() > MAX_SENTENCE {
        return false;
    }
    let mut rest = sentence.as_str();
    for opener in [
        "now, ", "first, ", "next, ", "okay, ", "ok, ", "sure, ", "sure! ", "now ",
    ] {
        rest = rest.strip_prefix(opener).unwrap_or(rest);
    }
    let Some(mut rest) = SUBJECTS.iter().find_map(|s| rest.strip_prefix(s)) else {
        return false;
    };
    for adverb in ADVERBS {
        rest = rest.strip_prefix(adverb).unwrap_or(rest);
    }
    let verb: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    VERBS.contains(&verb.as_str())
}

/// The last sentence of a line: what follows its last ". ", "! " or "? ".
fn last_sentence(line: &str) -> &str {
    let body = line.trim_end_matches(['.', ':', '!', '…']);
    let cut = [". ", "! ", "? "]
        .iter()
        .filter_map(|sep| body.rfind(sep).map(|i| i + sep.len()))
        .max()
        .unwrap_or(0);
    line[cut..].trim()
}

#[cfg(test)]
mod tests {
    use super::announces;

    #[test]
    fn announcements_at_the_end_are_found() {
        for text in [
            "I'll read the file.",
            "Let me check the contents of src/main.rs:",
            "Sure. Now, let me list the files in the project...",
            "The task needs the version.\nI will first open Cargo.toml to find it.",
            "Let's run the tests.",
            "I'm going to create CHANGELOG.md now.",
        ] {
            assert!(announces(text), "{text}");
        }
    }

    #[test]
    fn only_the_end_of_a_long_reply_is_read() {
        let long = "word ".repeat(40_000);
        assert!(announces(&format!("{long}. I'll read the file.")));
        assert!(announces(&format!("{long}\nLet me check the tests:")));
        assert!(!announces(&long), "one 200 KB sentence is no announcement");
        assert!(!announces(&format!("Let me check {long}")));
    }

    #[test]
    fn answers_and_offers_are_not_announcements() {
        for text in [
            "The answer is 42.",
            "Let me know if you need anything else.",
            "I'll be happy to help with more.",
            "I read the file: it has 3 lines.",
            "Should I run the tests?",
            "I'll read the file.\n```\nfn main() {}\n```",
            "Done. I added the changelog, and I'll leave the rest to you.",
            "",
        ] {
            assert!(!announces(text), "{text}");
        }
    }
}

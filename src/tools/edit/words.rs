//! The last tier of `edit`'s search: `old_string` found word for word, whatever stands between
//! the words. Small models drop the quotes of a JSON key or the colon of a heading
//! (`debug: false` for `"debug": false`), then repeat the same `old_string` after being shown
//! the file (docs/models.md). When `new_string` only swaps words (the same number of words,
//! the same marks between them), the swapped words are changed in the file and everything
//! between them is kept as the file has it; anything else stays a miss.

/// A word: a run of letters, digits and `_`, by byte range.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric() || c == '_', start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                found.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        found.push((s, text.len()));
    }
    found
}

/// What stands between (and around) the words of `text`, whitespace dropped.
fn marks(text: &str, words: &[(usize, usize)]) -> Vec<String> {
    let mut at = 0;
    let mut out = Vec::with_capacity(words.len() + 1);
    for &(start, end) in words {
        out.push(text[at..start].split_whitespace().collect());
        at = end;
    }
    out.push(text[at..].split_whitespace().collect());
    out
}

/// Most bytes allowed between two words of a match: quotes, a colon and spaces, not a line.
const MAX_GAP: usize = 16;

/// The splices (byte range, new text) that turn each word-for-word match of `needle` in `text`
/// into `with`'s words; empty when `with` changes more than words or nothing matches.
pub(super) fn splices(text: &str, needle: &str, with: &str) -> Vec<(usize, usize, String)> {
    let (old, new) = (words(needle), words(with));
    if old.len() < 2 || old.len() != new.len() || marks(needle, &old) != marks(with, &new) {
        return Vec::new();
    }
    let old: Vec<&str> = old.iter().map(|&(s, e)| &needle[s..e]).collect();
    let new: Vec<&str> = new.iter().map(|&(s, e)| &with[s..e]).collect();
    if old == new {
        return Vec::new();
    }
    let file = words(text);
    let mut found = Vec::new();
    let mut i = 0;
    while i + old.len() <= file.len() {
        let window = &file[i..i + old.len()];
        let same = window
            .iter()
            .zip(&old)
            .all(|(&(s, e), w)| &text[s..e] == *w);
        let close = window.windows(2).all(|p| p[1].0 - p[0].1 <= MAX_GAP);
        if !(same && close) {
            i += 1;
            continue;
        }
        let (start, end) = (window[0].0, window[old.len() - 1].1);
        let mut replaced = String::with_capacity(end - start);
        let mut at = start;
        for (&(s, e), word) in window.iter().zip(&new) {
            replaced.push_str(&text[at..s]);
            replaced.push_str(word);
            at = e;
        }
        found.push((start, end, replaced));
        i += old.len();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::splices;

    fn apply(text: &str, needle: &str, with: &str) -> Option<String> {
        let found = splices(text, needle, with);
        let [(start, end, new)] = found.as_slice() else {
            return None;
        };
        Some(format!("{}{new}{}", &text[..*start], &text[*end..]))
    }

    #[test]
    fn a_json_key_without_its_quotes_is_found_and_only_the_value_changes() {
        let json = "{\n  \"name\": \"svc\",\n  \"debug\": false,\n  \"workers\": 4\n}\n";
        assert_eq!(
            apply(json, "debug: false", "debug: true").as_deref(),
            Some("{\n  \"name\": \"svc\",\n  \"debug\": true,\n  \"workers\": 4\n}\n")
        );
    }

    #[test]
    fn changes_beyond_words_or_far_apart_words_are_not_guessed() {
        let json = "{\"debug\": false}";
        // A new mark between the words: the model meant more than a word swap.
        assert!(splices(json, "debug: false", "debug = true").is_empty());
        // Words added or removed.
        assert!(splices(json, "debug: false", "debug: not false").is_empty());
        // One word is a plain search's job.
        assert!(splices(json, "false", "true").is_empty());
        // Nothing changes.
        assert!(splices(json, "debug: false", "debug: false").is_empty());
        // Words a line apart do not make a match.
        let far = "debug\n# ------------------------------\nfalse";
        assert!(splices(far, "debug false", "debug true").is_empty());
    }

    #[test]
    fn every_match_is_returned_so_the_caller_can_refuse_an_ambiguous_one() {
        let text = "a: 1\nb: 2\na: 1\n";
        assert_eq!(splices(text, "a 1", "a 3").len(), 2);
    }
}

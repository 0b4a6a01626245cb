//! Trigger words: whether a user message mentions one of a skill's triggers, as a whole word
//! and ignoring case. Scripts written without spaces between words (Chinese, Japanese, Thai)
//! have no word boundaries to look for, so there a trigger matches wherever it appears.
//!
//! Pure text functions: no I/O, no knowledge of skills beyond their trigger strings.

/// Characters that continue a word: a trigger `test` does not match `tests` or `test-suite`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Scripts written without spaces between words.
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0E7F // Thai
        | 0x3040..=0x30FF // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0x20000..=0x2FFFF) // CJK extensions B and later
}

/// Whether a match of `trigger` may end (or begin) next to `neighbour`.
fn boundary(neighbour: Option<char>, edge: Option<char>) -> bool {
    match neighbour {
        None => true,
        Some(n) => !is_word(n) || is_unspaced(n) || edge.is_some_and(is_unspaced),
    }
}

/// Whether `text_lower` (already lower-cased) mentions `trigger` (lower-cased) as a word.
pub(crate) fn mentions(text_lower: &str, trigger: &str) -> bool {
    if trigger.is_empty() {
        return false;
    }
    let first = trigger.chars().next();
    let last = trigger.chars().next_back();
    text_lower.match_indices(trigger).any(|(at, _)| {
        let before = text_lower[..at].chars().next_back();
        let after = text_lower[at + trigger.len()..].chars().next();
        boundary(before, first) && boundary(after, last)
    })
}

//! Cutting text without splitting a character: the one place that knows how to find a
//! character boundary and how a shortened line is marked. Plain functions of a string, so
//! every layer may use them.

/// The largest character boundary of `text` at or below `at` (`text.len()` when `at` is past
/// the end): where a cut by bytes may fall without splitting a UTF-8 sequence.
pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `text` cut to its first `max` characters, with `…` added when anything was cut: for a
/// one-line summary of a longer value.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

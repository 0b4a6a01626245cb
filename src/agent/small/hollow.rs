//! Replies that are no answer though they are not empty. Qwen2.5-Coder 1.5B ends some turns
//! with markup from its chat template and nothing in it (`<tools></tools>`, `<response>
//! </response>`), or by repeating the file minicode attached to the prompt
//! (`<attached-file path=…>` and its numbered lines). Such a reply is treated as an empty one:
//! reminded once in the small profile.

/// Whether `text` says nothing: only tags (`<name>`, `</name>`) and punctuation, or an echo of
/// an attachment of minicode's.
pub(super) fn hollow(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() {
        return false;
    }
    if text.starts_with("<attached-file") || text.starts_with("<attached-listing") {
        return true;
    }
    let mut rest = text;
    let mut words = String::new();
    while let Some(open) = rest.find('<') {
        words.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('>') {
            Some(close) if tag_name(&after[..close]) => rest = &after[close + 1..],
            _ => {
                words.push('<');
                rest = after;
            }
        }
    }
    words.push_str(rest);
    !words.chars().any(char::is_alphanumeric)
}

/// Whether `inside` (between `<` and `>`) is a bare tag name, opening or closing.
fn tag_name(inside: &str) -> bool {
    let name = inside.strip_prefix('/').unwrap_or(inside).trim();
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::hollow;

    #[test]
    fn template_markup_with_nothing_in_it_is_hollow() {
        for text in [
            "<tools></tools>",
            "<response>  </response>",
            " <tool_response>\n</tool_response> ",
            "<attached-file path=\"backoff.py\">\n 1\tBASE_MS = 100\n</attached-file>",
            "```\n```",
        ] {
            assert!(hollow(text), "{text:?}");
        }
    }

    #[test]
    fn answers_are_not_hollow_even_with_markup_or_comparisons() {
        for text in [
            "",
            "800",
            "<response>800</response>",
            "It returns 1 < 2 > 0.",
            "src/net/headers.rs",
            "<b>done</b>",
        ] {
            assert!(!hollow(text), "{text:?}");
        }
    }
}

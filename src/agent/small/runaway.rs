//! Runaway repetition in a streamed reply: a small model that loops writes the same stretch of
//! text again and again until its token limit. Detected as a tail of the reply that repeats
//! one unit of words (up to [`MAX_PERIOD`] bytes, holding a space and a non-space) at least
//! [`MIN_COPIES`] times over [`MIN_SPAN`] bytes or more; the reply is then cut after the first
//! copy. Pure: it only reads the text it is fed.

/// The longest repeating unit looked for, in bytes.
const MAX_PERIOD: usize = 400;
/// The fewest copies of the unit that count as a runaway.
const MIN_COPIES: usize = 4;
/// The fewest bytes the repetition must cover: a short list of equal lines is not a runaway.
const MIN_SPAN: usize = 1200;
/// How often (in bytes of new text) the tail is examined.
const STEP: usize = 256;

/// The text of one streamed reply so far, watched for runaway repetition.
#[derive(Debug, Default)]
pub(crate) struct Runaway {
    text: String,
    checked: usize,
}

impl Runaway {
    /// Adds a piece of the reply; `true` once the reply runs away.
    pub(crate) fn push(&mut self, piece: &str) -> bool {
        self.text.push_str(piece);
        if self.text.len() < self.checked + STEP {
            return false;
        }
        self.checked = self.text.len();
        self.repeat().is_some()
    }

    /// The reply so far, cut after the first copy of the repeated unit when it ran away.
    pub(crate) fn into_text(self) -> String {
        let mut text = self.text;
        if let Some(keep) = repeat_in(text.as_bytes()) {
            let mut keep = keep;
            while !text.is_char_boundary(keep) {
                keep += 1;
            }
            text.truncate(keep);
        }
        text
    }

    fn repeat(&self) -> Option<usize> {
        repeat_in(self.text.as_bytes())
    }
}

/// Where to cut `text` when its tail repeats: the end of the repeated stretch's first copy.
fn repeat_in(text: &[u8]) -> Option<usize> {
    let len = text.len();
    for period in 1..=MAX_PERIOD {
        let span = MIN_SPAN.max(period * MIN_COPIES);
        if span > len {
            break;
        }
        let start = len - span;
        // The cheap test first: this runs every STEP bytes for each of MAX_PERIOD periods, and
        // in ordinary text the last byte already differs from the one a period back.
        if text[len - 1] != text[len - 1 - period] {
            continue;
        }
        let unit = &text[start..start + period];
        // A unit of words: one long token ("aaaa…", a rule of "=") is left alone.
        let words = unit.iter().any(u8::is_ascii_whitespace)
            && unit.iter().any(|b| !b.is_ascii_whitespace());
        if words && text[start..len - period] == text[start + period..] {
            return Some(start + period);
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn feed(text: &str) -> Runaway {
        let mut r = Runaway::default();
        for piece in text.as_bytes().chunks(7) {
            r.push(std::str::from_utf8(piece).unwrap());
        }
        r
    }

    #[test]
    fn a_line_repeated_without_end_runs_away() {
        let line = "The file has been updated with the new content.\n";
        let text = format!("Done.\n{}", line.repeat(40));
        let mut r = Runaway::default();
        let tripped = text
            .as_bytes()
            .chunks(5)
            .any(|p| r.push(std::str::from_utf8(p).unwrap()));
        assert!(tripped);
        let kept = r.into_text();
        assert!(kept.starts_with("Done.\n"));
        assert!(kept.len() < 200, "{kept}");
    }

    #[test]
    fn a_word_loop_runs_away() {
        let mut r = Runaway::default();
        assert!((0..400).any(|_| r.push("very ")));
    }

    #[test]
    fn ordinary_text_does_not_run_away() {
        let text: String = (0..300)
            .map(|i| format!("line {i}: value {}\n", i * 7))
            .collect();
        let mut r = Runaway::default();
        assert!(!text.lines().any(|l| r.push(&format!("{l}\n"))));
        let r = feed(&"x = 1\n".repeat(10));
        assert_eq!(r.into_text(), "x = 1\n".repeat(10));
        let long = "a".repeat(10_000);
        assert_eq!(
            feed(&long).into_text(),
            long,
            "one long token is no runaway"
        );
    }
}

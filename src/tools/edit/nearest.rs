//! Where in a file the text closest to a missing `old_string` is, for `edit`'s "not found"
//! answer: the model sees the lines it most likely meant and can copy them exactly, instead
//! of guessing again. Lines are compared by the character pairs they share (a Dice
//! coefficient), which forgives a typo, a changed word or a lost indent. Pure: it compares
//! text and formats lines; redaction is the caller's.

/// A span must share at least this much with `old_string` (0 to 1) to be shown.
const MIN_SIMILARITY: f64 = 0.5;
/// Lines shown at most.
const MAX_SHOWN: usize = 12;
/// Characters of one shown line at most.
const MAX_LINE_CHARS: usize = 300;
/// A file with more lines is not searched (the answer would come too slowly to matter).
const MAX_FILE_LINES: usize = 50_000;

/// The lines of `text` closest to `wanted`, numbered like `read`'s output (`first-last` and
/// the lines), or `None` when no span is close enough.
pub(super) fn closest(text: &str, wanted: &str) -> Option<(usize, usize, String)> {
    let wanted: Vec<Vec<(char, char)>> = wanted
        .lines()
        .map(|l| pairs(l.trim()))
        .skip_while(Vec::is_empty)
        .take(MAX_SHOWN)
        .collect();
    let lines: Vec<&str> = text.lines().collect();
    if wanted.is_empty() || lines.len() > MAX_FILE_LINES {
        return None;
    }
    let file: Vec<Vec<(char, char)>> = lines.iter().map(|l| pairs(l.trim())).collect();
    let mut best: Option<(usize, f64)> = None;
    for start in 0..file.len() {
        let span = &file[start..file.len().min(start + wanted.len())];
        let total: f64 = span.iter().zip(&wanted).map(|(a, b)| dice(a, b)).sum();
        let score = total / wanted.len() as f64;
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((start, score));
        }
    }
    let (start, score) = best?;
    if score < MIN_SIMILARITY {
        return None;
    }
    let end = lines.len().min(start + wanted.len());
    let shown = lines[start..end]
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let line: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{:>6}\t{line}\n", start + i + 1)
        })
        .collect();
    Some((start + 1, end, shown))
}

/// The sorted character pairs of `line`.
fn pairs(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.chars().collect();
    let mut pairs: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    pairs.sort_unstable();
    pairs
}

/// How much two sorted pair lists share, from 0 to 1 (two blank lines are alike).
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_lines_are_found_despite_a_changed_word() {
        let text = "# Title\n\nfn main() {\n    let port = 8080;\n    serve(port);\n}\n";
        let (first, last, shown) = closest(text, "let port = 9090;\nserve(port)").unwrap();
        assert_eq!((first, last), (4, 5), "{shown}");
        assert!(shown.contains("     4\t    let port = 8080;"), "{shown}");
    }

    #[test]
    fn nothing_is_shown_when_nothing_is_close() {
        let text = "alpha\nbeta\ngamma\n";
        assert!(closest(text, "completely unrelated words here").is_none());
        assert!(closest(text, "   \n").is_none());
    }
}

//! What the model reads of a server's diagnostics: the errors (warnings too when asked) that
//! were not there before the edit, at most a few, as `path:line:col: message` lines under a
//! short heading. Pure functions of data; the client turns the protocol's diagnostics into
//! [`Diag`]s.

use std::collections::HashMap;

/// How serious a diagnostic is (the protocol's severities; a missing one counts as an error,
/// as the protocol leaves it to the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Severity {
    Error,
    Warning,
    /// Information and hints: never reported.
    Other,
}

/// One diagnostic, positions 1-based as editors and compilers show them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diag {
    pub(crate) line: u32,
    pub(crate) column: u32,
    pub(crate) severity: Severity,
    pub(crate) message: String,
}

/// The diagnostics of `after` worth reporting that `before` did not have. A diagnostic is
/// the same as an earlier one when its severity and message are: an edit above it moves its
/// line, which must not make an old error look new. Each earlier one excuses one later one.
pub(crate) fn fresh<'a>(before: &[Diag], after: &'a [Diag], warnings: bool) -> Vec<&'a Diag> {
    let mut known: HashMap<(Severity, &str), usize> = HashMap::new();
    for d in before {
        *known.entry((d.severity, d.message.as_str())).or_default() += 1;
    }
    after
        .iter()
        .filter(|d| match d.severity {
            Severity::Error => true,
            Severity::Warning => warnings,
            Severity::Other => false,
        })
        .filter(|d| match known.get_mut(&(d.severity, d.message.as_str())) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

/// The text appended to the tool result, `None` when there is nothing new. `display` is the
/// file as the model named it; `server` the language (`python`).
pub(crate) fn render(display: &str, server: &str, fresh: &[&Diag], max: usize) -> Option<String> {
    if fresh.is_empty() || max == 0 {
        return None;
    }
    let errors = fresh
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let what = match (errors, fresh.len() - errors) {
        (e, 0) => plural(e, "new error"),
        (0, w) => plural(w, "new warning"),
        (e, w) => format!(
            "{} and {}",
            plural(e, "new error"),
            plural(w, "new warning")
        ),
    };
    let mut out = format!("\n\nThe {server} language server reports {what} after this change:");
    for d in fresh.iter().take(max) {
        let kind = match d.severity {
            Severity::Error => "error",
            _ => "warning",
        };
        // One line each: a multi-line message keeps its first line.
        let message = d.message.lines().next().unwrap_or_default().trim();
        out.push_str(&format!(
            "\n{display}:{}:{}: {kind}: {message}",
            d.line, d.column
        ));
    }
    if fresh.len() > max {
        out.push_str(&format!("\n… and {} more", fresh.len() - max));
    }
    Some(out)
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn diag(line: u32, severity: Severity, message: &str) -> Diag {
        Diag {
            line,
            column: 1,
            severity,
            message: message.into(),
        }
    }

    #[test]
    fn only_new_errors_count_and_a_moved_old_one_is_not_new() {
        let before = [diag(3, Severity::Error, "undefined name `x`")];
        let after = [
            diag(5, Severity::Error, "undefined name `x`"),
            diag(7, Severity::Error, "undefined name `y`"),
            diag(8, Severity::Warning, "unused import"),
            diag(9, Severity::Other, "hint"),
        ];
        let new = fresh(&before, &after, false);
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].line, 7);
        assert_eq!(fresh(&before, &after, true).len(), 2);
    }

    #[test]
    fn a_second_copy_of_an_old_error_is_new() {
        let before = [diag(1, Severity::Error, "e")];
        let after = [diag(1, Severity::Error, "e"), diag(2, Severity::Error, "e")];
        assert_eq!(fresh(&before, &after, false).len(), 1);
    }

    #[test]
    fn the_report_names_path_line_and_column_and_caps_the_count() {
        let after: Vec<Diag> = (1..=4)
            .map(|i| diag(i, Severity::Error, &format!("bad {i}\nmore")))
            .collect();
        let new = fresh(&[], &after, false);
        let text = render("src/a.py", "python", &new, 2).unwrap();
        assert!(text.contains("reports 4 new errors"), "{text}");
        assert!(text.contains("\nsrc/a.py:1:1: error: bad 1"), "{text}");
        assert!(text.contains("\nsrc/a.py:2:1: error: bad 2"), "{text}");
        assert!(!text.contains("bad 3"), "{text}");
        assert!(!text.contains("more\n"), "{text}");
        assert!(text.ends_with("… and 2 more"), "{text}");
        assert_eq!(render("a.py", "python", &[], 5), None);
    }
}

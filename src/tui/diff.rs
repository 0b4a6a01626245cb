//! A unified diff (a `write`/`edit` approval) as coloured lines: headers bold, hunk markers
//! cyan, removed lines red, added lines with a green marker and the new side's code
//! highlighted for the file's language (context lines too), so the change reads like code.
//!
//! Pure: diff text in, lines out; highlighting only through `highlight.rs`.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight;
use super::wrap::sanitize;
use super::wrap::{wrap_hard, wrap_hard_runs};

/// The diff of `path`, indented by `indent` columns, at `width`.
pub(super) fn lines(path: &str, diff: &str, width: usize, indent: usize) -> Vec<Line<'static>> {
    let pad = || vec![Span::raw(" ".repeat(indent))];
    let diff = sanitize(diff);
    let all: Vec<&str> = diff.lines().collect();
    // The new side (context and added lines) is highlighted as one text, in order, so
    // constructs spanning lines (strings, comments) keep their colour.
    let ext = path.rsplit('.').next().filter(|e| *e != path).unwrap_or("");
    let new_side: Vec<usize> = (0..all.len()).filter(|&i| is_new_side(all[i])).collect();
    let text: Vec<&str> = new_side.iter().map(|&i| &all[i][1..]).collect();
    let highlighted = (!ext.is_empty() && !text.is_empty())
        .then(|| highlight::code(ext, &text.join("\n"), Style::new()))
        .flatten();
    let mut next = 0;
    let mut out = Vec::new();
    for (i, l) in all.iter().enumerate() {
        let runs = highlighted.as_ref().and_then(|h| {
            (new_side.get(next) == Some(&i)).then(|| {
                next += 1;
                h.get(next - 1)
            })?
        });
        match runs {
            Some(runs) => {
                let marker = if l.starts_with('+') {
                    Style::new().fg(Color::Green).add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                let mut first = pad();
                first.push(Span::styled(l[..1].to_string(), marker));
                let mut rest = pad();
                rest.push(Span::raw(" "));
                let runs: Vec<(Style, &str)> = runs.iter().map(|(s, t)| (*s, t.as_str())).collect();
                out.extend(wrap_hard_runs(&runs, width, first, rest));
            }
            None => out.extend(wrap_hard(l, width, pad(), pad(), style(l))),
        }
    }
    out
}

fn is_new_side(line: &str) -> bool {
    (line.starts_with('+') && !line.starts_with("+++")) || line.starts_with(' ')
}

/// The plain colour of a diff line.
pub(crate) fn style(line: &str) -> Style {
    if line.starts_with("+++") || line.starts_with("---") {
        Style::new().add_modifier(Modifier::BOLD)
    } else if line.starts_with('+') {
        Style::new().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::new().fg(Color::Red)
    } else if line.starts_with("@@") {
        Style::new().fg(Color::Cyan)
    } else {
        Style::new()
    }
}

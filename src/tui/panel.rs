//! A titled block of name/value rows in the transcript: the welcome header, `/help` and
//! `/model` use it. Names form an aligned column; values wrap under themselves.
//!
//! Only layout here; what the rows say is decided by `tui/help.rs`.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{self, Run, sanitize};

/// One panel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Panel {
    pub(crate) title: String,
    /// Section headings (a row whose name is empty and whose value is the heading) and rows.
    pub(crate) rows: Vec<(String, String)>,
    /// A dim line under the rows (hints).
    pub(crate) footer: Option<String>,
}

impl Panel {
    pub(crate) fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            ..Self::default()
        }
    }

    pub(crate) fn row(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.rows.push((name.into(), value.into()));
        self
    }

    /// A heading between rows.
    pub(crate) fn section(mut self, heading: impl Into<String>) -> Self {
        self.rows.push((String::new(), heading.into()));
        self
    }

    pub(crate) fn footer(mut self, text: impl Into<String>) -> Self {
        self.footer = Some(text.into());
        self
    }
}

/// The panel's lines at `width`.
pub(crate) fn lines(p: &Panel, width: usize) -> Vec<Line<'static>> {
    let title = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let name_style = Style::new().fg(Color::Cyan);
    let heading = Style::new().add_modifier(Modifier::BOLD);
    let dim = Style::new().fg(Color::DarkGray);
    let mut out = vec![Line::from(Span::styled(
        format!("▌ {}", sanitize(&p.title)),
        title,
    ))];
    let col = p
        .rows
        .iter()
        .filter(|(n, _)| !n.is_empty())
        .map(|(n, _)| wrap::width(n))
        .max()
        .unwrap_or(0)
        .min(width / 3);
    for (name, value) in &p.rows {
        if name.is_empty() {
            out.push(Line::from(Span::styled(
                format!("  {}", sanitize(value)),
                heading,
            )));
            continue;
        }
        let name = wrap::truncate(&sanitize(name), col);
        let pad = " ".repeat(col.saturating_sub(wrap::width(&name)));
        let first = [
            Span::raw("  "),
            Span::styled(format!("{name}{pad}"), name_style),
            Span::raw("  "),
        ];
        let rest = [Span::raw(" ".repeat(col + 4))];
        out.extend(wrap::wrap(
            &[Run::new(sanitize(value), Style::new())],
            width,
            &first,
            &rest,
        ));
    }
    if let Some(f) = &p.footer {
        out.extend(wrap::wrap(
            &[Run::new(sanitize(f), dim)],
            width,
            &[Span::raw("  ")],
            &[Span::raw("  ")],
        ));
    }
    out
}

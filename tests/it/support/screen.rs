//! The full-screen state drawn into ratatui's `TestBackend`: the buffer, and a text form
//! that keeps styles (a `[fg,bg,modifiers]` marker wherever the style changes) for snapshots
//! of colours and attributes.

use minicode::tui::state::State;
use minicode::tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

/// The frame `s` draws, as text: one line per row (the `TestBackend`'s own rendering).
pub fn text(s: &State) -> String {
    let mut term = Terminal::new(TestBackend::new(s.size.0, s.size.1)).unwrap();
    term.draw(|f| view::render(s, f)).unwrap();
    term.backend().to_string()
}

/// The frame `s` draws.
pub fn buffer(s: &State) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(s.size.0, s.size.1)).unwrap();
    term.draw(|f| view::render(s, f)).unwrap();
    term.backend().buffer().clone()
}

/// Rows `rows` of `buf` as runs of equal style; blank rows are skipped.
pub fn styled(buf: &Buffer, rows: std::ops::Range<u16>) -> String {
    let mut out = String::new();
    for y in rows {
        let text: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        if text.trim().is_empty() {
            continue;
        }
        let mut line = String::new();
        let mut last = None;
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            let key = (c.fg, c.bg, c.modifier);
            if last != Some(key) {
                let mods = if c.modifier.is_empty() {
                    String::new()
                } else {
                    format!(",{:?}", c.modifier)
                };
                line.push_str(&format!("[{:?},{:?}{mods}]", c.fg, c.bg));
                last = Some(key);
            }
            line.push_str(c.symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The row of `buf` showing `needle`.
pub fn row_of(buf: &Buffer, needle: &str) -> u16 {
    (0..buf.area.height)
        .find(|&y| {
            let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
            row.contains(needle)
        })
        .unwrap_or_else(|| panic!("{needle} on screen"))
}

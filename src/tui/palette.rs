//! Colour for the terminal at hand: `NO_COLOR` (no colour at all; bold, italics, underline
//! and reverse kept, and what had a background colour is shown reversed so bars and
//! selections stay visible) and the colour depth (truecolor, 256 or 16 colours). The view
//! draws with any colour it likes; this pass maps a finished frame down to what the terminal
//! can show.
//!
//! Reads the environment only in [`Depth::detect`]; the mapping is pure.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

/// What the terminal can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Depth {
    /// 24-bit colour.
    #[default]
    TrueColor,
    /// The xterm 256-colour palette.
    Ansi256,
    /// The 16 named colours.
    Ansi16,
    /// No colour (`NO_COLOR`): attributes only.
    NoColor,
}

impl Depth {
    /// From the environment: `NO_COLOR` (set and not empty) wins; `COLORTERM=truecolor` or
    /// `24bit` gives 24-bit; a `TERM` naming 256 colours gives 256; anything else 16.
    pub fn detect(env: impl Fn(&str) -> Option<String>) -> Self {
        if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return Depth::NoColor;
        }
        let colorterm = env("COLORTERM").unwrap_or_default().to_ascii_lowercase();
        if colorterm == "truecolor" || colorterm == "24bit" {
            return Depth::TrueColor;
        }
        let term = env("TERM").unwrap_or_default();
        if term.contains("256color") || term.contains("direct") {
            Depth::Ansi256
        } else {
            Depth::Ansi16
        }
    }
}

/// Maps every cell of `area` to `depth`.
pub fn apply(depth: Depth, buf: &mut Buffer, area: Rect) {
    if depth == Depth::TrueColor {
        return;
    }
    let area = area.intersection(buf.area);
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            match depth {
                Depth::NoColor => {
                    if cell.bg != Color::Reset {
                        cell.modifier.insert(Modifier::REVERSED);
                    }
                    cell.fg = Color::Reset;
                    cell.bg = Color::Reset;
                }
                Depth::Ansi256 => {
                    cell.fg = to_256(cell.fg);
                    cell.bg = to_256(cell.bg);
                }
                Depth::Ansi16 => {
                    cell.fg = to_16(cell.fg);
                    cell.bg = to_16(cell.bg);
                }
                Depth::TrueColor => {}
            }
        }
    }
}

/// The nearest xterm 256-colour index for a 24-bit colour.
fn to_256(c: Color) -> Color {
    let Color::Rgb(r, g, b) = c else { return c };
    let level = |v: u8| -> u8 {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube = 16 + 36 * lr + 6 * lg + lb;
    let cube_rgb = index_rgb(cube);
    // The grey ramp may be closer for greys.
    let avg = ((r as u16 + g as u16 + b as u16) / 3) as u8;
    let grey = if avg > 238 {
        255
    } else {
        232 + avg.saturating_sub(3) / 10
    };
    let grey_rgb = index_rgb(grey);
    if distance((r, g, b), grey_rgb) < distance((r, g, b), cube_rgb) {
        Color::Indexed(grey)
    } else {
        Color::Indexed(cube)
    }
}

const NAMED: [(Color, (u8, u8, u8)); 16] = [
    (Color::Black, (0, 0, 0)),
    (Color::Red, (205, 0, 0)),
    (Color::Green, (0, 205, 0)),
    (Color::Yellow, (205, 205, 0)),
    (Color::Blue, (0, 0, 238)),
    (Color::Magenta, (205, 0, 205)),
    (Color::Cyan, (0, 205, 205)),
    (Color::Gray, (229, 229, 229)),
    (Color::DarkGray, (127, 127, 127)),
    (Color::LightRed, (255, 0, 0)),
    (Color::LightGreen, (0, 255, 0)),
    (Color::LightYellow, (255, 255, 0)),
    (Color::LightBlue, (92, 92, 255)),
    (Color::LightMagenta, (255, 0, 255)),
    (Color::LightCyan, (0, 255, 255)),
    (Color::White, (255, 255, 255)),
];

/// The nearest of the 16 named colours.
fn to_16(c: Color) -> Color {
    let rgb = match c {
        Color::Rgb(r, g, b) => (r, g, b),
        Color::Indexed(i) if i < 16 => return NAMED[i as usize].0,
        Color::Indexed(i) => index_rgb(i),
        other => return other,
    };
    NAMED
        .iter()
        .min_by_key(|(_, n)| distance(rgb, *n))
        .map_or(c, |(named, _)| *named)
}

/// The colour of an xterm palette index from 16 on.
fn index_rgb(i: u8) -> (u8, u8, u8) {
    if i >= 232 {
        let v = 8 + 10 * (i - 232);
        return (v, v, v);
    }
    let i = i.saturating_sub(16);
    let step = |n: u8| if n == 0 { 0 } else { 55 + 40 * n };
    (step(i / 36), step((i / 6) % 6), step(i % 6))
}

fn distance(a: (u8, u8, u8), b: (u8, u8, u8)) -> u32 {
    let d = |x: u8, y: u8| (x as i32 - y as i32).unsigned_abs();
    // Weighted for the eye's sensitivity (green most, blue least).
    3 * d(a.0, b.0).pow(2) + 4 * d(a.1, b.1).pow(2) + 2 * d(a.2, b.2).pow(2)
}

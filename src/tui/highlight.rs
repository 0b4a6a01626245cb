//! Syntax highlighting of code (fenced blocks with a language tag, the new side of a diff):
//! syntect's Sublime grammars on its pure-Rust regex engine, coloured by a small map from
//! scopes to the terminal's named colours (so a 16-colour terminal and `NO_COLOR` get what
//! the palette pass makes of them, see `palette.rs`).
//!
//! A language's grammars are loaded on its first highlight, never before (`syntax_packs.rs`):
//! a session that shows no tagged code does not pay for them, one that shows Rust pays for
//! Rust only. Callers highlight closed text only, once, and cache the
//! lines. An unknown language, or a grammar the engine cannot run, gives `None`: plain code.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ratatui::style::{Color, Modifier, Style};
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as SynColor, FontStyle, ScopeSelectors, StyleModifier, Theme, ThemeItem, ThemeSettings,
};
use syntect::parsing::{SyntaxReference, SyntaxSet};

use super::syntax_packs;
use crate::sync::lock;

/// One line of highlighted code: (style, text) runs.
pub(crate) type Runs = Vec<(Style, String)>;

/// Highlighted blocks remembered by content, so a relayout (a resize, the exit transcript)
/// or a block seen before costs a lookup; the memo is dropped whole when it is full.
const MEMO_BLOCKS: usize = 1024;

type Memo = HashMap<(u64, usize), Option<Arc<Vec<Runs>>>>;

fn memo() -> &'static Mutex<Memo> {
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    MEMO.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Code longer than this is shown plain (highlighting is linear, but a huge block is rare
/// and not worth the time of its first frame).
const MAX_BYTES: usize = 256 * 1024;

/// Whether highlighting is on for this process (`[ui] syntax_highlighting`, off under
/// `NO_COLOR`): set once by the session at start, before anything is drawn.
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns highlighting on or off (off: every block is plain code, nothing is loaded).
pub(crate) fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// The named colours are carried through syntect in the red channel (alpha 0 marks them).
const fn named(index: u8) -> SynColor {
    SynColor {
        r: index,
        g: 0,
        b: 0,
        a: 0,
    }
}

const RULES: &[(&str, SynColor, Option<FontStyle>)] = &[
    (
        "comment, punctuation.definition.comment",
        named(8),
        Some(FontStyle::ITALIC),
    ),
    ("string, constant.character, markup.raw", named(2), None),
    (
        "constant.numeric, constant.language, constant.other, support.constant",
        named(3),
        None,
    ),
    (
        "keyword, storage.modifier, keyword.operator.word",
        named(5),
        None,
    ),
    (
        "storage.type, support.type, entity.name.type, entity.name.class, entity.name.struct, entity.name.enum, entity.other.inherited-class",
        named(6),
        None,
    ),
    (
        "entity.name.function, support.function, meta.function-call variable.function, variable.function",
        named(4),
        None,
    ),
    ("entity.name.tag, meta.tag", named(4), None),
    (
        "entity.other.attribute-name, variable.other.member",
        named(14),
        None,
    ),
    (
        "markup.heading, entity.name.section",
        named(6),
        Some(FontStyle::BOLD),
    ),
    ("markup.inserted", named(2), None),
    ("markup.deleted", named(1), None),
    ("invalid", named(1), None),
];

fn theme() -> &'static Theme {
    static THEME: OnceLock<Theme> = OnceLock::new();
    THEME.get_or_init(|| Theme {
        name: Some("minicode".into()),
        author: None,
        settings: ThemeSettings::default(),
        scopes: RULES
            .iter()
            .filter_map(|(selector, colour, font)| {
                Some(ThemeItem {
                    scope: ScopeSelectors::from_str(selector).ok()?,
                    style: StyleModifier {
                        foreground: Some(*colour),
                        background: None,
                        font_style: *font,
                    },
                })
            })
            .collect(),
    })
}

/// The grammar for a fence's language tag or a file's extension (`rust`, `rs`, `py`, `sh`…),
/// with the set it lives in.
fn find(lang: &str) -> Option<(&'static SyntaxSet, &'static SyntaxReference)> {
    let lang = lang.trim().to_ascii_lowercase();
    if lang.is_empty() || lang == "text" || lang == "txt" || lang == "plain" {
        return None;
    }
    let alias = match lang.as_str() {
        "shell" | "console" | "zsh" | "bash" | "sh" => "sh",
        "js" | "javascript" | "jsx" | "ts" | "typescript" | "tsx" => "js",
        "py" | "python" | "python3" => "py",
        "c++" | "cpp" => "cpp",
        "golang" => "go",
        "yml" => "yaml",
        "md" | "markdown" => "md",
        other => other,
    };
    syntax_packs::find(alias)
}

/// Highlights `code` (lines without their `\n`) as `lang`; `base` is the style of text no
/// rule colours. `None` when the language is unknown or the grammar fails on this text.
pub fn code(lang: &str, code: &str, base: Style) -> Option<Arc<Vec<Runs>>> {
    if code.len() > MAX_BYTES || !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (lang, code, base).hash(&mut h);
    let key = (h.finish(), code.len());
    if let Some(hit) = lock(memo()).get(&key).cloned() {
        return hit;
    }
    let lines = highlight(lang, code, base).map(Arc::new);
    let mut m = lock(memo());
    if m.len() >= MEMO_BLOCKS {
        m.clear();
    }
    m.insert(key, lines.clone());
    drop(m);
    lines
}

fn highlight(lang: &str, code: &str, base: Style) -> Option<Vec<Runs>> {
    let (set, syntax) = find(lang)?;
    let mut h = HighlightLines::new(syntax, theme());
    let mut out = Vec::new();
    let mut line = String::new();
    for src in code.split('\n') {
        line.clear();
        line.push_str(src);
        line.push('\n');
        let ranges = h.highlight_line(&line, set).ok()?;
        let runs = ranges
            .into_iter()
            .map(|(s, text)| (style(s, base), text.trim_end_matches('\n').to_string()))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        out.push(runs);
    }
    Some(out)
}

fn style(s: syntect::highlighting::Style, base: Style) -> Style {
    let mut out = base;
    let c = s.foreground;
    if c.a == 0
        && c.g == 0
        && c.b == 0
        && let Some(colour) = NAMED.get(c.r as usize)
    {
        out = out.fg(*colour);
    }
    if s.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    out
}

const NAMED: [Color; 16] = [
    Color::Black,
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::Gray,
    Color::DarkGray,
    Color::LightRed,
    Color::LightGreen,
    Color::LightYellow,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightCyan,
    Color::White,
];

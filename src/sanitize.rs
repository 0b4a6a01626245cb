//! Text hygiene for anything shown on a terminal: text from a model, a tool, a server or a
//! repository file is made inert here before any frontend writes it. Shared by the one-shot
//! printer, the full-screen UI and the CLI's own messages; it knows nothing about either.
//!
//! Two kinds of character are neutralised:
//! - controls (C0 except `\n`, DEL, C1 including the 8-bit CSI `U+009B`): they could move the
//!   cursor, clear the screen, set the title or the clipboard. ESC becomes a visible `␛`, the
//!   rest `U+FFFD`; `\t` becomes spaces and `\r` is dropped, so nothing can overwrite a line.
//! - characters that hide or reorder text without being seen: bidi embeddings, overrides,
//!   isolates and marks (the "Trojan Source" characters), zero-width spaces, word joiners,
//!   BOMs, invisible fillers. They become a visible `U+FFFD`, so what the user reads (say, a
//!   command to approve) is what the bytes say. `U+2028`/`U+2029` become `\n`.
//!
//! A few invisible characters are part of ordinary text and stay where they do that job, and
//! only there: the zero-width (non-)joiner `U+200D`/`U+200C` right after a non-ASCII character
//! (emoji sequences such as 👩‍💻, Persian and Indic words), one variation selector right after
//! a visible character (❤️, keycaps), and tag characters only in a flag sequence that starts
//! with 🏴. Anywhere else they could hide text (a word joiner inside `passwd`, a run of
//! selectors smuggling bytes), so they are shown as `U+FFFD` too.
//!
//! Every character is judged on its own (plus the one before it), never by looking for whole
//! escape sequences, so text that arrives in pieces (streamed deltas) is just as safe: an ESC
//! at the end of one piece is already inert before the next piece arrives. [`Stream`] carries
//! the one character of context across pieces.

mod rewrites;
pub(crate) mod text;

pub(crate) use rewrites::collapse_rewrites;

/// Columns a tab expands to (tabs have no width of their own in a cell grid).
pub(crate) const TAB: &str = "    ";

/// What a character that could hide or reorder text is shown as.
const HIDDEN: char = '\u{fffd}';

/// Replaces every control character except `\n` and every character that could hide text with
/// something inert, so text from a model or a tool can never move the cursor, switch screens,
/// set the clipboard or show something other than what it says. ESC becomes a visible `␛`;
/// `\t` becomes spaces; `\r` is dropped (CRLF is the common case).
pub fn sanitize(text: &str) -> String {
    if is_plain(text) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    Stream::default().clean_into(text, Tabs::Spaces, &mut out);
    out
}

/// Like [`sanitize`], but tabs stay tabs: for text put on the clipboard, where indentation
/// (a Makefile, Go code) must survive, while nothing that would act on the terminal it is
/// pasted into (ESC, a bracketed-paste end marker, `\r`) may.
pub fn for_clipboard(text: &str) -> String {
    if is_plain(text) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    Stream::default().clean_into(text, Tabs::Keep, &mut out);
    out
}

/// Sanitises text that arrives in pieces, e.g. streamed reply deltas written straight to a
/// terminal. The result is the same as sanitising the whole text at once, because the only
/// context a character needs (the character before it) is carried from piece to piece.
#[derive(Debug, Default, Clone)]
pub struct Stream {
    /// The last character kept as itself; `None` at the start or after a replaced one.
    prev: Option<char>,
}

impl Stream {
    /// The sanitised form of the next piece.
    pub fn push(&mut self, piece: &str) -> String {
        let mut out = String::with_capacity(piece.len());
        if is_plain(piece) {
            out.push_str(piece);
            self.prev = piece.chars().next_back().or(self.prev);
        } else {
            self.clean_into(piece, Tabs::Spaces, &mut out);
        }
        out
    }

    fn clean_into(&mut self, text: &str, tabs: Tabs, out: &mut String) {
        for c in text.chars() {
            if !touched(c) {
                out.push(c);
                self.prev = Some(c);
                continue;
            }
            let kept = match c {
                '\t' => {
                    match tabs {
                        Tabs::Spaces => out.push_str(TAB),
                        Tabs::Keep => out.push('\t'),
                    }
                    self.prev = Some(' ');
                    continue;
                }
                '\r' => {
                    self.prev = None;
                    continue;
                }
                '\u{2028}' | '\u{2029}' => {
                    out.push('\n');
                    self.prev = Some('\n');
                    continue;
                }
                '\u{1b}' => {
                    out.push('␛');
                    self.prev = None;
                    continue;
                }
                c if is_control(c) || is_invisible(c) => false,
                c if is_joiner(c) => self
                    .prev
                    .is_some_and(|p| !p.is_ascii() && !is_tag(p) && p != '\n'),
                c if is_selector(c) => self
                    .prev
                    .is_some_and(|p| p != '\n' && p != ' ' && !is_contextual(p)),
                '\u{e007f}' => self.prev.is_some_and(is_tag),
                c if is_tag(c) => self.prev.is_some_and(|p| p == '\u{1f3f4}' || is_tag(p)),
                _ => true,
            };
            if kept {
                out.push(c);
                // A cancel tag ends its flag: no further tag may follow it.
                self.prev = (c != '\u{e007f}').then_some(c);
            } else {
                out.push(HIDDEN);
                self.prev = None;
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Tabs {
    Spaces,
    Keep,
}

/// Nothing to do: printable ASCII and `\n` only (the common case, checked byte-wise), or no
/// character that any rule touches.
fn is_plain(text: &str) -> bool {
    text.bytes()
        .all(|b| (0x20..0x7f).contains(&b) || b == b'\n')
        || !text.chars().any(touched)
}

/// Whether any rule changes `c` (or looks at its neighbour): a quick answer for the common
/// ranges (Latin, CJK and most scripts, emoji), the full tables for the rest.
fn touched(c: char) -> bool {
    match c as u32 {
        0x0a | 0x20..=0x7e | 0xa0..=0x34e | 0x3165..=0xfdff | 0x1f000..=0x1ffff => false,
        0x00..=0x1f | 0x7f..=0x9f => true,
        _ => is_invisible(c) || is_contextual(c),
    }
}

/// C0, DEL and C1 controls (C1 includes the 8-bit CSI `\u{9b}`).
pub(crate) fn is_control(c: char) -> bool {
    let n = c as u32;
    n < 0x20 || (0x7f..=0x9f).contains(&n)
}

/// Characters that are never shown as themselves: they reorder text (bidi controls and
/// marks), take no room (zero-width space, word joiner, invisible operators, BOM, the
/// interlinear annotation marks, unassigned ignorables) or look like blank space while not
/// being one (Hangul fillers, the Mongolian vowel separator). Context-dependent invisibles
/// (joiners, variation selectors, tags) are not included: see [`Stream`].
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{034f}'                      // combining grapheme joiner
            | '\u{061c}'                // Arabic letter mark (bidi)
            | '\u{115f}' | '\u{1160}'   // Hangul choseong/jungseong fillers
            | '\u{17b4}' | '\u{17b5}'   // Khmer inherent vowels
            | '\u{180b}'..='\u{180f}'   // Mongolian variation selectors, vowel separator
            | '\u{200b}'                // zero-width space
            | '\u{200e}' | '\u{200f}'   // left-to-right / right-to-left marks
            | '\u{2028}' | '\u{2029}'   // line / paragraph separators
            | '\u{202a}'..='\u{202e}'   // bidi embeddings and overrides
            | '\u{2060}'..='\u{206f}'   // word joiner, invisible operators, bidi isolates
            | '\u{3164}'                // Hangul filler
            | '\u{feff}'                // BOM / zero-width no-break space
            | '\u{ffa0}'                // halfwidth Hangul filler
            | '\u{fff0}'..='\u{fffb}'   // unassigned specials, interlinear annotation
            | '\u{1bca0}'..='\u{1bca3}' // shorthand format controls
            | '\u{1d173}'..='\u{1d17a}' // musical symbol format controls
            | '\u{e0000}'..='\u{e001f}' // language tag and unassigned ignorables
            | '\u{e0080}'..='\u{e00ff}'
            | '\u{e01f0}'..='\u{e0fff}'
    )
}

/// Zero-width non-joiner and joiner: kept only after a non-ASCII character.
fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200c}' | '\u{200d}')
}

/// Variation selectors (emoji/text presentation, and the supplement used by ideographs):
/// one is kept after a visible character.
fn is_selector(c: char) -> bool {
    matches!(c, '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}

/// Tag characters: kept only inside a flag sequence that starts with 🏴 (U+1F3F4).
fn is_tag(c: char) -> bool {
    matches!(c, '\u{e0020}'..='\u{e007e}')
}

/// Characters whose place is decided by their neighbour.
fn is_contextual(c: char) -> bool {
    is_joiner(c) || is_selector(c) || is_tag(c) || c == '\u{e007f}'
}

/// `text` on one line with every control character and every invisible or reordering
/// character shown as an escape (`\u{1b}`, `\n`, `\u{202e}`), for names and paths that come
/// from files (a session's first prompt, a config key): the user sees exactly what is there,
/// and nothing in it can act on the terminal.
pub fn visible(text: &str) -> String {
    let hidden = |c: char| is_control(c) || is_invisible(c) || is_contextual(c);
    if !text.chars().any(hidden) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A line of JSON (as `serde_json` writes it) with every control, invisible or reordering
/// character inside its strings written as a `\u` escape: the same JSON value, but nothing in
/// it can act on a terminal when a user runs a JSON output format there. `serde_json` already
/// escapes C0 controls; this adds DEL, C1 (the 8-bit CSI) and the characters [`sanitize`]
/// would hide. Outside strings JSON is ASCII, so every such character is inside one.
pub fn json_escaped(line: &str) -> String {
    let hidden = |c: char| is_control(c) || is_invisible(c) || is_contextual(c);
    if is_plain(line) || !line.chars().any(hidden) {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

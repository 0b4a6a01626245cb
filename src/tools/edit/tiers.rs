//! Where `old_string` is in a file, in tiers tried in order from strict to forgiving: exact;
//! ignoring trailing whitespace per line; ignoring indentation (the replacement re-indented to
//! the file's); with Unicode punctuation normalised too (curly quotes, dashes, odd spaces).
//! Small models get these wrong most often, and an edit that lands saves a re-read and a retry.
//!
//! Every tier keeps edit's rule that a match must be unique: the first tier that finds any
//! match decides, and several matches there are an error naming their lines. This module only
//! finds and splices text; it never touches the file.

use serde::{Deserialize, Serialize};

/// Which tier found `old_string`: the looser the tier, the further the model's text was from
/// the file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Byte for byte.
    Exact,
    /// Equal once trailing spaces and tabs of each line are ignored.
    TrailingWhitespace,
    /// Equal line by line once leading and trailing whitespace are ignored.
    Indentation,
    /// Equal once curly quotes, dashes and non-breaking spaces read as their ASCII forms
    /// (with whitespace ignored as in the tiers before).
    Punctuation,
    /// Equal word for word (letters, digits and `_`), whatever the quoting and spacing between
    /// the words: `debug: false` for `"debug": false`. Only when `new_string` changes words
    /// alone (the same number of words, the same marks between them), and only those words
    /// change in the file, so its quoting stays.
    Words,
}

impl Tier {
    /// How the result names it to the model.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::Exact => "exact match",
            Tier::TrailingWhitespace => "matched ignoring trailing whitespace",
            Tier::Indentation => "matched ignoring indentation; new_string re-indented to the file",
            Tier::Punctuation => {
                "matched with Unicode punctuation normalised (quotes, dashes, spaces)"
            }
            Tier::Words => {
                "matched word for word; only the words new_string changes were changed, the \
                 file's quoting and spacing kept"
            }
        }
    }
}

/// The outcome of a search: the new text, or why there is none.
pub(crate) enum Found {
    Replaced {
        text: String,
        tier: Tier,
        replacements: usize,
    },
    Missing,
    /// Several matches at `tier`, starting on these 1-based lines.
    Ambiguous {
        tier: Tier,
        lines: Vec<usize>,
    },
}

/// One place to change: a byte range of the file and what goes there.
struct Splice {
    start: usize,
    end: usize,
    with: String,
}

/// Replaces `needle` in `text` by `with` at the first tier that finds it.
pub(crate) fn replace(text: &str, needle: &str, with: &str, all: bool) -> Found {
    // The exact tier first and on its own: it is the common case and stays as cheap as a
    // plain substring search.
    let exact: Vec<usize> = text.match_indices(needle).map(|(i, _)| i).collect();
    if !exact.is_empty() {
        return finish(
            text,
            Tier::Exact,
            exact
                .into_iter()
                .map(|start| Splice {
                    start,
                    end: start + needle.len(),
                    with: with.to_string(),
                })
                .collect(),
            all,
        );
    }
    for tier in [
        Tier::TrailingWhitespace,
        Tier::Indentation,
        Tier::Punctuation,
    ] {
        let splices = match tier {
            Tier::TrailingWhitespace => folded(text, needle, with, false),
            Tier::Indentation => by_lines(text, needle, with, false),
            _ => {
                let found = folded(text, needle, with, true);
                if found.is_empty() {
                    by_lines(text, needle, with, true)
                } else {
                    found
                }
            }
        };
        if !splices.is_empty() {
            return finish(text, tier, splices, all);
        }
    }
    let splices = super::words::splices(text, needle, with)
        .into_iter()
        .map(|(start, end, with)| Splice { start, end, with })
        .collect::<Vec<_>>();
    if !splices.is_empty() {
        return finish(text, Tier::Words, splices, all);
    }
    Found::Missing
}

/// Applies the splices of one tier, or reports them as ambiguous.
fn finish(text: &str, tier: Tier, splices: Vec<Splice>, all: bool) -> Found {
    if splices.len() > 1 && !all {
        let lines = splices.iter().map(|s| line_of(text, s.start)).collect();
        return Found::Ambiguous { tier, lines };
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in &splices {
        out.push_str(&text[at..s.start]);
        out.push_str(&s.with);
        at = s.end;
    }
    out.push_str(&text[at..]);
    Found::Replaced {
        text: out,
        tier,
        replacements: splices.len(),
    }
}

/// The 1-based line `offset` is on.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

// ---------- tiers on folded text: trailing whitespace, punctuation ----------

/// Text with trailing whitespace of each line dropped (and punctuation made ASCII), with a way
/// back to offsets in the original.
struct Folded {
    text: String,
    /// `(folded offset, original offset)` after each place where the two stop advancing
    /// together; between marks they move in step.
    marks: Vec<(usize, usize)>,
}

impl Folded {
    fn new(src: &str, punctuation: bool) -> Folded {
        let mut text = String::with_capacity(src.len());
        let mut marks = Vec::new();
        let mut pos = 0;
        for line in src.split_inclusive('\n') {
            let body_len = line
                .strip_suffix("\r\n")
                .or_else(|| line.strip_suffix('\n'))
                .map_or(line.len(), str::len);
            let (body, ending) = line.split_at(body_len);
            let kept = body.trim_end_matches([' ', '\t']);
            if punctuation {
                for (i, c) in kept.char_indices() {
                    match plain(c) {
                        Some(p) => {
                            text.push(p);
                            marks.push((text.len(), pos + i + c.len_utf8()));
                        }
                        None => text.push(c),
                    }
                }
            } else {
                text.push_str(kept);
            }
            if kept.len() < body.len() {
                marks.push((text.len(), pos + body.len()));
            }
            text.push_str(ending);
            pos += line.len();
        }
        Folded { text, marks }
    }

    /// The original offset of folded offset `at`. Where whitespace was dropped, the offset
    /// after it: a match that ends a line takes the line's trailing blanks with it.
    fn original(&self, at: usize) -> usize {
        match self.marks.partition_point(|m| m.0 <= at) {
            0 => at,
            k => {
                let (folded, original) = self.marks[k - 1];
                original + (at - folded)
            }
        }
    }
}

/// The ASCII form of a Unicode punctuation mark a model may have typed plainly.
fn plain(c: char) -> Option<char> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}'
        | '\u{00BB}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2007}' | '\u{202F}' | '\u{2009}' | '\u{200A}' | '\u{3000}' => ' ',
        _ => return None,
    })
}

/// Matches of the folded needle in the folded text, as splices of the original.
fn folded(text: &str, needle: &str, with: &str, punctuation: bool) -> Vec<Splice> {
    let needle = Folded::new(needle, punctuation).text;
    if needle.trim().is_empty() {
        return Vec::new();
    }
    let hay = Folded::new(text, punctuation);
    hay.text
        .match_indices(needle.as_str())
        .map(|(i, m)| Splice {
            start: hay.original(i),
            end: hay.original(i + m.len()),
            with: with.to_string(),
        })
        .collect()
}

// ---------- the indentation tier: whole lines ----------

/// A line of the file: where it starts, its text without the ending, and where it ends with
/// its ending.
struct Line<'a> {
    start: usize,
    body: &'a str,
    end: usize,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line
            .strip_suffix("\r\n")
            .or_else(|| line.strip_suffix('\n'))
            .unwrap_or(line);
        out.push(Line {
            start,
            body,
            end: start + line.len(),
        });
        start += line.len();
    }
    out
}

/// A line as this tier compares it: no whitespace at either end, punctuation folded if asked.
fn key(line: &str, punctuation: bool) -> std::borrow::Cow<'_, str> {
    let t = line.trim();
    if punctuation && t.chars().any(|c| plain(c).is_some()) {
        t.chars()
            .map(|c| plain(c).unwrap_or(c))
            .collect::<String>()
            .into()
    } else {
        t.into()
    }
}

/// Runs of whole file lines equal to the needle's lines once indentation is ignored, each
/// replaced by `with` re-indented to the file.
fn by_lines(text: &str, needle: &str, with: &str, punctuation: bool) -> Vec<Splice> {
    let wanted: Vec<&str> = needle.lines().collect();
    if wanted.iter().all(|l| l.trim().is_empty()) {
        return Vec::new();
    }
    let wanted_keys: Vec<_> = wanted.iter().map(|l| key(l, punctuation)).collect();
    let file = lines(text);
    let keys: Vec<_> = file.iter().map(|l| key(l.body, punctuation)).collect();
    let n = wanted.len();
    let keeps_ending = needle.ends_with('\n');
    let style = Style::of_file(&file);
    let mut out = Vec::new();
    let mut i = 0;
    while i + n <= file.len() {
        if keys[i..i + n] == wanted_keys[..] {
            let last = &file[i + n - 1];
            let end = if keeps_ending {
                last.end
            } else {
                last.start + last.body.len()
            };
            let matched: Vec<&str> = file[i..i + n].iter().map(|l| l.body).collect();
            out.push(Splice {
                start: file[i].start,
                end,
                with: reindent(with, &wanted, &matched, style),
            });
            i += n;
        } else {
            i += 1;
        }
    }
    out
}

/// An indentation style: one level is a tab, or this many spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Tabs,
    Spaces(usize),
}

/// Columns a tab counts for when widths are compared.
const TAB_COLUMNS: usize = 4;

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn columns(indent: &str) -> usize {
    indent
        .chars()
        .map(|c| if c == '\t' { TAB_COLUMNS } else { 1 })
        .sum()
}

impl Style {
    /// The style most lines use: tabs when more lines start with one, else the most common
    /// step between the indentation of neighbouring lines.
    fn detect<'a>(lines: impl Iterator<Item = &'a str>) -> Option<Style> {
        let (mut tabs, mut spaces) = (0usize, 0usize);
        let mut steps = std::collections::BTreeMap::<usize, usize>::new();
        let mut previous = None;
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let indent = indent_of(line);
            match indent.chars().next() {
                Some('\t') => tabs += 1,
                Some(_) => spaces += 1,
                None => {}
            }
            let width = columns(indent);
            if let Some(before) = previous
                && before != width
            {
                *steps.entry(width.abs_diff(before)).or_default() += 1;
            }
            previous = Some(width);
        }
        if tabs > spaces {
            return Some(Style::Tabs);
        }
        // The most frequent step; the smaller one on a tie.
        let step = steps
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(step, _)| *step)?;
        Some(Style::Spaces(step))
    }

    fn of_file(file: &[Line<'_>]) -> Style {
        Style::detect(file.iter().map(|l| l.body)).unwrap_or(Style::Spaces(4))
    }

    fn columns(self) -> usize {
        match self {
            Style::Tabs => TAB_COLUMNS,
            Style::Spaces(n) => n.max(1),
        }
    }

    fn unit(self) -> String {
        match self {
            Style::Tabs => "\t".to_string(),
            Style::Spaces(n) => " ".repeat(n.max(1)),
        }
    }
}

/// `with` moved from the needle's indentation to the file's: each line keeps its depth
/// relative to the needle's first non-blank line, counted in the needle's own levels and
/// written in the file's.
fn reindent(with: &str, wanted: &[&str], matched: &[&str], file_style: Style) -> String {
    let Some(anchor) = wanted.iter().position(|l| !l.trim().is_empty()) else {
        return with.to_string();
    };
    // The model's style, from what it wrote on both sides; the file's when it shows none.
    let model_style = Style::detect(
        wanted
            .iter()
            .chain(&with.lines().collect::<Vec<_>>())
            .copied(),
    )
    .unwrap_or(file_style);
    let model_unit = model_style.columns();
    let model_base = columns(indent_of(wanted[anchor]));
    let file_base = columns(indent_of(matched[anchor]));
    let file_unit = file_style.columns();
    let (base_levels, base_rest) = (file_base / file_unit, file_base % file_unit);
    let mut out = String::with_capacity(with.len() + 64);
    for piece in with.split_inclusive('\n') {
        let body_len = piece
            .strip_suffix("\r\n")
            .or_else(|| piece.strip_suffix('\n'))
            .map_or(piece.len(), str::len);
        let (body, ending) = piece.split_at(body_len);
        if body.trim().is_empty() {
            out.push_str(ending);
            continue;
        }
        let indent = indent_of(body);
        let width = columns(indent) as isize - model_base as isize;
        let (levels, rest) = (
            width.div_euclid(model_unit as isize),
            width.rem_euclid(model_unit as isize) as usize,
        );
        let levels = (base_levels as isize + levels).max(0) as usize;
        out.push_str(&file_style.unit().repeat(levels));
        out.push_str(&" ".repeat(base_rest + rest));
        out.push_str(&body[indent.len()..]);
        out.push_str(ending);
    }
    out
}

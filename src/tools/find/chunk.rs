//! Cuts one file's text into the chunks `find` ranks: a chunk per definition the scanner finds
//! (with the comments and attributes just above it), and plain windows for the lines between
//! definitions and for files in languages without a scanner. Chunks never overlap, so a line
//! is scored once. Pure: gets the text, reads nothing.

use super::symbols::{self, Kind, Lang};
use super::vocab::{Counts, Vocab};

/// One chunk as cut from the text, its terms by field (symbol, doc, text) in the local ids of
/// the vocabulary that cut it; the index turns them into its own term ids.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    /// First and last line, 1-based.
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) symbol: String,
    pub(crate) kind: Kind,
    pub(crate) parent: Option<String>,
    pub(crate) fields: [Counts; 3],
}

/// Lines in a window chunk: about a screen, so a hit is still a place to look at.
const WINDOW: usize = 40;

/// The chunks of the file at `path` (relative, for its language) holding `text`, their terms
/// learnt into `vocab`.
pub(crate) fn chunks(path: &str, text: &str, vocab: &mut Vocab) -> Vec<Piece> {
    let lines: Vec<&str> = text.lines().collect();
    let lang = Lang::of(path);
    let defs = lang.map_or_else(Vec::new, |l| symbols::scan(l, &lines));
    // Each definition starts at its first attribute or comment line, never before the line
    // after the previous definition's head.
    let mut starts = Vec::with_capacity(defs.len());
    let mut floor = 0;
    for d in &defs {
        let mut s = d.line;
        if let Some(l) = lang {
            while s > floor {
                let t = lines[s - 1].trim();
                if t.is_empty() || !(l.is_comment(t) || l.is_attribute(t)) {
                    break;
                }
                s -= 1;
            }
        }
        starts.push(s);
        floor = d.line + 1;
    }
    let mut cut = Cut {
        lang,
        lines: &lines,
        vocab,
        out: Vec::new(),
        scratch: Default::default(),
    };
    let mut next_free = 0;
    for (i, d) in defs.iter().enumerate() {
        let start = starts[i].max(next_free);
        let next_start = starts.get(i + 1).copied().unwrap_or(lines.len());
        let end = d.end.min(next_start.saturating_sub(1)).max(d.line);
        cut.windows(next_free, start);
        let parent = d.parent.as_deref().unwrap_or("");
        cut.make(
            (start, end),
            &d.name,
            d.kind,
            d.parent.clone(),
            &format!("{} {parent}", d.name),
        );
        next_free = end + 1;
    }
    cut.windows(next_free, lines.len());
    cut.out
}

/// One file being cut: its language and lines, the vocabulary its terms go to, the chunks so far.
struct Cut<'a> {
    lang: Option<Lang>,
    lines: &'a [&'a str],
    vocab: &'a mut Vocab,
    out: Vec<Piece>,
    /// The term ids of the chunk being made, by field (reused from chunk to chunk).
    scratch: [Vec<u32>; 3],
}

impl Cut<'_> {
    /// Window chunks over lines `from..to` (those not inside a definition), skipping blank ones.
    fn windows(&mut self, from: usize, to: usize) {
        let mut s = from;
        while s < to {
            let e = (s + WINDOW).min(to);
            if self.lines[s..e].iter().any(|l| !l.trim().is_empty()) {
                self.make((s, e - 1), "", Kind::File, None, "");
            }
            s = e;
        }
    }

    fn make(
        &mut self,
        (start, end): (usize, usize),
        symbol: &str,
        kind: Kind,
        parent: Option<String>,
        symbol_text: &str,
    ) {
        let lang = self.lang;
        let [symbol_terms, doc, text] = &mut self.scratch;
        symbol_terms.clear();
        doc.clear();
        text.clear();
        let mut in_docstring = false;
        for line in &self.lines[start..=end.min(self.lines.len().saturating_sub(1))] {
            let t = line.trim();
            let quotes =
                lang == Some(Lang::Python) && (t.starts_with("\"\"\"") || t.starts_with("'''"));
            let is_doc = in_docstring || quotes || lang.is_some_and(|l| l.is_comment(t));
            if quotes && !(t.len() > 3 && (t.ends_with("\"\"\"") || t.ends_with("'''"))) {
                in_docstring = !in_docstring;
            } else if in_docstring && (t.ends_with("\"\"\"") || t.ends_with("'''")) {
                in_docstring = false;
            }
            self.vocab.terms_into(t, if is_doc { doc } else { text });
        }
        self.vocab.terms_into(symbol_text, symbol_terms);
        self.out.push(Piece {
            start: start as u32 + 1,
            end: end as u32 + 1,
            symbol: symbol.to_string(),
            kind,
            parent,
            fields: [
                self.vocab.counts(symbol_terms),
                self.vocab.counts(doc),
                self.vocab.counts(text),
            ],
        });
    }
}

//! The grammars the highlighter can load: one small syntect pack per language, built into
//! the binary from `assets/syntaxes/` (written by `cargo run --example syntax_packs`). A fence
//! tag or a file extension picks a pack through the index; a pack is deserialized the first
//! time its language is highlighted and kept for the session, so a session pays only for the
//! languages it shows. Colouring is `highlight.rs`'s business, not this file's.

use std::sync::OnceLock;

use syntect::parsing::{SyntaxReference, SyntaxSet};

macro_rules! packs {
    ($($name:literal),* $(,)?) => {
        &[$((
            $name,
            include_bytes!(concat!("../../assets/syntaxes/", $name, ".packdump")) as &[u8],
        )),*]
    };
}

/// Every pack the generator writes, by file name.
const PACKS: &[(&str, &[u8])] = packs![
    "batch",
    "c",
    "clojure",
    "cpp",
    "csharp",
    "css",
    "diff",
    "dot",
    "erlang",
    "go",
    "groovy",
    "haskell",
    "html",
    "java",
    "javascript",
    "json",
    "latex",
    "lua",
    "makefile",
    "markdown",
    "ocaml",
    "perl",
    "php",
    "python",
    "r",
    "restructuredtext",
    "ruby",
    "rust",
    "scala",
    "shell",
    "sql",
    "xml",
    "yaml",
];

/// One line per grammar of syntect's full set, in its order: pack, grammar name, extensions.
const INDEX: &str = include_str!("../../assets/syntaxes/index.tsv");

struct Entry {
    /// Index into [`PACKS`]; `None` for a grammar no pack carries (shown plain).
    pack: Option<usize>,
    name: &'static str,
    extensions: Vec<&'static str>,
}

fn index() -> &'static [Entry] {
    static INDEX_ROWS: OnceLock<Vec<Entry>> = OnceLock::new();
    INDEX_ROWS.get_or_init(|| {
        INDEX
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|line| {
                let mut fields = line.split('\t');
                let pack = fields.next()?;
                let name = fields.next()?;
                Some(Entry {
                    pack: PACKS.iter().position(|(p, _)| *p == pack),
                    name,
                    extensions: fields.collect(),
                })
            })
            .collect()
    })
}

/// The grammar for `token` as `SyntaxSet::find_syntax_by_token` picks it in syntect's full
/// set (an extension first, then a name, case-insensitive, the last match winning), with the
/// loaded pack that carries it. `None` for an unknown token, a grammar without a pack, or a
/// pack that does not load.
pub(crate) fn find(token: &str) -> Option<(&'static SyntaxSet, &'static SyntaxReference)> {
    let rows = index();
    let entry = rows
        .iter()
        .rev()
        .find(|e| e.extensions.iter().any(|x| x.eq_ignore_ascii_case(token)))
        .or_else(|| {
            rows.iter()
                .rev()
                .find(|e| e.name.eq_ignore_ascii_case(token))
        })?;
    let set = load(entry.pack?)?;
    Some((set, set.find_syntax_by_name(entry.name)?))
}

fn load(pack: usize) -> Option<&'static SyntaxSet> {
    static SETS: [OnceLock<Option<SyntaxSet>>; PACKS.len()] =
        [const { OnceLock::new() }; PACKS.len()];
    let (_, bytes) = PACKS.get(pack)?;
    SETS.get(pack)?
        .get_or_init(|| syntect::dumps::from_uncompressed_data(bytes).ok())
        .as_ref()
}

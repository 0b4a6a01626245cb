//! How `find` scores a chunk against a query: BM25 over four fields (symbol names, path
//! segments, comments, code) plus the cosine of hashed character-trigram vectors, which lets
//! `configuration` meet `config` and `parsing` meet `parser` without a model. Pure functions
//! over the index's term counts: nothing here reads files.

use std::collections::BTreeMap;

use super::index::{Chunk, DOC, PATH, Postings, SYMBOL, Stored, TEXT};
use super::related::{Relation, related};

/// A match in a chunk's symbol name (or its parent's) is the strongest evidence: a developer's
/// description usually names what the definition does, and the name says it in a few words.
pub(crate) const W_SYMBOL: f64 = 4.0;
/// Path segments (`tools/find/rank.rs`) place a chunk in an area; weaker than the name, since a
/// whole file's chunks share them.
pub(crate) const W_PATH: f64 = 1.2;
/// Comments explain intent in the words a question uses, but also talk about neighbours.
pub(crate) const W_DOC: f64 = 1.0;
/// Code text is the widest and noisiest field: every identifier a body merely uses.
pub(crate) const W_TEXT: f64 = 0.4;
/// The trigram vector catches near-synonyms and other word forms the exact fields miss; it is
/// added only to chunks some query word (or a related one) reached, so it orders candidates
/// rather than pulling in unrelated code.
pub(crate) const W_VECTOR: f64 = 4.0;
/// Test code (a file under `tests/`, a `*_test` file, a function named `test_…`, a `mod tests`)
/// is scaled by this: it names and exercises exactly what a question describes, but a developer
/// asking where something is done wants the code that does it. Tests still rank when nothing
/// else matches.
pub(crate) const TEST_FACTOR: f64 = 0.5;
/// Types, constants, impl headers and modules are scaled by this: a question in words mostly
/// describes behaviour, which functions hold, while a type's name is a noun the question shares
/// with all the code that uses it. Python's special methods (`__init__`, `__repr__`) too: a
/// constructor's docstring lists every parameter of its class, so it shares words with any
/// question about the class while doing none of what is asked.
pub(crate) const NOUN_FACTOR: f64 = 0.5;
/// A query word only related to an indexed term (a prefix, a synonym, an abbreviation, initials)
/// counts this much of an exact match. Another form of the same word (`invert` for "inversion",
/// `p256` for "P-256") counts fully, and two query words glued into one (`memcmp` for "compare
/// memory") count as both.
const RELATED: f64 = 0.5;
/// BM25's saturation and length normalisation, at their usual values.
const K1: f64 = 1.2;
/// Length normalisation per field (symbol, doc, text, path: the index's field order). Names are short and a longer name
/// that says more of the question is no worse for it, so names are barely normalised.
const B: [f64; 4] = [0.3, 0.75, 0.75, 0.75];
/// Buckets of the hashed trigram vector.
const DIMENSIONS: usize = 512;
/// The shortest word a prefix may relate to another (`conf` → `config`).
const MIN_PREFIX: usize = 4;
/// The shortest indexed word taken as an abbreviation of a longer query word.
const MIN_ABBREVIATION: usize = 3;

/// Words that carry no meaning in a question about code.
const STOPWORDS: &[&str] = &[
    "the", "an", "and", "or", "of", "to", "in", "on", "for", "is", "are", "be", "by", "with",
    "that", "this", "which", "where", "what", "when", "how", "who", "it", "its", "from", "as",
    "at", "into", "code", "function", "method", "find", "does", "do", "we", "our", "there", "then",
    "than", "some", "any", "all", "one", "each", "if", "not", "no", "get", "gets",
];

/// The terms of `text`: words split at non-identifier characters, `snake_case` and
/// `camelCase` boundaries, lowercased and stemmed; stopwords, one-letter words and numbers
/// dropped.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    terms_into(text, &mut out);
    out
}

/// [`terms`], appended to `out`.
pub(crate) fn terms_into(text: &str, out: &mut Vec<String>) {
    for word in words(text) {
        word_terms(word, |t| out.push(t));
    }
}

/// The words of `text`: runs of alphanumeric characters. Runs over every indexed byte, so ASCII
/// is classified a byte at a time; other characters are decoded.
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = next_boundary(text, at, false)?;
        at = next_boundary(text, start, true).unwrap_or(text.len());
        Some(&text[start..at])
    })
}

/// The byte offset of the first character from `at` on that is alphanumeric (`inside` false)
/// or is not (`inside` true), if any.
fn next_boundary(text: &str, mut at: usize, inside: bool) -> Option<usize> {
    let bytes = text.as_bytes();
    while let Some(&b) = bytes.get(at) {
        let (alphanumeric, len) = if b.is_ascii() {
            (b.is_ascii_alphanumeric(), 1)
        } else {
            let c = text[at..].chars().next()?;
            (c.is_alphanumeric(), c.len_utf8())
        };
        if alphanumeric != inside {
            return Some(at);
        }
        at += len;
    }
    None
}

/// Calls `each` with the terms of one word (no separators in it), in order. The indexer's
/// vocabulary calls it once per distinct word, so it may allocate.
pub(crate) fn word_terms(word: &str, mut each: impl FnMut(String)) {
    // Most code is lowercase ASCII already: lowercasing then needs no copy.
    let mut lowered = String::new();
    camel_pieces(word, |piece| {
        let lower = if piece
            .bytes()
            .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
        {
            piece
        } else {
            lowered = piece.to_lowercase();
            lowered.as_str()
        };
        if lower.len() < 2 || lower.chars().all(|c| c.is_ascii_digit()) {
            return;
        }
        if STOPWORDS.contains(&lower) {
            return;
        }
        each(stem(lower));
    });
}

/// Calls `each` with the camel-case pieces of `word`: `HTTPServerError` → `HTTP`, `Server`,
/// `Error`; `parseV2` → `parse`, `V2`.
fn camel_pieces<'w>(word: &'w str, mut each: impl FnMut(&'w str)) {
    let mut start = 0;
    let mut prev: Option<char> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if let Some(p) = prev {
            let next_lower = chars.peek().is_some_and(|(_, n)| n.is_lowercase());
            let boundary = (c.is_uppercase() && p.is_lowercase())
                || (c.is_uppercase() && p.is_uppercase() && next_lower);
            if boundary {
                each(&word[start..at]);
                start = at;
            }
        }
        prev = Some(c);
    }
    if start < word.len() {
        each(&word[start..]);
    }
}

/// A light suffix stripper: enough for `parses`/`parsing`/`parsed`/`parse` to meet, and
/// `logging`/`stopped` to meet `log`/`stop`.
pub(crate) fn stem(word: &str) -> String {
    const SUFFIXES: [&str; 9] = [
        "ations", "ation", "ings", "ing", "ies", "ers", "ed", "es", "s",
    ];
    let mut w = word;
    let mut verb_ending = false;
    for s in SUFFIXES {
        if let Some(base) = w.strip_suffix(s)
            && base.len() >= 3
            && !(s == "s" && base.ends_with('s'))
        {
            w = base;
            verb_ending = matches!(s, "ings" | "ing" | "ed");
            break;
        }
    }
    if verb_ending {
        w = undoubled(w);
    }
    let w = w.strip_suffix('e').filter(|b| b.len() >= 3).unwrap_or(w);
    w.to_string()
}

/// `base` without the consonant English doubles before `-ing` and `-ed` (`logg` of "logging",
/// `stopp` of "stopped"), so the word meets the short verb code names (`log`, `stop`). A
/// doubled `l`, `s` or `z` is the word's own (`call`, `pass`, `buzz`), and a base of three
/// letters is kept (`add`).
fn undoubled(base: &str) -> &str {
    let b = base.as_bytes();
    let doubled = b.len() >= 4
        && b[b.len() - 1] == b[b.len() - 2]
        && b[b.len() - 1].is_ascii_lowercase()
        && !b"aeiouylsz".contains(&b[b.len() - 1]);
    if doubled {
        &base[..base.len() - 1]
    } else {
        base
    }
}

/// A query's weighted terms: its own (weight 1) and the indexed terms they relate to
/// ([`related`]'s relations, and a shared prefix).
pub(crate) fn expand(query: &str, stored: &Stored) -> Vec<(u32, f64)> {
    let mut weights: BTreeMap<String, f64> = BTreeMap::new();
    let own = terms(query);
    for t in &own {
        weights.insert(t.clone(), 1.0);
    }
    let mut add = |term: String, w: f64| {
        let e = weights.entry(term).or_insert(0.0);
        *e = e.max(w);
    };
    for (term, why) in related(query, vocabulary(stored)) {
        add(
            term,
            match why {
                // The same word in the form code writes it.
                Relation::Joined | Relation::Derived => 1.0,
                // Two of the query's words in one term: as much as both.
                Relation::Glued => 2.0,
                Relation::Abbreviation | Relation::Synonym | Relation::Acronym => RELATED,
            },
        );
    }
    for t in &own {
        if t.len() < MIN_PREFIX {
            continue;
        }
        for v in vocabulary(stored) {
            // A short indexed word may be an abbreviation of a longer query word (`mod` for
            // `modular`, `len` for `length`), never the reverse.
            let abbreviation = v.len() >= MIN_ABBREVIATION && t.starts_with(v);
            if v != t.as_str()
                && (abbreviation
                    || v.len() >= MIN_PREFIX && (v.starts_with(t.as_str()) || t.starts_with(v)))
            {
                add(v.to_string(), RELATED);
            }
        }
    }
    weights
        .into_iter()
        .filter_map(|(t, w)| stored.terms.get(&t).map(|id| (id, w)))
        .collect()
}

/// The indexed terms some chunk still uses.
fn vocabulary(stored: &Stored) -> impl Iterator<Item = &str> {
    (0..stored.terms.len() as u32)
        .filter(|id| stored.stats.df.get(*id as usize).is_some_and(|df| *df > 0))
        .map(|id| stored.terms.name(id))
}

/// A chunk's score and the parts it is made of (each already weighted).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Score {
    pub(crate) symbol: f64,
    pub(crate) path: f64,
    pub(crate) doc: f64,
    pub(crate) text: f64,
    pub(crate) vector: f64,
    /// 1, or [`TEST_FACTOR`] for test code.
    pub(crate) factor: f64,
}

impl Score {
    pub(crate) fn total(&self) -> f64 {
        (self.symbol + self.path + self.doc + self.text + self.vector) * self.factor
    }
}

/// Whether every chunk of the file at `path` is test code (computed once per file).
pub(crate) fn is_test_path(path: &str) -> bool {
    let mut segments: Vec<&str> = path.split('/').collect();
    let file = segments.pop().unwrap_or("");
    let stem = file.split('.').next().unwrap_or(file).to_lowercase();
    let dir_test = segments.iter().any(|s| {
        matches!(
            s.to_ascii_lowercase().as_str(),
            "test" | "tests" | "testdata" | "__tests__" | "spec" | "testing"
        )
    });
    let file_test = stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || file.contains(".test.")
        || file.contains(".spec.");
    dir_test || file_test
}

/// Whether `symbol` is a Python special method (`__init__`, `__eq__`): scaled as a noun.
pub(crate) fn is_special_method(symbol: &str) -> bool {
    symbol.len() > 4 && symbol.starts_with("__") && symbol.ends_with("__")
}

/// Whether a chunk is test code by its name or its parent's (no allocation: asked of every
/// candidate chunk).
pub(crate) fn is_test_symbol(symbol: &str, parent: Option<&str>) -> bool {
    let bytes = symbol.as_bytes();
    let symbol_test = bytes.len() >= 4 && bytes[..4].eq_ignore_ascii_case(b"test")
        || bytes.len() >= 5 && bytes[bytes.len() - 5..].eq_ignore_ascii_case(b"_test");
    let parent_test = parent.is_some_and(|p| p == "tests" || p == "test");
    symbol_test || parent_test
}

/// BM25 of one field's postings for the query's weighted term ids.
fn bm25(stored: &Stored, query: &[(u32, f64)], field: &Postings, which: usize) -> f64 {
    let stats = &stored.stats;
    let chunks = stats.chunks.max(1) as f64;
    let avg = (stats.sums[which] as f64 / chunks).max(1.0);
    let length: f64 = field.iter().map(|(_, n)| f64::from(*n)).sum();
    let b = B[which];
    let norm = K1 * (1.0 - b + b * length / avg);
    let mut total = 0.0;
    for (t, w) in query {
        let Ok(at) = field.binary_search_by_key(t, |(id, _)| *id) else {
            continue;
        };
        let tf = f64::from(field[at].1);
        let df = f64::from(stats.df.get(*t as usize).copied().unwrap_or(0));
        let idf = (1.0 + (stats.chunks as f64 - df + 0.5) / (df + 0.5)).ln();
        total += w * idf * tf * (K1 + 1.0) / (tf + norm);
    }
    total
}

/// The weighted path part of the score of every chunk of a file with `path_terms`.
pub(crate) fn path_part(stored: &Stored, query: &[(u32, f64)], path_terms: &Postings) -> f64 {
    W_PATH * bm25(stored, query, path_terms, PATH)
}

/// The unweighted BM25 sums (symbol, doc, text) of every chunk id, read from the inverted lists
/// of the query's terms only; a chunk no term reaches keeps zeros. Each sum adds its terms in
/// the query's order, as [`bm25`] does, so scores are the same to the last bit.
pub(crate) fn field_sums(stored: &Stored, query: &[(u32, f64)]) -> Vec<[f64; 3]> {
    let stats = &stored.stats;
    let inverted = &stored.inverted;
    let chunks = stats.chunks.max(1) as f64;
    let avg: [f64; 3] = std::array::from_fn(|f| (stats.sums[f] as f64 / chunks).max(1.0));
    let mut sums = vec![[0f64; 3]; inverted.ids()];
    for (t, w) in query {
        let df = f64::from(stats.df.get(*t as usize).copied().unwrap_or(0));
        let idf = (1.0 + (stats.chunks as f64 - df + 0.5) / (df + 0.5)).ln();
        for entry in inverted.list(*t) {
            let (id, f) = (entry.chunk(), entry.field());
            let length = f64::from(inverted.lens(id)[f]);
            let b = B[f];
            let norm = K1 * (1.0 - b + b * length / avg[f]);
            let tf = f64::from(entry.count());
            sums[id][f] += w * idf * tf * (K1 + 1.0) / (tf + norm);
        }
    }
    sums
}

/// The weighted score of a chunk from its field sums and its file's path part; the vector
/// part is [`vector_part`].
pub(crate) fn score(sums: [f64; 3], path: f64) -> Score {
    Score {
        symbol: W_SYMBOL * sums[SYMBOL],
        path,
        doc: W_DOC * sums[DOC],
        text: W_TEXT * sums[TEXT],
        vector: 0.0,
        factor: 1.0,
    }
}

/// The weighted vector part of a chunk's score: the cosine of its trigram vector with the
/// query's. Worth computing only for chunks some query word reached, and among those only for
/// the ones it could lift into the results (it is at most [`W_VECTOR`]).
pub(crate) fn vector_part(stored: &Stored, query_vector: &[f32], chunk: &Chunk) -> f64 {
    let terms = &stored.terms;
    let weighted = |f: usize, k: u32| {
        chunk.fields[f]
            .iter()
            .map(move |(t, n)| (terms.name(*t), k * n))
    };
    let chunk_vector = vector(
        weighted(SYMBOL, 2)
            .chain(weighted(DOC, 1))
            .chain(weighted(TEXT, 1)),
    );
    let cosine: f32 = query_vector
        .iter()
        .zip(&chunk_vector)
        .map(|(a, b)| a * b)
        .sum();
    W_VECTOR * f64::from(cosine.max(0.0))
}

/// Term counts of `terms`.
pub(crate) fn counts(terms: impl IntoIterator<Item = String>) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for t in terms {
        *out.entry(t).or_insert(0) += 1;
    }
    out
}

/// The unit vector of the character trigrams of weighted terms (each term framed by `^…$`),
/// hashed into [`DIMENSIONS`] buckets; a term's count is damped by a square root so one
/// repeated identifier does not own the direction.
pub(crate) fn vector<'a>(terms: impl Iterator<Item = (&'a str, u32)>) -> Vec<f32> {
    let mut v = vec![0f32; DIMENSIONS];
    for (term, n) in terms {
        let framed: Vec<char> = format!("^{term}$").chars().collect();
        let weight = (n as f32).sqrt();
        for gram in framed.windows(3) {
            let mut h: u32 = 2_166_136_261;
            for c in gram {
                h = (h ^ *c as u32).wrapping_mul(16_777_619);
            }
            v[h as usize % DIMENSIONS] += weight;
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verb_ending_meets_the_short_verb_without_its_doubled_consonant() {
        assert_eq!(stem("logging"), "log");
        assert_eq!(stem("stopped"), "stop");
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("log"), "log");
    }

    #[test]
    fn a_doubled_l_s_or_z_and_a_short_base_stay_whole() {
        assert_eq!(stem("called"), "call");
        assert_eq!(stem("passed"), "pass");
        assert_eq!(stem("buzzing"), "buzz");
        assert_eq!(stem("added"), "add");
        // Only before -ing and -ed: a plural keeps its double letter.
        assert_eq!(stem("buffers"), "buff");
    }

    #[test]
    fn python_special_methods_are_told_from_private_names() {
        assert!(is_special_method("__init__"));
        assert!(is_special_method("__repr__"));
        assert!(!is_special_method("_read_status"));
        assert!(!is_special_method("__parse_string"));
        assert!(!is_special_method("____"));
    }
}

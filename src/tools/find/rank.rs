//! How `find` scores a chunk against a query: BM25 over four fields (symbol names, path
//! segments, comments, code) plus the cosine of hashed character-trigram vectors, which lets
//! `configuration` meet `config` and `parsing` meet `parser` without a model. Pure functions
//! over the index's term counts: nothing here reads files.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::index::{Chunk, Stored};

/// A match in a chunk's symbol name (or its parent's) is the strongest evidence: a developer's
/// description usually names what the definition does, and the name says it in a few words.
pub(crate) const W_SYMBOL: f64 = 3.0;
/// Path segments (`tools/find/rank.rs`) place a chunk in an area; weaker than the name, since a
/// whole file's chunks share them.
pub(crate) const W_PATH: f64 = 1.2;
/// Comments explain intent in the words a question uses, but also talk about neighbours.
pub(crate) const W_DOC: f64 = 1.0;
/// Code text is the widest and noisiest field: every identifier a body merely uses.
pub(crate) const W_TEXT: f64 = 0.6;
/// The trigram vector catches near-synonyms and other word forms the exact fields miss; it is
/// added only to chunks some query word (or a related one) reached, so it orders candidates
/// rather than pulling in unrelated code.
pub(crate) const W_VECTOR: f64 = 4.0;
/// A query word only related to an indexed term (a prefix, a synonym) counts this much of an
/// exact match.
const RELATED: f64 = 0.5;
/// BM25's saturation and length normalisation, at their usual values.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Buckets of the hashed trigram vector.
const DIMENSIONS: usize = 512;
/// The shortest word a prefix may relate to another (`conf` → `config`).
const MIN_PREFIX: usize = 4;

/// Words that carry no meaning in a question about code.
const STOPWORDS: &[&str] = &[
    "the", "an", "and", "or", "of", "to", "in", "on", "for", "is", "are", "be", "by", "with",
    "that", "this", "which", "where", "what", "when", "how", "who", "it", "its", "from", "as",
    "at", "into", "code", "function", "method", "find", "does", "do", "we", "our", "there", "then",
    "than", "some", "any", "all", "one", "each", "if", "not", "no", "get", "gets",
];

/// Words a developer uses for the same thing, both ways.
const SYNONYMS: &[(&str, &[&str])] = &[
    (
        "config",
        &["configuration", "settings", "setting", "option"],
    ),
    ("dir", &["directory", "folder"]),
    ("folder", &["dir", "directory"]),
    ("arg", &["argument", "param", "parameter", "flag"]),
    ("delete", &["remove", "drop", "erase"]),
    ("remove", &["delete", "drop"]),
    ("err", &["error", "fail", "failure"]),
    ("error", &["err", "fail", "failure"]),
    ("fail", &["error", "err"]),
    ("msg", &["message"]),
    ("message", &["msg"]),
    ("start", &["begin", "launch", "spawn", "run"]),
    ("stop", &["cancel", "abort", "kill", "interrupt"]),
    ("cancel", &["stop", "abort", "interrupt"]),
    ("retry", &["backoff", "attempt", "again"]),
    ("init", &["initialize", "setup", "new"]),
    ("create", &["new", "make", "build"]),
    ("check", &["validate", "verify"]),
    ("validate", &["check", "verify"]),
    ("show", &["render", "display", "print", "view"]),
    ("draw", &["render", "paint"]),
    ("save", &["write", "store", "persist"]),
    ("load", &["read", "open", "parse"]),
    ("cmd", &["command"]),
    ("command", &["cmd"]),
    ("request", &["req"]),
    ("response", &["resp", "reply", "answer"]),
    ("key", &["token", "secret"]),
    ("secret", &["key", "token", "redact"]),
    ("tokenize", &["split", "token"]),
    ("count", &["number", "num", "len"]),
    ("size", &["len", "length", "bytes"]),
    ("walk", &["traverse", "iterate"]),
    ("approve", &["approval", "permission", "allow"]),
    ("permission", &["rule", "allow", "deny", "approval"]),
];

/// The terms of `text`: words split at non-identifier characters, `snake_case` and
/// `camelCase` boundaries, lowercased and stemmed; stopwords, one-letter words and numbers
/// dropped.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        for piece in camel_pieces(word) {
            let lower = piece.to_lowercase();
            if lower.len() < 2 || lower.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            if STOPWORDS.contains(&lower.as_str()) {
                continue;
            }
            out.push(stem(&lower));
        }
    }
    out
}

/// `HTTPServerError` → `HTTP`, `Server`, `Error`; `parseV2` → `parse`, `V2`.
fn camel_pieces(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = (c.is_uppercase() && prev.is_lowercase())
            || (c.is_uppercase() && prev.is_uppercase() && next_lower);
        if boundary {
            pieces.push(&word[start..at]);
            start = at;
        }
    }
    if start < word.len() {
        pieces.push(&word[start..]);
    }
    pieces
}

/// A light suffix stripper: enough for `parses`/`parsing`/`parsed`/`parse` to meet.
pub(crate) fn stem(word: &str) -> String {
    const SUFFIXES: [&str; 9] = [
        "ations", "ation", "ings", "ing", "ies", "ers", "ed", "es", "s",
    ];
    let mut w = word;
    for s in SUFFIXES {
        if let Some(base) = w.strip_suffix(s)
            && base.len() >= 3
            && !(s == "s" && base.ends_with('s'))
        {
            w = base;
            break;
        }
    }
    let w = w.strip_suffix('e').filter(|b| b.len() >= 3).unwrap_or(w);
    w.to_string()
}

/// A query's weighted terms: its own (weight 1) and the indexed terms they relate to through a
/// synonym or a shared prefix (weight [`RELATED`]).
pub(crate) fn expand(query: &str, vocabulary: &HashMap<String, u32>) -> Vec<(String, f64)> {
    let mut weights: BTreeMap<String, f64> = BTreeMap::new();
    let own = terms(query);
    for t in &own {
        weights.insert(t.clone(), 1.0);
    }
    let mut add = |term: String, w: f64| {
        let e = weights.entry(term).or_insert(0.0);
        *e = e.max(w);
    };
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        let lower = word.to_lowercase();
        let stemmed = stem(&lower);
        for (key, related) in SYNONYMS {
            if *key == lower || stem(key) == stemmed {
                for r in *related {
                    add(stem(r), RELATED);
                }
            }
        }
    }
    for t in &own {
        if t.len() < MIN_PREFIX {
            continue;
        }
        for v in vocabulary.keys() {
            if v != t
                && v.len() >= MIN_PREFIX
                && (v.starts_with(t.as_str()) || t.starts_with(v.as_str()))
            {
                add(v.clone(), RELATED);
            }
        }
    }
    weights.into_iter().collect()
}

/// A chunk's score and the parts it is made of (each already weighted).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Score {
    pub symbol: f64,
    pub path: f64,
    pub doc: f64,
    pub text: f64,
    pub vector: f64,
}

impl Score {
    pub(crate) fn total(&self) -> f64 {
        self.symbol + self.path + self.doc + self.text + self.vector
    }
}

/// Corpus statistics BM25 needs: chunk count, document frequencies, average field lengths.
pub(crate) struct Corpus {
    chunks: f64,
    df: HashMap<String, u32>,
    avg: [f64; 4],
}

impl Corpus {
    pub(crate) fn of(stored: &Stored) -> Corpus {
        let mut df: HashMap<String, u32> = HashMap::new();
        let mut sums = [0f64; 4];
        let mut chunks = 0f64;
        for (path, file) in &stored.files {
            let path_terms = terms(path);
            for chunk in &file.chunks {
                chunks += 1.0;
                let mut seen: HashSet<&str> = HashSet::new();
                for t in chunk
                    .symbol_terms
                    .keys()
                    .chain(chunk.doc_terms.keys())
                    .chain(chunk.text_terms.keys())
                    .map(String::as_str)
                    .chain(path_terms.iter().map(String::as_str))
                {
                    if seen.insert(t) {
                        *df.entry(t.to_string()).or_insert(0) += 1;
                    }
                }
                sums[0] += len(&chunk.symbol_terms);
                sums[1] += path_terms.len() as f64;
                sums[2] += len(&chunk.doc_terms);
                sums[3] += len(&chunk.text_terms);
            }
        }
        let avg = sums.map(|s| {
            if chunks > 0.0 {
                (s / chunks).max(1.0)
            } else {
                1.0
            }
        });
        Corpus { chunks, df, avg }
    }

    pub(crate) fn vocabulary(&self) -> &HashMap<String, u32> {
        &self.df
    }

    fn idf(&self, term: &str) -> f64 {
        let df = f64::from(self.df.get(term).copied().unwrap_or(0));
        (1.0 + (self.chunks - df + 0.5) / (df + 0.5)).ln()
    }

    fn bm25(&self, query: &[(String, f64)], field: &BTreeMap<String, u32>, which: usize) -> f64 {
        let length = len(field);
        query
            .iter()
            .filter_map(|(t, w)| field.get(t).map(|&tf| (t, w, f64::from(tf))))
            .map(|(t, w, tf)| {
                let norm = K1 * (1.0 - B + B * length / self.avg[which]);
                w * self.idf(t) * tf * (K1 + 1.0) / (tf + norm)
            })
            .sum()
    }

    /// The weighted score of `chunk` (in the file at `path_terms`) for the expanded query and
    /// the query's trigram vector.
    pub(crate) fn score(
        &self,
        query: &[(String, f64)],
        query_vector: &[f32],
        path_terms: &BTreeMap<String, u32>,
        chunk: &Chunk,
    ) -> Score {
        let mut score = Score {
            symbol: W_SYMBOL * self.bm25(query, &chunk.symbol_terms, 0),
            path: W_PATH * self.bm25(query, path_terms, 1),
            doc: W_DOC * self.bm25(query, &chunk.doc_terms, 2),
            text: W_TEXT * self.bm25(query, &chunk.text_terms, 3),
            vector: 0.0,
        };
        // The vector orders chunks some query word reached; computing it for every chunk would
        // cost most of a query's time for chunks that are not shown anyway.
        if score.total() <= 0.0 {
            return score;
        }
        let chunk_vector = vector(
            chunk
                .symbol_terms
                .iter()
                .map(|(t, n)| (t.as_str(), 2 * n))
                .chain(chunk.doc_terms.iter().map(|(t, n)| (t.as_str(), *n)))
                .chain(chunk.text_terms.iter().map(|(t, n)| (t.as_str(), *n))),
        );
        let cosine: f32 = query_vector
            .iter()
            .zip(&chunk_vector)
            .map(|(a, b)| a * b)
            .sum();
        score.vector = W_VECTOR * f64::from(cosine.max(0.0));
        score
    }
}

fn len(field: &BTreeMap<String, u32>) -> f64 {
    f64::from(field.values().sum::<u32>())
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

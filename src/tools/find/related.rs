//! The words a query is taken to mean besides its own: how a developer's question meets code
//! written in another vocabulary. Code abbreviates (`cmp`, `ctx`, `id`), glues words together
//! (`memcmp`, `cpuid`, `cswap`), shortens phrases to initials (`fe` for a field element, `le`
//! for little endian), names a verb where the question names the act (`invert` for
//! "inversion") and keeps a version or size in the word (`p256` for "P-256"). Each relation is
//! general knowledge of code, not of one project; the weights are [`rank`](super::rank)'s.
//! Pure: gets the query and the indexed vocabulary, reads nothing.

use std::collections::{BTreeMap, HashSet};

use super::rank::{stem, terms};

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
    ("final", &["finish", "last", "end"]),
    ("finish", &["final", "end", "complete", "done"]),
    ("serialize", &["encode", "pickle", "marshal", "dump"]),
    ("deserialize", &["decode", "unpickle", "unmarshal", "load"]),
    ("email", &["mail", "smtp"]),
    ("guess", &["detect", "infer", "sniff"]),
    ("detect", &["guess", "sniff"]),
];

/// Abbreviations code uses that are not a start of the word they stand for (those, like
/// `mem` or `len`, are found by prefix); each word of a group stands for every abbreviation.
const ABBREVIATIONS: &[(&[&str], &[&str])] = &[
    (&["compare", "comparison", "comparator"], &["cmp"]),
    (&["context"], &["ctx"]),
    (
        &["identifier", "identification", "identity", "identify"],
        &["id"],
    ),
    (&["pointer"], &["ptr"]),
    (&["source"], &["src"]),
    (&["destination", "target"], &["dst", "dest"]),
    (&["temporary"], &["tmp"]),
    (&["count", "counter"], &["cnt"]),
    (&["index"], &["idx"]),
    (&["number"], &["num", "nr"]),
    (&["message"], &["msg"]),
    (&["request"], &["req"]),
    (&["configuration"], &["cfg", "conf"]),
    (&["receive", "receiver"], &["recv", "rx"]),
    (&["transmit", "transmitter", "transaction"], &["tx", "txn"]),
    (&["random"], &["rng"]),
    (&["square"], &["sqr", "sq"]),
    (&["square root"], &["sqrt"]),
    (&["halve", "half"], &["div"]),
    (&["length"], &["len"]),
    (&["library"], &["lib"]),
    (&["window"], &["wnd", "win"]),
    (&["button"], &["btn"]),
    (&["image"], &["img"]),
    (&["package"], &["pkg"]),
    (&["previous"], &["prev"]),
    (&["current"], &["cur", "curr"]),
    (&["reference"], &["ref"]),
    (&["value"], &["val"]),
    (&["sequence"], &["seq"]),
    (&["signature"], &["sig"]),
    (&["certificate"], &["cert"]),
    (&["argument"], &["arg", "argv"]),
    (&["environment"], &["env"]),
    (&["execute", "execution"], &["exec"]),
    (&["increment"], &["inc", "incr"]),
    (&["decrement"], &["dec", "decr"]),
    (&["synchronize", "synchronous"], &["sync"]),
    (&["asynchronous"], &["async"]),
    (&["database"], &["db"]),
    (&["password"], &["pwd", "passwd"]),
    (&["address"], &["addr"]),
    (&["allocate", "allocation", "allocator"], &["alloc"]),
    (&["character"], &["chr"]),
    (&["string"], &["str"]),
    (&["utility", "utilities"], &["util"]),
    (&["hardware"], &["hw"]),
    (&["software"], &["sw"]),
    // `no` is a stopword, never a term of its own: this only lets "without hardware" glue
    // into `nohw`.
    (&["without"], &["no"]),
];

/// Derivational endings and the endings of the word they come from: the act named as a noun
/// (`inversion`, `comparison`, `addition`) or an agent (`generator`) meets the verb code names
/// (`invert`, `compare`, `add`, `generate`). Forms that exist nowhere in the index cost nothing.
const DERIVATIONS: &[(&str, &[&str])] = &[
    ("ication", &["y"]),
    ("ssion", &["ss"]),
    ("sion", &["t", "d", "de"]),
    ("ition", &["", "e"]),
    ("ison", &["e"]),
    ("ator", &["ate", "e"]),
    ("ization", &["ize"]),
    ("ness", &[""]),
];

/// A prefix of a query word long enough to stand for it inside a glued identifier (`mem` of
/// `memory` in `memcmp`, `cpu` in `cpuid`).
const MIN_GLUED_PREFIX: usize = 3;

/// How a query relates to an indexed term beyond its own words; [`rank`](super::rank) weighs
/// each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Relation {
    /// The same word with its version or size glued on (`P-256` → `p256`).
    Joined,
    /// Two of the query's words (or their abbreviations) glued into one (`memcmp`).
    Glued,
    /// Another form of the same word (`inversion` → `invert`).
    Derived,
    /// A common abbreviation (`compare` → `cmp`) or an integer type for a width (`u32`).
    Abbreviation,
    /// A word a developer uses for the same thing (`delete` → `remove`).
    Synonym,
    /// The initials of consecutive words (`field element` → `fe`).
    Acronym,
}

/// The terms related to `query` (other than its own), stemmed, with how they relate; the
/// vocabulary is consulted for glued identifiers.
pub(crate) fn related<'v>(
    query: &str,
    vocabulary: impl Iterator<Item = &'v str>,
) -> BTreeMap<String, Relation> {
    let words = words(query);
    let mut out: BTreeMap<String, Relation> = BTreeMap::new();
    let mut add = |term: String, why: Relation| {
        let e = out.entry(term).or_insert(why);
        *e = (*e).min(why);
    };
    for term in joined(query) {
        add(term, Relation::Joined);
    }
    for term in bit_widths(query) {
        add(term, Relation::Abbreviation);
    }
    let mut pieces: HashSet<String> = HashSet::new();
    for (i, word) in words.iter().enumerate() {
        let stemmed = stem(word);
        for (key, synonyms) in SYNONYMS {
            if key == word || stem(key) == stemmed {
                for s in *synonyms {
                    add(stem(s), Relation::Synonym);
                }
            }
        }
        for abbreviation in abbreviations(word, words.get(i + 1).map(String::as_str)) {
            pieces.insert(abbreviation.to_string());
            add(stem(abbreviation), Relation::Abbreviation);
        }
        for form in derived(word) {
            add(stem(&form), Relation::Derived);
        }
        pieces.insert(word.clone());
        pieces.insert(stemmed);
        // Glued identifiers are ASCII; `get` also keeps a multi-byte letter whole.
        if let Some(start) = word
            .get(..MIN_GLUED_PREFIX)
            .filter(|s| s.len() < word.len())
        {
            pieces.insert(start.to_string());
        }
    }
    for acronym in acronyms(&words) {
        add(acronym, Relation::Acronym);
    }
    let glue = Glue::new(&pieces, &words);
    for v in vocabulary {
        if glue.joins(v) {
            add(v.to_string(), Relation::Glued);
        }
    }
    out
}

/// The query's words that carry meaning, lowercased, in order (stopwords and numbers out).
fn words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !terms(w).is_empty())
        .collect()
}

/// A name and the number after it, written apart in prose and together in code: `P-256`,
/// `SHA-512`, `PKCS#8`, `ASN.1` → `p256`, `sha512`, `pkcs8`, `asn1`.
fn joined(query: &str) -> Vec<String> {
    let tokens: Vec<&str> = query
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '#' | '.')))
        .collect();
    let mut out = Vec::new();
    for token in tokens {
        let parts: Vec<&str> = token.split(['-', '#', '.']).collect();
        for pair in parts.windows(2) {
            let (name, number) = (pair[0], pair[1]);
            if !name.is_empty()
                && name.chars().all(char::is_alphabetic)
                && !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit())
            {
                out.push(format!("{}{number}", name.to_lowercase()));
            }
        }
    }
    out
}

/// An integer width in words (`32-bit`) as code names its types: `u32`, `i32`, `uint32`.
fn bit_widths(query: &str) -> Vec<String> {
    let lower = query.to_lowercase();
    let mut out = Vec::new();
    for width in ["8", "16", "32", "64", "128"] {
        if lower.contains(&format!("{width}-bit")) || lower.contains(&format!("{width} bit")) {
            for prefix in ["u", "i", "uint", "int"] {
                out.push(format!("{prefix}{width}"));
            }
        }
    }
    out
}

/// The abbreviations of `word` (and of the two-word phrase it starts with `next`).
fn abbreviations<'a>(word: &str, next: Option<&str>) -> impl Iterator<Item = &'a str> {
    let phrase = next.map(|n| format!("{word} {n}"));
    ABBREVIATIONS
        .iter()
        .filter(move |(words, _)| {
            words
                .iter()
                .any(|w| *w == word || phrase.as_deref() == Some(*w))
        })
        .flat_map(|(_, short)| short.iter().copied())
}

/// The words `word` may be derived from, by the first of [`DERIVATIONS`] that fits (a longer
/// ending is listed before a shorter one it ends with).
fn derived(word: &str) -> Vec<String> {
    DERIVATIONS
        .iter()
        .filter_map(|(ending, bases)| {
            let root = word.strip_suffix(ending)?;
            (root.len() >= 2).then(|| bases.iter().map(move |b| format!("{root}{b}")))
        })
        .next()
        .map(Iterator::collect)
        .unwrap_or_default()
}

/// The initials of two or three consecutive meaningful words (`field element` → `fe`,
/// `Chinese remainder theorem` → `crt`).
fn acronyms(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for n in 2..=3 {
        for group in words.windows(n) {
            if group.iter().all(|w| w.chars().all(char::is_alphabetic)) {
                out.push(group.iter().filter_map(|w| w.chars().next()).collect());
            }
        }
    }
    out
}

/// The pieces of a query an identifier may be glued from: its words, their abbreviations and
/// starts (at least two letters), and the words' initials. Asked of every indexed term at each
/// query, so a term costs a few prefix comparisons and rarely a hash.
struct Glue<'p> {
    set: &'p HashSet<String>,
    /// The pieces of two letters or more, longest first.
    heads: Vec<&'p str>,
    initials: [bool; 256],
}

impl<'p> Glue<'p> {
    fn new(set: &'p HashSet<String>, words: &[String]) -> Glue<'p> {
        let mut heads: Vec<&str> = set
            .iter()
            .map(String::as_str)
            .filter(|p| p.len() >= 2)
            .collect();
        heads.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        let mut initials = [false; 256];
        for w in words {
            if let Some(&b) = w.as_bytes().first() {
                initials[usize::from(b)] = true;
            }
        }
        Glue {
            set,
            heads,
            initials,
        }
    }

    /// Whether the indexed term `v` is two pieces glued together: two of the query's words,
    /// abbreviations or starts (`memcmp` for "compare memory", `cpuid` for "CPU
    /// identification"), or one word after another's initial (`cswap` for "conditional swap").
    fn joins(&self, v: &str) -> bool {
        let bytes = v.as_bytes();
        if bytes.len() < 4 || !v.is_ascii() {
            return false;
        }
        let two_words = self.heads.iter().any(|head| {
            v.len() > head.len() + 1
                && v.starts_with(head)
                && v[head.len()..] != **head
                && self.set.contains(&v[head.len()..])
        });
        let after_initial =
            self.initials[usize::from(bytes[0])] && bytes.len() >= 5 && self.set.contains(&v[1..]);
        (two_words || after_initial) && !self.set.contains(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializing_emailing_and_guessing_meet_the_words_code_uses() {
        let none = std::iter::empty::<&str>();
        let out = related("serialize the record to send it by email", none);
        for word in ["pickle", "encode", "mail", "smtp"] {
            assert_eq!(out.get(&stem(word)), Some(&Relation::Synonym), "{word}");
        }
        let out = related("guess the encoding", std::iter::empty::<&str>());
        assert_eq!(out.get(&stem("detect")), Some(&Relation::Synonym));
    }
}

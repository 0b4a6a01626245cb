//! The indexer's vocabulary for one batch of files: every distinct word the chunker meets,
//! mapped once to its terms (`rank::word_terms`: camel pieces, lowercased, filtered, stemmed)
//! under small local ids. Tokenising a file then costs one hash lookup per word occurrence, not
//! a string and a stem per term; the index maps local ids to its own once per batch
//! (`Stored::insert_pieces`). What a word's terms are is `rank.rs`'s alone.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::rank;

/// Term counts of one chunk field in local ids: (local id, count), sorted by id.
pub(crate) type Counts = Vec<(u32, u32)>;

#[derive(Default)]
pub(crate) struct Vocab {
    /// Each distinct word: the range of its term ids in `ids`.
    words: HashMap<Box<str>, (u32, u32), Quick>,
    ids: Vec<u32>,
    /// Each distinct term: its local id, and back.
    terms: HashMap<Box<str>, u32, Quick>,
    names: Vec<Box<str>>,
}

impl Vocab {
    /// Appends the local term ids of `text` to `out`, in order: what `rank::terms` gives, as ids.
    pub(crate) fn terms_into(&mut self, text: &str, out: &mut Vec<u32>) {
        for word in rank::words(text) {
            let (from, to) = match self.words.get(word) {
                Some(range) => *range,
                None => self.learn(word),
            };
            out.extend_from_slice(&self.ids[from as usize..to as usize]);
        }
    }

    /// Works out the terms of a word not met before.
    fn learn(&mut self, word: &str) -> (u32, u32) {
        let from = self.ids.len() as u32;
        let Vocab {
            ids, terms, names, ..
        } = self;
        rank::word_terms(word, |term| {
            let next = names.len() as u32;
            let id = *terms.entry(term.as_str().into()).or_insert_with(|| {
                names.push(term.into_boxed_str());
                next
            });
            ids.push(id);
        });
        let range = (from, self.ids.len() as u32);
        self.words.insert(word.into(), range);
        range
    }

    /// The term of local id `id`.
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    /// Local ids handed out so far.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

/// The counts of `ids` (which it sorts).
pub(crate) fn counts(ids: &mut [u32]) -> Counts {
    ids.sort_unstable();
    let mut out: Counts = Vec::new();
    for &id in ids.iter() {
        match out.last_mut() {
            Some((last, n)) if *last == id => *n += 1,
            _ => out.push((id, 1)),
        }
    }
    out
}

/// A fast hash for the vocabulary's short keys (FxHash's multiply-rotate, a word at a time).
/// Not collision-resistant: a crafted file can at worst slow its own indexing.
type Quick = BuildHasherDefault<QuickHasher>;

#[derive(Default)]
pub(crate) struct QuickHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl QuickHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for QuickHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

//! The indexer's vocabulary for one batch of files: every distinct word the chunker meets,
//! mapped once to its terms (`rank::word_terms`: camel pieces, lowercased, filtered, stemmed)
//! under small local ids. Tokenising a file then costs one hash lookup per word occurrence, not
//! a string and a stem per term; the index maps local ids to its own once per batch
//! (`Stored::insert_pieces`). What a word's terms are is `rank.rs`'s alone.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::rank;

/// Term counts of one chunk field in local ids: (local id, count), in the order of first use
/// (the index sorts them once they are its own ids).
pub(crate) type Counts = Vec<(u32, u32)>;

#[derive(Default)]
pub(crate) struct Vocab {
    /// Each distinct word: the range of its term ids in `ids`.
    words: HashMap<Box<str>, (u32, u32), Quick>,
    ids: Vec<u32>,
    /// Each distinct term: its local id, and back.
    terms: HashMap<Box<str>, u32, Quick>,
    names: Vec<Box<str>>,
    /// Scratch of [`Vocab::counts`]: each local id's place in the counts being made.
    slots: Vec<u32>,
    counting: Counts,
}

/// No place yet, in [`Vocab::slots`].
const NO_SLOT: u32 = u32::MAX;

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

    /// The counts of `ids` (local ids of this vocabulary), without sorting them: a chunk's
    /// field uses each id a few times.
    pub(crate) fn counts(&mut self, ids: &[u32]) -> Counts {
        if self.slots.len() < self.names.len() {
            self.slots.resize(self.names.len(), NO_SLOT);
        }
        for &id in ids {
            let slot = &mut self.slots[id as usize];
            if *slot == NO_SLOT {
                *slot = self.counting.len() as u32;
                self.counting.push((id, 1));
            } else {
                self.counting[*slot as usize].1 += 1;
            }
        }
        for (id, _) in &self.counting {
            self.slots[*id as usize] = NO_SLOT;
        }
        // Copied out at its size: the index keeps these vectors.
        let out = self.counting.clone();
        self.counting.clear();
        out
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

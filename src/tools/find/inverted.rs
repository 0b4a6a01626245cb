//! The `find` index's inverted lists, kept in memory only (rebuilt from the chunks on load):
//! for every term, the chunks that use it, in which field and how often, so a query reads the
//! lists of its few terms instead of scoring every chunk. A file's chunks get a block of ids
//! when it is inserted; removing it only marks the block dead, and the lists are rebuilt once
//! dead ids outnumber live ones, so a change costs its own size (amortised), not the index's.

use super::index::Chunk;
use super::rank::{is_special_method, is_test_symbol};
use super::symbols::Kind;

/// A mark of a chunk whose own name (or its parent's) says it is test code.
pub(crate) const TEST_SYMBOL: u8 = 1;
/// A mark of a type, constant, impl header, module or Python special method (questions
/// describe behaviour).
pub(crate) const NOUN: u8 = 2;

/// One use of a term: the chunk id, and the field (top two bits) with the count.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    chunk: u32,
    field_count: u32,
}

const FIELD_SHIFT: u32 = 30;
const COUNT_MASK: u32 = (1 << FIELD_SHIFT) - 1;

impl Entry {
    fn new(chunk: u32, field: usize, count: u32) -> Entry {
        Entry {
            chunk,
            field_count: ((field as u32) << FIELD_SHIFT) | count.min(COUNT_MASK),
        }
    }

    pub(crate) fn chunk(self) -> usize {
        self.chunk as usize
    }

    pub(crate) fn field(self) -> usize {
        (self.field_count >> FIELD_SHIFT) as usize
    }

    pub(crate) fn count(self) -> u32 {
        self.field_count & COUNT_MASK
    }
}

/// The lists, by term id, and each chunk id's field lengths (symbol, doc, text) and marks.
/// The marks are read for every candidate of a query: kept beside the sums, they spare a
/// cache miss on the chunk's name per candidate (a third of a query's time on 10,000 files).
#[derive(Debug, Default)]
pub(crate) struct Inverted {
    lists: Vec<Vec<Entry>>,
    lens: Vec<[u32; 3]>,
    marks: Vec<u8>,
    dead: usize,
}

/// Below this many dead ids the lists are never rebuilt: the waste is too small to matter.
const MIN_DEAD: usize = 4096;

impl Inverted {
    /// Adds a file's chunks under fresh ids; the first of them.
    pub(crate) fn add(&mut self, chunks: &[Chunk]) -> u32 {
        let first = self.lens.len() as u32;
        for (i, chunk) in chunks.iter().enumerate() {
            let id = first + i as u32;
            let mut lens = [0u32; 3];
            for (f, field) in chunk.fields.iter().enumerate() {
                for &(term, count) in field {
                    let term = term as usize;
                    if self.lists.len() <= term {
                        self.lists.resize_with(term + 1, Vec::new);
                    }
                    self.lists[term].push(Entry::new(id, f, count));
                    lens[f] = lens[f].saturating_add(count);
                }
            }
            self.lens.push(lens);
            self.marks.push(marks_of(chunk));
        }
        first
    }

    /// Marks `n` ids of a removed file dead; whether the lists should now be rebuilt.
    pub(crate) fn retire(&mut self, n: usize) -> bool {
        self.dead += n;
        self.dead > MIN_DEAD && self.dead > self.lens.len() - self.dead
    }

    /// Forgets every list, before a rebuild.
    pub(crate) fn clear(&mut self) {
        *self = Inverted::default();
    }

    /// The uses of `term` (dead ids included: a query never reads their sums).
    pub(crate) fn list(&self, term: u32) -> &[Entry] {
        self.lists.get(term as usize).map_or(&[], Vec::as_slice)
    }

    /// The field lengths of chunk `id`.
    pub(crate) fn lens(&self, id: usize) -> [u32; 3] {
        self.lens.get(id).copied().unwrap_or_default()
    }

    /// The marks ([`TEST_SYMBOL`], [`NOUN`]) of chunk `id`.
    pub(crate) fn marks(&self, id: usize) -> u8 {
        self.marks.get(id).copied().unwrap_or_default()
    }

    /// Ids handed out so far, live and dead.
    pub(crate) fn ids(&self) -> usize {
        self.lens.len()
    }
}

fn marks_of(chunk: &Chunk) -> u8 {
    let mut marks = 0;
    if is_test_symbol(&chunk.symbol, chunk.parent.as_deref()) {
        marks |= TEST_SYMBOL;
    }
    if matches!(
        chunk.kind,
        Kind::Type | Kind::Constant | Kind::Impl | Kind::Module
    ) || is_special_method(&chunk.symbol)
    {
        marks |= NOUN;
    }
    marks
}

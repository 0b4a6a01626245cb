//! The `find` index's inverted lists, kept in memory only (rebuilt from the chunks on load):
//! for every term, the chunks that use it, in which field and how often, so a query reads the
//! lists of its few terms instead of scoring every chunk. A file's chunks get a block of ids
//! when it is inserted; removing it only marks the block dead, and the lists are rebuilt once
//! dead ids outnumber live ones, so a change costs its own size (amortised), not the index's.

use super::index::Chunk;

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

/// The lists, by term id, and each chunk id's field lengths (symbol, doc, text).
#[derive(Debug, Default)]
pub(crate) struct Inverted {
    lists: Vec<Vec<Entry>>,
    lens: Vec<[u32; 3]>,
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

    /// Ids handed out so far, live and dead.
    pub(crate) fn ids(&self) -> usize {
        self.lens.len()
    }
}

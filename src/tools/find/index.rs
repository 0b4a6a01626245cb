//! The `find` index in memory: every indexed file's metadata and chunks, their terms as ids
//! into one term table, and the corpus statistics BM25 needs, kept up to date on every insert
//! and removal so a change never recounts the whole corpus. What is indexed is decided here:
//! the walk is `search`'s (ignore files, no links, never `.git` or `.minicode`); files over
//! [`MAX_FILE_BYTES`], binary files and files a `read(…)` rule denies are never indexed.
//! Storing it on disk is `codec.rs`'s; keeping it current is `build.rs`'s.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::WalkState;

use super::chunk::Piece;
use super::inverted::Inverted;
use super::rank;
use super::symbols::Kind;
use super::vocab::{Counts, Vocab};
use crate::fsutil;
use crate::tools::walk;

/// Files larger than this are left out: generated code, data and bundles rank badly and cost
/// the most to read.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The fields a chunk's terms are counted in, in this order in [`Chunk::fields`]; the path is
/// the fourth field BM25 scores, kept per file.
pub(crate) const SYMBOL: usize = 0;
pub(crate) const DOC: usize = 1;
pub(crate) const TEXT: usize = 2;
pub(crate) const PATH: usize = 3;

/// Term counts of one field: (term id, count), sorted by id.
pub(crate) type Postings = Vec<(u32, u32)>;

/// Every term the index has seen, once. Ids are never reused while the process runs; the codec
/// writes only the terms still in use.
#[derive(Debug, Default)]
pub(crate) struct Terms {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Terms {
    pub(crate) fn id(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(term.to_string());
        self.ids.insert(term.to_string(), id);
        id
    }

    pub(crate) fn get(&self, term: &str) -> Option<u32> {
        self.ids.get(term).copied()
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    fn postings(&mut self, counts: &BTreeMap<String, u32>) -> Postings {
        let mut out: Postings = counts.iter().map(|(t, n)| (self.id(t), *n)).collect();
        out.sort_unstable();
        out
    }

    /// `field`'s counts in these ids, turned in place from `vocab`'s local ids; `map` holds the
    /// id of each local id met so far ([`UNMAPPED`] for none), `fresh` is scratch. A term new
    /// to the index gets its id in the order of its name within the field, as it did when
    /// fields were maps by name: ids are handed out exactly as before.
    fn postings_of(
        &mut self,
        mut field: Counts,
        vocab: &Vocab,
        map: &mut [u32],
        fresh: &mut Vec<u32>,
    ) -> Postings {
        fresh.clear();
        for &(local, _) in &field {
            let mapped = &mut map[local as usize];
            if *mapped == UNMAPPED {
                match self.get(vocab.name(local)) {
                    Some(id) => *mapped = id,
                    None => fresh.push(local),
                }
            }
        }
        fresh.sort_unstable_by(|a, b| vocab.name(*a).cmp(vocab.name(*b)));
        for &local in fresh.iter() {
            map[local as usize] = self.id(vocab.name(local));
        }
        for (t, _) in &mut field {
            *t = map[*t as usize];
        }
        field.sort_unstable();
        field
    }
}

/// A local id with no index id yet, in the map [`Stored::insert_pieces`] keeps.
pub(crate) const UNMAPPED: u32 = u32::MAX;

/// One chunk's place, name and term counts by field.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    /// First and last line, 1-based.
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) symbol: String,
    pub(crate) kind: Kind,
    pub(crate) parent: Option<String>,
    pub(crate) fields: [Postings; 3],
}

/// What says a file changed: its size, modification and change times, and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Stamp {
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
    pub(crate) ctime_ns: i64,
    pub(crate) inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: meta.len(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
            inode: meta.ino(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct FileEntry {
    pub(crate) stamp: Stamp,
    pub(crate) chunks: Vec<Chunk>,
    /// The path's own terms (not stored: derived from the path on insert).
    pub(crate) path_terms: Postings,
    /// The id of the first chunk in the inverted lists; the others follow it.
    pub(crate) first: u32,
}

/// Corpus statistics: chunk count, document frequency per term id, summed field lengths.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) chunks: u64,
    pub(crate) df: Vec<u32>,
    pub(crate) sums: [u64; 4],
}

/// The whole index, by path relative to the workspace.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    pub(crate) terms: Terms,
    pub(crate) files: BTreeMap<String, FileEntry>,
    pub(crate) stats: Stats,
    pub(crate) inverted: Inverted,
}

fn field_len(p: &Postings) -> u64 {
    p.iter().map(|(_, n)| u64::from(*n)).sum()
}

impl Stored {
    /// Adds (or replaces) the file at `rel`, its chunks cut by the chunker with `vocab`. `map`
    /// (local id → index id, [`UNMAPPED`] at first) is shared by every file cut with the same
    /// vocabulary, so each distinct word is looked up by name once per batch, not once per
    /// chunk.
    pub(crate) fn insert_pieces(
        &mut self,
        rel: &str,
        stamp: Stamp,
        pieces: Vec<Piece>,
        vocab: &Vocab,
        map: &mut Vec<u32>,
    ) {
        if map.len() < vocab.len() {
            map.resize(vocab.len(), UNMAPPED);
        }
        let mut fresh = Vec::new();
        let chunks = pieces
            .into_iter()
            .map(|p| Chunk {
                start: p.start,
                end: p.end,
                fields: p
                    .fields
                    .map(|f| self.terms.postings_of(f, vocab, map, &mut fresh)),
                symbol: p.symbol,
                kind: p.kind,
                parent: p.parent,
            })
            .collect();
        self.insert(rel, stamp, chunks);
    }

    /// Adds (or replaces) the file at `rel` with chunks already in term ids.
    pub(crate) fn insert(&mut self, rel: &str, stamp: Stamp, chunks: Vec<Chunk>) {
        self.remove(rel);
        let path_terms = self.terms.postings(&rank::counts(rank::terms(rel)));
        let first = self.inverted.add(&chunks);
        let entry = FileEntry {
            stamp,
            chunks,
            path_terms,
            first,
        };
        self.count(&entry, true);
        self.files.insert(rel.to_string(), entry);
    }

    /// Drops the file at `rel`, if indexed; whether it was.
    pub(crate) fn remove(&mut self, rel: &str) -> bool {
        match self.files.remove(rel) {
            Some(old) => {
                self.count(&old, false);
                if self.inverted.retire(old.chunks.len()) {
                    self.inverted.clear();
                    for file in self.files.values_mut() {
                        file.first = self.inverted.add(&file.chunks);
                    }
                }
                true
            }
            None => false,
        }
    }

    /// Adds or subtracts one file's share of the statistics.
    fn count(&mut self, entry: &FileEntry, add: bool) {
        let stats = &mut self.stats;
        if stats.df.len() < self.terms.len() {
            stats.df.resize(self.terms.len(), 0);
        }
        let mut seen: Vec<u32> = Vec::new();
        for chunk in &entry.chunks {
            seen.clear();
            for field in chunk.fields.iter().chain([&entry.path_terms]) {
                seen.extend(field.iter().map(|(t, _)| *t));
            }
            seen.sort_unstable();
            seen.dedup();
            let lens = [
                field_len(&chunk.fields[SYMBOL]),
                field_len(&chunk.fields[DOC]),
                field_len(&chunk.fields[TEXT]),
                field_len(&entry.path_terms),
            ];
            for &t in &seen {
                let df = &mut stats.df[t as usize];
                *df = if add { *df + 1 } else { df.saturating_sub(1) };
            }
            for (sum, len) in stats.sums.iter_mut().zip(lens) {
                *sum = if add {
                    *sum + len
                } else {
                    sum.saturating_sub(len)
                };
            }
            stats.chunks = if add {
                stats.chunks + 1
            } else {
                stats.chunks.saturating_sub(1)
            };
        }
    }

    pub(crate) fn chunk_count(&self) -> u64 {
        self.stats.chunks
    }
}

/// What the walk found and left out.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) files: BTreeMap<String, (PathBuf, Stamp)>,
    pub(crate) too_big: usize,
    pub(crate) withheld: usize,
    pub(crate) skipped_notes: Vec<String>,
}

/// Every regular file the walk yields that may be indexed, by relative path, with its stamp.
/// The walk runs on every core: on a large tree this metadata check is most of what a query
/// on an unchanged index costs.
pub(crate) fn walk_files(
    workspace: &Path,
    rules: Option<&crate::permissions::Rules>,
) -> Result<Found, String> {
    let start = walk::start(workspace, None)?;
    let walk = walk::build(workspace, &start, None)?;
    let found = Mutex::new(Found::default());
    let guard = crate::tools::read_guard::ReadGuard::new(rules, workspace);
    walk.builder.build_parallel().run(|| {
        let found = &found;
        let guard = guard.as_ref();
        Box::new(move |entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_file())
            {
                let seen = look(workspace, guard, entry.path());
                let mut found = crate::sync::lock(found);
                match seen {
                    Seen::Withheld => found.withheld += 1,
                    Seen::TooBig => found.too_big += 1,
                    Seen::File(rel, abs, stamp) => {
                        found.files.insert(rel, (abs, stamp));
                    }
                    Seen::Nothing => {}
                }
            }
            WalkState::Continue
        })
    });
    let mut found = crate::sync::into_inner(found);
    found.skipped_notes = crate::sync::lock(&walk.skipped).notes();
    Ok(found)
}

/// What the walk makes of one regular file.
enum Seen {
    Withheld,
    TooBig,
    File(String, PathBuf, Stamp),
    Nothing,
}

fn look(
    workspace: &Path,
    guard: Option<&crate::tools::read_guard::ReadGuard<'_>>,
    abs: &Path,
) -> Seen {
    if guard.is_some_and(|g| g.withholds(abs)) {
        return Seen::Withheld;
    }
    let Ok(meta) = std::fs::symlink_metadata(abs) else {
        return Seen::Nothing;
    };
    if !meta.is_file() {
        return Seen::Nothing;
    }
    if meta.len() > MAX_FILE_BYTES {
        return Seen::TooBig;
    }
    Seen::File(
        walk::shown(workspace, abs),
        abs.to_path_buf(),
        Stamp::of(&meta),
    )
}

/// The chunks of one file, their terms learnt into `vocab`, or `None` when it cannot be
/// opened, grew past the limit, or is binary. Opened without following a link, as `search`
/// opens files.
pub(crate) fn read_pieces(abs: &Path, rel: &str, vocab: &mut Vocab) -> Option<Vec<Piece>> {
    let file = fsutil::open_walked(abs).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES || fsutil::looks_binary(&bytes) {
        return None;
    }
    // Most files are valid UTF-8: checked in one pass, not decoded piece by piece.
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Some(super::chunk::chunks(rel, &text, vocab))
}

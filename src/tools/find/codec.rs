//! The `find` index on disk: a compact binary form, since the index is read at every start of
//! a session and written after every change. Terms are stored once, sorted and front-coded;
//! each chunk's postings are delta-coded term ids as varints with the count folded into the
//! low bit (most counts are 1); paths are front-coded against the previous one; no chunk text
//! is stored (previews are read from the files). A magic, a version and a trailing checksum
//! make a truncated, corrupt or foreign file fail to decode, so it is rebuilt, never trusted.
//! Pure: bytes in, bytes out.

use super::index::{Chunk, Postings, Stamp, Stored};
use super::symbols::Kind;

const MAGIC: &[u8; 8] = b"MCFINDX\0";
/// Bumped whenever chunking, ranking inputs or this layout change: an index of another
/// version is rebuilt.
pub(crate) const VERSION: u32 = 3;

/// Why stored bytes were not taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// Not an index, or cut short, or its checksum does not match.
    Corrupt,
    /// An index of another version.
    Version,
}

/// FNV-1a over `bytes`: enough to catch a torn or edited file, not meant against an attacker
/// (who could as well write a valid index of misleading chunks; the index only ranks).
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_signed(out: &mut Vec<u8>, v: i64) {
    put(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// `s` coded against `prev`: the length of the shared prefix, then the rest.
fn put_front(out: &mut Vec<u8>, prev: &str, s: &str) {
    let shared = prev
        .bytes()
        .zip(s.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let shared = (0..=shared)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    put(out, shared as u64);
    put_str(out, &s[shared..]);
}

fn kind_code(kind: Kind) -> u8 {
    Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0) as u8
}

/// The index as bytes. Only terms some chunk or path uses are written, renumbered in sorted
/// order so the ids of one chunk delta-code small.
pub(crate) fn encode(stored: &Stored) -> Vec<u8> {
    let mut in_use = vec![false; stored.terms.len()];
    for file in stored.files.values() {
        for chunk in &file.chunks {
            for field in &chunk.fields {
                for (t, _) in field {
                    in_use[*t as usize] = true;
                }
            }
        }
    }
    let mut used: Vec<u32> = (0..stored.terms.len() as u32)
        .filter(|t| in_use[*t as usize])
        .collect();
    used.sort_by(|a, b| stored.terms.name(*a).cmp(stored.terms.name(*b)));
    // By old id: every posting of every chunk is renumbered, so a lookup must cost an index.
    let mut renumber = vec![0u32; stored.terms.len()];
    for (new, old) in used.iter().enumerate() {
        renumber[*old as usize] = new as u32;
    }
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    put(&mut out, used.len() as u64);
    let mut prev = "";
    for id in &used {
        let name = stored.terms.name(*id);
        put_front(&mut out, prev, name);
        prev = name;
    }
    put(&mut out, stored.files.len() as u64);
    let mut prev = "";
    let mut ids: Vec<(u32, u32)> = Vec::new();
    for (path, file) in &stored.files {
        put_front(&mut out, prev, path);
        prev = path;
        put_stamp(&mut out, &file.stamp);
        put(&mut out, file.chunks.len() as u64);
        let mut line = 0u32;
        for chunk in &file.chunks {
            put(&mut out, u64::from(chunk.start.saturating_sub(line)));
            put(&mut out, u64::from(chunk.end.saturating_sub(chunk.start)));
            line = chunk.end;
            out.push(kind_code(chunk.kind));
            put_str(&mut out, &chunk.symbol);
            match &chunk.parent {
                None => put(&mut out, 0),
                Some(p) => {
                    put(&mut out, p.len() as u64 + 1);
                    out.extend_from_slice(p.as_bytes());
                }
            }
            for field in &chunk.fields {
                ids.clear();
                ids.extend(field.iter().map(|(t, n)| (renumber[*t as usize], *n)));
                ids.sort_unstable();
                put_postings(&mut out, &ids);
            }
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn put_stamp(out: &mut Vec<u8>, s: &Stamp) {
    put(out, s.size);
    put_signed(out, s.mtime_ns);
    put_signed(out, s.ctime_ns);
    put(out, s.inode);
}

fn put_postings(out: &mut Vec<u8>, ids: &[(u32, u32)]) {
    put(out, ids.len() as u64);
    let mut last = 0u32;
    for (id, n) in ids {
        let delta = u64::from(id - last);
        last = *id;
        put(out, (delta << 1) | u64::from(*n > 1));
        if *n > 1 {
            put(out, u64::from(*n - 2));
        }
    }
}

/// A cursor over stored bytes; every read fails on a short or malformed input.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, Rejected> {
        let b = *self.bytes.get(self.at).ok_or(Rejected::Corrupt)?;
        self.at += 1;
        Ok(b)
    }

    fn num(&mut self) -> Result<u64, Rejected> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Rejected::Corrupt)
    }

    fn small(&mut self) -> Result<u32, Rejected> {
        u32::try_from(self.num()?).map_err(|_| Rejected::Corrupt)
    }

    fn signed(&mut self) -> Result<i64, Rejected> {
        let v = self.num()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn take(&mut self, n: usize) -> Result<&str, Rejected> {
        let end = self.at.checked_add(n).ok_or(Rejected::Corrupt)?;
        let slice = self.bytes.get(self.at..end).ok_or(Rejected::Corrupt)?;
        self.at = end;
        std::str::from_utf8(slice).map_err(|_| Rejected::Corrupt)
    }

    fn string(&mut self) -> Result<String, Rejected> {
        let n = self.num()? as usize;
        self.take(n).map(str::to_string)
    }

    fn front(&mut self, prev: &str) -> Result<String, Rejected> {
        let shared = self.num()? as usize;
        let head = prev.get(..shared).ok_or(Rejected::Corrupt)?.to_string();
        Ok(head + &self.string()?)
    }

    /// A count of items that each take at least one byte: more than the bytes left is corrupt
    /// (and would otherwise reserve unbounded memory).
    fn count(&mut self) -> Result<usize, Rejected> {
        let n = self.num()? as usize;
        if n > self.bytes.len() - self.at {
            return Err(Rejected::Corrupt);
        }
        Ok(n)
    }
}

/// The index in `bytes`, or why it is not taken.
pub(crate) fn decode(bytes: &[u8]) -> Result<Stored, Rejected> {
    if bytes.len() < MAGIC.len() + 4 + 8 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(Rejected::Corrupt);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().map_err(|_| Rejected::Corrupt)?);
    if version != VERSION {
        return Err(Rejected::Version);
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if checksum(body).to_le_bytes() != sum {
        return Err(Rejected::Corrupt);
    }
    let mut r = Reader {
        bytes: body,
        at: 12,
    };
    let mut stored = Stored::default();
    let mut names: Vec<u32> = Vec::new();
    let mut prev = String::new();
    for _ in 0..r.count()? {
        let name = r.front(&prev)?;
        names.push(stored.terms.id(&name));
        prev = name;
    }
    let mut prev = String::new();
    for _ in 0..r.count()? {
        let path = r.front(&prev)?;
        let stamp = Stamp {
            size: r.num()?,
            mtime_ns: r.signed()?,
            ctime_ns: r.signed()?,
            inode: r.num()?,
        };
        let mut chunks = Vec::new();
        let mut line = 0u32;
        for _ in 0..r.count()? {
            let start = line.checked_add(r.small()?).ok_or(Rejected::Corrupt)?;
            let end = start.checked_add(r.small()?).ok_or(Rejected::Corrupt)?;
            line = end;
            let kind = *Kind::ALL
                .get(usize::from(r.byte()?))
                .ok_or(Rejected::Corrupt)?;
            let symbol = r.string()?;
            let parent = match r.num()? as usize {
                0 => None,
                n => Some(r.take(n - 1)?.to_string()),
            };
            let mut fields: [Postings; 3] = Default::default();
            for field in &mut fields {
                *field = postings(&mut r, &names)?;
            }
            chunks.push(Chunk {
                start,
                end,
                symbol,
                kind,
                parent,
                fields,
            });
        }
        stored.insert(&path, stamp, chunks);
        prev = path;
    }
    if r.at != body.len() {
        return Err(Rejected::Corrupt);
    }
    Ok(stored)
}

fn postings(r: &mut Reader<'_>, names: &[u32]) -> Result<Postings, Rejected> {
    let n = r.count()?;
    let mut out = Vec::with_capacity(n);
    let mut id = 0u64;
    for _ in 0..n {
        let v = r.num()?;
        id += v >> 1;
        let count = if v & 1 == 1 { r.small()? + 2 } else { 1 };
        let term = *names.get(id as usize).ok_or(Rejected::Corrupt)?;
        out.push((term, count));
    }
    // Sorted file ids map to load-order ids that rise with them, so the postings stay sorted.
    Ok(out)
}

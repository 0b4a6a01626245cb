//! The byte format of a shared snapshot (`bases/<sha256>`, see `shared`): the recorded tree in
//! path order, each path stored as the length it shares with the one before plus the rest,
//! each blob name as its 32 raw bytes and the numbers as variable-length integers. Decoding
//! is one pass with no text parsing and no inflating: in a later session of a large
//! workspace, inflating and parsing the JSON it replaces weighed most of loading the cache. It is stored as is, some 30% larger than the deflated JSON was (~41 bytes a
//! file or folder: the blob names do not compress). It only encodes and decodes; what a
//! snapshot may contain is checked by its reader.

use std::io;

use super::{DIR_HASH, FileState, HOLDS_SECRET, TOO_LARGE, Tree};

/// The first bytes of a snapshot in this format (older ones are deflated JSON).
pub(crate) const MAGIC: &[u8; 8] = b"mcsnap1\n";

/// Kinds of state: a blob name follows only the first.
const BLOB: u8 = 0;
const DIR: u8 = 1;
const LARGE: u8 = 2;
const SECRET: u8 = 3;

/// The tree as snapshot bytes.
pub(crate) fn encode(tree: &Tree) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + tree.len() * 72);
    out.extend_from_slice(MAGIC);
    put(&mut out, tree.len() as u64);
    let mut last: &[u8] = &[];
    for (path, state) in tree {
        let path = path.as_bytes();
        let shared = last.iter().zip(path).take_while(|(a, b)| a == b).count();
        put(&mut out, shared as u64);
        put(&mut out, (path.len() - shared) as u64);
        out.extend_from_slice(&path[shared..]);
        last = path;
        match state.hash.as_str() {
            DIR_HASH => out.push(DIR),
            TOO_LARGE => out.push(LARGE),
            HOLDS_SECRET => out.push(SECRET),
            hash => {
                out.push(BLOB);
                out.extend_from_slice(&unhex(hash));
            }
        }
        put(&mut out, u64::from(state.mode));
        put(&mut out, state.size);
        put(&mut out, zigzag(state.mtime));
        put(&mut out, zigzag(state.ctime.wrapping_sub(state.mtime)));
        put(&mut out, state.ino);
    }
    out
}

/// The tree a snapshot's bytes hold (`bytes` begin with [`MAGIC`]).
pub(crate) fn decode(bytes: &[u8]) -> io::Result<Tree> {
    let mut r = Reader {
        bytes,
        at: MAGIC.len(),
    };
    if !bytes.starts_with(MAGIC) {
        return Err(bad());
    }
    let count = r.num()?;
    let mut entries = Vec::with_capacity(usize::try_from(count.min(1 << 22)).unwrap_or(0));
    let mut last: Vec<u8> = Vec::new();
    for _ in 0..count {
        let shared = usize::try_from(r.num()?).map_err(|_| bad())?;
        let rest = usize::try_from(r.num()?).map_err(|_| bad())?;
        if shared > last.len() {
            return Err(bad());
        }
        last.truncate(shared);
        last.extend_from_slice(r.take(rest)?);
        let hash = match r.take(1)?[0] {
            BLOB => super::hex(r.take(32)?),
            DIR => DIR_HASH.to_string(),
            LARGE => TOO_LARGE.to_string(),
            SECRET => HOLDS_SECRET.to_string(),
            _ => return Err(bad()),
        };
        let mode = u32::try_from(r.num()?).map_err(|_| bad())?;
        let size = r.num()?;
        let mtime = unzigzag(r.num()?);
        let ctime = mtime.wrapping_add(unzigzag(r.num()?));
        let ino = r.num()?;
        let path = String::from_utf8(last.clone()).map_err(|_| bad())?;
        let state = FileState {
            hash,
            mode,
            size,
            mtime,
            ctime,
            ino,
        };
        entries.push((path, state));
    }
    if r.at != bytes.len() || !entries.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err(bad());
    }
    // In order already: the map is built in one pass.
    Ok(entries.into_iter().collect())
}

fn bad() -> io::Error {
    io::Error::other("a checkpoint snapshot is malformed")
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or_else(bad)?;
        let slice = self.bytes.get(self.at..end).ok_or_else(bad)?;
        self.at = end;
        Ok(slice)
    }

    /// A LEB128 number.
    fn num(&mut self) -> io::Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(bad())
    }
}

/// Appends `value` as LEB128.
fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// The 32 bytes a blob name (64 lowercase hex digits, checked by the caller) stands for.
fn unhex(hash: &str) -> [u8; 32] {
    let digit = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => 0,
    };
    let mut out = [0u8; 32];
    for (i, pair) in hash.as_bytes().chunks(2).take(32).enumerate() {
        out[i] = (digit(pair[0]) << 4) | pair.get(1).map_or(0, |&c| digit(c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};
    use crate::checkpoints::{FileState, Tree};

    fn state(hash: &str, mtime: i64, ctime: i64) -> FileState {
        FileState {
            hash: hash.to_string(),
            mode: 0o644,
            size: 1234,
            mtime,
            ctime,
            ino: 987_654_321,
        }
    }

    #[test]
    fn a_tree_comes_back_as_it_was_encoded() {
        let mut tree = Tree::new();
        tree.insert("src/".into(), state("dir", 5, 5));
        tree.insert(
            "src/a.rs".into(),
            state(
                &"0f".repeat(32),
                1_700_000_000_123_456_789,
                1_700_000_000_123_456_790,
            ),
        );
        tree.insert("src/b.rs".into(), state("too-large", -3, 9));
        tree.insert("x/é.txt".into(), state("secret", 0, i64::MAX));
        tree.insert("z".into(), state(&"a9".repeat(32), i64::MIN, 0));
        let bytes = encode(&tree);
        assert_eq!(decode(&bytes).ok(), Some(tree));
        assert_eq!(decode(&encode(&Tree::new())).ok(), Some(Tree::new()));
    }

    #[test]
    fn truncated_or_reordered_bytes_are_refused() {
        let mut tree = Tree::new();
        tree.insert("a".into(), state(&"11".repeat(32), 1, 1));
        tree.insert("b".into(), state(&"22".repeat(32), 1, 1));
        let bytes = encode(&tree);
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
        assert!(decode(b"{\"a\":1}").is_err());
    }
}

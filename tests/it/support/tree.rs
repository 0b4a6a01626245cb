//! A snapshot of a folder taken with plain `std::fs`, independent of minicode's own walks, so
//! a test can say "the tree is byte-identical to before" (content and permission bits).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Path (relative, `/`-separated; folders end with `/`) → content and permission bits.
pub type Tree = BTreeMap<String, (Vec<u8>, u32)>;

/// Every file and folder under `dir` except the top-level entries named in `skip`.
pub fn snapshot(dir: &Path, skip: &[&str]) -> Tree {
    fn walk(root: &Path, dir: &Path, skip: &[&str], out: &mut Tree) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if skip.contains(&rel.as_str()) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(format!("{rel}/"), (Vec::new(), 0));
                walk(root, &path, skip, out);
            } else {
                let mode = meta.permissions().mode() & 0o7777;
                out.insert(rel, (std::fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, skip, &mut out);
    out
}

//! The link-free operations: links in the middle, as the last component, absolute and
//! relative, `..`, and a folder swapped for a link while a tree is removed. Both ways of
//! resolving (`openat2` and the walk) are checked.

// The helpers below are test code too; clippy only sees `#[test]` functions as such.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use nix::fcntl::OFlag;

use super::{BeneathError, Root};

/// A root `ws` and a folder `outside` beside it holding `secret.txt` and `skills/a.md`.
fn setup() -> (tempfile::TempDir, Root, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(ws.join("real/sub")).unwrap();
    std::fs::create_dir_all(outside.join("skills")).unwrap();
    std::fs::write(outside.join("secret.txt"), "keep").unwrap();
    std::fs::write(outside.join("skills/a.md"), "keep").unwrap();
    let root = Root::open(&ws).unwrap();
    (tmp, root, outside)
}

fn intact(outside: &Path) {
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "keep"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("skills/a.md")).unwrap(),
        "keep"
    );
}

#[test]
fn a_link_in_the_middle_is_refused_for_every_operation() {
    let (_tmp, root, outside) = setup();
    symlink(&outside, root.path().join("real/link")).unwrap();
    let through = Path::new("real/link/secret.txt");
    assert!(root.remove_file(through).unwrap_err().is_link());
    assert!(
        root.remove_all(Path::new("real/link/skills"))
            .unwrap_err()
            .is_link()
    );
    assert!(
        root.write_atomic(through, b"x", 0o644)
            .unwrap_err()
            .is_link()
    );
    assert!(
        root.create_dir_all(Path::new("real/link/new"), 0o755)
            .unwrap_err()
            .is_link()
    );
    assert!(root.set_mode(through, 0o600).unwrap_err().is_link());
    assert!(root.open_read(through).unwrap_err().is_link());
    assert!(root.lstat(through).unwrap_err().is_link());
    assert_eq!(
        root.first_link(through).unwrap().as_deref(),
        Some(Path::new("real/link"))
    );
    intact(&outside);
    assert!(!outside.join("new").exists());
}

#[test]
fn the_walk_refuses_a_link_in_the_middle_too() {
    let (_tmp, root, outside) = setup();
    symlink(&outside, root.path().join("real/link")).unwrap();
    let parts = [
        std::ffi::OsStr::new("real"),
        std::ffi::OsStr::new("link"),
        std::ffi::OsStr::new("skills"),
    ];
    let err = root.dir_walk(&parts, OFlag::O_RDONLY).unwrap_err();
    assert!(err.is_link(), "{err}");
    assert!(root.dir_walk(&parts[..1], OFlag::O_RDONLY).is_ok());
}

#[test]
fn a_link_as_the_last_component_is_removed_as_a_link_and_never_written_through() {
    let (_tmp, root, outside) = setup();
    symlink(outside.join("secret.txt"), root.path().join("file-link")).unwrap();
    symlink(outside.join("skills"), root.path().join("dir-link")).unwrap();
    assert!(
        root.open_read(Path::new("file-link"))
            .unwrap_err()
            .is_link()
    );
    assert!(
        root.set_mode(Path::new("file-link"), 0o600)
            .unwrap_err()
            .is_link()
    );
    assert!(
        root.remove_dir(Path::new("dir-link"))
            .unwrap_err()
            .is_link()
    );
    root.write_atomic(Path::new("file-link"), b"new", 0o640)
        .unwrap();
    assert!(root.remove_all(Path::new("dir-link")).unwrap());
    intact(&outside);
    let written = root.path().join("file-link");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "new");
    let mode = std::fs::symlink_metadata(&written)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    assert!(std::fs::symlink_metadata(root.path().join("dir-link")).is_err());
}

#[test]
fn dot_dot_and_absolute_paths_outside_the_root_are_refused() {
    let (_tmp, root, outside) = setup();
    for bad in ["../outside/secret.txt", "real/../../outside/secret.txt"] {
        let err = root.remove_file(Path::new(bad)).unwrap_err();
        assert!(
            matches!(err, BeneathError::NotBeneath { .. }),
            "{bad}: {err}"
        );
    }
    let err = root.remove_file(&outside.join("secret.txt")).unwrap_err();
    assert!(matches!(err, BeneathError::NotBeneath { .. }), "{err}");
    // An absolute path below the root is fine.
    std::fs::write(root.path().join("real/x"), "x").unwrap();
    assert!(root.remove_file(&root.path().join("real/x")).unwrap());
    intact(&outside);
}

#[test]
fn relative_and_absolute_links_to_inside_folders_are_refused_as_well() {
    let (_tmp, root, _outside) = setup();
    std::fs::write(root.path().join("real/sub/f"), "f").unwrap();
    symlink("real", root.path().join("rel")).unwrap();
    symlink(root.path().join("real"), root.path().join("abs")).unwrap();
    for via in ["rel/sub/f", "abs/sub/f"] {
        assert!(
            root.remove_file(Path::new(via)).unwrap_err().is_link(),
            "{via}"
        );
    }
    assert!(root.path().join("real/sub/f").exists());
}

#[test]
fn remove_all_removes_a_tree_and_leaves_what_its_links_point_to() {
    let (_tmp, root, outside) = setup();
    let tree = root.path().join("real/sub");
    std::fs::create_dir_all(tree.join("deep/er")).unwrap();
    std::fs::write(tree.join("deep/er/f"), "f").unwrap();
    symlink(&outside, tree.join("deep/out")).unwrap();
    symlink(outside.join("secret.txt"), tree.join("s")).unwrap();
    assert!(root.remove_all(Path::new("real/sub")).unwrap());
    assert!(!tree.exists());
    intact(&outside);
    assert!(!root.remove_all(Path::new("real/sub")).unwrap());
}

#[test]
fn a_folder_swapped_for_a_link_after_the_parent_was_opened_is_not_followed() {
    // Race: the parent is resolved, then the folder below it becomes a link before the
    // removal reaches it. Removing through the descriptor removes the link only.
    let (_tmp, root, outside) = setup();
    let (parent, _, _) = root.parent_of(Path::new("real/sub")).unwrap();
    std::fs::remove_dir(root.path().join("real/sub")).unwrap();
    symlink(outside.join("skills"), root.path().join("real/sub")).unwrap();
    let shown = root.path().join("real/sub");
    assert!(super::remove::remove_entry(&parent, std::ffi::OsStr::new("sub"), &shown, 0).unwrap());
    intact(&outside);
    assert!(std::fs::symlink_metadata(&shown).is_err());
}

#[test]
fn create_dir_all_makes_the_missing_folders_and_create_dir_accepts_an_existing_one() {
    let (_tmp, root, _outside) = setup();
    root.create_dir_all(Path::new("a/b/c"), 0o755).unwrap();
    assert!(root.path().join("a/b/c").is_dir());
    root.create_dir(Path::new("a/b/c"), 0o755).unwrap();
    root.set_mode(Path::new("a/b/c"), 0o700).unwrap();
    let mode = std::fs::metadata(root.path().join("a/b/c"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(root.lstat(Path::new("a/missing/x")).unwrap().is_none());
}

#[test]
fn open_read_refuses_a_fifo_without_blocking() {
    let (_tmp, root, _outside) = setup();
    nix::unistd::mkfifo(&root.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let err = root.open_read(Path::new("fifo")).unwrap_err();
    assert!(matches!(err, BeneathError::Kind { .. }), "{err}");
    assert!(root.open_read(Path::new("absent")).unwrap().is_none());
}

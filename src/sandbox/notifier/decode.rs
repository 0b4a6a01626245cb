//! Which arguments of a trapped call name what it changes: a table from the call number to
//! its path arguments (each with the folder it is relative to) or its descriptor. Pure: the
//! supervisor reads the strings and resolves them (`notifier`).

use crate::sandbox::enforce::notify::WRITING;

/// What one argument of a trapped call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Named {
    /// A path string at `addr`, relative to the descriptor `dirfd` (`None`: the current
    /// folder); `follow`: a link in its last component is followed (its target changes too).
    Path {
        dirfd: Option<i32>,
        addr: u64,
        follow: bool,
    },
    /// The file open on this descriptor.
    Fd(i32),
    /// `openat2`'s: a path like [`Named::Path`], written only if the flags of the
    /// `struct open_how` at `how` say so.
    Open2 { dirfd: i32, addr: u64, how: u64 },
}

fn at(dirfd: u64, addr: u64, follow: bool) -> Named {
    let dirfd = dirfd as i32;
    Named::Path {
        dirfd: (dirfd != libc::AT_FDCWD).then_some(dirfd),
        addr,
        follow,
    }
}

fn cwd(addr: u64, follow: bool) -> Named {
    Named::Path {
        dirfd: None,
        addr,
        follow,
    }
}

/// `utimensat`, `futimesat`: a null path means the descriptor itself.
fn times(dirfd: u64, addr: u64) -> Named {
    if addr == 0 {
        Named::Fd(dirfd as i32)
    } else {
        at(dirfd, addr, true)
    }
}

/// An `open`'s flags: a link is followed unless `O_NOFOLLOW`.
fn follows(flags: u64) -> bool {
    flags & libc::O_NOFOLLOW as u64 == 0
}

/// What call `nr` (x32's bit cleared) with arguments `a` names; empty for a call that
/// changes nothing (a read-only `open` that reached here on x32).
pub(crate) fn named(nr: i64, a: &[u64; 6]) -> Vec<Named> {
    let writing = |flags: u64| flags & u64::from(WRITING) != 0;
    match nr {
        libc::SYS_openat if writing(a[2]) => vec![at(a[0], a[1], follows(a[2]))],
        libc::SYS_openat2 => vec![Named::Open2 {
            dirfd: a[0] as i32,
            addr: a[1],
            how: a[2],
        }],
        libc::SYS_truncate => vec![cwd(a[0], true)],
        libc::SYS_unlinkat | libc::SYS_mkdirat | libc::SYS_mknodat => vec![at(a[0], a[1], false)],
        libc::SYS_renameat2 | libc::SYS_linkat => {
            vec![at(a[0], a[1], false), at(a[2], a[3], false)]
        }
        libc::SYS_symlinkat => vec![at(a[1], a[2], false)],
        libc::SYS_fchmod => vec![Named::Fd(a[0] as i32)],
        libc::SYS_fchmodat | libc::SYS_fchmodat2 => vec![at(a[0], a[1], true)],
        libc::SYS_utimensat => vec![times(a[0], a[1])],
        _ => legacy(nr, a),
    }
}

/// The calls only x86_64 has besides their `*at` forms.
#[cfg(target_arch = "x86_64")]
fn legacy(nr: i64, a: &[u64; 6]) -> Vec<Named> {
    let writing = |flags: u64| flags & u64::from(WRITING) != 0;
    match nr {
        libc::SYS_open if writing(a[1]) => vec![cwd(a[0], follows(a[1]))],
        libc::SYS_creat | libc::SYS_chmod | libc::SYS_utime | libc::SYS_utimes => {
            vec![cwd(a[0], true)]
        }
        libc::SYS_unlink | libc::SYS_mkdir | libc::SYS_rmdir | libc::SYS_mknod => {
            vec![cwd(a[0], false)]
        }
        libc::SYS_rename | libc::SYS_link => vec![cwd(a[0], false), cwd(a[1], false)],
        libc::SYS_renameat => vec![at(a[0], a[1], false), at(a[2], a[3], false)],
        libc::SYS_symlink => vec![cwd(a[1], false)],
        libc::SYS_futimesat => vec![times(a[0], a[1])],
        _ => Vec::new(),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn legacy(_nr: i64, _a: &[u64; 6]) -> Vec<Named> {
    Vec::new()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_names_both_paths_and_a_read_only_openat_names_nothing() {
        let fdcwd = libc::AT_FDCWD as u32 as u64;
        let args = [fdcwd, 0x10, 7, 0x20, 0, 0];
        assert_eq!(
            named(libc::SYS_renameat2, &args),
            vec![
                cwd(0x10, false),
                Named::Path {
                    dirfd: Some(7),
                    addr: 0x20,
                    follow: false
                }
            ]
        );
        let read_only = [fdcwd, 0x10, libc::O_RDONLY as u64, 0, 0, 0];
        assert!(named(libc::SYS_openat, &read_only).is_empty());
        let creating = [
            fdcwd,
            0x10,
            (libc::O_WRONLY | libc::O_CREAT) as u64,
            0,
            0,
            0,
        ];
        assert_eq!(named(libc::SYS_openat, &creating), vec![cwd(0x10, true)]);
    }

    #[test]
    fn utimensat_without_a_path_names_its_descriptor() {
        assert_eq!(
            named(libc::SYS_utimensat, &[5, 0, 0, 0, 0, 0]),
            vec![Named::Fd(5)]
        );
    }
}

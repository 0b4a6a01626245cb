//! The supervisor's side of the attribution filter (`enforce::notify`): it receives the
//! listener from the namespace's init, and for every trapped call reads the path arguments
//! from the process's memory (`/proc/<pid>/mem`: the supervisor holds every capability in the
//! call's user namespace), resolves them against the process's folder or descriptor, checks
//! that the notification is still valid, appends the new paths to the record
//! (`sandbox::written`) and lets the call go on (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
//!
//! Attribution only, never enforcement: a thread of the command could change the string
//! between our read and the kernel's, which can only make the record name a path the call did
//! not change. It must never hang a command: every failure here still answers the call, and
//! the listener closes with the supervisor, after which trapped calls fail with ENOSYS.
//! Runs on the supervisor's only thread (after `unshare(CLONE_NEWPID)` it may start none),
//! from its poll loop.

mod decode;

use std::collections::HashSet;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::path::{Component, Path, PathBuf};

use decode::Named;

use super::written;

/// What the supervisor prepares before it forks init: the channel the listener comes on, a
/// handle on `/proc` as the supervisor sees it (init mounts the call's own over it, whose
/// process ids are not the ones notifications carry) and the record file minicode handed it.
pub(crate) struct Prepared {
    pub(crate) ours: UnixStream,
    pub(crate) theirs: UnixStream,
    proc: OwnedFd,
    log: File,
}

impl Prepared {
    /// `None` without a record file (see [`take_log`]): nothing is trapped then.
    pub(crate) fn new(log: Option<File>) -> Option<Prepared> {
        let log = log?;
        let proc = open(None, c"/proc", libc::O_PATH | libc::O_DIRECTORY).ok()?;
        let (ours, theirs) = UnixStream::pair().ok()?;
        Some(Prepared {
            ours,
            theirs,
            proc,
            log,
        })
    }
}

/// The record file minicode hands a `bash` call's supervisor on [`written::LOG_FD`], or
/// `None` (a hook, a background command, `minicode sandbox`). Taken first thing, before the
/// supervisor opens any descriptor of its own that could land on that number.
pub(crate) fn take_log() -> Option<File> {
    // SAFETY: fcntl only reads the flags of the descriptor.
    #[allow(unsafe_code)]
    if unsafe { libc::fcntl(written::LOG_FD, libc::F_GETFD) } == -1 {
        return None;
    }
    // SAFETY: the descriptor is open (checked above) and, this early, can only be the one
    // minicode handed over: nothing else in this process owns it. Close-on-exec so the command
    // never inherits it.
    #[allow(unsafe_code)]
    unsafe {
        libc::fcntl(written::LOG_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        Some(File::from_raw_fd(written::LOG_FD))
    }
}

impl Prepared {
    /// Init's part: its end of the channel (the rest closes with the fork's copy).
    pub(crate) fn into_init(self) -> UnixStream {
        self.theirs
    }
}

/// The listening supervisor's state for one call.
pub(crate) struct Notifier {
    listener: OwnedFd,
    proc: OwnedFd,
    log: File,
    seen: HashSet<PathBuf>,
    count: u64,
    /// The kernel's size of `struct seccomp_notif` (it may be larger than ours).
    size: usize,
    /// The record was marked incomplete: nothing more is noted.
    given_up: bool,
}

impl Notifier {
    /// Receives the listener init sends (see `enforce::notify::hand_over`); `None` when init
    /// sent none or ended first. The record starts here: without its header the call has none.
    /// Once received, the listener is kept until the call ends whatever fails, since the
    /// trapped calls of a closed listener fail (ENOSYS).
    pub(crate) fn receive(prepared: Prepared) -> Option<Notifier> {
        use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
        let Prepared {
            ours,
            theirs,
            proc,
            mut log,
        } = prepared;
        drop(theirs);
        let mut byte = [0u8; 1];
        let mut iov = [std::io::IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!(RawFd);
        let msg = recvmsg::<()>(
            ours.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .ok()?;
        let fd = msg.cmsgs().ok()?.find_map(|c| match c {
            ControlMessageOwned::ScmRights(fds) => fds.first().copied(),
            _ => None,
        })?;
        // SAFETY: the kernel just installed this descriptor for us; nothing else owns it.
        #[allow(unsafe_code)]
        let listener = unsafe { OwnedFd::from_raw_fd(fd) };
        // Without its header the record is no record; the calls are still answered (closing
        // the listener would make them fail).
        let given_up = log.write_all(written::header()).is_err();
        Some(Notifier {
            listener,
            proc,
            log,
            seen: HashSet::new(),
            count: 0,
            size: notif_size(),
            given_up,
        })
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Answers one trapped call; `false` when the listener has nothing more to give (every
    /// process of the call ended).
    pub(crate) fn answer(&mut self) -> bool {
        let mut buf = vec![0u64; self.size.div_ceil(8)];
        // SAFETY: `buf` is zeroed (as the kernel requires) and at least the kernel's size of
        // `struct seccomp_notif`, 8-byte aligned.
        #[allow(unsafe_code)]
        let got = unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                buf.as_mut_ptr(),
            )
        };
        if got != 0 {
            let err = std::io::Error::last_os_error().raw_os_error();
            // ENOENT: the caller was killed before we read it. EINTR: a signal.
            return matches!(err, Some(libc::ENOENT) | Some(libc::EINTR));
        }
        // SAFETY: the kernel filled at least `struct seccomp_notif` (we asked its size).
        #[allow(unsafe_code)]
        let notif: libc::seccomp_notif = unsafe { std::ptr::read(buf.as_ptr().cast()) };
        self.count += 1;
        if !self.given_up {
            self.note(&notif);
        }
        self.continue_call(notif.id);
        true
    }

    /// Resolves and records the paths `notif` names, when it is still valid.
    fn note(&mut self, notif: &libc::seccomp_notif) {
        let nr = i64::from(notif.data.nr) & !0x4000_0000;
        let named = decode::named(nr, &notif.data.args);
        if named.is_empty() {
            return;
        }
        let Ok(mem) = open(
            Some(&self.proc),
            &proc_path(notif.pid, "mem"),
            libc::O_RDONLY,
        ) else {
            return self.give_up();
        };
        let mem = File::from(mem);
        let mut paths = Vec::new();
        for name in named {
            resolve(&self.proc, notif.pid, &mem, name, &mut paths);
        }
        if !self.valid(notif.id) {
            return;
        }
        for path in paths {
            if self.seen.len() >= written::MAX_PATHS {
                return self.give_up();
            }
            if !self.seen.contains(&path) {
                if self.log.write_all(&written::path_entry(&path)).is_err() {
                    return self.give_up();
                }
                self.seen.insert(path);
            }
        }
    }

    fn give_up(&mut self) {
        if !self.given_up {
            self.given_up = true;
            let _ = self.log.write_all(written::incomplete_entry());
        }
    }

    /// Whether the notification `id` is still pending (its process was not killed, its memory
    /// not replaced by an `exec`, since we read it).
    fn valid(&self, id: u64) -> bool {
        let mut id = id;
        // SAFETY: the ioctl reads one u64 from a local.
        #[allow(unsafe_code)]
        let done = unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &mut id as *mut u64,
            )
        };
        done == 0
    }

    fn continue_call(&self, id: u64) {
        let mut resp = libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        };
        // SAFETY: the ioctl reads the response from a local; a failure (the caller is gone)
        // needs nothing from us.
        #[allow(unsafe_code)]
        unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &mut resp as *mut libc::seccomp_notif_resp,
            );
        }
    }

    /// The call ended: its count closes the record.
    pub(crate) fn finish(mut self) {
        let _ = self.log.write_all(&written::count_entry(self.count));
    }
}

/// The kernel's size of `struct seccomp_notif`, as it asks callers to query it.
fn notif_size() -> usize {
    let mut sizes = libc::seccomp_notif_sizes {
        seccomp_notif: 0,
        seccomp_notif_resp: 0,
        seccomp_data: 0,
    };
    // SAFETY: the kernel writes the three sizes into a local.
    #[allow(unsafe_code)]
    unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_NOTIF_SIZES,
            0,
            &mut sizes as *mut libc::seccomp_notif_sizes,
        );
    }
    usize::from(sizes.seccomp_notif).max(std::mem::size_of::<libc::seccomp_notif>())
}

fn proc_path(pid: u32, what: &str) -> CString {
    CString::new(format!("{pid}/{what}")).unwrap_or_default()
}

/// `openat(dir or the current folder, path, flags | O_CLOEXEC)`.
fn open(dir: Option<&OwnedFd>, path: &std::ffi::CStr, flags: i32) -> std::io::Result<OwnedFd> {
    let dirfd = dir.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    // SAFETY: a valid C string and flags; a non-negative result is a new descriptor.
    #[allow(unsafe_code)]
    let fd = unsafe { libc::openat(dirfd, path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just returned to us, owned by nothing else.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The target of the link `/proc/<pid>/<what>` (a folder or an open file of the process).
fn link_of(proc: &OwnedFd, pid: u32, what: &str) -> Option<PathBuf> {
    let path = proc_path(pid, what);
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: reads at most `buf.len()` bytes into `buf`.
    #[allow(unsafe_code)]
    let n = unsafe {
        libc::readlinkat(
            proc.as_raw_fd(),
            path.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).ok().filter(|n| *n < buf.len())?;
    buf.truncate(n);
    Some(PathBuf::from(OsString::from_vec(buf)))
}

/// The NUL-terminated string at `addr` in the process's memory (at most `PATH_MAX` bytes),
/// read a page at a time so that no read crosses into a page the string does not reach.
fn string_at(mem: &File, addr: u64) -> Option<Vec<u8>> {
    const PAGE: u64 = 4096;
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() <= libc::PATH_MAX as usize {
        let len = (PAGE - at % PAGE) as usize;
        let mut chunk = vec![0u8; len];
        let n = mem.read_at(&mut chunk, at).ok().filter(|n| *n > 0)?;
        if let Some(end) = chunk[..n].iter().position(|b| *b == 0) {
            out.extend_from_slice(&chunk[..end]);
            return Some(out);
        }
        out.extend_from_slice(&chunk[..n]);
        at += n as u64;
    }
    None
}

/// Adds to `out` the absolute paths `name` stands for. A string or folder that cannot be read
/// adds nothing: the call itself then fails (EFAULT, EBADF) and changes nothing.
fn resolve(proc: &OwnedFd, pid: u32, mem: &File, name: Named, out: &mut Vec<PathBuf>) {
    let (dirfd, addr, follow) = match name {
        Named::Fd(fd) => {
            out.extend(link_of(proc, pid, &format!("fd/{fd}")));
            return;
        }
        Named::Path {
            dirfd,
            addr,
            follow,
        } => (dirfd, addr, follow),
        Named::Open2 { dirfd, addr, how } => {
            let mut flags = [0u8; 8];
            if mem.read_exact_at(&mut flags, how).is_err()
                || u64::from_ne_bytes(flags) & u64::from(super::enforce::notify::WRITING) == 0
            {
                return;
            }
            let dirfd = (dirfd != libc::AT_FDCWD).then_some(dirfd);
            let follow = u64::from_ne_bytes(flags) & libc::O_NOFOLLOW as u64 == 0;
            (dirfd, addr, follow)
        }
    };
    let Some(bytes) = string_at(mem, addr) else {
        return;
    };
    let path = Path::new(OsStr::from_bytes(&bytes));
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        let base = match dirfd {
            None => link_of(proc, pid, "cwd"),
            Some(fd) => link_of(proc, pid, &format!("fd/{fd}")),
        };
        let Some(base) = base else {
            return;
        };
        // An empty path (AT_EMPTY_PATH) is the descriptor's own file.
        if bytes.is_empty() {
            out.push(base);
            return;
        }
        base.join(path)
    };
    noted_forms(&full, follow, out);
}

/// The forms a record matches `full` by: the path with its folder resolved through the file
/// system (links and `..` as the kernel takes them; what the call changes when its last
/// component is not a link) and, when the call follows a link there, the link's target too.
/// A folder that cannot be resolved (it does not exist: the call will fail) leaves the path
/// with its dots taken out lexically.
fn noted_forms(full: &Path, follow: bool, out: &mut Vec<PathBuf>) {
    let resolved = match (full.parent(), full.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent).map(|p| p.join(name)),
        _ => std::fs::canonicalize(full),
    };
    match resolved {
        Ok(path) => out.push(path),
        Err(_) => out.push(lexical(full)),
    }
    if follow
        && std::fs::symlink_metadata(full).is_ok_and(|m| m.file_type().is_symlink())
        && let Ok(target) = std::fs::canonicalize(full)
    {
        out.push(target);
    }
}

/// `path` with `.` dropped and `..` taken back lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_noted_with_its_folder_resolved_and_dots_taken_out() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("sub")).unwrap();
        std::os::unix::fs::symlink(real.join("sub"), real.join("via")).unwrap();
        let mut out = Vec::new();
        noted_forms(&real.join("via/./new.txt"), true, &mut out);
        assert_eq!(out, vec![real.join("sub/new.txt")]);
        out.clear();
        noted_forms(&real.join("via/../sub/new.txt"), true, &mut out);
        assert_eq!(out, vec![real.join("sub/new.txt")]);
    }

    #[test]
    fn a_followed_link_notes_its_target_too() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::write(real.join("target"), "x").unwrap();
        std::os::unix::fs::symlink(real.join("target"), real.join("link")).unwrap();
        let mut out = Vec::new();
        noted_forms(&real.join("link"), true, &mut out);
        assert_eq!(out, vec![real.join("link"), real.join("target")]);
        out.clear();
        noted_forms(&real.join("link"), false, &mut out);
        assert_eq!(out, vec![real.join("link")]);
    }
}

//! The private user, mount and PID namespaces every confined call runs in. The helper maps its
//! own user and group to themselves (no new rights), makes every mount private (nothing leaks
//! back to the real system), covers the hidden paths (`enforce::hide`), binds each git
//! directory over itself (writable: git's data may change, the directory cannot be moved away
//! and replaced) and then each existing read-only path over itself, read-only. A bind mount cannot be renamed or removed from
//! inside, so a command cannot move `.git` away and put its own in place; a symbolic link
//! planted earlier that leads into one reaches the read-only mount. Paths that do not exist are
//! not handled here (a mount needs a target): see `sandbox::guard`.
//!
//! The PID namespace takes effect for the helper's next child, which becomes its init
//! (`process::init`): when that ends, the kernel kills everything left in it, so nothing a
//! command started (`setsid`, `nohup`, a double fork) outlives the call. That child mounts a
//! fresh `/proc` ([`mount_proc`]) so that it shows the call's own processes only.
//!
//! With the network off the call also gets a network namespace of its own, holding only a
//! loopback interface that is brought up (`enforce::loopback`): servers and clients of the
//! call talk over 127.0.0.1, nothing outside the namespace can be reached. With the network
//! on, the host's network is used.
//!
//! [`Plan`] is the one description of what the namespaces hold; a new piece is a field there
//! and a step in [`enter`].

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::unavailable;
use crate::sandbox::{Layer, Policy, Unavailable};

/// What the namespaces of one call hold, built from its policy.
#[derive(Debug)]
pub(super) struct Plan<'a> {
    /// Bound over themselves, writable, before the read-only paths inside them.
    pub(super) pinned: &'a [PathBuf],
    /// Bound read-only over themselves.
    pub(super) read_only: &'a [PathBuf],
    /// Covered by an empty mount.
    pub(super) hidden: &'a [PathBuf],
    /// The writable roots and the temporary folder: visible even inside a hidden folder.
    pub(super) keep: Vec<&'a Path>,
    /// A network namespace of the call's own, with only loopback (the network is off).
    pub(super) own_network: bool,
    /// With the network off: the session holder whose user and network namespaces the call
    /// joins rather than making its own (see [`join`]).
    pub(super) join: Option<i32>,
}

impl<'a> Plan<'a> {
    pub(super) fn of(policy: &'a Policy) -> Plan<'a> {
        let keep = policy
            .writable
            .iter()
            .chain(&policy.git_dirs)
            .chain(&policy.cache)
            .chain(std::iter::once(&policy.tmpdir))
            .filter(|p| !p.as_os_str().is_empty())
            .map(PathBuf::as_path)
            .collect();
        Plan {
            pinned: &policy.git_dirs,
            read_only: &policy.read_only,
            hidden: &policy.hidden,
            keep,
            own_network: !policy.network,
            join: None,
        }
    }
}

/// Enters new user, mount and PID (and, with the network off, network) namespaces and lays
/// out the mounts of `plan`.
pub(super) fn enter(plan: &Plan<'_>) -> Result<(), Unavailable> {
    let userns = |e: &dyn std::fmt::Display| unavailable(Layer::UserNamespace, e);
    match plan.join {
        Some(holder) => {
            join(holder)?;
            unshare(libc::CLONE_NEWNS | libc::CLONE_NEWPID)?;
        }
        None => {
            let ids = own_ids();
            let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
            if plan.own_network {
                flags |= libc::CLONE_NEWNET;
            }
            unshare(flags)?;
            map_ids(ids)?;
            if plan.own_network {
                super::loopback::up().map_err(|e| userns(&format!("bringing up loopback: {e}")))?;
            }
        }
    }
    mount(None, Path::new("/"), libc::MS_REC | libc::MS_PRIVATE)
        .map_err(|e| userns(&format!("making the mounts private: {e}")))?;
    for path in plan.hidden {
        super::hide::cover(path, &plan.keep)
            .map_err(|e| userns(&format!("hiding {}: {e}", path.display())))?;
    }
    for path in plan.pinned {
        mount(Some(path), path, libc::MS_BIND | libc::MS_REC)
            .map_err(|e| userns(&format!("binding {}: {e}", path.display())))?;
    }
    for path in plan.read_only {
        // Not followed if it is a link: a link is only a name, the guard handles names.
        match std::fs::symlink_metadata(path) {
            Ok(meta) if !meta.file_type().is_symlink() => {}
            _ => continue,
        }
        read_only_bind(path)
            .map_err(|e| userns(&format!("binding {} read-only: {e}", path.display())))?;
    }
    Ok(())
}

/// The session's network holder (`sandbox::launch::hold`): a user namespace of its own with
/// a network namespace holding loopback, up. Calls of the session with the network off join
/// both ([`join`]) and make only their mount and PID namespaces, so a server one call keeps
/// running in the background answers on 127.0.0.1 in the next.
pub(super) fn hold() -> Result<(), Unavailable> {
    let ids = own_ids();
    unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET)?;
    map_ids(ids)?;
    super::loopback::up()
        .map_err(|e| unavailable(Layer::UserNamespace, format!("bringing up loopback: {e}")))
}

/// Enters the user, then the network namespace of process `holder`. In that order: joining
/// the user namespace (allowed to its owner, single-threaded) gives every capability in it,
/// which joining its network namespace and making mount and PID namespaces below it need.
fn join(holder: i32) -> Result<(), Unavailable> {
    use std::os::fd::AsRawFd;
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        unavailable(
            Layer::UserNamespace,
            format!("joining the session's network namespace ({what}): {e}"),
        )
    };
    // Both opened before the first join: /proc is read as it is seen from here.
    let user =
        std::fs::File::open(format!("/proc/{holder}/ns/user")).map_err(|e| fail("user", &e))?;
    let net = std::fs::File::open(format!("/proc/{holder}/ns/net")).map_err(|e| fail("net", &e))?;
    for (file, flag, what) in [
        (&user, libc::CLONE_NEWUSER, "user"),
        (&net, libc::CLONE_NEWNET, "net"),
    ] {
        // SAFETY: setns on a namespace file we opened; single-threaded (see above).
        #[allow(unsafe_code)]
        if unsafe { libc::setns(file.as_raw_fd(), flag) } != 0 {
            return Err(fail(what, &std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

fn unshare(flags: libc::c_int) -> Result<(), Unavailable> {
    // SAFETY: unshare takes flags only; the helper is single-threaded here, as a new user
    // namespace requires.
    #[allow(unsafe_code)]
    if unsafe { libc::unshare(flags) } != 0 {
        let err = std::io::Error::last_os_error();
        return Err(unavailable(
            Layer::UserNamespace,
            format!("a user namespace was refused: {err}"),
        ));
    }
    Ok(())
}

/// The helper's user and group, read before it leaves the namespace they are named in (in
/// the new one they are unmapped until [`map_ids`]).
fn own_ids() -> (u32, u32) {
    (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    )
}

/// Maps the helper's own user and group (`ids`, from [`own_ids`]) to themselves in its new
/// user namespace.
fn map_ids((uid, gid): (u32, u32)) -> Result<(), Unavailable> {
    let write = |file: &str, text: String| {
        std::fs::write(file, text)
            .map_err(|e| unavailable(Layer::UserNamespace, format!("{file}: {e}")))
    };
    write("/proc/self/setgroups", "deny".to_string())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// A fresh `/proc` for the PID namespace the caller is init of, so that `ps` and `/proc/<pid>`
/// show the call's processes only. Best effort: where the kernel refuses it (a container
/// whose own `/proc` is partly masked), the old one stays, showing what it showed before.
pub(super) fn mount_proc() {
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let _ = mount_fs("proc", Path::new("/proc"), flags, "");
}

/// Binds `path` over itself, then remounts that bind read-only, keeping the flags the kernel
/// locks in a user namespace (nosuid, nodev, noexec, atime) or the remount is refused.
fn read_only_bind(path: &Path) -> std::io::Result<()> {
    mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
    let stat = statvfs_flags(path)?;
    let keep = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ]
    .iter()
    .filter(|(st, _)| stat & st != 0)
    .fold(0, |flags, (_, ms)| flags | ms);
    mount(
        None,
        path,
        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep,
    )
}

fn statvfs_flags(path: &Path) -> std::io::Result<libc::c_ulong> {
    let c_path = c_string(path)?;
    // SAFETY: `stat` is a plain C struct the call fills; `c_path` is a valid C string.
    #[allow(unsafe_code)]
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut stat) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stat.f_flag)
    }
}

/// mount(2) without a file system type: a bind, a remount or a propagation change.
pub(super) fn mount(
    source: Option<&Path>,
    target: &Path,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let source = source.map(c_string).transpose()?;
    let target = c_string(target)?;
    // SAFETY: valid C strings (or null) for source and target, no file system type or data.
    #[allow(unsafe_code)]
    let done = unsafe {
        libc::mount(
            source.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// mount(2) of a new file system of type `fs` (`tmpfs`, `proc`) with `data` as its options.
pub(super) fn mount_fs(
    fs: &str,
    target: &Path,
    flags: libc::c_ulong,
    data: &str,
) -> std::io::Result<()> {
    let invalid = |_| std::io::Error::from_raw_os_error(libc::EINVAL);
    let fs = CString::new(fs).map_err(invalid)?;
    let data = CString::new(data).map_err(invalid)?;
    let target = c_string(target)?;
    // SAFETY: valid C strings for source, target, type and data.
    #[allow(unsafe_code)]
    let done = unsafe {
        libc::mount(
            fs.as_ptr(),
            target.as_ptr(),
            fs.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn c_string(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

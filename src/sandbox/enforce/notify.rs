//! The second seccomp filter, for attribution only: the calls that can change a path trap to
//! the supervisor (`SECCOMP_RET_USER_NOTIF`), which notes the path and lets the call go on
//! (`sandbox::notifier`). It decides nothing: Landlock and the first filter (`filter`) still
//! allow or deny, and an action of theirs (an errno) wins over a notification. Read-only
//! `open`s never trap: the flags are tested here, in the filter. `openat2` always traps,
//! because its flags lie behind a pointer the filter cannot follow; the supervisor reads them
//! and notes only a writing open. Refusing it with ENOSYS instead would make a program that
//! asks for `RESOLVE_*` guarantees fail or fall back to weaker opens, for a call so rare that
//! trapping it costs nothing measurable.
//!
//! Installed in the namespace's init after every other layer, with
//! `SECCOMP_FILTER_FLAG_NEW_LISTENER`; the listener goes to the supervisor at once over the
//! socket pair it shares with init ([`hand_over`]), before init starts the command.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

/// The bits of an `open` flag word that make it a writing open.
pub(crate) const WRITING: u32 =
    (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) as u32;

/// x32 system calls carry this bit besides the x86_64 architecture value; their numbers for
/// the calls trapped here are x86_64's.
const X32: u32 = 0x4000_0000;

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
const ARCH: u32 = 0xC000_00F3;

/// The calls that trap whatever their arguments: every one names a path it changes (or, for
/// `fchmod`, a descriptor whose file it changes), except `openat2` (see the module doc).
fn always() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_openat2,
        libc::SYS_truncate,
        libc::SYS_unlinkat,
        libc::SYS_renameat2,
        libc::SYS_mkdirat,
        libc::SYS_linkat,
        libc::SYS_symlinkat,
        libc::SYS_mknodat,
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        libc::SYS_fchmodat2,
        libc::SYS_utimensat,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_creat,
        libc::SYS_unlink,
        libc::SYS_rename,
        libc::SYS_renameat,
        libc::SYS_mkdir,
        libc::SYS_rmdir,
        libc::SYS_link,
        libc::SYS_symlink,
        libc::SYS_mknod,
        libc::SYS_chmod,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    calls
}

/// The `open`-like calls trapped only with a writing flag, and which argument holds the flags.
fn opens() -> Vec<(i64, u32)> {
    let mut calls = vec![(libc::SYS_openat, 2)];
    #[cfg(target_arch = "x86_64")]
    calls.push((libc::SYS_open, 1));
    calls
}

/// A jump target of the small assembler below.
#[derive(Clone, Copy)]
enum To {
    Next,
    Notify,
    Allow,
    /// The flag test of the `n`th entry of [`opens`].
    Flags(usize),
}

enum Op {
    Load(u32),
    And(u32),
    Jump { code: u32, k: u32, yes: To, no: To },
    Ret(u32),
}

/// The filter program: the architecture, then the call number (x32's bit cleared), then the
/// flags of an `open`.
pub(crate) fn program() -> Vec<libc::sock_filter> {
    let (always, opens) = (always(), opens());
    let mut ops = vec![
        Op::Load(4),
        Op::Jump {
            code: libc::BPF_JEQ,
            k: ARCH,
            yes: To::Next,
            no: To::Allow,
        },
        Op::Load(0),
        Op::And(!X32),
    ];
    for nr in &always {
        ops.push(jeq(*nr, To::Notify));
    }
    for (i, (nr, _)) in opens.iter().enumerate() {
        ops.push(jeq(*nr, To::Flags(i)));
    }
    ops.push(Op::Ret(libc::SECCOMP_RET_ALLOW));
    let flags_at = ops.len();
    for (_, arg) in &opens {
        // The low 32 bits of the argument (little-endian on every supported architecture).
        ops.push(Op::Load(16 + 8 * arg));
        ops.push(Op::Jump {
            code: libc::BPF_JSET,
            k: WRITING,
            yes: To::Notify,
            no: To::Allow,
        });
    }
    let notify_at = ops.len();
    ops.push(Op::Ret(libc::SECCOMP_RET_USER_NOTIF));
    let allow_at = ops.len();
    ops.push(Op::Ret(libc::SECCOMP_RET_ALLOW));
    let target = |at: usize, to: To| -> u8 {
        let dest = match to {
            To::Next => at + 1,
            To::Notify => notify_at,
            To::Allow => allow_at,
            To::Flags(i) => flags_at + 2 * i,
        };
        // The program is a few dozen instructions: every jump fits in a byte.
        u8::try_from(dest - at - 1).unwrap_or(0)
    };
    ops.iter()
        .enumerate()
        .map(|(at, op)| match *op {
            Op::Load(offset) => insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, offset),
            Op::And(k) => insn(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, 0, 0, k),
            Op::Jump { code, k, yes, no } => insn(
                libc::BPF_JMP | code | libc::BPF_K,
                target(at, yes),
                target(at, no),
                k,
            ),
            Op::Ret(k) => insn(libc::BPF_RET | libc::BPF_K, 0, 0, k),
        })
        .collect()
}

fn jeq(nr: i64, yes: To) -> Op {
    Op::Jump {
        code: libc::BPF_JEQ,
        k: nr as u32,
        yes,
        no: To::Next,
    }
}

fn insn(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// Installs the filter on this process (inherited by everything it starts) and returns its
/// listener. `no_new_privs` is already set (the sandbox's first step).
pub(crate) fn install() -> std::io::Result<OwnedFd> {
    let mut filter = program();
    let prog = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `filter`, alive for the call; the kernel copies the program.
    #[allow(unsafe_code)]
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor (close-on-exec) that nothing else owns.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Installs the filter and sends its listener to the supervisor over `channel`; when it cannot
/// be installed, sends a message without a descriptor, which tells the supervisor that this
/// call has no record of its writes.
pub(crate) fn hand_over(channel: &UnixStream) {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let listener = install().ok();
    let fds = listener.as_ref().map(|fd| [fd.as_raw_fd()]);
    let cmsgs: Vec<ControlMessage<'_>> = fds
        .as_ref()
        .map(|fds| vec![ControlMessage::ScmRights(fds)])
        .unwrap_or_default();
    let byte = [u8::from(listener.is_some())];
    let iov = [std::io::IoSlice::new(&byte)];
    let _ = sendmsg::<()>(channel.as_raw_fd(), &iov, &cmsgs, MsgFlags::empty(), None);
    // Our copy closes here: the supervisor's is the only one, so if it dies the trapped calls
    // fail (ENOSYS) rather than wait.
    drop(listener);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program_and_it_ends_with_returns() {
        let program = program();
        let len = program.len();
        for (at, insn) in program.iter().enumerate() {
            if insn.code as u32 & 0x07 == libc::BPF_JMP {
                assert!(at + 1 + (insn.jt as usize) < len);
                assert!(at + 1 + (insn.jf as usize) < len);
            }
        }
        let last = program[len - 1];
        assert_eq!(last.code as u32, libc::BPF_RET | libc::BPF_K);
        assert_eq!(last.k, libc::SECCOMP_RET_ALLOW);
        assert_eq!(program[len - 2].k, libc::SECCOMP_RET_USER_NOTIF);
    }
}

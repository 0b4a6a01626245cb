//! The seccomp filter (through `seccompiler`): `ptrace`, `process_vm_readv`/`writev` and the
//! `io_uring` calls always fail with EPERM (they reach other processes' memory or perform
//! file and socket operations out of the filter's sight), and so do the `ioctl`s that type
//! into a terminal (TIOCSTI, TIOCLINUX); the mount API calls (`open_tree`, `move_mount`,
//! `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`) and `mknod`/`mknodat` of a
//! character or block device fail too, whatever capabilities a root command still had (a
//! cloned mount drops the read-only binds above it; a device node reaches the kernel's
//! memory or log); FIFOs, sockets and regular files may still be made; with the network off, `socket` for
//! any family but Unix-domain, netlink and IPv4/IPv6 fails with EPERM: IPv4/IPv6 sockets then
//! live in the call's own network namespace (only loopback, see `enforce::loopback`), while a
//! packet or vsock socket (vsock is not confined by a network namespace) is never made.
//! Installed last: after it, the helper only starts `bash`.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::unavailable;
use crate::sandbox::{Layer, Unavailable};

/// x32 system calls carry this bit besides the x86_64 architecture value.
const X32: i64 = 0x4000_0000;

/// The new mount API: `open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`,
/// `mount_setattr` (the same numbers on every architecture the filter supports).
const MOUNT_API: [i64; 7] = [428, 429, 430, 431, 432, 433, 442];

/// `mknod(path, mode, dev)` and `mknodat(dirfd, path, mode, dev)` whose mode's file type is
/// a character or a block device.
fn device_nodes(
    rules: &mut BTreeMap<i64, Vec<SeccompRule>>,
    arch: TargetArch,
) -> Result<(), seccompiler::BackendError> {
    let typed = |arg: u8, kind: libc::mode_t| {
        SeccompCondition::new(
            arg,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(u64::from(libc::S_IFMT)),
            u64::from(kind),
        )
        .and_then(|c| SeccompRule::new(vec![c]))
    };
    let devices = |arg: u8| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        Ok(vec![typed(arg, libc::S_IFCHR)?, typed(arg, libc::S_IFBLK)?])
    };
    rules.insert(libc::SYS_mknodat, devices(2)?);
    if arch == TargetArch::x86_64 {
        // mknod (133) and mknodat (259) exist on x86_64 only besides the generic mknodat.
        rules.insert(133, devices(1)?);
        rules.insert(X32 | 133, devices(1)?);
        rules.insert(X32 | 259, devices(2)?);
    }
    Ok(())
}

pub(super) fn install(network: bool) -> Result<(), Unavailable> {
    let fail = |e: &dyn std::fmt::Display| unavailable(Layer::Seccomp, e);
    let arch = match std::env::consts::ARCH {
        "x86_64" => TargetArch::x86_64,
        "aarch64" => TargetArch::aarch64,
        "riscv64" => TargetArch::riscv64,
        other => return Err(fail(&format!("no seccomp filter for {other}"))),
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    for call in MOUNT_API {
        rules.insert(call, Vec::new());
    }
    device_nodes(&mut rules, arch).map_err(|e| fail(&e))?;
    // x32 system calls carry this bit and the x86_64 architecture value; their own numbers
    // for ptrace (521) and process_vm_readv/writev (539, 540); the io_uring and mount API
    // calls have the same numbers as on x86_64.
    if arch == TargetArch::x86_64 {
        for call in [521, 539, 540, 425, 426, 427].into_iter().chain(MOUNT_API) {
            rules.insert(X32 | call, Vec::new());
        }
    }
    // Typing into a terminal (TIOCSTI) or its console (TIOCLINUX) would run commands in the
    // user's shell after the call, unconfined. The kernel reads the request as 32 bits.
    let request = |value: u64| {
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
            .and_then(|c| SeccompRule::new(vec![c]))
    };
    rules.insert(
        libc::SYS_ioctl,
        vec![
            request(libc::TIOCSTI).map_err(|e| fail(&e))?,
            request(libc::TIOCLINUX).map_err(|e| fail(&e))?,
        ],
    );
    if !network {
        let not = |family: i32| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
        };
        let conditions = [
            libc::AF_UNIX,
            libc::AF_NETLINK,
            libc::AF_INET,
            libc::AF_INET6,
        ]
        .into_iter()
        .map(|family| not(family).map_err(|e| fail(&e)))
        .collect::<Result<Vec<_>, _>>()?;
        let rule = SeccompRule::new(conditions).map_err(|e| fail(&e))?;
        if arch == TargetArch::x86_64 {
            rules.insert(X32 | libc::SYS_socket, vec![rule.clone()]);
        }
        rules.insert(libc::SYS_socket, vec![rule]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| fail(&e))?;
    let program: BpfProgram = filter.try_into().map_err(|e| fail(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| fail(&e))
}

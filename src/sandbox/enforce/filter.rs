//! The seccomp filter (through `seccompiler`): `ptrace`, `process_vm_readv`/`writev` and the
//! `io_uring` calls always fail with EPERM (they reach other processes' memory or perform
//! file and socket operations out of the filter's sight), and so do the `ioctl`s that type
//! into a terminal (TIOCSTI, TIOCLINUX); with the network off, `socket` for
//! any family but Unix-domain and netlink fails with EPERM, so no IPv4/IPv6 (loopback
//! included), packet or vsock socket is ever made. Installed last: after it, the helper only
//! starts `bash`.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::unavailable;
use crate::sandbox::{Layer, Unavailable};

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
    // x32 system calls carry this bit and the x86_64 architecture value; their own numbers
    // for ptrace (521) and process_vm_readv/writev (539, 540).
    const X32: i64 = 0x4000_0000;
    if arch == TargetArch::x86_64 {
        for call in [521, 539, 540, 425, 426, 427] {
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
        let conditions = vec![
            not(libc::AF_UNIX).map_err(|e| fail(&e))?,
            not(libc::AF_NETLINK).map_err(|e| fail(&e))?,
        ];
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

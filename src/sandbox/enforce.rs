//! Confining a call (Linux), in two steps and in the order that makes each layer possible.
//! [`enter`], in the helper: `no_new_privs`, then private user, mount and PID namespaces with
//! the hidden paths covered and the read-only paths bound read-only over themselves (Landlock
//! can only add rights, never take some back below a folder it opened). [`seal`], in the
//! namespace's init (the helper's child, `process::init`), before it starts the command: a
//! fresh `/proc`, Landlock for the file system (and TCP when the network is off), every
//! capability dropped, then seccomp for sockets, the mount API, device nodes and the
//! always-denied calls. Every layer must apply or the whole call fails with an [`Unavailable`]
//! naming it. `enter` runs in the single-threaded helper only: a user namespace cannot be
//! entered by a threaded process.

mod caps;
mod filter;
mod hide;
mod loopback;
mod namespace;
pub(super) mod notify;

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::{Layer, Policy, Unavailable, probe};

/// The helper's part: `no_new_privs` and the namespaces of `policy`. Its next child is the
/// init of the new PID namespace.
pub(crate) fn enter(policy: &Policy, join: Option<i32>) -> Result<(), Unavailable> {
    no_new_privs()?;
    let mut plan = namespace::Plan::of(policy);
    if plan.own_network {
        plan.join = join;
    }
    namespace::enter(&plan)
}

/// The session network holder's part: its user and network namespaces, loopback up.
pub(crate) fn hold() -> Result<(), Unavailable> {
    no_new_privs()?;
    namespace::hold()
}

/// The namespace init's part, before it starts the command: the layers that confine the
/// command itself.
pub(crate) fn seal(policy: &Policy) -> Result<(), Unavailable> {
    namespace::mount_proc();
    landlock(policy)?;
    caps::drop_all()?;
    filter::install(policy.network)
}

/// The error for `layer`, with the kernel's reason and the layer's fix.
pub(crate) fn unavailable(layer: Layer, reason: impl std::fmt::Display) -> Unavailable {
    Unavailable {
        layer,
        reason: reason.to_string(),
        fix: probe::fix(layer),
    }
}

fn no_new_privs() -> Result<(), Unavailable> {
    // SAFETY: prctl with integer arguments only; it changes a flag of this process.
    #[allow(unsafe_code)]
    let done = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if done != 0 {
        return Err(unavailable(
            Layer::NoNewPrivs,
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Landlock: read and execute anywhere; every right below the writable roots, the git
/// directories, the configured cache folder and the temporary folder; read, write and device ioctls on `/dev/null`. Every right of the
/// kernel's ABI is handled (so denied unless granted), signals and abstract Unix sockets are
/// scoped to the sandbox (ABI 6+). TCP is not handled: with the network off the call's own
/// network namespace (only loopback) is what keeps it from the host's and the world's, and
/// its own loopback must work.
fn landlock(policy: &Policy) -> Result<(), Unavailable> {
    let fail = |e: &dyn std::fmt::Display| unavailable(Layer::Landlock, e);
    let version = probe::landlock_abi().map_err(|e| fail(&e))?;
    if version < probe::MIN_LANDLOCK_ABI {
        return Err(fail(&format!(
            "the kernel's Landlock ABI is {version}, older than {}",
            probe::MIN_LANDLOCK_ABI
        )));
    }
    // The kernel's own ABI (capped at the newest the crate knows): every right it has is
    // handled, as a hard requirement, so nothing is silently left unenforced.
    let abi = ABI::from(version);
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| fail(&e))?;
    if version >= 6 {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(|e| fail(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    let rule = |path: &Path, access| {
        PathFd::new(path)
            .map(|fd| PathBeneath::new(fd, access))
            .map_err(|e| fail(&format!("{}: {e}", path.display())))
    };
    created = created
        .add_rule(rule(Path::new("/"), AccessFs::from_read(abi))?)
        .map_err(|e| fail(&e))?;
    let null = AccessFs::from_file(abi) & !AccessFs::Execute;
    created = created
        .add_rule(rule(Path::new("/dev/null"), null)?)
        .map_err(|e| fail(&e))?;
    let roots = policy
        .writable
        .iter()
        .chain(&policy.git_dirs)
        .chain(&policy.cache)
        .chain(std::iter::once(&policy.tmpdir));
    for root in roots.filter(|r| r.is_dir()) {
        created = created.add_rule(rule(root, all)?).map_err(|e| fail(&e))?;
    }
    let status = created.restrict_self().map_err(|e| fail(&e))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(fail(&format!(
            "the kernel enforced the rules only partly ({:?})",
            status.ruleset
        )));
    }
    Ok(())
}

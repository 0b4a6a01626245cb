//! The confinement every `bash` call runs under (issue 22): which profile, what it lets a
//! command write and reach, and why it could not be enforced. This file is the contract shared
//! by the parts that enforce it (the supervisor helper process, `minicode sandbox`, the doctor)
//! and the parts that choose it (config, flags, plan mode, the frontends that show it).
//!
//! Enforcement is Linux only (Landlock, seccomp, `no_new_privs`, capabilities dropped, private
//! user, mount and PID namespaces for read-only subpaths, hidden paths and the call's processes) and happens in the helper process minicode re-executes for each call,
//! never between `fork` and `exec` of the async runtime. It fails closed: a layer that cannot
//! be enforced makes the call fail with an [`Unavailable`], never run unconfined silently.

pub(crate) mod cache;
pub(crate) mod denial;
#[cfg(target_os = "linux")]
mod enforce;
mod gitdir;
pub(crate) mod guard;
pub(crate) mod hidden;
pub(crate) mod launch;
#[cfg(target_os = "linux")]
pub(crate) mod notifier;
mod policy;
pub mod probe;
mod report;
pub(crate) mod tmpdir;
pub(crate) mod way_out;
pub(crate) mod written;

pub use launch::TEST_MISSING_ENV;
pub use report::{Blocked, Report};
pub use written::Written;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A sandbox profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read anywhere; write only inside the workspace, the extra writable roots, the
    /// per-session temporary folder and `/dev/null`.
    #[default]
    WorkspaceWrite,
    /// Read anywhere; write only the per-session temporary folder and `/dev/null`.
    ReadOnly,
    /// No confinement (the user's explicit choice).
    Off,
}

/// Everything the helper needs to confine one call: built by the session from config, flags
/// and plan mode, handed to the helper whole (it reads no configuration).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub mode: Mode,
    /// The host's network reachable. When false the call gets a network namespace of its own
    /// with only loopback: its IPv4/IPv6 sockets reach servers the same call started, nothing
    /// else (Unix-domain sockets always work).
    pub network: bool,
    /// Folders a command may write below: the workspace first, then the configured extra
    /// roots (absolute, canonical). Empty under [`Mode::ReadOnly`].
    pub writable: Vec<PathBuf>,
    /// The private per-session temporary folder, exported as `TMPDIR`; always writable.
    pub tmpdir: PathBuf,
    /// Paths inside `writable` that stay read-only, whether they exist or not: what makes git
    /// run code (`.git/config`, `.git/hooks`, … see `sandbox::gitdir`), `.minicode`, the
    /// trust-protected config files.
    pub read_only: Vec<PathBuf>,
    /// The workspace's git directories (the one a `.git` file names too, and submodules'):
    /// git may write its data there, even outside `writable`, but a directory cannot be moved,
    /// removed or replaced, and its entries in `read_only` stay read-only.
    #[serde(default)]
    pub git_dirs: Vec<PathBuf>,
    /// The configured folder caches go to (`[sandbox] cache`, absolute), writable like a
    /// root; `None`: `cache` inside `tmpdir` (see `sandbox::cache`).
    #[serde(default)]
    pub cache: Option<PathBuf>,
    /// Paths a command must not see (minicode's runtime folder, credentials): each existing
    /// one is covered by an empty mount, a folder by an empty read-only one, a file by
    /// `/dev/null`. A writable root or the temporary folder inside one stays visible.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
}

/// A confinement layer, named in every error about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    Landlock,
    Seccomp,
    NoNewPrivs,
    UserNamespace,
    /// Dropping every capability before the command starts.
    Capabilities,
    /// Not Linux: nothing can be enforced.
    Platform,
}

/// Why a confined call could not be confined: the layer, the kernel's reason and the exact
/// way out (`--sandbox off`, or the sysctl to change).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("the sandbox cannot be enforced: {layer:?} is unavailable ({reason}); {fix}")]
pub struct Unavailable {
    pub layer: Layer,
    pub reason: String,
    pub fix: String,
}

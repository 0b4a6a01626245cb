//! What minicode hands the helper process for one call (the [`Policy`], and the test switch),
//! and the helper's side of applying it. The helper is the `bash` supervisor: minicode
//! re-executed, still single-threaded when it confines itself, so nothing is done between
//! `fork` and `exec` of the async runtime.

use std::ffi::OsStr;

use serde::{Deserialize, Serialize};

use super::{Layer, Policy, Unavailable};

/// The documented test switch: `MINICODE_TEST_SANDBOX_MISSING=landlock|seccomp|no-new-privs|
/// user-namespace|platform` makes the helper report that layer unavailable (and run
/// nothing), so the fail-closed path can be tested on a kernel that has every layer. It is
/// read by minicode (children never see `MINICODE_*` variables) and passed on.
pub const TEST_MISSING_ENV: &str = "MINICODE_TEST_SANDBOX_MISSING";

/// The helper's instructions for one call, passed as one JSON argument.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Launch {
    pub(crate) policy: Policy,
    /// The layer the test switch says is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) missing: Option<Layer>,
    /// The session's network holder to join (its pid): the call enters the holder's user and
    /// network namespaces instead of making its own, so what one call of the session serves
    /// on loopback another reaches (see `sandbox::enforce::namespace`). Only with the network
    /// off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) join: Option<i32>,
    /// Be that holder instead of running a command (see [`hold`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) hold: bool,
}

impl Launch {
    /// The launch of a call under `policy`, with the test switch read from this process.
    pub(crate) fn new(policy: &Policy) -> Launch {
        let missing = std::env::var(TEST_MISSING_ENV)
            .ok()
            .and_then(|v| serde_json::from_value(serde_json::Value::String(v)).ok());
        Launch {
            policy: policy.clone(),
            missing,
            join: None,
            hold: false,
        }
    }

    pub(crate) fn to_arg(&self) -> String {
        // Serialising plain data cannot fail; an empty policy would be refused by the helper.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub(crate) fn from_arg(arg: &OsStr) -> Result<Launch, Unavailable> {
        let text = arg.to_str().unwrap_or_default();
        serde_json::from_str(text).map_err(|e| Unavailable {
            layer: Layer::Platform,
            reason: format!("the helper could not read its policy: {e}"),
            fix: "reinstall minicode (the helper is the same binary)".to_string(),
        })
    }
}

/// The helper's first step for `launch` (single-threaded): nothing for
/// [`super::Mode::Off`]; otherwise `no_new_privs` and the call's namespaces, or an
/// [`Unavailable`] naming the first layer that could not be applied (the caller then runs
/// nothing). A confined helper's next child is the init of the call's PID namespace, which
/// must [`seal`] itself before it starts the command.
pub(crate) fn enter(launch: &Launch) -> Result<(), Unavailable> {
    if !launch.policy.is_confined() {
        return Ok(());
    }
    if let Some(layer) = launch.missing {
        return Err(Unavailable {
            layer,
            reason: format!("reported missing by the test switch {TEST_MISSING_ENV}"),
            fix: super::probe::fix(layer),
        });
    }
    #[cfg(target_os = "linux")]
    {
        super::enforce::enter(&launch.policy, launch.join)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(super::probe::platform())
    }
}

/// The namespace init's step for `launch`: the layers that confine the command (Landlock,
/// capabilities, seccomp).
pub(crate) fn seal(launch: &Launch) -> Result<(), Unavailable> {
    if !launch.policy.is_confined() {
        return Ok(());
    }
    #[cfg(target_os = "linux")]
    {
        super::enforce::seal(&launch.policy)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(super::probe::platform())
    }
}

/// The namespace init's last step before it starts the command, when the supervisor listens:
/// the attribution filter, its listener sent over `channel` (see `sandbox::notifier`).
#[cfg(target_os = "linux")]
pub(crate) fn notify(channel: &std::os::unix::net::UnixStream) {
    super::enforce::notify::hand_over(channel);
}

/// The holder's step (single-threaded): a user namespace with a network namespace whose
/// loopback is up, that later calls of the session join. The holder then only waits.
pub(crate) fn hold(launch: &Launch) -> Result<(), Unavailable> {
    if let Some(layer) = launch.missing {
        return Err(Unavailable {
            layer,
            reason: format!("reported missing by the test switch {TEST_MISSING_ENV}"),
            fix: super::probe::fix(layer),
        });
    }
    #[cfg(target_os = "linux")]
    {
        super::enforce::hold()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(super::probe::platform())
    }
}

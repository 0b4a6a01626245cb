//! What happened to one confined call, returned beside the `bash` tool's output
//! (`tools::bash::Ran`) to the core's sandbox part: the profile it ran under and whether the
//! sandbox stopped it. The session keeps it with the result; the core decides what to do
//! about it (ask to run outside, or fail the call with the way out).

use serde::{Deserialize, Serialize};

use super::{Mode, Unavailable};

/// The profile a call ran under and what the sandbox did to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub mode: Mode,
    pub network: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
    /// What the command may have changed, as the attribution filter noted it (see
    /// `sandbox::written`); `None` when the call has no complete record (unconfined, a
    /// background start, a kernel without the filter). Handed to the checkpoints after the
    /// call; never saved nor sent.
    #[serde(skip)]
    pub written: Option<std::sync::Arc<super::Written>>,
}

/// Why the sandbox stopped a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Blocked {
    /// A layer could not be enforced: nothing ran.
    Unavailable(Unavailable),
    /// The command ran and failed because the sandbox denied something; `what` says what,
    /// when it could be told (e.g. "write to /home/u/x", "a connection beyond the call's own loopback").
    Denied {
        what: Option<String>,
        /// The narrowest way out (`sandbox::way_out`), when one could be told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fix: Option<String>,
    },
}

impl Blocked {
    /// The one-line reason, as the model and the user read it.
    pub fn reason(&self) -> String {
        match self {
            Blocked::Unavailable(u) => u.to_string(),
            Blocked::Denied { what, .. } => format!(
                "the sandbox denied {}",
                what.as_deref().unwrap_or("part of this command")
            ),
        }
    }

    /// The narrowest way out, as the model and the user read it.
    pub fn way_out(&self) -> String {
        match self {
            Blocked::Unavailable(u) => u.fix.clone(),
            Blocked::Denied { fix: Some(fix), .. } => fix.clone(),
            Blocked::Denied { fix: None, .. } => {
                "run with --sandbox off, or widen [sandbox] in your user config".to_string()
            }
        }
    }
}

impl Report {
    /// The report of a call that ran under `policy` and was not stopped.
    pub(crate) fn ran(policy: &super::Policy) -> Report {
        Report {
            mode: policy.mode,
            network: policy.network,
            blocked: None,
            written: None,
        }
    }
}

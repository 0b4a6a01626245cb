//! What happened to one confined call, attached to the `bash` tool's output: the profile it
//! ran under and whether the sandbox stopped it. The frontends show it; the core decides what
//! to do about it (ask to run outside, or fail the call with the way out).

use serde::{Deserialize, Serialize};

use super::{Mode, Unavailable};

/// The profile a call ran under and what the sandbox did to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub mode: Mode,
    pub network: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
}

/// Why the sandbox stopped a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Blocked {
    /// A layer could not be enforced: nothing ran.
    Unavailable(Unavailable),
    /// The command ran and failed because the sandbox denied something; `what` says what,
    /// when it could be told (e.g. "write to /home/u/x", "a connection beyond the call's own loopback").
    Denied { what: Option<String> },
}

impl Report {
    /// The report of a call that ran under `policy` and was not stopped.
    pub(crate) fn ran(policy: &super::Policy) -> Report {
        Report {
            mode: policy.mode,
            network: policy.network,
            blocked: None,
        }
    }
}

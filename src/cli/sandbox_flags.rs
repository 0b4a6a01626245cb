//! The flags that choose the sandbox profile and plan mode, the same on every command that runs
//! tools (a session, one-shot, `acp`, `serve`): declared once, flattened into `ServerFlags`.
//! They only fill in [`Overrides`]; the configuration decides what they mean.

use crate::config::Overrides;
use crate::sandbox::Mode;

#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct SandboxFlags {
    /// Sandbox profile of bash commands: workspace-write (default), read-only or off.
    #[arg(long = "sandbox", value_name = "MODE", value_parser = crate::config::parse_mode)]
    pub(crate) mode: Option<Mode>,
    /// Let sandboxed bash commands use the network (IPv4/IPv6 sockets).
    #[arg(long)]
    pub(crate) network: bool,
    /// Plan mode: the model reads and plans; writes go only to its plan file, bash runs
    /// read-only without network.
    #[arg(long)]
    pub(crate) plan: bool,
}

impl SandboxFlags {
    /// Adds what the flags choose to `overrides`.
    pub(super) fn apply(&self, overrides: &mut Overrides) {
        overrides.sandbox = self.mode;
        overrides.network = self.network;
        overrides.plan = self.plan;
    }
}

//! `minicode acp`: the wiring of the Agent Client Protocol frontend. Every session the client
//! opens gets the configuration of its own `cwd` (the user's file and, only when that
//! workspace is trusted, its own; an untrusted workspace whose file wants to choose the server
//! or the key is refused, as in one-shot runs), its provider, tools, skills and MCP servers
//! (the configured ones plus the client's), and, when the client offered it, the editor's
//! file access. The protocol itself is in `acp`; each session is opened by `cli/host.rs`
//! through the one session builder; this file only starts the server.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::Failure;
use super::host::{Host, Notes, Source};
use crate::acp;

/// `minicode acp`.
#[derive(Debug, clap::Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    pub(crate) server: super::ServerFlags,
}

/// Serves ACP on stdin/stdout until the client closes it.
pub(super) fn run(args: &AcpArgs, launch: &Path) -> Result<ExitCode, Failure> {
    let overrides = args.server.overrides(false);
    // The environment as it was at start: every session's configuration reads it.
    let vars: HashMap<String, String> = std::env::vars().collect();
    // A bad flag or user config is better said at once than at the first session.
    let snapshot = |n: &str| vars.get(n).cloned();
    // A workspace file the launch folder may not use (untrusted, or changed since trusted) is
    // left out here: each session loads its own workspace's configuration and is refused
    // there. Logs go to the launch folder's log file: stdout carries only the protocol.
    let started = super::prelude::start_host(super::prelude::Setup {
        env: &snapshot,
        launch,
        overrides: overrides.clone(),
        refused: super::prelude::Refused::Host,
        log: super::prelude::Log::OnRequest,
    })?;
    let _log = started.log;
    let host = Arc::new(Host {
        source: Source::PerWorkspace { overrides },
        notes: Notes::Host,
        vars,
        launch: launch.to_path_buf(),
    });
    let runtime = started.runtime;
    let result = runtime.block_on(acp::serve(host));
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(message) => Err(Failure { code: 1, message }),
    }
}

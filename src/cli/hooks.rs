//! The command-line side of hooks: which of the configured hooks a session runs. The user's
//! own hooks always do; a trusted workspace's hook runs only once the user approved it as it
//! is defined now: asked here on the terminal (`/dev/tty`) and recorded in the user's config,
//! as `.mcp.json` servers are. Without a terminal it is skipped with a notice naming it and
//! saying how to approve it; `--yes` approves tool calls, never programs a repository wants
//! to run.

use std::path::Path;

use super::mcp::Ask;
use crate::config::{self, Config};
use crate::hooks::Hook;

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The hooks the session runs, and notes for the user about those it does not.
pub(super) fn chosen(
    config: &Config,
    workspace: &Path,
    env: Env<'_>,
    trust: config::Trust,
    ask: Ask,
) -> (Vec<Hook>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut notes = Vec::new();
    for hook in &config.hooks {
        if !hook.from_workspace || config::is_hook_approved(&config.hook_approvals, workspace, hook)
        {
            hooks.push(hook.clone());
            continue;
        }
        if !trust.is_trusted() {
            continue;
        }
        let answer = match ask {
            Ask::Terminal => ask_tty(hook),
            Ask::Never => None,
        };
        match answer {
            Some(true) => {
                if let Err(e) = config::approve_hook(env, workspace, hook) {
                    notes.push(format!(
                        "could not record the approval of the {}: {e} (it runs this session \
                         only)",
                        hook.describe()
                    ));
                }
                hooks.push(hook.clone());
            }
            Some(false) => notes.push(format!(
                "the {} of {} does not run: you did not approve it",
                hook.describe(),
                hook.origin.display()
            )),
            None => notes.push(format!(
                "the {} of {} was skipped: a workspace's hook runs only once you approved it \
                 (start minicode in a terminal in this workspace to be asked; --yes does not \
                 approve it)",
                hook.describe(),
                hook.origin.display()
            )),
        }
    }
    (hooks, notes)
}

/// Asks on the controlling terminal whether the workspace's hook may run. `None` when there
/// is no terminal. Typed-ahead input is discarded first, so only an answer to this question
/// counts.
fn ask_tty(hook: &Hook) -> Option<bool> {
    let question = format!(
        "\nThis workspace's config ({}) wants minicode to run a hook (a command that runs \
         confined like bash, at every {} event):\n  {}\n  timeout {} s",
        hook.origin.display(),
        hook.event.as_str(),
        hook.command,
        hook.timeout.as_secs()
    );
    super::ask::remembered_yes(&question, "Run it")
}

/// `/hooks` in the full-screen session: every configured hook, one line each: its event,
/// matcher and command, its timeout, the file that defines it and whether it runs (a
/// workspace's only once approved, and never in an untrusted workspace).
pub(super) fn listing(config: &Config, running: &[Hook], trust: config::Trust) -> Vec<String> {
    config
        .hooks
        .iter()
        .map(|hook| {
            let source = if hook.from_workspace {
                "workspace"
            } else {
                "user"
            };
            let state = if running.contains(hook) {
                if hook.from_workspace {
                    "approved, runs"
                } else if hook.unconfined {
                    "runs outside the sandbox"
                } else {
                    "runs"
                }
            } else if !trust.is_trusted() {
                "not run: the workspace is not trusted"
            } else {
                "not approved: skipped"
            };
            let matcher = hook
                .matcher
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            format!(
                "{}{matcher} `{}` · timeout {} s · {source}: {} · {state}",
                hook.event.as_str(),
                crate::sanitize::visible(&hook.command),
                hook.timeout.as_secs(),
                hook.origin.display()
            )
        })
        .collect()
}

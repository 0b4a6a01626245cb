//! The command-line side of workspace trust: `minicode trust [PATH]` and `untrust [PATH]`, and
//! loading the configuration when an untrusted workspace's file wants to choose the server or
//! the key (one-shot: refuse with exit 2; full-screen: ask once, then honour the answer). The
//! rule itself lives in `config`; the question's screen lives in `tui::trust_prompt`, which gets
//! plain text from here and nothing of `config`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{Failure, usage};
use crate::config::{self, Config, ConfigError, Overrides, TrustChange};
use crate::sanitize::visible;
use crate::tui::trust_prompt::{self, Answer, Question};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `minicode trust` (`add`) or `minicode untrust`; prints what changed on stdout.
pub(super) fn change(
    env: Env<'_>,
    launch: &Path,
    path: &Option<PathBuf>,
    add: bool,
) -> Result<ExitCode, Failure> {
    let target = match path {
        Some(p) => launch.join(p),
        None => launch.to_path_buf(),
    };
    let outcome = if add {
        config::trust_workspace(env, &target)
    } else {
        config::untrust_workspace(env, &target)
    }
    .map_err(usage)?;
    let workspace = visible(&outcome.workspace.display().to_string());
    let file = outcome.file.display();
    let line = match outcome.change {
        TrustChange::Added => format!("trusted {workspace} (recorded in {file})"),
        TrustChange::AlreadyTrusted => format!("{workspace} was already trusted (in {file})"),
        TrustChange::Renewed => {
            format!("trusted {workspace} as it is now (recorded in {file})")
        }
        TrustChange::Removed => format!("no longer trusted: {workspace} (removed from {file})"),
        TrustChange::WasNotTrusted => format!("{workspace} was not trusted (nothing changed)"),
    };
    let _ = writeln!(std::io::stdout().lock(), "{line}");
    Ok(ExitCode::SUCCESS)
}

/// Loads the configuration. When the workspace is untrusted and its file sets fields only a
/// trusted workspace may set, a one-shot run fails (exit 2, nothing sent, no session created)
/// and a full-screen session asks first: trust and record it, run without the workspace's
/// file, or quit.
pub(super) fn load_config(
    env: Env<'_>,
    launch: &Path,
    overrides: &Overrides,
    interactive: bool,
) -> Result<Config, Failure> {
    let question = match config::load(launch, env, overrides) {
        Err(ConfigError::UntrustedWorkspace { path, fields }) if interactive => Question {
            workspace: launch.display().to_string(),
            file: path.display().to_string(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            changes: Vec::new(),
        },
        Err(ConfigError::TrustChanged { workspace, changes }) if interactive => Question {
            workspace: workspace.display().to_string(),
            file: config::locate_workspace_file(launch)
                .file
                .unwrap_or_else(|| launch.join(config::WORKSPACE_FILE))
                .display()
                .to_string(),
            fields: Vec::new(),
            changes,
        },
        other => return other.map_err(usage),
    };
    let file = question.file.clone();
    let answer = trust_prompt::ask(question).map_err(|e| Failure {
        code: 1,
        message: format!("terminal error: {e}"),
    })?;
    match answer {
        Answer::Trust => {
            let outcome = config::trust_workspace(env, launch).map_err(usage)?;
            let _ = writeln!(
                std::io::stderr().lock(),
                "minicode: trusted {} (recorded in {})",
                visible(&outcome.workspace.display().to_string()),
                outcome.file.display()
            );
            config::load(launch, env, overrides).map_err(usage)
        }
        Answer::WithoutFile => {
            let without = Overrides {
                skip_workspace_file: true,
                ..overrides.clone()
            };
            config::load(launch, env, &without).map_err(usage)
        }
        Answer::Quit => Err(usage(format!(
            "not started: {} wants to choose the server or the key and this workspace is not \
             trusted (run `minicode trust` to trust it)",
            visible(&file)
        ))),
    }
}

//! Skills on the command line: which roots are searched (a workspace's own only when the user
//! trusts it, then the user's folder), discovery for a session, and `minicode skills`, which
//! lists what a session here would offer the model. Discovery itself is `tools::skills`'s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::Failure;
use crate::protocol::SkillState;
use crate::sanitize::text::truncate;
use crate::sanitize::visible;
use crate::tools::skills::{self, Skills};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The user's skills folder, `$XDG_CONFIG_HOME/minicode/skills` (or under
/// `~/.config`), beside the user's config file; shown with `~` when it is under HOME.
fn user_root(env: Env<'_>) -> Option<skills::Root> {
    let config = crate::config::user_config_path(env)?;
    let dir: PathBuf = config.parent()?.join("skills");
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let label = match home.as_deref().and_then(|h| dir.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => dir.display().to_string(),
    };
    Some(skills::user_root(dir, label))
}

/// The skills a session in `workspace` may use: the workspace's own only if `trusted` (an
/// untrusted workspace's folders are only noted), then the user's.
pub(super) fn discover(env: Env<'_>, workspace: &Path, trusted: bool) -> Skills {
    let mut roots = Vec::new();
    if trusted {
        roots.extend(skills::workspace_roots(workspace));
    }
    roots.extend(user_root(env));
    let mut found = skills::discover(&roots);
    if !trusted && let Some(note) = skills::untrusted_note(workspace) {
        found.push_warning(note);
    }
    found
}

/// `minicode skills`: one line per skill (name, state, source, description) on stdout, what
/// discovery reported on stderr.
pub(super) fn list(env: Env<'_>, launch: &Path) -> Result<ExitCode, Failure> {
    let trusted = crate::config::workspace_trust(env, launch).is_trusted();
    let found = discover(env, launch, trusted);
    let mut err = std::io::stderr().lock();
    for warning in found.warnings() {
        let _ = writeln!(err, "minicode: warning: {}", visible(warning));
    }
    if found.is_empty() {
        let mut places: Vec<String> = Vec::new();
        if trusted {
            places.extend(skills::WORKSPACE_DIRS.iter().map(|d| d.to_string()));
        }
        places.extend(user_root(env).map(|r| r.label));
        let _ = writeln!(
            err,
            "no skills found (looked in {}); a skill is a folder <name>/ with a SKILL.md",
            places.join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    let width = found.all().iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    for s in found.all() {
        let state = if s.described {
            SkillState::Listed
        } else {
            SkillState::NameOnly
        }
        .label();
        let _ = writeln!(
            out,
            "{:width$}  {state:9}  {}  {}",
            s.name,
            visible(&s.root),
            visible(&truncate(&s.description, 100)),
        );
    }
    Ok(ExitCode::SUCCESS)
}

//! The paths a confined command must not see at all (issue 32): minicode's runtime folder
//! (the daemon's socket and token: with them a command could drive the user's own
//! `minicode serve` and approve its own unconfined writes) and the files and folders that hold
//! credentials. Pure path work on the caller's environment: the helper covers each existing one
//! with an empty mount (see `sandbox::enforce`); nothing here reads or changes them.

use std::path::{Path, PathBuf};

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Credential files and folders below HOME hidden by default.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".config/gh",
    ".docker/config.json",
    ".kube",
];

/// The default hidden paths under `env`: minicode's runtime folder (and the folder the
/// per-session temporary folders live in, when it differs), minicode's user config file (it
/// may hold `api_key`) and [`HOME_SECRETS`]. Missing ones are kept: the helper skips them,
/// and `doctor` shows the whole list.
pub(crate) fn defaults(env: Env<'_>, user_config: Option<&Path>) -> Vec<PathBuf> {
    let mut paths = vec![crate::defaults::runtime_dir(env)];
    if let Some(tmp_top) = super::tmpdir::base().parent() {
        paths.push(tmp_top.to_path_buf());
    }
    if let Some(config) = user_config {
        paths.push(config.to_path_buf());
    }
    if let Some(home) = home(env) {
        paths.extend(HOME_SECRETS.iter().map(|name| home.join(name)));
    }
    paths
}

/// `path` with a leading `~/` (or a bare `~`) replaced by HOME; `None` when it is still not
/// absolute (a relative path, or `~` without a HOME).
pub(crate) fn expand(path: &Path, env: Env<'_>) -> Option<PathBuf> {
    let expanded = match path.strip_prefix("~") {
        Ok(rest) => home(env)?.join(rest),
        Err(_) => path.to_path_buf(),
    };
    expanded.is_absolute().then_some(expanded)
}

/// The defaults followed by `extra`, each made canonical where it exists (a link is hidden
/// where it leads), without repeats.
pub(crate) fn list(env: Env<'_>, user_config: Option<&Path>, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in defaults(env, user_config)
        .into_iter()
        .chain(extra.iter().cloned())
    {
        let path = path.canonicalize().unwrap_or(path);
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

fn home(env: Env<'_>) -> Option<PathBuf> {
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".to_string()),
            "XDG_RUNTIME_DIR" => Some("/run/user/7".to_string()),
            _ => None,
        }
    }

    #[test]
    fn tilde_expands_to_home_and_relative_paths_are_refused() {
        assert_eq!(
            expand(Path::new("~/.secrets"), &env),
            Some(PathBuf::from("/home/u/.secrets"))
        );
        assert_eq!(expand(Path::new("~"), &env), Some(PathBuf::from("/home/u")));
        assert_eq!(
            expand(Path::new("/etc/x"), &env),
            Some(PathBuf::from("/etc/x"))
        );
        assert_eq!(expand(Path::new("rel/x"), &env), None);
        assert_eq!(expand(Path::new("~/x"), &|_| None), None);
    }

    #[test]
    fn defaults_cover_the_runtime_folder_the_user_config_and_credentials() {
        let paths = defaults(
            &env,
            Some(Path::new("/home/u/.config/minicode/config.toml")),
        );
        for expected in [
            "/run/user/7/minicode",
            "/home/u/.config/minicode/config.toml",
            "/home/u/.ssh",
            "/home/u/.netrc",
            "/home/u/.docker/config.json",
            "/home/u/.kube",
        ] {
            assert!(
                paths.contains(&PathBuf::from(expected)),
                "{expected}: {paths:?}"
            );
        }
    }
}

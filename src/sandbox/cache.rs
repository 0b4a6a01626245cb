//! Where confined commands keep their caches. `~/.cache`, `~/.npm` and the like lie outside the
//! writable roots, so a package manager or build tool that writes its cache there would fail;
//! every confined call instead gets the usual cache variables pointed at one folder: the
//! configured `[sandbox] cache` root, or `cache` inside the session's temporary folder (gone
//! when the session ends). A variable the user already set to a folder the call may write is
//! left as it is. Pure: the namespace init exports what [`vars`] returns.

use std::path::PathBuf;

use super::Policy;

/// The variables set, with the folder each gets inside the cache root (`""`: the root).
/// `GOMODCACHE` and `CARGO_HOME` are left alone on purpose: they hold downloaded sources, so
/// moving them would make an offline build download again.
pub(crate) const VARIABLES: &[(&str, &str)] = &[
    ("XDG_CACHE_HOME", ""),
    ("npm_config_cache", "npm"),
    ("YARN_CACHE_FOLDER", "yarn"),
    ("PIP_CACHE_DIR", "pip"),
    ("UV_CACHE_DIR", "uv"),
    ("GOCACHE", "go-build"),
    ("DENO_DIR", "deno"),
];

/// The cache root of calls under `policy`: the configured one, else `cache` in the temporary
/// folder.
pub(crate) fn root(policy: &Policy) -> PathBuf {
    match &policy.cache {
        Some(dir) => dir.clone(),
        None => policy.tmpdir.join("cache"),
    }
}

/// The variables to export to a call under `policy`, given the value each has now
/// (`current`): each one pointed into the cache root, unless it already names a folder the
/// call may write.
pub(crate) fn vars(
    policy: &Policy,
    current: &dyn Fn(&str) -> Option<PathBuf>,
) -> Vec<(&'static str, PathBuf)> {
    let root = root(policy);
    VARIABLES
        .iter()
        .filter(|(name, _)| {
            !current(name).is_some_and(|p| p.is_absolute() && policy.allows_write(&p))
        })
        .map(|(name, sub)| {
            let dir = if sub.is_empty() {
                root.clone()
            } else {
                root.join(sub)
            };
            (*name, dir)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Mode;
    use std::path::Path;

    fn policy() -> Policy {
        Policy::for_workspace(
            Mode::WorkspaceWrite,
            false,
            Path::new("/nonexistent-ws"),
            &[],
            PathBuf::from("/run/t/s1"),
        )
    }

    #[test]
    fn every_variable_points_into_the_sessions_temporary_folder() {
        let vars = vars(&policy(), &|_| None);
        assert_eq!(vars.len(), VARIABLES.len());
        assert!(vars.contains(&("XDG_CACHE_HOME", PathBuf::from("/run/t/s1/cache"))));
        assert!(vars.contains(&("npm_config_cache", PathBuf::from("/run/t/s1/cache/npm"))));
    }

    #[test]
    fn a_configured_root_wins_and_a_writable_choice_of_the_user_is_kept() {
        let mut policy = policy();
        policy.cache = Some(PathBuf::from("/var/cache/me"));
        let current = |name: &str| match name {
            "PIP_CACHE_DIR" => Some(PathBuf::from("/run/t/s1/mine")),
            "GOCACHE" => Some(PathBuf::from("/home/u/.cache/go-build")),
            _ => None,
        };
        let vars = vars(&policy, &current);
        assert!(!vars.iter().any(|(n, _)| *n == "PIP_CACHE_DIR"));
        assert!(vars.contains(&("GOCACHE", PathBuf::from("/var/cache/me/go-build"))));
        assert!(policy.allows_write(Path::new("/var/cache/me/pip")));
    }
}

//! `doctor`'s config-file section: the files the configuration was looked for in (the one
//! `--config` names, or the user's file and the workspace's), whether each is there, and, once
//! the configuration loaded, which were read and which were left out and why (a service's own
//! `config/config.toml`). It is shown whatever the model state, so a user with no model
//! configured learns where a file would be read from; it reads no file's content.

use std::path::Path;

use serde::Serialize;

/// One place a config file was looked for.
#[derive(Debug, Clone, Serialize)]
pub(in crate::cli) struct ConfigFile {
    /// `flag` (`--config`), `user` or `workspace`.
    pub(crate) role: &'static str,
    pub(crate) path: String,
    pub(crate) exists: bool,
    /// `read`, `found` (there, not read: the configuration did not load), `absent`, or
    /// `ignored` (looked at and left out; `why` says why).
    pub(crate) state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
}

/// The files `config::load` reads for `launch` with `config_path` (`--config`) as given.
pub(super) fn looked_at(
    env: &dyn Fn(&str) -> Option<String>,
    launch: &Path,
    config_path: Option<&Path>,
) -> Vec<ConfigFile> {
    let entry = |role, path: &Path| {
        let exists = path.is_file();
        ConfigFile {
            role,
            path: path.display().to_string(),
            exists,
            state: if exists { "found" } else { "absent" },
            why: None,
        }
    };
    if let Some(path) = config_path {
        return vec![entry("flag", path)];
    }
    let mut files = Vec::new();
    if let Some(user) = crate::config::user_config_path(env) {
        files.push(entry("user", &user));
    }
    files.push(entry(
        "workspace",
        &launch.join(crate::config::WORKSPACE_FILE),
    ));
    files
}

/// Marks the files `config` read, and adds those it looked at and left out, so the one section
/// says where every setting came from.
pub(super) fn mark_read(files: &mut Vec<ConfigFile>, config: &crate::config::Config) {
    let same = |a: &Path, b: &str| {
        let b = Path::new(b);
        a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
    };
    for source in &config.sources {
        match files.iter_mut().find(|f| same(source, &f.path)) {
            Some(file) => file.state = "read",
            None => files.push(ConfigFile {
                role: "workspace",
                path: source.display().to_string(),
                exists: true,
                state: "read",
                why: None,
            }),
        }
    }
    for (path, why) in &config.ignored_sources {
        files.push(ConfigFile {
            role: "workspace",
            path: path.display().to_string(),
            exists: true,
            state: "ignored",
            why: Some((*why).to_string()),
        });
    }
}

//! `doctor`'s config-file section: the files the configuration was looked for in (the one
//! `--config` names, or the user's file and the workspace's), and whether each is there. It is
//! shown whatever the model state, so a user with no model configured learns where a file
//! would be read from; it reads no file's content.

use std::path::Path;

use serde::Serialize;

/// One place a config file was looked for.
#[derive(Debug, Clone, Serialize)]
pub(in crate::cli) struct ConfigFile {
    /// `flag` (`--config`), `user` or `workspace`.
    pub role: &'static str,
    pub path: String,
    pub exists: bool,
}

/// The files `config::load` reads for `launch` with `config_path` (`--config`) as given.
pub(super) fn looked_at(
    env: &dyn Fn(&str) -> Option<String>,
    launch: &Path,
    config_path: Option<&Path>,
) -> Vec<ConfigFile> {
    let entry = |role, path: &Path| ConfigFile {
        role,
        path: path.display().to_string(),
        exists: path.is_file(),
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

//! The user's own config file for binary tests: every test points HOME (and clears
//! XDG_CONFIG_HOME) at a temp folder, so the real user config is never read or written.

use std::path::{Path, PathBuf};

/// `<home>/.config/minicode/config.toml`.
pub fn path(home: &Path) -> PathBuf {
    home.join(".config/minicode/config.toml")
}

/// Writes the user config under `home`: `workspace` in its trust list, then `rest`.
pub fn write_trusting(home: &Path, workspace: &Path, rest: &str) {
    let file = path(home);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    std::fs::write(
        file,
        format!(
            "trusted_workspaces = [{:?}]\n{rest}",
            workspace.to_str().unwrap()
        ),
    )
    .unwrap();
}

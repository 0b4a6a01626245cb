//! Which file is a workspace's own minicode config. It is `.minicode/config.toml`. Workspaces
//! set up before the file moved there kept it as `config/config.toml`, a name many services
//! use for their own settings: that file is read only when it holds nothing but minicode's
//! tables (with a note to move it), and otherwise it belongs to the project and is ignored
//! without a word (`minicode doctor` lists it). This module only finds and classifies the
//! files; reading, trust and merging are `layers`'s.

use std::path::{Path, PathBuf};

/// The workspace's configuration file, relative to the workspace.
pub(crate) const WORKSPACE_FILE: &str = ".minicode/config.toml";
/// Where the workspace's file used to be, relative to the workspace.
pub(crate) const LEGACY_FILE: &str = "config/config.toml";

/// The top-level keys of a minicode config file (`file::FileConfig`'s fields).
pub(super) const TABLES: &[&str] = &[
    "trusted_workspaces",
    "model",
    "tools",
    "context",
    "ui",
    "subagents",
    "goal",
    "telemetry",
    "checkpoints",
    "sandbox",
    "mcp_servers",
    "approved_mcp_servers",
    "permissions",
    "hooks",
    "approved_hooks",
];

/// What a workspace holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    /// The file read as the workspace's config, if any.
    pub(crate) file: Option<PathBuf>,
    /// The file is `config/config.toml`: the user is told once per run to move it.
    pub(crate) legacy: bool,
    /// Files that were looked at and not read, with why (for `doctor`).
    pub(crate) ignored: Vec<(PathBuf, &'static str)>,
}

impl Located {
    /// The one-line note for a file read from the old place.
    pub(crate) fn notice(&self) -> Option<String> {
        let file = self.file.as_ref().filter(|_| self.legacy)?;
        Some(format!(
            "{} is read as this workspace's minicode config; move it to {WORKSPACE_FILE} \
             (`config/` is left to the project)",
            file.display()
        ))
    }
}

/// Finds the workspace's config file in `workspace`.
pub(crate) fn locate(workspace: &Path) -> Located {
    let current = workspace.join(WORKSPACE_FILE);
    let legacy = workspace.join(LEGACY_FILE);
    let mut located = Located::default();
    let legacy_ours = match present(&legacy) {
        true => classify(workspace, &legacy),
        false => Err(None),
    };
    if present(&current) {
        located.file = Some(current);
        match legacy_ours {
            Ok(()) => located
                .ignored
                .push((legacy, "superseded by .minicode/config.toml")),
            Err(Some(why)) => located.ignored.push((legacy, why)),
            Err(None) => {}
        }
        return located;
    }
    match legacy_ours {
        Ok(()) => {
            located.file = Some(legacy);
            located.legacy = true;
        }
        Err(Some(why)) => located.ignored.push((legacy, why)),
        Err(None) => {}
    }
    located
}

/// Whether something is at `path` in any form (even a dangling link), so a broken
/// `.minicode/config.toml` is reported rather than skipped.
fn present(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// `Ok` when the old-place file holds nothing but minicode's tables, else why it is not ours.
fn classify(workspace: &Path, path: &Path) -> Result<(), Option<&'static str>> {
    let text = super::file::read_text(path, Some(workspace))
        .map_err(|_| Some("not minicode's: it cannot be read as a config file"))?;
    let table: toml::Table = text
        .parse()
        .map_err(|_| Some("not minicode's: it is not valid TOML"))?;
    if only_minicode_tables(&table) {
        Ok(())
    } else {
        Err(Some(
            "not minicode's: it holds tables minicode does not use",
        ))
    }
}

fn only_minicode_tables(table: &toml::Table) -> bool {
    table.keys().all(|key| TABLES.contains(&key.as_str()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test's failure is its panic
mod tests {
    use super::*;

    #[test]
    fn every_listed_table_is_a_field_of_the_file() {
        for name in TABLES {
            let text = format!("{name} = 1\n");
            let parsed = super::super::file::parse(Path::new("x.toml"), &text);
            let message = parsed.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(!message.contains("unknown field"), "{name}: {message}");
        }
    }

    #[test]
    fn a_service_config_is_not_minicode_s() {
        let service: toml::Table = "[server]\nport = 1\n[database]\nurl = \"x\"\n"
            .parse()
            .unwrap();
        assert!(!only_minicode_tables(&service));
        let mixed: toml::Table = "[model]\nname = \"m\"\n[server]\nport = 1\n"
            .parse()
            .unwrap();
        assert!(!only_minicode_tables(&mixed));
        let ours: toml::Table = "[model]\nname = \"m\"\n[ui]\n".parse().unwrap();
        assert!(only_minicode_tables(&ours));
    }

    #[test]
    fn the_new_place_wins_and_a_service_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(dir.path().join(LEGACY_FILE), "[database]\nurl = \"x\"\n").unwrap();
        let found = locate(dir.path());
        assert_eq!(found.file, None);
        assert_eq!(found.ignored.len(), 1);
        std::fs::write(dir.path().join(LEGACY_FILE), "[model]\nname = \"m\"\n").unwrap();
        let found = locate(dir.path());
        assert!(found.legacy && found.notice().is_some());
        std::fs::create_dir_all(dir.path().join(".minicode")).unwrap();
        std::fs::write(dir.path().join(WORKSPACE_FILE), "[model]\nname = \"n\"\n").unwrap();
        let found = locate(dir.path());
        assert_eq!(found.file, Some(dir.path().join(WORKSPACE_FILE)));
        assert!(!found.legacy && found.notice().is_none());
        assert_eq!(found.ignored.len(), 1);
    }
}

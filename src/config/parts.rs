//! The tables that belong to one part of minicode each (`[fetch]`, `[goal]`, `[checkpoints]`):
//! each deserialises straight into that part's own settings struct (`tools::fetch::Limits`,
//! `agent::goal::Settings`, `checkpoints::Settings`), whose `Default` is the only place its
//! defaults are written. A file's table is checked against the struct when the file is parsed
//! (unknown keys, wrong types); here the files' tables are laid over each other key by key,
//! remembering which file set each key, and the merged table is read into the struct once.
//! A key added to a part's struct needs nothing here. It reads no files and checks no bounds.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, DeserializeOwned, Deserializer};

use super::ConfigError;

/// The tables read whole into a part's settings, in the order their fields are documented.
pub(super) const PARTS: [&str; 3] = ["fetch", "goal", "checkpoints"];

/// A part's table in one file, read into `T` only to check it while the file's text is at hand
/// (so an unknown key or a wrong type is reported with its line), then dropped: what the file
/// sets is taken from its text key by key ([`Parts::lay`]).
pub(super) struct Checked<T>(PhantomData<T>);

impl<T> Default for Checked<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|_| Self(PhantomData))
    }
}

/// The parts' tables of every file read so far, merged key by key.
#[derive(Default)]
pub(super) struct Parts {
    merged: toml::Table,
}

impl Parts {
    /// Takes the parts' tables out of one file as written (`written`, the file's whole table)
    /// and lays each key over the files below; `origins` learns `table.key` → `path`.
    pub(super) fn lay(
        &mut self,
        written: &mut toml::Table,
        path: &Path,
        origins: &mut HashMap<String, PathBuf>,
    ) {
        for name in PARTS {
            let Some(toml::Value::Table(table)) = written.remove(name) else {
                continue;
            };
            let merged = self
                .merged
                .entry(name)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(merged) = merged else {
                continue;
            };
            for (key, value) in table {
                origins.insert(format!("{name}.{key}"), path.to_path_buf());
                merged.insert(key, value);
            }
        }
    }

    /// Part `name`'s settings: its merged table read into the part's type, every key no file
    /// set at its default. Each file's table already passed as `T` when the file was parsed,
    /// so this fails only if a merged table does not (it always does); `origin` names the
    /// files for that case.
    pub(super) fn get<T>(&self, name: &'static str, origin: String) -> Result<T, ConfigError>
    where
        T: DeserializeOwned + Default,
    {
        match self.merged.get(name) {
            None => Ok(T::default()),
            Some(table) => {
                table
                    .clone()
                    .try_into()
                    .map_err(|e: toml::de::Error| ConfigError::Invalid {
                        origin,
                        field: name,
                        reason: e.message().to_string(),
                    })
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)] // a test's failure is its panic
mod tests {
    use super::*;
    use crate::agent::goal;
    use crate::checkpoints;
    use crate::tools::fetch;

    const EXAMPLE: &str = include_str!("../../config/config.example.toml");

    /// The example file's table `name` with its commented-out `key = value` lines as settings.
    fn example_table(name: &str) -> String {
        let header = format!("[{name}]");
        let mut lines = EXAMPLE.lines().skip_while(|l| l.trim() != header);
        let mut out = format!("{}\n", lines.next().unwrap_or_default());
        for line in lines.take_while(|l| !l.starts_with('[')) {
            let Some(setting) = line.strip_prefix("# ") else {
                continue;
            };
            let key = setting.split('=').next().unwrap_or("").trim();
            if !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                out.push_str(setting);
                out.push('\n');
            }
        }
        out
    }

    /// Reads the example's table `name` into `T` (unknown keys are refused there).
    fn from_example<T: DeserializeOwned>(name: &str) -> T {
        let text = example_table(name);
        let mut table: toml::Table = toml::from_str(&text).unwrap();
        match table.remove(name) {
            Some(value) => value.try_into().unwrap(),
            None => panic!("the example has no [{name}]"),
        }
    }

    #[test]
    fn every_part_s_keys_in_the_example_file_are_its_fields_at_their_defaults() {
        for name in PARTS {
            let keys = example_table(name).lines().count() - 1;
            assert!(keys > 0, "the example shows no key of [{name}]");
        }
        assert_eq!(
            from_example::<fetch::Limits>("fetch"),
            fetch::Limits::default()
        );
        assert_eq!(
            from_example::<goal::Settings>("goal"),
            goal::Settings::default()
        );
        assert_eq!(
            from_example::<checkpoints::Settings>("checkpoints"),
            checkpoints::Settings::default()
        );
    }

    #[test]
    fn a_table_no_file_writes_is_the_part_s_default() {
        let parts = Parts::default();
        let got: checkpoints::Settings = parts.get("checkpoints", String::new()).unwrap();
        assert_eq!(got, checkpoints::Settings::default());
    }

    #[test]
    fn files_are_laid_key_by_key_and_each_key_names_its_file() {
        let mut parts = Parts::default();
        let mut origins = HashMap::new();
        let mut user: toml::Table =
            toml::from_str("[checkpoints]\nmax_bytes = 10\nenabled = true\n").unwrap();
        let mut workspace: toml::Table =
            toml::from_str("[checkpoints]\nenabled = false\n[model]\nname = \"m\"\n").unwrap();
        parts.lay(&mut user, Path::new("user"), &mut origins);
        parts.lay(&mut workspace, Path::new("ws"), &mut origins);
        let got: checkpoints::Settings = parts.get("checkpoints", String::new()).unwrap();
        assert_eq!(
            got,
            checkpoints::Settings {
                enabled: false,
                max_bytes: 10,
                ..Default::default()
            }
        );
        assert_eq!(origins["checkpoints.max_bytes"], Path::new("user"));
        assert_eq!(origins["checkpoints.enabled"], Path::new("ws"));
        // Only the parts' tables are taken out of the file.
        assert!(workspace.contains_key("model") && !workspace.contains_key("checkpoints"));
    }

    #[test]
    fn durations_are_written_in_seconds_and_non_settings_keep_their_defaults() {
        let limits: fetch::Limits = toml::Value::Table(toml::from_str("timeout_secs = 7").unwrap())
            .try_into()
            .unwrap();
        assert_eq!(limits.timeout, std::time::Duration::from_secs(7));
        assert_eq!(limits.max_redirects, fetch::Limits::default().max_redirects);
        let unknown = toml::Value::Table(toml::from_str("max_redirects = 9").unwrap())
            .try_into::<fetch::Limits>()
            .unwrap_err();
        assert!(unknown.message().contains("unknown field"), "{unknown}");
    }
}

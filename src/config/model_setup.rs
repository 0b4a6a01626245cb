//! Writing the `[model]` table of the user's config for `minicode init`: at the path minicode
//! reads (XDG respected), never over an existing file unless asked to, and then only that
//! table is replaced (the trust list and approvals stay). It checks what it writes as loading
//! would, so a file `init` wrote always loads; it asks no questions (that is the CLI's).

use std::path::PathBuf;

use toml_edit::{Item, Table, value};

use super::TrustError;
use super::user_file::UserFile;

/// What `minicode init` sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelChoice {
    pub(crate) base_url: String,
    pub(crate) model: String,
    /// The variable the key is read from; `None` for a server that needs no key.
    pub(crate) api_key_env: Option<String>,
}

/// Why the file was not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    #[error(
        "{} already exists; edit it, or run `minicode init --force` to replace its [model] \
         table (the rest of the file is kept)",
        .0.display()
    )]
    Exists(PathBuf),
    #[error("the server URL must start with http:// or https:// (got {0:?})")]
    BaseUrl(String),
    #[error("the model name must not be empty")]
    Model,
    #[error("{0:?} is not the name of an environment variable")]
    KeyEnv(String),
    #[error(transparent)]
    File(#[from] TrustError),
}

impl ModelChoice {
    fn check(&self) -> Result<(), SetupError> {
        let url = self.base_url.trim();
        let host = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"));
        if host.is_none_or(str::is_empty) {
            return Err(SetupError::BaseUrl(self.base_url.clone()));
        }
        if self.model.trim().is_empty() {
            return Err(SetupError::Model);
        }
        if let Some(name) = &self.api_key_env {
            let valid = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return Err(SetupError::KeyEnv(name.clone()));
            }
        }
        Ok(())
    }
}

/// Writes `choice` as the `[model]` table of the user's config file and returns its path.
/// An existing file is refused unless `force`, which replaces only its `[model]` table.
pub(crate) fn write_model(
    env: &dyn Fn(&str) -> Option<String>,
    choice: &ModelChoice,
    force: bool,
) -> Result<PathBuf, SetupError> {
    choice.check()?;
    let mut user = UserFile::open(env)?;
    let exists = std::fs::symlink_metadata(&user.path).is_ok();
    if exists && !force {
        return Err(SetupError::Exists(user.path));
    }
    let mut table = Table::new();
    table.insert(
        "base_url",
        value(choice.base_url.trim().trim_end_matches('/')),
    );
    table.insert("name", value(choice.model.trim()));
    if let Some(name) = &choice.api_key_env {
        table.insert("api_key_env", value(name.as_str()));
    }
    if user.doc.as_table().is_empty() {
        table.decor_mut().set_prefix(
            "# Written by `minicode init`. Every setting: docs/configuration.md (and\n# \
             config/config.example.toml) in minicode's repository.\n",
        );
    } else if let Some(old) = user.doc.get("model").and_then(Item::as_table) {
        // The replaced table keeps its place and the comments above it.
        table.decor_mut().clone_from(old.decor());
        if let Some(position) = old.position() {
            table.set_position(position);
        }
    }
    user.doc.insert("model", Item::Table(table));
    if !user.doc.to_string().ends_with('\n') {
        user.doc.set_trailing("\n");
    }
    Ok(user.save()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(url: &str, model: &str, key: Option<&str>) -> ModelChoice {
        ModelChoice {
            base_url: url.into(),
            model: model.into(),
            api_key_env: key.map(Into::into),
        }
    }

    #[test]
    fn bad_values_are_refused_before_anything_is_written() {
        assert!(choice("localhost:8080", "m", None).check().is_err());
        assert!(choice("http://", "m", None).check().is_err());
        assert!(choice("http://h/v1", " ", None).check().is_err());
        assert!(choice("http://h/v1", "m", Some("A=B")).check().is_err());
        assert!(
            choice("http://h/v1", "m", Some("OPENAI_API_KEY"))
                .check()
                .is_ok()
        );
    }
}

//! `[permissions]`: the `allow`, `ask` and `deny` rule lists of the user's file and of a
//! trusted workspace's file, parsed into `permissions::Rules` with the file each rule came
//! from. A malformed rule stops the run (exit 2) naming the file, the list and the rule. An
//! untrusted workspace's rules are left out with a notice: a repository must not allow itself
//! commands, and a trusted one's rules join the user's.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;
use super::file::FileConfig;
use crate::permissions::{Action, Rule, Rules};

/// `[permissions]` as written in one file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PermissionsTable {
    pub(crate) allow: Option<Vec<String>>,
    pub(crate) ask: Option<Vec<String>>,
    pub(crate) deny: Option<Vec<String>>,
}

/// Takes an untrusted workspace's `[permissions]` out of its file, returning the notice that
/// says they were ignored.
pub(super) fn drop_untrusted(parsed: &mut FileConfig, path: &Path) -> Option<String> {
    parsed.permissions.take().map(|_| {
        format!(
            "config file {}: its [permissions] rules are ignored because this workspace is not \
             trusted (run `minicode trust` in it to use them)",
            path.display()
        )
    })
}

/// Every file's rules, lowest precedence first (order does not matter to the verdict: deny
/// beats ask beats allow wherever a rule came from).
pub(super) fn rules(tables: &[(PermissionsTable, PathBuf)]) -> Result<Rules, ConfigError> {
    let mut rules = Vec::new();
    for (table, path) in tables {
        let origin = path.display().to_string();
        let lists = [
            (Action::Allow, &table.allow),
            (Action::Ask, &table.ask),
            (Action::Deny, &table.deny),
        ];
        for (action, list) in lists {
            for text in list.iter().flatten() {
                let rule = Rule::parse(text, action, &origin).map_err(|e| ConfigError::Rule {
                    path: path.clone(),
                    list: action.list(),
                    message: e.to_string(),
                })?;
                rules.push(rule);
            }
        }
    }
    Ok(Rules::new(rules))
}

/// Adds `rule` to `[permissions] allow` in the user's config (once), keeping the rest of the
/// file as it was: what the full-screen session's `/permissions save` does after an "always".
/// Returns the file written, or why not.
pub fn save_allow_rule(
    env: &dyn Fn(&str) -> Option<String>,
    rule: &str,
) -> Result<PathBuf, String> {
    use toml_edit::{Array, Item, Table, value};
    Rule::parse(rule, Action::Allow, "").map_err(|e| e.to_string())?;
    let mut user = super::user_file::UserFile::open(env).map_err(|e| e.to_string())?;
    let file = user.path.clone();
    let shape = || {
        format!(
            "config file {}: [permissions] allow must be an array of strings",
            file.display()
        )
    };
    let doc = &mut user.doc;
    if doc.get("permissions").is_none() {
        // Comments after the last setting belong to the table above them (often a commented
        // setting of it): they stay there, and the new table goes after them, so
        // uncommenting them later does not land them in `[permissions]`.
        let trailing = doc.trailing().as_str().unwrap_or("").to_string();
        doc.set_trailing("");
        let mut table = Table::new();
        let gap = if trailing.is_empty() || trailing.ends_with("\n\n") {
            ""
        } else if trailing.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        let lead = if doc.as_table().is_empty() && trailing.is_empty() {
            ""
        } else {
            "\n"
        };
        let prefix = if trailing.is_empty() {
            lead.to_string()
        } else {
            format!("{trailing}{gap}")
        };
        table.decor_mut().set_prefix(prefix);
        doc.insert("permissions", Item::Table(table));
    }
    let table = doc
        .get_mut("permissions")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(shape)?;
    if table.get("allow").is_none() {
        table.insert("allow", value(Array::new()));
    }
    let allow = table
        .get_mut("allow")
        .and_then(Item::as_array_mut)
        .ok_or_else(shape)?;
    if !allow.iter().any(|v| v.as_str() == Some(rule)) {
        allow.push(rule);
    }
    user.save().map_err(|e| e.to_string())
}

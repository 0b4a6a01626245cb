//! Finding skills: the roots in order (a trusted workspace's `.minicode/skills/` and
//! `.agents/skills/`, then the user's own folder), the folders in each, and the checks every
//! skill must pass before it is listed: a `SKILL.md` inside its folder of at most 64 KiB, a
//! frontmatter that parses, a name of lower-case letters, digits and hyphens equal to the
//! folder's, a description of at most 1,024 characters. A skill that fails is reported once
//! and skipped; a name found again in a later root is reported and the first one kept.
//!
//! It reads folders and `SKILL.md` files and nothing else; whether a workspace's roots may be
//! read at all is the caller's question (the trust rule), answered by passing them or not.

use std::path::{Path, PathBuf};

use super::frontmatter::{self, Value};
use super::load;
use super::{
    MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILLS_PER_ROOT, MAX_TRIGGER_CHARS, MAX_TRIGGERS,
    METADATA_TOKENS, SKILL_FILE, Skill, Skills, Source,
};
use crate::chat::estimate_text;

/// The workspace's skill folders, relative to its root, in the order they are searched.
pub const WORKSPACE_DIRS: [&str; 2] = [".minicode/skills", ".agents/skills"];

/// A folder searched for skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub(crate) dir: PathBuf,
    /// How the root is shown: `.minicode/skills`, `~/.config/minicode/skills`.
    pub(crate) label: String,
    pub(crate) source: Source,
    /// The canonical folder every skill of this root must resolve inside (the workspace, for
    /// its roots); `None` for the user's own folder, whose skills may link anywhere the user
    /// put them.
    confine: Option<PathBuf>,
}

/// The roots of a workspace the user trusts, in search order. Call it only for a trusted
/// workspace: a repository's skills are instructions to the model, which an untrusted
/// repository must not be able to give.
pub fn workspace_roots(workspace: &Path) -> Vec<Root> {
    let confine = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    WORKSPACE_DIRS
        .iter()
        .map(|dir| Root {
            dir: workspace.join(dir),
            label: (*dir).to_string(),
            source: Source::Workspace,
            confine: Some(confine.clone()),
        })
        .collect()
}

/// The user's own skills folder (`$XDG_CONFIG_HOME/minicode/skills`), shown as `label`.
pub fn user_root(dir: PathBuf, label: impl Into<String>) -> Root {
    Root {
        dir,
        label: label.into(),
        source: Source::User,
        confine: None,
    }
}

/// For an untrusted workspace that has skill folders: the line telling the user they were
/// ignored and how to use them. Looks only at whether the folders exist; reads nothing.
pub fn untrusted_note(workspace: &Path) -> Option<String> {
    let present: Vec<&str> = WORKSPACE_DIRS
        .iter()
        .copied()
        .filter(|dir| std::fs::symlink_metadata(workspace.join(dir)).is_ok())
        .collect();
    (!present.is_empty()).then(|| {
        format!(
            "this workspace is not trusted: its skills in {} were not loaded (run `minicode \
             trust` here to use them)",
            present.join(" and ")
        )
    })
}

/// Finds the skills of `roots`, in order. Never fails: every problem becomes a warning.
pub fn discover(roots: &[Root]) -> Skills {
    let mut skills: Vec<Skill> = Vec::new();
    let mut warnings = Vec::new();
    for root in roots {
        for skill in scan(root, &mut warnings) {
            match skills.iter().find(|s| s.name == skill.name) {
                Some(first) => warnings.push(format!(
                    "skill {}/{} has the same name as {}/{}, which comes first; it was skipped",
                    skill.root, skill.name, first.root, first.name
                )),
                None => skills.push(skill),
            }
        }
    }
    Skills::new(skills, warnings)
}

/// Marks which skills' descriptions fit [`METADATA_TOKENS`], in order; once one does not,
/// the rest are listed by name only, so an earlier root's skills are never crowded out.
pub(super) fn mark_described(skills: &mut [Skill]) {
    let mut used = 0;
    let mut open = true;
    for skill in skills {
        let cost = estimate_text(&format!("- {}: {}\n", skill.name, skill.description));
        open = open && used + cost <= METADATA_TOKENS;
        if open {
            used += cost;
        }
        skill.described = open;
    }
}

/// The valid skills of one root, sorted by name; problems go to `warnings`.
fn scan(root: &Root, warnings: &mut Vec<String>) -> Vec<Skill> {
    let label = &root.label;
    match std::fs::symlink_metadata(&root.dir) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(format!("skills folder {label} cannot be read: {e}"));
            return Vec::new();
        }
    }
    let real = match root.dir.canonicalize() {
        Ok(real) => real,
        Err(e) => {
            warnings.push(format!("skills folder {label} cannot be read: {e}"));
            return Vec::new();
        }
    };
    if root.confine.as_ref().is_some_and(|c| !real.starts_with(c)) {
        warnings.push(format!(
            "skills folder {label} leads outside the workspace; it was ignored"
        ));
        return Vec::new();
    }
    let entries = match std::fs::read_dir(&real) {
        Ok(entries) => entries,
        Err(e) => {
            warnings.push(format!("skills folder {label} cannot be read: {e}"));
            return Vec::new();
        }
    };
    let mut names: Vec<String> = Vec::new();
    for entry in entries.flatten() {
        match entry.file_name().into_string() {
            Ok(name) if name.starts_with('.') => {}
            Ok(name) => names.push(name),
            Err(name) => warnings.push(format!(
                "skill folder {label}/{} has a name that is not UTF-8; it was skipped",
                name.to_string_lossy()
            )),
        }
    }
    names.sort();
    if names.len() > MAX_SKILLS_PER_ROOT {
        warnings.push(format!(
            "skills folder {label} holds {} entries; only the first {MAX_SKILLS_PER_ROOT} \
             were looked at",
            names.len()
        ));
        names.truncate(MAX_SKILLS_PER_ROOT);
    }
    let mut skills = Vec::new();
    for name in names {
        match check(root, &real, &name) {
            Ok(Some(skill)) => skills.push(skill),
            Ok(None) => {}
            Err(problem) => warnings.push(format!("skill {label}/{name}: {problem}; skipped")),
        }
    }
    skills
}

/// One entry of a root: `Ok(None)` when it is not a folder (a README beside the skills).
fn check(root: &Root, real_root: &Path, name: &str) -> Result<Option<Skill>, String> {
    let path = real_root.join(name);
    let meta = std::fs::symlink_metadata(&path).map_err(|e| format!("cannot read it: {e}"))?;
    let dir = if meta.file_type().is_symlink() {
        let real = path
            .canonicalize()
            .map_err(|_| "it is a broken symbolic link".to_string())?;
        if root.confine.as_ref().is_some_and(|c| !real.starts_with(c)) {
            return Err("it links outside the workspace".to_string());
        }
        real
    } else {
        path
    };
    if !dir.is_dir() {
        return Ok(None);
    }
    let text = load::read_text(&dir, SKILL_FILE)?;
    let doc = frontmatter::parse(&text).map_err(|e| format!("{SKILL_FILE}: {e}"))?;
    let (skill_name, description, triggers) = fields(&doc, name)?;
    Ok(Some(Skill {
        name: skill_name,
        description,
        triggers,
        dir,
        root: root.label.clone(),
        source: root.source,
        described: false,
    }))
}

/// The fields minicode reads, checked.
fn fields(
    doc: &frontmatter::Document<'_>,
    folder: &str,
) -> Result<(String, String, Vec<String>), String> {
    let text = |key: &str| match doc.get(key) {
        None => Err(format!("its frontmatter has no `{key}`")),
        Some(Value::Text(t)) => Ok(t.trim().to_string()),
        Some(Value::List(_)) => Err(format!("`{key}` must be text, not a list")),
        Some(Value::Other(what)) => Err(format!("`{key}` must be text, not {what}")),
    };
    let name = text("name")?;
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(format!(
            "name {name:?} must be lower-case letters, digits and hyphens, at most \
             {MAX_NAME_CHARS} characters"
        ));
    }
    if name != folder {
        return Err(format!("name {name:?} differs from its folder's name"));
    }
    let description = text("description")?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if description.is_empty() {
        return Err("its description is empty".to_string());
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "its description has {chars} characters, over the limit of {MAX_DESCRIPTION_CHARS}"
        ));
    }
    let raw: Vec<String> = match doc.get("triggers") {
        None => Vec::new(),
        Some(Value::Text(t)) => t.split(',').map(str::to_string).collect(),
        Some(Value::List(items)) => items.clone(),
        Some(Value::Other(what)) => {
            return Err(format!("`triggers` must be a list of words, not {what}"));
        }
    };
    let mut triggers: Vec<String> = Vec::new();
    for trigger in raw {
        let trigger = trigger
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        if trigger.chars().count() > MAX_TRIGGER_CHARS {
            return Err(format!(
                "trigger {trigger:?} is longer than {MAX_TRIGGER_CHARS} characters"
            ));
        }
        if !trigger.is_empty() && !triggers.contains(&trigger) {
            triggers.push(trigger);
        }
    }
    if triggers.len() > MAX_TRIGGERS {
        return Err(format!(
            "it has {} triggers, over the limit of {MAX_TRIGGERS}",
            triggers.len()
        ));
    }
    Ok((name, description, triggers))
}

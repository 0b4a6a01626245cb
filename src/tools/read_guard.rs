//! Which files a `read(…)` deny rule keeps from the model, by name and by identity. A rule
//! names paths, but a hard link gives a denied file's content a second name the rule does
//! not cover; so a regular file with more than one link is also withheld when its device and
//! inode are those of a file a rule denies. Those identities come from one walk of the
//! workspace (without ignore files, links not followed), made at most once per tool call and
//! only when such a file turns up. Reads no content; says nothing about `bash`.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::OnceLock;

use crate::permissions::{Rule, Rules};

/// Entries the identity walk visits at most; past that, every file with several links is
/// withheld, since one of them could be a denied file's.
const MAX_WALK: usize = 200_000;

/// Why a file is withheld.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Denial<'a> {
    /// A rule covers its path.
    Named(&'a Rule),
    /// It is a hard link to a file the rule covers.
    Linked(&'a Rule),
    /// It has several links and the workspace is too large to tell whose.
    Unsure,
}

impl Denial<'_> {
    /// The reason as the model reads it, after "is".
    pub(crate) fn describe(&self) -> String {
        match self {
            Denial::Named(rule) => {
                format!("denied by the rule `{}` (from {})", rule.text, rule.origin)
            }
            Denial::Linked(rule) => format!(
                "a hard link to a file denied by the rule `{}` (from {})",
                rule.text, rule.origin
            ),
            Denial::Unsure => format!(
                "a file with several hard links, and the workspace holds more than {MAX_WALK} \
                 entries to tell whether one is denied by a read rule"
            ),
        }
    }
}

/// The denied identities: (device, inode) → the rule that denies a name of it.
enum Identities<'a> {
    Known(HashMap<(u64, u64), &'a Rule>),
    TooMany,
}

/// The `read(…)` deny rules of one tool call, with the identities of the files they deny,
/// found once on first need. Shared by the workers of a parallel walk.
pub(crate) struct ReadGuard<'a> {
    rules: &'a Rules,
    workspace: &'a Path,
    identities: OnceLock<Identities<'a>>,
}

impl<'a> ReadGuard<'a> {
    /// `None` when no rule denies reads: then nothing is withheld and nothing is walked.
    pub(crate) fn new(rules: Option<&'a Rules>, workspace: &'a Path) -> Option<Self> {
        let rules = rules.filter(|r| r.denies_reads())?;
        Some(Self {
            rules,
            workspace,
            identities: OnceLock::new(),
        })
    }

    /// Why `path` (inside the workspace, links resolved or not followed) is withheld, if it is.
    pub(crate) fn denial(&self, path: &Path) -> Option<Denial<'a>> {
        let rel = path.strip_prefix(self.workspace).ok()?.to_str()?;
        if let Some(rule) = self.rules.read_denied(rel) {
            return Some(Denial::Named(rule));
        }
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.is_file() || meta.nlink() < 2 {
            return None;
        }
        match self.identities.get_or_init(|| self.walk()) {
            Identities::TooMany => Some(Denial::Unsure),
            Identities::Known(ids) => ids
                .get(&(meta.dev(), meta.ino()))
                .map(|rule| Denial::Linked(rule)),
        }
    }

    /// Whether `path` is withheld.
    pub(crate) fn withholds(&self, path: &Path) -> bool {
        self.denial(path).is_some()
    }

    /// Every regular file with several links whose name a rule denies, by identity.
    fn walk(&self) -> Identities<'a> {
        let mut ids = HashMap::new();
        let mut stack = vec![self.workspace.to_path_buf()];
        let mut visited = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                visited += 1;
                if visited > MAX_WALK {
                    return Identities::TooMany;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() {
                    self.note(&path, &mut ids);
                }
            }
        }
        Identities::Known(ids)
    }

    fn note(&self, path: &Path, ids: &mut HashMap<(u64, u64), &'a Rule>) {
        let Some(rel) = path
            .strip_prefix(self.workspace)
            .ok()
            .and_then(Path::to_str)
        else {
            return;
        };
        let Some(rule) = self.rules.read_denied(rel) else {
            return;
        };
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        if meta.nlink() > 1 {
            ids.insert((meta.dev(), meta.ino()), rule);
        }
    }
}

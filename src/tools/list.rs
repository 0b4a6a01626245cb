//! The `list` tool: the files under a folder of the workspace, as ripgrep would see them
//! (ignore files honoured, `.git` and `.minicode` left out, links shown but not followed),
//! optionally filtered by a glob, sorted, and capped with an "N more" line. Read-only: it needs
//! no approval and opens no file (only ignore files, through the walk).

use std::path::Path;
use std::sync::{Arc, Mutex};

use ignore::WalkState;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::walk::{self, Start};
use super::{Aim, Prepared, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{ToolKind, ToolSpec};
use crate::fsutil;
use crate::sync::lock;

/// Paths shown when the call names no limit.
pub(crate) const DEFAULT_LIMIT: usize = 200;
/// The most paths one call shows.
pub(crate) const MAX_LIMIT: usize = 2000;

/// The description in the small profile (see `tools::lean`).
const BRIEF: &str = "List the files in a folder.";

const DESCRIPTION: &str = "List files under a folder, recursively and sorted; honours \
.gitignore, never shows .git or .minicode. No approval needed: prefer it to bash.";

pub(crate) struct List;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: Option<String>,
    pattern: Option<String>,
    limit: Option<usize>,
}

/// A checked call.
pub(crate) struct Call {
    start: Start,
    pattern: Option<String>,
    limit: usize,
}

fn check(args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
    let limit = match args.limit {
        Some(0) => return Err("limit must be at least 1".to_string()),
        Some(n) => n.min(MAX_LIMIT),
        None => DEFAULT_LIMIT,
    };
    let start = walk::start(&ctx.workspace, args.path.as_deref())
        .map_err(|e| format!("cannot list: {e}"))?;
    let pattern = args.pattern.clone().filter(|p| !p.trim().is_empty());
    if let Some(p) = &pattern {
        // Checked now, so a bad glob is reported before anything runs.
        ignore::overrides::OverrideBuilder::new(&start.root)
            .add(p)
            .map_err(|e| format!("invalid pattern {p:?}: {e}"))?;
    }
    Ok(Call {
        start,
        pattern,
        limit,
    })
}

impl Typed for List {
    type Args = Args;
    type Checked = Call;

    fn check(&self, args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
        check(args, ctx)
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn aim(args: &Args) -> Aim {
        Aim::Paths(args.path.iter().cloned().collect())
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::List.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Folder (default: the workspace)"},
                    "pattern": {"type": "string", "description": "Glob, e.g. *.rs or src/**/*.rs; ! excludes"},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most paths (default 200)"}
                },
                "additionalProperties": false
            }),
        }
    }

    fn brief(&self) -> Option<&'static str> {
        Some(BRIEF)
    }

    fn describe(&self, call: Call, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let summary = match &call.pattern {
            Some(p) => format!("{} ({p})", call.start.display),
            None => call.start.display,
        };
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        call: Call,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let workspace = ctx.workspace.clone();
            let max_bytes = ctx.output_limit();
            let secrets = ctx.secrets.clone();
            let rules = ctx.permissions.clone();
            let stop = cancel.clone();
            // The walk blocks on the file system: off the runtime, and it stops on cancel.
            let job = move || {
                let rules = rules.as_deref();
                let text = list(&workspace, &call, rules, max_bytes, &stop)?;
                // A regular expression given as the glob (`\.txt$`, small models' habit)
                // matched nothing: it is listed again as the glob it means.
                let meant = call.pattern.as_deref().and_then(regex_as_glob);
                let text = match meant {
                    Some(glob) if text.starts_with("no files matching") => {
                        let asked = call.pattern.clone().unwrap_or_default();
                        let again = Call {
                            pattern: Some(glob.clone()),
                            ..call
                        };
                        let text = list(&workspace, &again, rules, max_bytes, &stop)?;
                        format!(
                            "[`{asked}` is a regular expression, not a glob: listed the glob \
                             `{glob}` instead]\n{text}"
                        )
                    }
                    _ => text,
                };
                Ok(secrets.redact(text))
            };
            crate::tools::off_runtime(&cancel, "list", job)
                .await
                .map_or_else(|refused| refused, ToolOutput::ok)
        })
    }
}

/// The glob a pattern written as a regular expression means: `\.txt$` and `.*\.txt` are
/// `*.txt`, `^test_` is `test_*`. `None` for a pattern that is no such expression, or one
/// with classes, groups or repetition a glob cannot say.
fn regex_as_glob(pattern: &str) -> Option<String> {
    let regex_like = pattern.contains("\\.")
        || pattern.starts_with('^')
        || pattern.ends_with('$')
        || pattern.contains(".*");
    if !regex_like {
        return None;
    }
    let anchored_start = pattern.starts_with('^');
    let anchored_end = pattern.ends_with('$') && !pattern.ends_with("\\$");
    let mut body = pattern.strip_prefix('^').unwrap_or(pattern);
    if anchored_end {
        body = &body[..body.len() - 1];
    }
    let body = body.replace(".*", "*").replace("\\.", ".");
    if body.is_empty() || body.contains(['\\', '[', ']', '(', ')', '{', '}', '+', '?', '|']) {
        return None;
    }
    let mut glob = String::new();
    if !anchored_start && !body.starts_with('*') {
        glob.push('*');
    }
    glob.push_str(&body);
    if !anchored_end && !body.ends_with('*') {
        glob.push('*');
    }
    Some(glob)
}

/// One path found, and what to show after it.
struct Found {
    path: String,
    /// For a symbolic link: where it leads, or why it is not followed.
    link: Option<String>,
}

/// Most extensions a listing's closing count names.
const TALLIED_EXTENSIONS: usize = 6;

/// The closing count of a complete listing: `[9 files: 7 .txt, 2 .md]`, the most common
/// extensions first. Asked how many files of a kind a folder holds, small models miscount a
/// listing (Qwen2.5-Coder 1.5B answered 4 for 7 `.txt` files in every run); a count in the
/// result is also what a person reads first.
fn tally<'a>(paths: impl Iterator<Item = &'a str>, total: usize) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for path in paths {
        let name = path.rsplit('/').next().unwrap_or(path);
        let kind = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => {
                format!(".{}", ext.to_lowercase())
            }
            _ => "no extension".to_string(),
        };
        *counts.entry(kind).or_default() += 1;
    }
    let mut kinds: Vec<(String, usize)> = counts.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut named: Vec<String> = kinds
        .iter()
        .take(TALLIED_EXTENSIONS)
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    if kinds.len() > TALLIED_EXTENSIONS {
        named.push("…".to_string());
    }
    format!("[{total} files: {}]\n", named.join(", "))
}

fn list(
    workspace: &Path,
    call: &Call,
    rules: Option<&crate::permissions::Rules>,
    max_bytes: usize,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let walk = walk::build(workspace, &call.start, call.pattern.as_deref())
        .map_err(|e| format!("cannot list: {e}"))?;
    let found: Arc<Mutex<Vec<Found>>> = Arc::default();
    let errors = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let withheld = std::sync::atomic::AtomicUsize::new(0);
    let guard = crate::tools::read_guard::ReadGuard::new(rules, workspace);
    walk.builder.build_parallel().run(|| {
        let errors = errors.clone();
        let withheld = &withheld;
        let guard = &guard;
        let cancel = cancel.clone();
        let mut batch = Batch {
            found: Vec::new(),
            all: found.clone(),
        };
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(_) => {
                    errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    return WalkState::Continue;
                }
            };
            let Some(kind) = entry.file_type() else {
                return WalkState::Continue;
            };
            if kind.is_dir() {
                return WalkState::Continue;
            }
            if guard.as_ref().is_some_and(|g| g.withholds(entry.path())) {
                withheld.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Continue;
            }
            let link = kind
                .is_symlink()
                .then(|| link_note(workspace, entry.path()));
            batch.push(Found {
                path: walk::shown(workspace, entry.path()),
                link,
            });
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err("interrupted by the user".to_string());
    }
    let mut found = std::mem::take(&mut *lock(&found));
    found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let total = found.len();
    let mut out = String::new();
    let mut shown = 0;
    for f in found.iter().take(call.limit) {
        let line = match &f.link {
            Some(note) => format!("{} {note}\n", f.path),
            None => format!("{}\n", f.path),
        };
        // Room is kept for the closing notes.
        if out.len() + line.len() + 256 > max_bytes {
            break;
        }
        out.push_str(&line);
        shown += 1;
    }
    if total == 0 {
        out.push_str(&match &call.pattern {
            Some(p) => format!("no files matching {p} under {}\n", call.start.display),
            None => format!("no files under {}\n", call.start.display),
        });
    } else if shown == total && total > 1 {
        out.push_str(&tally(found.iter().map(|f| f.path.as_str()), total));
    } else if shown < total {
        out.push_str(&format!(
            "[… and {} more files ({total} in all); narrow with path or pattern{}]\n",
            total - shown,
            if call.limit < MAX_LIMIT {
                ", or raise limit (at most 2000)"
            } else {
                ""
            }
        ));
    }
    let withheld = withheld.load(std::sync::atomic::Ordering::Relaxed);
    if let Some(note) = crate::tools::withheld_note(withheld) {
        out.push_str(&note);
        out.push('\n');
    }
    let errors = errors.load(std::sync::atomic::Ordering::Relaxed);
    if errors > 0 {
        out.push_str(&format!("[{errors} entries could not be read]\n"));
    }
    for note in lock(&walk.skipped).notes() {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(out)
}

/// Where a link found by the walk leads; links are never followed, only described.
fn link_note(workspace: &Path, path: &Path) -> String {
    match path.canonicalize() {
        Ok(real) if fsutil::is_inside(workspace, &real) => {
            format!("-> {}", walk::shown(workspace, &real))
        }
        Ok(_) => "(symbolic link leading outside the workspace, not followed)".to_string(),
        Err(_) => "(broken symbolic link)".to_string(),
    }
}

/// One worker's found paths, handed to the shared list in batches and when the worker ends
/// (the parallel walker drops each worker's closure when it finishes), so the lock is taken
/// once per batch, not once per file.
struct Batch {
    found: Vec<Found>,
    all: Arc<Mutex<Vec<Found>>>,
}

impl Batch {
    fn push(&mut self, f: Found) {
        self.found.push(f);
        if self.found.len() >= 256 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        lock(&self.all).append(&mut self.found);
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tally_tests {
    use super::tally;

    #[test]
    fn a_complete_listing_ends_with_its_files_counted_by_extension() {
        let paths = [
            "data/s1.txt",
            "data/s2.TXT",
            "data/index.md",
            "data/s3.txt",
            "Makefile",
            ".env",
        ];
        assert_eq!(
            tally(paths.into_iter(), 6),
            "[6 files: 3 .txt, 2 no extension, 1 .md]\n"
        );
        let many = ["a.a", "b.b", "c.c", "d.d", "e.e", "f.f", "g.g"];
        assert!(tally(many.into_iter(), 7).ends_with(", …]\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::regex_as_glob;

    #[test]
    fn regular_expressions_a_glob_can_say_become_that_glob() {
        for (regex, glob) in [
            ("\\.txt$", "*.txt"),
            (".*\\.txt$", "*.txt"),
            ("^test_", "test_*"),
            ("^main\\.rs$", "main.rs"),
            ("src/.*\\.rs", "*src/*.rs*"),
        ] {
            assert_eq!(regex_as_glob(regex).as_deref(), Some(glob), "{regex}");
        }
        for pattern in [
            "*.txt",
            "src/**/*.rs",
            "s[0-9]\\.txt$",
            "(a|b)$",
            "\\d+$",
            "^$",
        ] {
            assert_eq!(regex_as_glob(pattern), None, "{pattern}");
        }
    }
}

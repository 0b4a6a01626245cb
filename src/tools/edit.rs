//! The `edit` tool: replaces an exact piece of text in a file the model has already read.
//!
//! It refuses to edit blind: the file must have been read or written earlier in this session
//! and be unchanged on disk since, so the model never overwrites changes it has not seen. The
//! same checks run in `prepare` (so a bad edit is refused before the user is asked) and again in
//! `run` (the file may have changed while the user decided). It never prompts anyone itself.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Aim, Fingerprint, Prepared, ToolCtx, ToolFuture, ToolOutput, Typed, diff};
use crate::chat::ApprovalRequest;
use crate::chat::{Change, ToolKind, ToolSpec};
use crate::fsutil::{self, Existing};
use crate::memory;

mod nearest;
mod tiers;
mod unread;
mod words;
use tiers::Found;
pub use tiers::Tier;

/// Largest file `edit` (and `write`'s approval diff) will load whole.
/// Why an edit of a file the session has not read is refused; the core counts these
/// refusals by it (`agent/tally.rs`).
pub(crate) const NOT_READ: &str = "it has not been read in this session; read it first";

pub(crate) const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;
/// The approval diff is cut beyond this, so the prompt stays usable.
pub(crate) const APPROVAL_DIFF_LINES: usize = 4000;
pub(crate) const APPROVAL_DIFF_BYTES: usize = 512 * 1024;
/// The diff shown to the model in the result is kept short.
pub(crate) const RESULT_DIFF_LINES: usize = 60;
pub(crate) const RESULT_DIFF_BYTES: usize = 6 * 1024;

/// The description in the small profile (see `tools::lean`).
const BRIEF: &str = "Replace exact text (old_string) in a file you have read.";

const DESCRIPTION: &str = "Replace exact text in a file read or written in this session. \
old_string must match exactly (whitespace too) and once, unless replace_all. Returns a diff.";

pub(crate) struct Edit;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// A checked edit, ready to write.
struct Plan {
    path: PathBuf,
    display: String,
    old: String,
    new: String,
    tier: Tier,
    replacements: usize,
}

/// The checked arguments of a call and the file they name.
pub(crate) struct Target {
    args: Args,
    path: PathBuf,
    display: String,
}

fn target(args: &Args, ctx: &ToolCtx) -> Result<Target, String> {
    let args = args.clone();
    if args.old_string.is_empty() {
        return Err("old_string must not be empty; use the write tool to create a file".into());
    }
    if args.old_string == args.new_string {
        return Err("old_string and new_string are identical; nothing would change".into());
    }
    let path = fsutil::resolve_in_workspace(&ctx.workspace, &args.path)
        .map_err(|e| format!("cannot edit: {e}"))?;
    let display = fsutil::display_path(&ctx.workspace, &path);
    Ok(Target {
        args,
        path,
        display,
    })
}

/// The plan against the file on disk.
fn plan(target: Target, ctx: &ToolCtx) -> Result<Plan, String> {
    let display = &target.display;
    let (bytes, meta) = match fsutil::load_existing(&target.path, MAX_EDIT_BYTES) {
        Ok(Existing::File { bytes, meta }) => (bytes, meta),
        Ok(Existing::Missing) => {
            return Err(format!(
                "cannot edit {display}: it does not exist; use the write tool to create it"
            ));
        }
        Err(e) => return Err(format!("cannot edit {display}: {e}")),
    };
    fsutil::refuse_read_only(&meta, display, "edit")?;
    let current = Fingerprint::of(&bytes, &meta);
    replace(target, bytes, current, ctx, "on disk")
}

/// The plan against text an editor served (see [`super::FileAccess`]).
fn plan_text(target: Target, text: &str, ctx: &ToolCtx) -> Result<Plan, String> {
    let current = Fingerprint::of_text(text.as_bytes());
    replace(
        target,
        text.as_bytes().to_vec(),
        current,
        ctx,
        "in the editor",
    )
}

/// Checks that the model saw this very content and applies the replacement to it.
fn replace(
    target: Target,
    bytes: Vec<u8>,
    current: Fingerprint,
    ctx: &ToolCtx,
    place: &str,
) -> Result<Plan, String> {
    let Target {
        args,
        path,
        display,
    } = target;
    let Some(seen) = ctx.recall(&path) else {
        let wanted = unread::Wanted {
            old: &args.old_string,
            all: args.replace_all,
        };
        return Err(unread::refusal(
            &display, &path, &bytes, current, wanted, ctx,
        ));
    };
    if !same_content(&seen, &current) {
        return Err(format!(
            "cannot edit {display}: it has changed {place} since it was last read; read it again"
        ));
    }
    if fsutil::looks_binary(&bytes) {
        return Err(format!(
            "cannot edit {display}: it looks like a binary file"
        ));
    }
    let old = String::from_utf8(bytes)
        .map_err(|_| format!("cannot edit {display}: it is not valid UTF-8 text"))?;
    let (new, tier, replacements) =
        match tiers::replace(&old, &args.old_string, &args.new_string, args.replace_all) {
            Found::Replaced {
                text,
                tier,
                replacements,
            } => (text, tier, replacements),
            Found::Missing => return Err(missing(&display, &old, &args.old_string, ctx)),
            Found::Ambiguous { tier, lines } => return Err(ambiguous(&display, tier, &lines)),
        };
    // A memory file must stay loadable: refuse an edit that takes it over its limits.
    memory::check_new_content(&ctx.workspace, &path, &display, new.as_bytes())
        .map_err(|e| format!("cannot edit {display}: {e}; nothing was changed"))?;
    Ok(Plan {
        path,
        display,
        old,
        new,
        tier,
        replacements,
    })
}

/// `old_string` is nowhere in the file: said so, with the lines closest to it when some are
/// close, so the model can copy the text it meant.
fn missing(display: &str, text: &str, wanted: &str, ctx: &ToolCtx) -> String {
    let mut message = format!(
        "old_string not found in {display} (0 matches, also ignoring whitespace and \
         punctuation differences); copy the text exactly from the file"
    );
    match nearest::closest(text, wanted) {
        Some((first, last, lines)) => message.push_str(&format!(
            ". The closest text is on lines {first}-{last}:\n{}",
            ctx.secrets.redact(lines)
        )),
        None => message.push_str(" (read it again to see it)"),
    }
    message
}

/// Several matches: where they are, so the model can add the context that tells them apart.
fn ambiguous(display: &str, tier: Tier, lines: &[usize]) -> String {
    const SHOWN: usize = 10;
    let n = lines.len();
    let mut at: Vec<String> = lines.iter().take(SHOWN).map(usize::to_string).collect();
    if n > SHOWN {
        at.push(format!("and {} more", n - SHOWN));
    }
    let how = match tier {
        Tier::Exact => String::new(),
        other => format!(" ({})", other.describe()),
    };
    format!(
        "found {n} matches of old_string in {display}{how}, starting on lines {}; add context \
         to make it unique, or set replace_all to replace all {n}",
        at.join(", ")
    )
}

/// Compares what matters for "changed since read": the content. A `touch` that only moves the
/// modification time does not force a re-read; a same-size rewrite is caught by the hash.
fn same_content(a: &Fingerprint, b: &Fingerprint) -> bool {
    a.len == b.len && a.hash == b.hash
}

impl Typed for Edit {
    type Args = Args;
    type Checked = Target;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn aim(args: &Args) -> Aim {
        Aim::Paths(vec![args.path.clone()])
    }

    fn change(args: &Args) -> Option<Change> {
        Some(Change::Replace {
            old: args.old_string.clone(),
            new: args.new_string.clone(),
        })
    }

    fn check(&self, args: &Args, ctx: &ToolCtx) -> Result<Target, String> {
        target(args, ctx)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::Edit.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path in the workspace"},
                    "old_string": {"type": "string", "description": "Exact text to replace"},
                    "new_string": {"type": "string", "description": "Replacement"},
                    "replace_all": {"type": "boolean", "description": "Replace every match"}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        }
    }

    fn brief(&self) -> Option<&'static str> {
        Some(BRIEF)
    }

    fn describe(&self, target: Target, ctx: &ToolCtx) -> Result<Prepared, String> {
        let plan = match &ctx.files {
            // Through an editor, the change is described against the text the model read
            // there; `run` fetches the text again and checks it is still the same.
            Some(_) => {
                let Some(text) = ctx.recall_text(&target.path) else {
                    return Err(format!("cannot edit {}: {NOT_READ}", target.display));
                };
                plan_text(target, &text, ctx)?
            }
            None => plan(target, ctx)?,
        };
        // Redacted before it is cut, so a cut cannot leave part of a secret.
        let full = ctx
            .secrets
            .redact(diff::unified(&plan.display, Some(&plan.old), &plan.new));
        let shown = diff::cap(&full, APPROVAL_DIFF_LINES, APPROVAL_DIFF_BYTES);
        let times = match plan.replacements {
            1 => String::new(),
            n => format!(" ({n} replacements)"),
        };
        Ok(Prepared {
            protected: super::protected::reason(&ctx.workspace, &plan.path),
            summary: format!("{}{times}", plan.display),
            approval: Some(ApprovalRequest::Diff {
                path: plan.display,
                diff: shown,
            }),
        })
    }

    fn run<'a>(
        &'a self,
        target: Target,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            if cancel.is_cancelled() {
                return ToolOutput::interrupted("interrupted by the user; nothing was changed");
            }
            if let Some(files) = &ctx.files {
                return edit_through(files.as_ref(), target, ctx, &cancel).await;
            }
            let plan = match plan(target, ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::failed(e),
            };
            tracing::debug!(path = %plan.display, replacements = plan.replacements, tier = ?plan.tier, "edit");
            match apply(&plan, &ctx.workspace) {
                Ok(fp) => {
                    ctx.remember(&plan.path, fp);
                    ToolOutput::ok(edited(&plan, ctx)).matched(plan.tier)
                }
                Err(e) => ToolOutput::failed(format!("cannot edit {}: {e}", plan.display)),
            }
        })
    }
}

/// What the model reads after an edit: the count and a short diff.
fn edited(plan: &Plan, ctx: &ToolCtx) -> String {
    let full = ctx
        .secrets
        .redact(diff::unified(&plan.display, Some(&plan.old), &plan.new));
    let what = match plan.replacements {
        1 => "1 replacement".to_string(),
        n => format!("{n} replacements"),
    };
    format!(
        "edited {} ({what}, {})\n{}",
        plan.display,
        plan.tier.describe(),
        diff::cap(&full, RESULT_DIFF_LINES, RESULT_DIFF_BYTES)
    )
}

/// An edit through an editor's buffers: the current text is fetched, checked against what the
/// model read, changed and written back.
async fn edit_through(
    files: &dyn super::FileAccess,
    target: Target,
    ctx: &ToolCtx,
    cancel: &CancellationToken,
) -> ToolOutput {
    let path = target.path.clone();
    let display = target.display.clone();
    let text = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            return ToolOutput::interrupted("interrupted by the user; nothing was changed");
        }
        text = files.read_text(&path) => text,
    };
    let text = match text {
        Ok(text) => text,
        Err(e) => return ToolOutput::failed(format!("cannot edit {display}: {e}")),
    };
    let plan = match plan_text(target, &text, ctx) {
        Ok(p) => p,
        Err(e) => return ToolOutput::failed(e),
    };
    tracing::debug!(path = %plan.display, replacements = plan.replacements, "edit in the editor");
    match files.write_text(&plan.path, &plan.new).await {
        Ok(()) => {
            ctx.remember(&plan.path, Fingerprint::of_text(plan.new.as_bytes()));
            ctx.remember_text(&plan.path, &plan.new);
            ToolOutput::ok(edited(&plan, ctx)).matched(plan.tier)
        }
        Err(e) => ToolOutput::failed(format!("cannot edit {display}: {e}")),
    }
}

/// Writes the new content atomically and returns its fingerprint.
fn apply(plan: &Plan, workspace: &Path) -> std::io::Result<Fingerprint> {
    fsutil::write_atomic_journaled(&plan.path, plan.new.as_bytes(), None, workspace)?;
    fingerprint_written(&plan.path, plan.new.as_bytes())
}

/// The fingerprint of content we just wrote to `path`.
pub(crate) fn fingerprint_written(path: &Path, content: &[u8]) -> std::io::Result<Fingerprint> {
    let meta = std::fs::metadata(path)?;
    Ok(Fingerprint::of(content, &meta))
}

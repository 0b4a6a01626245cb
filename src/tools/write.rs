//! The `write` tool: creates or replaces a whole file in the workspace.
//!
//! The write is atomic (temp file, fsync, rename) and keeps an existing file's permission
//! bits (never setuid/setgid); parent folders are created. A read-only file is refused. `prepare` shows the user a diff against the current file. It must never
//! write outside the workspace, and never prompts anyone itself.

use std::path::PathBuf;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::edit::{APPROVAL_DIFF_BYTES, APPROVAL_DIFF_LINES, MAX_EDIT_BYTES, fingerprint_written};
use super::{Aim, Fingerprint, Prepared, ToolCtx, ToolFuture, ToolOutput, Typed, diff};
use crate::chat::ApprovalRequest;
use crate::chat::{Change, ToolKind, ToolSpec};
use crate::fsutil::{self, Existing, LoadError};
use crate::memory;

/// The description in the small profile (see `tools::lean`).
const BRIEF: &str = "Create a file, or replace all of it, with the given content.";

const DESCRIPTION: &str = "Create a file or replace all of it (folders are created). Use edit \
to change part of a file.";

pub(crate) struct Write;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    content: String,
}

/// A checked call: the file, as resolved and as shown, and its new content.
pub(crate) struct Call {
    path: PathBuf,
    display: String,
    content: String,
}

fn check(args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
    let path = fsutil::resolve_in_workspace(&ctx.workspace, &args.path)
        .map_err(|e| format!("cannot write: {e}"))?;
    let display = fsutil::display_path(&ctx.workspace, &path);
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return Err(format!("cannot write {display}: it is a directory"));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(format!("cannot write {display}: it is not a regular file"));
        }
        Ok(meta) => fsutil::refuse_read_only(&meta, &display, "write")?,
        _ => {}
    }
    // A memory file must stay loadable: refuse content over its limits before writing.
    memory::check_new_content(&ctx.workspace, &path, &display, args.content.as_bytes())
        .map_err(|e| format!("cannot write {display}: {e}; nothing was written"))?;
    Ok(Call {
        path,
        display,
        content: args.content.clone(),
    })
}

/// The diff the user approves: against the current text, all-added for a new file, or a note
/// when the current file cannot be shown as text. Secrets are redacted before the diff is cut,
/// so a cut cannot leave part of one.
fn approval_diff(call: &Call, ctx: &ToolCtx) -> Result<String, String> {
    let secrets = &ctx.secrets;
    // Through an editor, the text the model last saw there is the current one as far as we
    // know; a file never seen through it is compared with the disk.
    let editor_text = ctx.files.as_ref().and_then(|_| ctx.recall_text(&call.path));
    let full = match editor_text {
        Some(old) => {
            let d = diff::unified(&call.display, Some(&old), &call.content);
            if d.is_empty() {
                "(no changes: the file already has this content)\n".into()
            } else {
                d
            }
        }
        None => disk_diff(call)?,
    };
    let full = secrets.redact(full);
    Ok(diff::cap(&full, APPROVAL_DIFF_LINES, APPROVAL_DIFF_BYTES))
}

/// The diff against the file on disk.
fn disk_diff(call: &Call) -> Result<String, String> {
    Ok(match fsutil::load_existing(&call.path, MAX_EDIT_BYTES) {
        Ok(Existing::Missing) => diff::unified(&call.display, None, &call.content),
        Ok(Existing::File { bytes, .. }) => {
            match (fsutil::looks_binary(&bytes), std::str::from_utf8(&bytes)) {
                (false, Ok(old)) => {
                    let d = diff::unified(&call.display, Some(old), &call.content);
                    if d.is_empty() {
                        "(no changes: the file already has this content)\n".into()
                    } else {
                        d
                    }
                }
                _ => format!(
                    "(the current {} bytes are not text; they will be replaced)\n{}",
                    bytes.len(),
                    diff::unified(&call.display, None, &call.content)
                ),
            }
        }
        Err(LoadError::TooLarge { len, .. }) => format!(
            "(the current file has {len} bytes, too large to compare; it will be replaced)\n{}",
            diff::unified(&call.display, None, &call.content)
        ),
        Err(e) => return Err(format!("cannot write {}: {e}", call.display)),
    })
}

/// The result the model reads after a write.
fn written(existed: bool, call: &Call) -> String {
    format!(
        "{} {} ({} bytes, {} lines)",
        if existed { "overwrote" } else { "created" },
        call.display,
        call.content.len(),
        line_count(&call.content)
    )
}

fn line_count(text: &str) -> usize {
    let n = text.matches('\n').count();
    if text.is_empty() || text.ends_with('\n') {
        n
    } else {
        n + 1
    }
}

impl Typed for Write {
    type Args = Args;
    type Checked = Call;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn aim(args: &Args) -> Aim {
        Aim::Paths(vec![args.path.clone()])
    }

    fn change(args: &Args) -> Option<Change> {
        Some(Change::Whole {
            text: args.content.clone(),
        })
    }

    fn check(&self, args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
        check(args, ctx)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::Write.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path in the workspace"},
                    "content": {"type": "string", "description": "The whole new content"}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn brief(&self) -> Option<&'static str> {
        Some(BRIEF)
    }

    fn describe(&self, call: Call, ctx: &ToolCtx) -> Result<Prepared, String> {
        let diff = approval_diff(&call, ctx)?;
        Ok(Prepared {
            protected: super::protected::reason(&ctx.workspace, &call.path),
            summary: format!("{} ({} bytes)", call.display, call.content.len()),
            approval: Some(ApprovalRequest::Diff {
                path: call.display,
                diff,
            }),
        })
    }

    fn run<'a>(
        &'a self,
        call: Call,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            if cancel.is_cancelled() {
                return ToolOutput::interrupted("interrupted by the user; nothing was written");
            }
            tracing::debug!(path = %call.display, bytes = call.content.len(), "write");
            if let Some(files) = &ctx.files {
                let existed = ctx.recall_text(&call.path).is_some() || call.path.exists();
                if let Some(parent) = call.path.parent()
                    && let Err(e) = std::fs::create_dir_all(parent)
                {
                    return ToolOutput::failed(format!("cannot write {}: {e}", call.display));
                }
                return match files.write_text(&call.path, &call.content).await {
                    Ok(()) => {
                        ctx.remember(&call.path, Fingerprint::of_text(call.content.as_bytes()));
                        ctx.remember_text(&call.path, &call.content);
                        ToolOutput::ok(written(existed, &call))
                    }
                    Err(e) => ToolOutput::failed(format!("cannot write {}: {e}", call.display)),
                };
            }
            let existed = call.path.exists();
            let result = (|| {
                if let Some(parent) = call.path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                fsutil::write_atomic_journaled(
                    &call.path,
                    call.content.as_bytes(),
                    None,
                    &ctx.workspace,
                )?;
                fingerprint_written(&call.path, call.content.as_bytes())
            })();
            match result {
                Ok(fp) => {
                    ctx.remember(&call.path, fp);
                    ToolOutput::ok(written(existed, &call))
                }
                Err(e) => ToolOutput::failed(format!("cannot write {}: {e}", call.display)),
            }
        })
    }
}

//! `minicode export SESSION --format atif|jsonl`: a session of this workspace (its id or a
//! unique prefix) or a session file (such as one `minicode eval` kept) written to stdout as an
//! ATIF trajectory or as the protocol's events, one per line. Reads the file as it is on disk,
//! without taking the session's lock: saves are atomic, so a session in use exports as last
//! saved.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{Failure, usage};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Harbor's Agent Trajectory Interchange Format (one JSON object).
    Atif,
    /// The protocol's events (`protocol::Event`), one JSON object per line.
    Jsonl,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ExportArgs {
    /// A session id (or a unique prefix of 6+ characters) of this workspace, or the path of a
    /// session file.
    session: String,
    /// atif or jsonl.
    #[arg(long, value_enum, default_value_t = Format::Atif)]
    format: Format,
}

/// The largest session file exported.
const MAX_SESSION_BYTES: u64 = 512 * 1024 * 1024;

pub(super) fn run(args: &ExportArgs, workspace: &Path) -> Result<ExitCode, Failure> {
    let path = locate(&args.session, workspace)?;
    let size = std::fs::metadata(&path)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?
        .len();
    if size > MAX_SESSION_BYTES {
        return Err(usage(format!("{}: larger than 512 MiB", path.display())));
    }
    let session = crate::session::saved(&path).map_err(usage)?;
    let text = match args.format {
        Format::Atif => {
            let trajectory = crate::eval::export::atif(&session, env!("CARGO_PKG_VERSION"));
            serde_json::to_string_pretty(&trajectory).unwrap_or_default() + "\n"
        }
        Format::Jsonl => crate::eval::export::events(&session, &path.display().to_string())
            .iter()
            .filter_map(|e| serde_json::to_string(e).ok())
            .map(|line| line + "\n")
            .collect(),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// A path that exists is a file to read; anything else is a session id of `workspace`.
fn locate(given: &str, workspace: &Path) -> Result<PathBuf, Failure> {
    let as_path = Path::new(given);
    if as_path.is_file() {
        return Ok(as_path.to_path_buf());
    }
    let id = crate::session::Session::resolve_id(workspace, given).map_err(usage)?;
    let path = crate::session::sessions_dir(workspace).join(format!("{id}.json"));
    // A link planted in the repository's .minicode must not make us print another file.
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_file() => Ok(path),
        Ok(_) => Err(usage(format!("{}: not a regular file", path.display()))),
        Err(_) => Err(usage(format!("no session {id} in this workspace"))),
    }
}

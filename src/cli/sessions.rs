//! `minicode sessions` and the session `--session` names: listing this workspace's sessions
//! (text with relative ages, or JSON; what `--continue` passes over marked, a goal session
//! titled by its objective rather than its raw record), the bare ids the shell completion scripts offer for `--session`
//! (`sessions --ids`, hidden), and opening the session a full id or a unique prefix names.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::agent::listing;
use crate::print::OutputFormat;
use crate::protocol::sessions::{age, unix_secs};
use crate::sanitize::visible;
use crate::session::{Session, SessionError, SessionInfo};

use super::{Failure, usage};

pub(super) use crate::agent::listing::title;

/// `minicode sessions`' own flags.
#[derive(Debug, clap::Args)]
pub(crate) struct SessionsArgs {
    /// Only the ids, one per line (what the completion scripts offer for --session).
    #[arg(long, hide = true)]
    ids: bool,
    /// text (one line per session, with its age) or json (one array, exact times).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

/// Prints the listing: text lines, a JSON array, or with `--ids` one id per line (newest
/// first) for completion.
pub(super) fn list(workspace: &Path, args: &SessionsArgs) -> Result<ExitCode, Failure> {
    let sessions = Session::list(workspace).map_err(usage)?;
    let mut out = std::io::stdout().lock();
    let now = SystemTime::now();
    if args.ids {
        for s in &sessions {
            let _ = writeln!(out, "{}", s.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.output_format != OutputFormat::Text {
        let all: Vec<_> = sessions.iter().map(|s| json(s, now)).collect();
        let text = serde_json::to_string_pretty(&all).unwrap_or_else(|_| "[]".to_string());
        let _ = writeln!(out, "{text}");
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        let _ = writeln!(std::io::stderr(), "no sessions in this workspace yet");
    }
    for s in &sessions {
        let when = age(unix_secs(s.updated), now);
        let turns = match s.turns {
            1 => "1 turn".to_string(),
            n => format!("{n} turns"),
        };
        let _ = writeln!(out, "{}  {when:<13}  {turns:>9}  {}", s.id, about(s, now));
    }
    Ok(ExitCode::SUCCESS)
}

/// One session as `--output-format json` lists it: exact time and relative age, the clean
/// title, and the facts the text line shows as marks.
fn json(s: &SessionInfo, now: SystemTime) -> serde_json::Value {
    let summary = listing::summary(s, None);
    serde_json::json!({
        "id": s.id,
        "title": summary.title,
        "updated": humantime::format_rfc3339_seconds(s.updated).to_string(),
        "age": age(summary.updated, now),
        "turns": s.turns,
        "path": s.path.display().to_string(),
        "forked_from": s.forked_from,
        "parent": s.parent,
        "background": s.background,
        "problem": s.problem.as_deref().map(visible),
        "continue_skips": s.passed_over(now),
    })
}

/// What a listing line says about a session after its id and time. Everything in it comes from
/// files in the repository: nothing may act on the terminal.
fn about(s: &SessionInfo, now: SystemTime) -> String {
    let about = match &s.problem {
        Some(problem) => format!("(unreadable: {})", visible(problem)),
        None => visible(&title(&s.first_prompt)),
    };
    let about = match (&s.parent, &s.forked_from) {
        (Some(parent), _) => format!("(sub-agent of {}) {about}", visible(parent)),
        (None, Some(origin)) => format!("(fork of {}) {about}", visible(origin)),
        (None, None) => about,
    };
    let about = match s.background.len() {
        0 => about,
        n => {
            let ids: Vec<&str> = s.background.iter().map(|b| b.id.as_str()).collect();
            format!(
                "(ended with {n} background running: {}) {about}",
                ids.join(", ")
            )
        }
    };
    // What `--continue` passes over is marked, so the choice it makes can be understood.
    match s.passed_over(now) {
        Some(reason) => format!("({reason}; --continue skips it) {about}"),
        None => about,
    }
}

/// Opens the session `given` names: a full id, or a unique prefix of 6 or more characters (the
/// short id the full-screen session shows). Every failure is a usage error (exit 2).
pub(super) fn open(workspace: &Path, given: &str) -> Result<Session, Failure> {
    let id = Session::resolve_id(workspace, given).map_err(usage)?;
    Session::open(workspace, &id).map_err(usage)
}

/// `--continue`: the newest session worth continuing. When there is none but some were passed
/// over, the error says so, so a user who sees sessions listed knows why none was picked.
pub(super) fn open_latest(workspace: &Path) -> Result<Session, Failure> {
    match Session::open_latest(workspace) {
        Err(e @ SessionError::NotFound { id: None }) => {
            let now = std::time::SystemTime::now();
            let skipped = Session::list(workspace)
                .map(|all| all.iter().filter(|s| s.passed_over(now).is_some()).count())
                .unwrap_or(0);
            Err(match skipped {
                0 => usage(e),
                n => usage(format!(
                    "{e} to continue ({n} passed over: see `minicode sessions`; open one with \
                     --session ID)"
                )),
            })
        }
        other => other.map_err(usage),
    }
}

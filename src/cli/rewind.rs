//! `minicode rewind`: a session's checkpoints from the shell. Lists the user turns that
//! changed files, or goes back to the state before one: the code (conflicts left alone unless
//! `--force`), the conversation (a fork before the turn; the original stays), or both.
//! Exit 0 when done, 1 when conflicts were left or the checkpoints were pruned, 2 for usage
//! errors. The work is `checkpoints::Recorder`'s; this file parses, picks and prints.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use super::{Failure, sessions, usage};
use crate::agent::checkpoints::{described, user_message, user_turns};
use crate::checkpoints::{How, Outcome, Recorder, Settings};
use crate::print::OutputFormat;
use crate::protocol::RewindTurn;
use crate::protocol::rewind::turn_lines;
use crate::sanitize::visible;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub(crate) struct RewindArgs {
    /// The session: its id or a unique prefix of 6+ characters (default: the most recent, as
    /// --continue).
    #[arg(long, value_name = "ID", conflicts_with = "continue_")]
    session: Option<String>,
    /// The most recent session of this workspace.
    #[arg(long = "continue", short = 'c')]
    continue_: bool,
    /// List the session's turns that changed files (what happens without --to).
    #[arg(long, conflicts_with = "to")]
    list: bool,
    /// Go back to the state before the Nth user turn of the session (1 is the first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    to: Option<u32>,
    /// Restore the files only (the default).
    #[arg(long, requires = "to", conflicts_with_all = ["conversation", "both"])]
    code: bool,
    /// Fork the conversation before the turn (a new session; the original stays).
    #[arg(long, requires = "to", conflicts_with = "both")]
    conversation: bool,
    /// Restore the files and fork the conversation.
    #[arg(long, requires = "to")]
    both: bool,
    /// Say what would be restored and what conflicts, change nothing.
    #[arg(long, requires = "to")]
    dry_run: bool,
    /// Overwrite conflicts too, after recording their current content (the rewind is itself
    /// a checkpoint: `--list` shows it as the turn after the last, and rewinding to it undoes it).
    #[arg(long, requires = "to")]
    force: bool,
    /// text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

/// What `--output-format json` prints for a rewind.
#[derive(Serialize)]
struct Report<'a> {
    session: &'a str,
    turn: u32,
    dry_run: bool,
    #[serde(flatten)]
    outcome: &'a Outcome,
    /// The session the conversation continues in (`--conversation`, `--both`).
    forked: Option<String>,
    /// The turn's prompt, to send again.
    prompt: Option<String>,
}

pub(super) fn run(
    args: &RewindArgs,
    env: &dyn Fn(&str) -> Option<String>,
    launch: &Path,
) -> Result<ExitCode, Failure> {
    if args.output_format == OutputFormat::StreamJson {
        return Err(usage("rewind prints text or json"));
    }
    let session = match &args.session {
        Some(id) => sessions::open(launch, id)?,
        None => sessions::open_latest(launch)?,
    };
    // The configuration only sizes what a catch-up may record; a workspace file this command
    // may not read (untrusted) does not stop an undo.
    let settings = crate::config::load(launch, env, &crate::config::Overrides::default())
        .map(|c| super::assemble::checkpoint_settings(&c))
        .unwrap_or_else(|_| Settings {
            guard: crate::checkpoints::Guard {
                protected: Some(crate::tools::protected::reason),
                ..Default::default()
            },
            ..Settings::default()
        });
    let mut recorder = Recorder::new(launch, session.id(), settings);
    let failed = |e: std::io::Error| Failure {
        code: 1,
        message: format!("cannot read the checkpoints: {e}"),
    };
    let listed = described(&session, recorder.list().map_err(failed)?);
    let Some(turn) = args.to else {
        print_list(args.output_format, &session, &listed);
        return Ok(ExitCode::SUCCESS);
    };
    let recorded = listed.iter().any(|t| t.turn == turn);
    let a_rewind = crate::checkpoints::is_rewind_turn(turn);
    if turn > user_turns(&session) && !recorded && !a_rewind {
        return Err(usage(format!(
            "session {} has no turn {turn} (see `minicode rewind --list`)",
            session.id()
        )));
    }
    let code = args.code || !(args.conversation || args.both);
    let how = How {
        dry_run: args.dry_run,
        force: args.force,
    };
    let outcome = if code {
        recorder.rewind(turn, &how).map_err(|e| Failure {
            code: 1,
            message: format!("could not restore the code: {e}"),
        })?
    } else {
        Outcome::default()
    };
    let message = user_message(&session, turn).filter(|_| !a_rewind);
    let forked = if (args.conversation || args.both) && !args.dry_run {
        let (index, _) = message
            .clone()
            .ok_or_else(|| usage(format!("turn {turn} has no message to fork before")))?;
        let copy = session.fork_before(index).map_err(|e| Failure {
            code: 1,
            message: format!("could not fork the conversation: {e}"),
        })?;
        Some(copy.id().to_string())
    } else {
        None
    };
    let report = Report {
        session: session.id(),
        turn,
        dry_run: args.dry_run,
        outcome: &outcome,
        forked,
        prompt: message.map(|(_, text)| text),
    };
    print_outcome(args.output_format, &report);
    let left = (!outcome.conflicts.is_empty() || !outcome.uncertain.is_empty()) && !args.force;
    let lost = outcome.nothing_recorded && !outcome.unrecorded.is_empty();
    Ok(
        if left || lost || outcome.pruned || !outcome.protected.is_empty() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

fn print_list(format: OutputFormat, session: &Session, turns: &[RewindTurn]) {
    let mut out = std::io::stdout().lock();
    if format == OutputFormat::Json {
        let value = serde_json::json!({ "session": session.id(), "turns": turns });
        let _ = writeln!(out, "{value}");
        return;
    }
    if turns.is_empty() {
        let _ = writeln!(out, "no turn of session {} changed files", session.id());
        return;
    }
    let _ = writeln!(out, "session {}, newest turn first:", session.id());
    for t in turns {
        for (i, line) in turn_lines(t).iter().enumerate() {
            let indent = if i == 0 { "  " } else { "     " };
            let _ = writeln!(out, "{indent}{}", visible(line));
        }
    }
}

fn print_outcome(format: OutputFormat, report: &Report<'_>) {
    let mut out = std::io::stdout().lock();
    if format == OutputFormat::Json {
        let value = serde_json::to_string(report).unwrap_or_default();
        let _ = writeln!(out, "{value}");
        return;
    }
    let o = report.outcome;
    let verb = if report.dry_run {
        "would restore"
    } else {
        "restored"
    };
    let list = |paths: &[String]| {
        paths
            .iter()
            .map(|p| visible(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if o.pruned {
        let _ = writeln!(
            out,
            "the checkpoints of turn {} were pruned (storage cap): nothing restored",
            report.turn
        );
    }
    if !o.restored.is_empty() {
        let _ = writeln!(out, "{verb}: {}", list(&o.restored));
    }
    let left: Vec<String> = o
        .conflicts
        .iter()
        .filter(|c| !o.overwritten.contains(c))
        .cloned()
        .collect();
    if !left.is_empty() {
        let _ = writeln!(
            out,
            "conflicts, left as they are (changed since the agent last wrote them; --force \
             overwrites them after recording them): {}",
            list(&left)
        );
    }
    if !o.overwritten.is_empty() {
        let _ = writeln!(
            out,
            "overwritten conflicts (undo with `minicode rewind --to <this rewind's number>`): {}",
            list(&o.overwritten)
        );
    }
    if o.nothing_recorded {
        let text = crate::agent::checkpoints::nothing_recorded(report.turn, &o.unrecorded);
        let _ = writeln!(out, "{text}");
    }
    let kept: Vec<String> = o
        .uncertain
        .iter()
        .filter(|c| !o.overwritten.contains(c))
        .cloned()
        .collect();
    if !kept.is_empty() {
        let _ = writeln!(
            out,
            "kept, maybe not the agent's change (another session or program wrote meanwhile, \
             or it changed after a crash; --force reverts them after recording them): {}",
            list(&kept)
        );
    }
    if !o.protected.is_empty() {
        let _ = writeln!(
            out,
            "protected, never written by a rewind (.git, hooks, minicode's data...): {}",
            list(&o.protected)
        );
    }
    if !o.skipped.is_empty() {
        let _ = writeln!(out, "not recorded (too large): {}", list(&o.skipped));
    }
    if !o.withheld.is_empty() {
        let _ = writeln!(
            out,
            "not recorded (holds a configured secret): {}",
            list(&o.withheld)
        );
    }
    if let Some(record) = o
        .record
        .filter(|_| !o.restored.is_empty() || !o.overwritten.is_empty())
    {
        let _ = writeln!(
            out,
            "this rewind is recorded as {record}: `minicode rewind --to {record}` undoes it"
        );
    }
    if let Some(id) = &report.forked {
        let _ = writeln!(
            out,
            "conversation: continued in session {id} (open it with --session {id})"
        );
    }
}

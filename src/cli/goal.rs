//! The goal-mode and fork flags: which one-shot goal task they ask for (`--goal`,
//! `--goal-resume`, `--goal-rounds`), the usage errors of combining them, and `--fork` (the
//! resumed session replaced by its copy). The goal itself is the core's business.

use crate::print::Task;
use crate::session::Session;

use super::{Args, Failure, note, usage};

/// The goal task the flags ask for, if any.
pub(super) fn task(args: &Args) -> Result<Option<Task>, Failure> {
    let resuming = args.session.is_some() || args.continue_;
    if args.fork && !resuming {
        return Err(usage("--fork needs --session ID or --continue"));
    }
    if args.goal_resume && !resuming {
        return Err(usage("--goal-resume needs --session ID or --continue"));
    }
    if args.goal_rounds.is_some() && args.goal.is_none() && !args.goal_resume {
        return Err(usage("--goal-rounds goes with --goal or --goal-resume"));
    }
    let task = match (&args.goal, args.goal_resume) {
        (Some(objective), _) if objective.trim().is_empty() => {
            return Err(usage("the goal's objective is empty"));
        }
        (Some(objective), _) => Some(Task::Goal {
            objective: objective.clone(),
            max_rounds: args.goal_rounds,
        }),
        (None, true) => Some(Task::GoalResume {
            max_rounds: args.goal_rounds,
        }),
        (None, false) => None,
    };
    Ok(task)
}

/// `--fork`: the copy becomes the session of this run.
pub(super) fn fork(session: Session) -> Result<Session, Failure> {
    // The copy is the session of this run; the original (and its lock) is let go.
    let copy = session.fork().map_err(|e| Failure {
        code: 1,
        message: format!("could not fork session {}: {e}", session.id()),
    })?;
    note(&format!(
        "forked session {} into {}",
        session.id(),
        copy.id()
    ));
    Ok(copy)
}

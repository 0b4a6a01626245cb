//! The session's side of background processes (`tools::background`): frontends learn of
//! every change ([`Event::BackgroundChanged`]: `/ps`, the status bar), a frontend may end one
//! ([`crate::protocol::Op::KillBackground`]), and when a session ends the ones still running
//! are recorded in it (`minicode sessions`, resume) and killed: they are never restarted.
//! The processes themselves are the tools' (`ToolCtx::background`); this holds no state.

use crate::protocol::Event;
use crate::session::Session;
use crate::tools::ToolCtx;

use super::Emitter;

/// Tells `emitter` the whole listing whenever a process starts or ends.
pub(super) fn watch(ctx: &ToolCtx, emitter: Emitter) {
    ctx.background.watch(std::sync::Arc::new(move |processes| {
        emitter.emit(Event::BackgroundChanged { processes });
    }));
}

/// Ends process `id` (SIGTERM, then SIGKILL after a grace period) without holding up the
/// core: the change arrives as an event; an unknown id is said as a warning.
pub(super) fn kill(ctx: &std::sync::Arc<ToolCtx>, id: String, emitter: Emitter) {
    let ctx = ctx.clone();
    tokio::spawn(async move {
        if ctx.background.kill(&id).await.is_none() {
            emitter.emit(Event::Warning {
                message: format!("no background process {id}"),
            });
        }
    });
}

/// The session ends (or another takes its place): the running processes are recorded in it
/// and killed.
pub(super) fn end(ctx: &ToolCtx, session: &mut Session) {
    let running = ctx
        .background
        .list()
        .into_iter()
        .filter(|b| b.is_running())
        .collect();
    session.set_background(running);
    ctx.background.end_all();
}

/// What a resumed session says about the processes that were running when it ended.
pub(super) fn resumed(session: &Session) -> Option<Event> {
    let list = session.background();
    if list.is_empty() {
        return None;
    }
    let named: Vec<String> = list
        .iter()
        .map(|b| {
            format!(
                "{} `{}`",
                b.id,
                b.command.lines().next().unwrap_or_default()
            )
        })
        .collect();
    Some(Event::Warning {
        message: format!(
            "background processes were running when this session ended and were not \
             restarted: {}",
            named.join(", ")
        ),
    })
}

//! The process group a running call leads, told to whoever scoped the call with [`scope`]
//! (the agent records it with the session, so that a resumed session can kill a group a
//! crash left running before it calls the call interrupted). A call run without a scope
//! tells nobody. Like `live`, tools never learn who listens: only a callback.

use std::future::Future;
use std::sync::Arc;

/// A call's process group: its id and the tag its supervisor was started with (see
/// `process::supervisor`), which tells it from a later group that reuses the id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) pgid: i32,
    pub(crate) tag: String,
}

/// Told `Some(group)` when a call's group starts and `None` once it is gone.
pub(crate) type Watcher = Arc<dyn Fn(Option<&Group>) + Send + Sync>;

tokio::task_local! {
    static WATCHER: Watcher;
}

/// Runs `call` with the groups it starts told to `watcher`.
pub(crate) async fn scope<F: Future>(watcher: Watcher, call: F) -> F::Output {
    WATCHER.scope(watcher, call).await
}

/// Tells the scope's watcher (if any) about the call's group.
pub(crate) fn report(group: Option<&Group>) {
    let _ = WATCHER.try_with(|w| w(group));
}

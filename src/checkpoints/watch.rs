//! The workspace watcher: one inotify watch per folder the walk entered, so that between two
//! records only the folders where something happened are listed and stat'ed again, not the
//! tree. A statting walk of 10,000 files costs 10-20 ms of CPU on its own; this is what keeps
//! a call's checkpoint proportional to what changed.
//!
//! It only says where to look; the scan decides what changed. Whenever it cannot vouch for
//! the tree (no inotify, the watch limit reached, the event queue overflowed) it says so and
//! the caller walks everything, which is always correct.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use crate::sync::lock;

/// Where to look again, drained from the events since the last drain.
#[derive(Debug, Default)]
pub(crate) struct Dirty {
    /// Folders (workspace-relative, `""` the root) whose own files may have changed.
    pub flat: BTreeSet<String>,
    /// Folders whose whole subtree may have changed (created, moved, removed, or their ignore
    /// rules changed).
    pub deep: BTreeSet<String>,
    /// The watcher cannot vouch for the tree: walk everything.
    pub everything: bool,
}

impl Dirty {
    pub(crate) fn is_empty(&self) -> bool {
        !self.everything && self.flat.is_empty() && self.deep.is_empty()
    }
}

pub(crate) struct Watcher {
    fd: Inotify,
    /// Watched folders by watch, workspace-relative.
    dirs: Mutex<HashMap<WatchDescriptor, String>>,
    /// A watch could not be added: the tree is not fully watched.
    broken: AtomicBool,
}

/// What a folder's watch reports: anything that can change a file's content, mode or
/// presence.
fn flags() -> AddWatchFlags {
    AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// Names whose change alters which files of their folder's subtree are tracked.
const RULE_FILES: [&str; 2] = [".gitignore", ".ignore"];

impl Watcher {
    /// `None` where inotify is not available.
    pub(crate) fn new() -> Option<Watcher> {
        let fd = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        Some(Watcher {
            fd,
            dirs: Mutex::new(HashMap::new()),
            broken: AtomicBool::new(false),
        })
    }

    /// Watches the folder `rel` at `path` (called by the walk before it lists the folder, so
    /// nothing created in it afterwards goes unseen).
    pub(crate) fn add(&self, rel: &str, path: &Path) {
        match self.fd.add_watch(path, flags()) {
            Ok(wd) => {
                lock(&self.dirs).insert(wd, rel.to_string());
            }
            Err(e) => {
                if !self.broken.swap(true, Ordering::Relaxed) {
                    tracing::info!(error = %e, "checkpoints: cannot watch every folder; walking the tree instead");
                }
            }
        }
    }

    /// Whether every folder the walks entered is watched.
    pub(crate) fn healthy(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
    }

    /// The places where something happened since the last drain.
    pub(crate) fn drain(&self) -> Dirty {
        let mut dirty = Dirty::default();
        loop {
            let events = match self.fd.read_events() {
                Ok(events) if !events.is_empty() => events,
                Ok(_) | Err(nix::errno::Errno::EAGAIN) => break,
                Err(e) => {
                    tracing::info!(error = %e, "checkpoints: cannot read the watcher's events");
                    dirty.everything = true;
                    break;
                }
            };
            let mut dirs = lock(&self.dirs);
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    dirty.everything = true;
                    continue;
                }
                if event.mask.contains(AddWatchFlags::IN_IGNORED) {
                    dirs.remove(&event.wd);
                    continue;
                }
                let Some(dir) = dirs.get(&event.wd).cloned() else {
                    continue;
                };
                self.note(&mut dirs, &mut dirty, &dir, &event);
            }
        }
        if !self.healthy() {
            dirty.everything = true;
        }
        dirty
    }

    fn note(
        &self,
        dirs: &mut HashMap<WatchDescriptor, String>,
        dirty: &mut Dirty,
        dir: &str,
        event: &nix::sys::inotify::InotifyEvent,
    ) {
        let mask = event.mask;
        let Some(name) = event.name.as_ref().and_then(|n| n.to_str()) else {
            // The folder itself went away or moved: its parent's event covers where; what it
            // held is gone from here.
            if mask.intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF) {
                dirty.deep.insert(dir.to_string());
            }
            // A name that is not UTF-8 is never tracked; anything else is a folder's own
            // attributes, which are not recorded.
            return;
        };
        if dir.is_empty() && super::scan::NEVER.contains(&name) {
            return;
        }
        let path = if dir.is_empty() {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        };
        if mask.contains(AddWatchFlags::IN_ISDIR) {
            if mask.intersects(AddWatchFlags::IN_MOVED_FROM | AddWatchFlags::IN_DELETE) {
                // Watches under a folder moved away follow it; forget them here.
                let prefix = format!("{path}/");
                let gone: Vec<_> = dirs
                    .iter()
                    .filter(|(_, d)| **d == path || d.starts_with(&prefix))
                    .map(|(wd, _)| *wd)
                    .collect();
                for wd in gone {
                    dirs.remove(&wd);
                    let _ = self.fd.rm_watch(wd);
                }
            }
            if mask.contains(AddWatchFlags::IN_ATTRIB) {
                // A folder's mode is recorded in its parent's listing.
                dirty.flat.insert(dir.to_string());
            } else {
                dirty.deep.insert(path);
            }
            return;
        }
        if RULE_FILES.contains(&name) {
            dirty.deep.insert(dir.to_string());
        }
        dirty.flat.insert(dir.to_string());
    }
}

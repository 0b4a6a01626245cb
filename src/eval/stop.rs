//! Stopping the evaluator's runs when it is interrupted (SIGINT, SIGTERM, told by the CLI):
//! every run's process group is signalled at once, and no new run or step starts. The runs'
//! own waits then see the stop, give each group a moment to save its session, and kill it.
//! A killed evaluator cannot do this; its children die with it (`runner::prepare`) and its
//! scratch folders are swept by the next evaluator ([`super::runner::sweep_orphans`]).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::Signal;

/// The evaluator's stop switch and the process groups of the runs going on.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    /// The signal that stopped the evaluator; 0 while it runs.
    signal: AtomicI32,
    /// Live process groups (each a run's agent or a setup or check command).
    groups: Mutex<BTreeSet<i32>>,
}

impl Stop {
    /// Stops everything: SIGTERM to every live group; later groups are signalled as they
    /// are tracked. Only the first signal counts.
    pub(crate) fn interrupt(&self, signal: i32) {
        let groups = crate::sync::lock(&self.groups);
        if self
            .signal
            .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        for &pgid in groups.iter() {
            signal_group(pgid, Signal::SIGTERM);
        }
    }

    /// The signal that stopped the evaluator, if one did.
    pub(crate) fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// Its name, for the report (`SIGINT`).
    pub(crate) fn signal_name(&self) -> Option<String> {
        self.signal().map(|s| {
            Signal::try_from(s).map_or_else(|_| format!("signal {s}"), |s| s.as_str().to_string())
        })
    }

    /// Records a started group; one started after the stop is signalled at once.
    pub(crate) fn track(&self, pgid: i32) {
        let mut groups = crate::sync::lock(&self.groups);
        if self.signal().is_some() {
            signal_group(pgid, Signal::SIGTERM);
        }
        groups.insert(pgid);
    }

    /// Forgets a group whose leader was reaped (its id may be reused).
    pub(crate) fn untrack(&self, pgid: i32) {
        crate::sync::lock(&self.groups).remove(&pgid);
    }
}

/// `signal` to process group `pgid` (never 0, 1 or our own); a gone group is fine.
pub(crate) fn signal_group(pgid: i32, signal: Signal) {
    if pgid > 1 && pgid != nix::unistd::getpgrp().as_raw() {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_signal_counts() {
        let stop = Stop::default();
        assert_eq!(stop.signal(), None);
        stop.interrupt(libc::SIGTERM);
        stop.interrupt(libc::SIGINT);
        assert_eq!(stop.signal(), Some(libc::SIGTERM));
        assert_eq!(stop.signal_name().as_deref(), Some("SIGTERM"));
    }
}

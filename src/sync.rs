//! The one policy for a poisoned lock: recover. A lock is poisoned only when a thread panicked
//! while holding it, which a release build never survives (it aborts on a panic), so a poisoned
//! lock exists only in debug builds and tests. There the data is taken as the panicking holder
//! left it: every value behind our locks is whole after each statement (maps, queues, caches),
//! and going on beats silently skipping a write or failing a request that did not panic.
//! Every `Mutex` and `RwLock` of the crate is taken through these functions; a leaf every
//! module may use.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering it when poisoned.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `lock` for reading, recovering it when poisoned.
pub(crate) fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `lock` for writing, recovering it when poisoned.
pub(crate) fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// The value of a mutex no one else holds, recovered when poisoned.
pub(crate) fn into_inner<T>(mutex: Mutex<T>) -> T {
    mutex.into_inner().unwrap_or_else(PoisonError::into_inner)
}

//! What minicode does to its own process so the API key is hard to take from it: it makes
//! itself non-dumpable (no core dump, and a process of the same user without `CAP_SYS_PTRACE`
//! can read neither its memory nor `/proc/<pid>/environ`), and it wipes and removes the
//! environment variables that may hold the key once the configuration has read them, so no
//! child can inherit it, even by accident (called by `cli` only). How children are started —
//! scrubbed environment, own session, dying with minicode — is in `process/child.rs`, and the
//! small supervisor every `bash` command runs under in `process/supervisor.rs` (with the init
//! of a confined call's PID namespace in `process/init.rs`).

pub(crate) mod child;
#[cfg(target_os = "linux")]
pub(crate) mod init;
pub(crate) mod supervisor;

/// Marks the process non-dumpable (Linux only; elsewhere this does nothing: the platform's
/// own rules for reading another process's memory apply).
pub(crate) fn deny_dumps() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!(error = %e, "could not mark the process non-dumpable");
    }
}

/// Wipes and removes every variable among `names`: the bytes of the value are overwritten where
/// they lie (for the variables the process started with, that is the block
/// `/proc/<pid>/environ` reads, which removing the variable alone would leave intact), then the
/// variable is removed.
///
/// # Safety
/// No other thread may be running: the C environment is not thread-safe, and another thread
/// could hold a pointer to the value being overwritten.
#[allow(unsafe_code)]
pub(crate) unsafe fn forget_variables<'a>(names: impl IntoIterator<Item = &'a str>) {
    for name in names {
        if std::env::var_os(name).is_none() {
            continue;
        }
        let Ok(c_name) = std::ffi::CString::new(name) else {
            continue;
        };
        // SAFETY: single-threaded (the caller's contract). getenv returns the value of an
        // entry of `environ`, a NUL-terminated string in writable memory (the initial stack
        // block or a copy setenv allocated); overwriting its bytes up to the NUL keeps it a
        // valid (empty) string until it is removed just below.
        #[allow(unsafe_code)]
        unsafe {
            let value = libc::getenv(c_name.as_ptr());
            if !value.is_null() {
                let len = libc::strlen(value);
                std::ptr::write_bytes(value, 0, len);
            }
            std::env::remove_var(name);
        }
    }
}

//! Runs one test again in a child process of this test binary, for the few tests that need
//! process-global state (environment variables, the global `tracing` subscriber). `cargo test`
//! runs every test as a thread of one process, so such a test must never change that state in
//! the shared process: it changes it in a child of its own instead.
//!
//! ```ignore
//! #[test]
//! fn needs_its_own_environment() {
//!     if !isolated::in_child("module::needs_its_own_environment", &[("VAR", "value")]) {
//!         return; // the parent: the child ran the body and passed
//!     }
//!     // the body, running in the child with VAR set from its start
//! }
//! ```

use std::process::Command;

/// Set in the child to the name of the test it must run.
const MARKER: &str = "MINICODE_IT_ISOLATED";

/// True in the child, which runs the test body. In the parent, runs the test `name` (its full
/// path, e.g. `config::logging_works`) in a child process with `envs` set (and `removed`
/// unset) from its start, asserts that exactly that one test ran and passed, and returns false.
pub fn in_child(name: &str, envs: &[(&str, &str)], removed: &[&str]) -> bool {
    if std::env::var(MARKER).as_deref() == Ok(name) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(MARKER, name);
    for (key, value) in envs {
        cmd.env(key, value);
    }
    for key in removed {
        cmd.env_remove(key);
    }
    let out = cmd.output().expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "isolated run of {name} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    false
}

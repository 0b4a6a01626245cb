//! Runs the built `minicode` binary in a temp workspace: isolated HOME, no inherited MINICODE_*
//! settings, stdin from /dev/null, and a new session (no controlling terminal), so approvals
//! can never be asked on the developer's /dev/tty.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::mock_openai::MockServer;

/// The OpenTelemetry variables minicode (or its exporter) reads: cleared for every binary test.
pub const OTEL_VARIABLES: &[&str] = &[
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_BSP_SCHEDULE_DELAY",
];

/// Writes `<dir>/config/config.toml` pointing at `server`, and trusts `dir` in the user config
/// under `<dir>/home` (the seed's layout: the workspace file chooses the server).
pub fn write_config(dir: &Path, server: &MockServer) {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    std::fs::write(dir.join("config/config.toml"), config).unwrap();
    super::user_config::write_trusting(&dir.join("home"), dir, "");
}

/// `minicode` in `dir`, ready for `.args(..)`; change stdin with `.stdin(..)` when needed.
pub fn command(dir: &Path) -> Command {
    command_with_home(dir, &dir.join("home"))
}

/// `minicode` in `dir` with `home` as HOME (where the user config is looked for).
pub fn command_with_home(dir: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.current_dir(dir)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("MINICODE_BASE_URL")
        .env_remove("MINICODE_MODEL")
        .env_remove("MINICODE_API_KEY")
        .env_remove("MINICODE_LOG")
        .stdin(Stdio::null());
    // Telemetry is on only where a test asks for it.
    for name in OTEL_VARIABLES {
        cmd.env_remove(name);
    }
    // SAFETY: setsid is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd
}

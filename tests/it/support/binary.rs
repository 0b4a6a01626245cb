//! Runs the built `minicode` binary in a temp workspace: isolated HOME and XDG folders, no
//! inherited MINICODE_* settings, stdin from /dev/null, and a new session (no controlling
//! terminal), so approvals can never be asked on the developer's /dev/tty. Every test that
//! spawns the binary, PTY tests included, takes its environment from [`isolation`], so a
//! developer's own `XDG_*` variables can neither break a test nor receive its files.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
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

/// Writes `<dir>/.minicode/config.toml` pointing at `server`, and trusts `dir` in the user
/// config under `<dir>/home` (the workspace file chooses the server).
pub fn write_config(dir: &Path, server: &MockServer) {
    std::fs::create_dir_all(dir.join(".minicode")).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
        server.base_url()
    );
    std::fs::write(dir.join(".minicode/config.toml"), config).unwrap();
    super::user_config::write_trusting(&dir.join("home"), dir, "");
}

/// `minicode` in `dir`, ready for `.args(..)`; change stdin with `.stdin(..)` when needed.
pub fn command(dir: &Path) -> Command {
    command_with_home(dir, &dir.join("home"))
}

/// Variables a test binary must not inherit from the developer: minicode's own settings and
/// the system-wide XDG search paths (the per-user ones are pointed into the test's HOME).
const INHERITED_SETTINGS: &[&str] = &[
    "MINICODE_BASE_URL",
    "MINICODE_MODEL",
    "MINICODE_API_KEY",
    "MINICODE_LOG",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
];

/// The one environment every spawned binary gets, as (variable, value) pairs where `None`
/// means "removed": HOME is `home` and every per-user XDG folder lies inside it, laid out as
/// the defaults would be, so a test behaves the same whether or not the developer has `XDG_*`
/// set. Telemetry is off unless a test sets its variables afterwards. The runtime folder is
/// created (mode 0700, as a login session's is) because the daemon refuses any other.
pub fn isolation(home: &Path) -> Vec<(&'static str, Option<OsString>)> {
    let runtime = home.join(".run");
    if std::fs::create_dir_all(&runtime).is_ok() {
        let _ = std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700));
    }
    let mut vars = vec![
        ("HOME", Some(home.into())),
        ("XDG_CONFIG_HOME", Some(home.join(".config").into())),
        ("XDG_CACHE_HOME", Some(home.join(".cache").into())),
        ("XDG_DATA_HOME", Some(home.join(".local/share").into())),
        ("XDG_STATE_HOME", Some(home.join(".local/state").into())),
        ("XDG_RUNTIME_DIR", Some(runtime.into())),
    ];
    vars.extend(INHERITED_SETTINGS.iter().map(|name| (*name, None)));
    vars.extend(OTEL_VARIABLES.iter().map(|name| (*name, None)));
    vars
}

/// Gives `cmd` the [`isolation`] environment for `home`.
pub fn isolate(cmd: &mut Command, home: &Path) {
    for (name, value) in isolation(home) {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
}

/// Gives a PTY test's `cmd` the [`isolation`] environment for `home`.
pub fn isolate_pty(cmd: &mut portable_pty::CommandBuilder, home: &Path) {
    for (name, value) in isolation(home) {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        }
    }
}

/// `minicode` in `dir` with `home` as HOME (where the user config is looked for).
pub fn command_with_home(dir: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.current_dir(dir).stdin(Stdio::null());
    isolate(&mut cmd, home);
    // SAFETY: setsid is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd
}

/// `minicode sandbox <flags> -- bash -c <script>` in `ws`, run to its end.
pub fn sandboxed(ws: &Path, flags: &[&str], script: &str) -> std::process::Output {
    command(ws)
        .arg("sandbox")
        .args(flags)
        .args(["--", "bash", "-c", script])
        .output()
        .unwrap()
}

/// A finished process's stdout then stderr, for assertion messages and searches.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

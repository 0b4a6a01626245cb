//! What the command line says about itself: shell completions (`minicode completions
//! <shell>`, clap_complete), the man page (`minicode man`, clap_mangen), and the long help's
//! examples, environment variables and exit codes. All generated from the one clap
//! definition in `cli.rs`, so they never drift from the real flags.
//!
//! Writes only to stdout; reads no config and starts nothing.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use super::{Args, Failure};

/// Shown after `--help` (and in the man page).
pub(super) const AFTER_LONG_HELP: &str = "\
Examples:
  minicode                                   open the full-screen session here
  minicode \"fix the failing test\"            one task, answer on stdout, then exit
  git diff | minicode \"review this diff\"     piped text is attached below the prompt
  minicode --yes --output-format json \"…\"    unattended, one JSON object at the end
  minicode -c                                resume the most recent session of this folder
  minicode --demo                            try it offline with the built-in demo model
  minicode doctor                            check the configured model server step by step
  minicode completions zsh > ~/.zfunc/_minicode

Environment:
  MINICODE_BASE_URL   server base URL (over [model] base_url)
  MINICODE_MODEL      model name (over [model] name)
  MINICODE_API_KEY    API key (over [model] api_key / api_key_env)
  MINICODE_LOG        log filter for .minicode/logs/ (e.g. debug, minicode=trace)
  NO_COLOR            the full-screen session draws without colour (bold etc. kept)
  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SDK_DISABLED, …   telemetry (docs/telemetry.md)
  XDG_CONFIG_HOME, HOME   where the user config (~/.config/minicode/config.toml) is found

Exit codes:
  0    success
  1    runtime failure (server error, timeout, round limit, SIGTERM)
  2    usage, configuration or input error (bad flag, bad config, unknown session)
  130  interrupted by SIGINT (Ctrl+C)";

/// Shown after `-h`.
pub(super) const AFTER_HELP: &str =
    "`minicode --help` adds examples, the environment variables and the exit codes.";

/// The shells `minicode completions` writes for (only these generators are linked in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Prints the completion script for `shell` on stdout.
pub(super) fn completions(shell: Shell) -> Result<ExitCode, Failure> {
    use clap_complete::{generate, shells};
    let mut cmd = Args::command();
    let mut out = std::io::stdout().lock();
    match shell {
        Shell::Bash => generate(shells::Bash, &mut cmd, "minicode", &mut out),
        Shell::Zsh => generate(shells::Zsh, &mut cmd, "minicode", &mut out),
        Shell::Fish => generate(shells::Fish, &mut cmd, "minicode", &mut out),
    }
    out.flush().map_err(write_failed)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page (roff) on stdout.
pub(super) fn man() -> Result<ExitCode, Failure> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(Args::command())
        .render(&mut out)
        .and_then(|()| out.flush())
        .map_err(write_failed)?;
    Ok(ExitCode::SUCCESS)
}

fn write_failed(e: std::io::Error) -> Failure {
    Failure {
        code: 1,
        message: format!("could not write to stdout: {e}"),
    }
}

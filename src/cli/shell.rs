//! What the command line says about itself: shell completions (`minicode completions
//! <shell>`, clap_complete), the man page (`minicode man`, clap_mangen), and the long help's
//! examples, environment variables and exit codes. All generated from the one clap
//! definition in `cli.rs`, so they never drift from the real flags. clap_complete writes
//! static scripts; the one dynamic value, `--session`'s id, is patched in afterwards: the
//! scripts ask `minicode sessions --ids` (hidden) for this workspace's ids.
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
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Prints the completion script for `shell` on stdout.
pub(super) fn completions(shell: Shell) -> Result<ExitCode, Failure> {
    use clap_complete::{generate, shells};
    let mut cmd = Args::command();
    // clap_complete panics on a failed write: the script is generated into memory and
    // written in one go, so a reader that stops early (`| head`) is an ordinary write error.
    let mut script = Vec::new();
    match shell {
        Shell::Bash => generate(shells::Bash, &mut cmd, "minicode", &mut script),
        Shell::Zsh => generate(shells::Zsh, &mut cmd, "minicode", &mut script),
        Shell::Fish => generate(shells::Fish, &mut cmd, "minicode", &mut script),
    }
    let script = with_session_ids(shell, &String::from_utf8_lossy(&script));
    let mut out = std::io::stdout().lock();
    written(out.write_all(script.as_bytes()).and_then(|()| out.flush()))
}

/// What a script runs to list the ids `--session` accepts (those of the current folder).
const IDS_COMMAND: &str = "minicode sessions --ids 2>/dev/null";

/// The generated script with the top-level `--session` completing this workspace's session ids
/// instead of file names. Each edit replaces what clap_complete writes for that flag, the first
/// time it appears (the top-level flag comes before `attach --session`); the `session_cli` test
/// notices when a clap_complete upgrade changes it.
fn with_session_ids(shell: Shell, script: &str) -> String {
    match shell {
        Shell::Bash => script.replacen(
            "--session)\n                    COMPREPLY=($(compgen -f \"${cur}\"))",
            &format!(
                "--session)\n                    COMPREPLY=($(compgen -W \"$({IDS_COMMAND})\" -- \"${{cur}}\"))"
            ),
            1,
        ),
        Shell::Zsh => {
            let patched = patch_first_line(
                script,
                |line| line.contains("--session=[") && line.contains(":ID:_default'"),
                |line| line.replacen(":ID:_default'", ":ID:_minicode_session_ids'", 1),
            );
            let helper = format!(
                "_minicode_session_ids() {{\n    local -a ids\n    ids=(${{(f)\"$({IDS_COMMAND})\"}})\n    compadd -a ids\n}}\n"
            );
            // After the `#compdef` line, which must stay first.
            match patched.split_once('\n') {
                Some((first, rest)) => format!("{first}\n{helper}{rest}"),
                None => patched,
            }
        }
        Shell::Fish => patch_first_line(
            script,
            |line| line.contains(" -l session "),
            |line| format!("{line} -f -a \"({IDS_COMMAND})\""),
        ),
    }
}

/// `script` with the first line `matches` accepts replaced by `edit` of it.
fn patch_first_line(
    script: &str,
    matches: impl Fn(&str) -> bool,
    edit: impl Fn(&str) -> String,
) -> String {
    let mut done = false;
    let mut out = String::with_capacity(script.len() + 128);
    for line in script.split_inclusive('\n') {
        let (text, end) = match line.strip_suffix('\n') {
            Some(text) => (text, "\n"),
            None => (line, ""),
        };
        if !done && matches(text) {
            done = true;
            out.push_str(&edit(text));
            out.push_str(end);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Prints the man page (roff) on stdout.
pub(super) fn man() -> Result<ExitCode, Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Args::command())
        .render(&mut page)
        .map_err(write_failed)?;
    let page = with_own_extra(&String::from_utf8_lossy(&page));
    let mut out = std::io::stdout().lock();
    written(out.write_all(page.as_bytes()).and_then(|()| out.flush()))
}

/// clap_mangen puts the long help's trailer in one `EXTRA` section of filled paragraphs,
/// which wraps the aligned columns of examples into a jumble: that section is replaced by
/// one section per block of the trailer, each in a no-fill block that keeps its lines.
fn with_own_extra(page: &str) -> String {
    let Some(start) = page.find(".SH EXTRA\n") else {
        return page.to_string();
    };
    let rest = &page[start + 1..];
    let end = rest
        .find("\n.SH ")
        .map_or(page.len(), |i| start + 1 + i + 1);
    let mut sections = String::new();
    for block in AFTER_LONG_HELP.split("\n\n") {
        let mut lines = block.lines();
        let heading = match lines.next().unwrap_or("").trim_end_matches(':') {
            "Exit codes" => "EXIT STATUS".to_string(),
            other => other.to_uppercase(),
        };
        sections.push_str(&format!(".SH {heading}\n.nf\n"));
        for line in lines {
            sections.push_str(&roff_line(line));
            sections.push('\n');
        }
        sections.push_str(".fi\n");
    }
    format!("{}{sections}{}", &page[..start], &page[end..])
}

/// One line of text for a no-fill block: backslashes, hyphens and non-ASCII characters
/// escaped, and a leading `.`
/// or `'` kept from being read as a request.
fn roff_line(line: &str) -> String {
    let mut escaped = String::new();
    for c in line.chars() {
        match c {
            '\\' => escaped.push_str("\\e"),
            '-' => escaped.push_str("\\-"),
            // Spelled out: groff reads its input as Latin-1 unless told otherwise.
            c if !c.is_ascii() => escaped.push_str(&format!("\\[u{:04X}]", c as u32)),
            c => escaped.push(c),
        }
    }
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// The end of a command that writes to stdout: a reader that stopped early (`minicode man |
/// head`) is not a failure, so a broken pipe ends quietly with success.
fn written(result: std::io::Result<()>) -> Result<ExitCode, Failure> {
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(write_failed(e)),
        _ => Ok(ExitCode::SUCCESS),
    }
}

fn write_failed(e: std::io::Error) -> Failure {
    Failure {
        code: 1,
        message: format!("could not write to stdout: {e}"),
    }
}

//! What the command line says about itself: completions for bash, zsh and fish, the man page,
//! the long help's examples, environment variables and exit codes, and the closest flag
//! suggested for a mistyped one.

use crate::support::binary::command;
use crate::support::workspace;

fn run(args: &[&str]) -> std::process::Output {
    let (_dir, ws) = workspace();
    command(&ws).args(args).output().unwrap()
}

#[test]
fn completions_are_generated_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef minicode"),
        ("fish", "complete -c minicode"),
    ] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: {script}");
        // Flags and subcommands come from the real definition.
        assert!(script.contains("output-format"), "{shell}");
        assert!(script.contains("doctor"), "{shell}");
    }
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_page_is_generated() {
    let out = run(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH minicode 1"), "{page}");
    assert!(page.contains("output\\-format"), "{page}");
    assert!(page.contains("MINICODE_API_KEY"), "{page}");
}

#[test]
fn long_help_shows_examples_environment_and_exit_codes() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    for section in [
        "Examples:",
        "Environment:",
        "Exit codes:",
        "MINICODE_BASE_URL",
        "130",
    ] {
        assert!(help.contains(section), "{section} in {help}");
    }
    let short = String::from_utf8(run(&["-h"]).stdout).unwrap();
    assert!(short.contains("--help` adds examples"), "{short}");
}

#[test]
fn a_mistyped_flag_suggests_the_closest_and_exits_2() {
    let out = run(&["--modle", "x", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("a similar argument exists: '--model'"),
        "{err}"
    );
    let out = run(&["--outptu-format", "json", "hi"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("'--output-format'"), "{err}");
}

/// Runs `minicode ARGS` with stdout a pipe whose reading end is already closed, as when the
/// reader (`| head`) stopped early: every write fails with EPIPE.
fn run_into_closed_pipe(args: &[&str]) -> std::process::Output {
    let (_dir, ws) = workspace();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    command(&ws)
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn stdout_writers_end_quietly_when_the_reader_goes_away() {
    for args in [
        &["man"][..],
        &["completions", "bash"][..],
        &["completions", "zsh"][..],
        &["--version"][..],
    ] {
        let out = run_into_closed_pipe(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn man_page_examples_environment_and_exit_codes_are_unfilled_sections() {
    let out = run(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(!page.contains(".SH EXTRA"), "{page}");
    for heading in ["EXAMPLES", "ENVIRONMENT", "EXIT STATUS"] {
        let at = page
            .find(&format!(".SH {heading}\n"))
            .unwrap_or_else(|| panic!("no {heading} in {page}"));
        let section = &page[at..];
        let section = &section[..section[4..].find("\n.SH ").map_or(section.len(), |i| i + 4)];
        // Each line kept as written: a no-fill block, closed before the next section.
        assert!(section.contains(".nf\n"), "{section}");
        assert!(section.trim_end().ends_with(".fi"), "{section}");
        // No raw non-ASCII for groff to misread, no unescaped hyphen in an option.
        assert!(section.is_ascii(), "{section}");
        assert!(!section.contains(" --"), "{section}");
    }
    assert!(page.contains("  minicode \\-\\-demo "), "{page}");
}

#[test]
fn the_server_flags_read_the_same_in_every_command() {
    // A flag's entry in `-h`: its line and the wrapped lines below it, spaces folded.
    let entry = |help: &str, flag: &str| {
        let mut lines = help
            .lines()
            .skip_while(|l| !l.trim_start().starts_with(flag));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no {flag} in:\n{help}"));
        let rest = lines.take_while(|l| {
            let t = l.trim_start();
            !t.is_empty() && !t.starts_with('-') && l.starts_with("   ")
        });
        std::iter::once(first)
            .chain(rest)
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let helps: Vec<String> = [
        vec!["-h"],
        vec!["acp", "-h"],
        vec!["serve", "-h"],
        vec!["doctor", "-h"],
    ]
    .iter()
    .map(|args| {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    })
    .collect();
    for flag in [
        "--config <PATH>",
        "--model <MODEL>",
        "--base-url <URL>",
        "--demo",
    ] {
        let first = entry(&helps[0], flag);
        assert!(first.split_whitespace().count() > 3, "{first}");
        for help in &helps[1..] {
            assert_eq!(entry(help, flag), first, "{flag}");
        }
    }
}

#[test]
fn doctor_help_lists_only_the_formats_doctor_writes() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::binary::command(dir.path())
        .args(["doctor", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(help.contains("text (a table) or json"), "{help}");
    assert!(!help.contains("stream-json"), "{help}");
    assert!(!help.contains("final answer"), "{help}");
}

//! Keeps the README's first steps honest for a new user: two set-up commands, then an install
//! step before any `minicode …` line, and install lines that create the folders they write to.

use std::path::Path;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The command lines of every `sh` block, in order, with their trailing comments cut.
fn shell_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("```") {
            inside = !inside && line.trim() == "```sh";
            continue;
        }
        if inside {
            let command = line.split("  #").next().unwrap_or("").trim();
            if !command.is_empty() {
                lines.push(command.to_string());
            }
        }
    }
    lines
}

/// The part of the README under `## heading`, up to the next `## `.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?} in the README"));
    let body = &text[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    &body[..end]
}

#[test]
fn readme_starts_with_exactly_two_setup_commands() {
    let text = readme();
    let lines = shell_lines(section(
        &text,
        "Get going (fresh machine, Rust toolchain installed)",
    ));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("cargo run --release -- --demo"),
        "{lines:?}"
    );
    assert_eq!(lines[1], "cargo test");
}

#[test]
fn readme_installs_the_binary_before_any_minicode_command() {
    let text = readme();
    let lines = shell_lines(&text);
    let install = lines
        .iter()
        .position(|l| l == "cargo install --locked --path .")
        .expect("the README has no `cargo install --locked --path .` line");
    let first_use = lines
        .iter()
        .position(|l| l.starts_with("minicode") || l.contains("| minicode"))
        .expect("the README runs minicode somewhere");
    assert!(
        install < first_use,
        "install comes after {:?}",
        lines[first_use]
    );
    let install_section = section(&text, "Install");
    assert!(
        install_section.contains("~/.cargo/bin"),
        "{install_section}"
    );
    assert!(install_section.contains("PATH"), "{install_section}");
}

#[test]
fn readme_completion_and_man_lines_create_their_folders() {
    let text = readme();
    let lines = shell_lines(section(&text, "Shell completions and the man page"));
    let writers: Vec<&String> = lines.iter().filter(|l| l.contains(" > ")).collect();
    assert_eq!(writers.len(), 4, "{lines:?}");
    for line in writers {
        let target = line.rsplit(" > ").next().unwrap().trim();
        let folder = &target[..target.rfind('/').unwrap()];
        assert!(
            line.starts_with(&format!("mkdir -p {folder} && ")),
            "{line:?} does not create {folder}"
        );
    }
}

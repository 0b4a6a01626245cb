//! Keeps the README honest for a new user: it stays a short first page; two set-up commands,
//! then an install step before any `minicode …` line; every `minicode …` line is one the built
//! binary accepts; every link into docs/ reaches a page and heading that exist; and the docs
//! index names every page. The completion lines it sends readers to (docs/usage.md) create the
//! folders they write to.

use std::path::Path;
use std::process::Output;

use crate::support::binary;

fn read(relative: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)).unwrap()
}

fn readme() -> String {
    read("README.md")
}

/// The command lines of every `sh` block (indented ones too, as in a list), in order, with
/// their trailing comments cut.
fn shell_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("```") {
            inside = !inside && line == "```sh";
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

/// The part of `text` under `## heading`, up to the next `## `.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let body = &text[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    &body[..end]
}

/// Splits a shell command into words as the shell would for these simple lines: blanks
/// separate, single and double quotes group (their content kept as written), and a `#` that
/// starts a word starts a comment.
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut started = false;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, '#') if !started => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    assert!(quote.is_none(), "unbalanced quote in {command:?}");
    if started {
        words.push(word);
    }
    words
}

/// The arguments minicode gets from each line that runs it: `minicode ARGS` anywhere in a
/// pipeline or `&&` chain (after `VAR=value` assignments), and `cargo run … -- ARGS`.
fn minicode_invocations(lines: &[String]) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for line in lines {
        for part in line.split(" | ").flat_map(|p| p.split(" && ")) {
            let mut args: Vec<String> = words(part)
                .into_iter()
                .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                .collect();
            if args.first().is_some_and(|w| w == "minicode") {
                args.remove(0);
            } else if args.starts_with(&["cargo".into(), "run".into()]) {
                match args.iter().position(|w| w == "--") {
                    Some(i) => args.drain(..=i),
                    None => continue,
                };
            } else {
                continue;
            }
            // Redirections and a trailing `&` belong to the shell, not to minicode.
            let shell = |w: &String| w.starts_with('>') || w == "2>&1" || w == "&";
            if let Some(i) = args.iter().position(shell) {
                args.truncate(i);
            }
            found.push((line.clone(), args));
        }
    }
    found
}

fn run_help(dir: &Path, args: &[String]) -> Output {
    binary::command(dir)
        .args(args)
        .arg("--help")
        .output()
        .unwrap()
}

/// Every flag a help text names (`-y`, `--yes`, `--output-format`, …).
fn flags_in(help: &str) -> Vec<String> {
    help.split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '(' | ')' | '`'))
        .filter(|w| w.starts_with('-') && w.len() > 1 && w != &"--")
        .map(|w| w.split(['=', '<']).next().unwrap_or(w).to_string())
        .collect()
}

/// The subcommand names listed under `Commands:` in the top-level help.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn readme_stays_a_short_first_page() {
    let lines = readme().lines().count();
    assert!(
        lines <= 150,
        "the README has {lines} lines; move reference material to docs/"
    );
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

/// The README's lines and those of docs/usage.md, where it sends readers for the rest. A
/// subcommand line is run with `--help` appended (cut at `--`), so clap checks its
/// subcommand, flags and their values; a prompt line's flags must be ones `minicode --help`
/// names (its words are the prompt, whatever they are).
#[test]
fn every_minicode_line_of_the_readme_and_usage_doc_is_one_the_binary_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let top = run_help(dir.path(), &[]);
    assert!(top.status.success(), "{top:?}");
    let top = String::from_utf8_lossy(&top.stdout).into_owned();
    let commands = subcommands(&top);
    assert!(commands.iter().any(|c| c == "doctor"), "{top}");
    let top_flags = flags_in(&top);

    let readme_lines = shell_lines(&readme());
    assert!(
        minicode_invocations(&readme_lines).len() >= 10,
        "{readme_lines:?}"
    );
    let mut lines = readme_lines;
    lines.extend(shell_lines(&read("docs/usage.md")));
    let invocations = minicode_invocations(&lines);
    let mut wrong = Vec::new();
    for (line, mut args) in invocations {
        if let Some(i) = args.iter().position(|w| w == "--") {
            args.truncate(i);
        }
        if args.first().is_some_and(|a| commands.contains(a)) {
            let out = run_help(dir.path(), &args);
            if !out.status.success() {
                wrong.push(format!("{line}: {}", String::from_utf8_lossy(&out.stderr)));
            }
        } else if let Some(flag) = args
            .iter()
            .filter(|a| a.starts_with('-'))
            .map(|a| a.split('=').next().unwrap_or(a))
            .find(|flag| !top_flags.iter().any(|f| f == flag))
        {
            wrong.push(format!("{line}: no flag {flag} in `minicode --help`"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of every heading of a Markdown page, code blocks left out.
fn anchors(page: &str) -> Vec<String> {
    let mut inside = false;
    let mut found = Vec::new();
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
        } else if !inside && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of every inline Markdown link `[text](target)` of `text`.
fn links(text: &str) -> Vec<&str> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .collect()
}

#[test]
fn readme_links_into_docs_reach_existing_pages_and_headings() {
    let text = readme();
    let targets: Vec<&str> = links(&text)
        .into_iter()
        .filter(|t| t.starts_with("docs/"))
        .collect();
    assert!(targets.len() >= 10, "{targets:?}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for target in targets {
        let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
        let Ok(page) = std::fs::read_to_string(root.join(file)) else {
            broken.push(format!("{target}: no such file"));
            continue;
        };
        if !fragment.is_empty() && !anchors(&page).iter().any(|a| a == fragment) {
            broken.push(format!("{target}: no such heading in {file}"));
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn docs_index_names_every_docs_page() {
    let index = read("docs/README.md");
    let listed = links(&index);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && name != "README.md" && !listed.contains(&name.as_str()) {
            missing.push(name);
        }
    }
    for target in &listed {
        let file = target.split('#').next().unwrap_or(target);
        assert!(root.join(file).is_file(), "docs/README.md links {target}");
    }
    assert!(missing.is_empty(), "add to docs/README.md: {missing:?}");
}

#[test]
fn usage_doc_completion_and_man_lines_create_their_folders() {
    let text = read("docs/usage.md");
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

#[test]
fn shell_words_keep_quoted_prompts_whole() {
    assert_eq!(
        words(r#"minicode --yes "run the tests" 'and fix' # it's done"#),
        ["minicode", "--yes", "run the tests", "and fix"]
    );
    assert_eq!(
        minicode_invocations(&["git diff | minicode \"review this\"".into()]),
        [(
            "git diff | minicode \"review this\"".to_string(),
            vec!["review this".to_string()]
        )]
    );
}

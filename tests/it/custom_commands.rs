//! Custom slash commands: discovery from a trusted workspace's `.minicode/commands/` and the
//! user's `commands/` folder, the trust rule, arguments filled in, names of built-in commands
//! refused, `minicode /name` in one-shot mode and `minicode commands`.

use std::path::Path;

use crate::support::binary;
use crate::support::mock_openai::{MockServer, text_reply};
use minicode::protocol::CustomCommand;

fn command(body: &str) -> CustomCommand {
    CustomCommand {
        name: "c".into(),
        description: String::new(),
        argument_hint: None,
        source: "test".into(),
        body: body.into(),
    }
}

#[test]
fn arguments_fill_the_whole_and_positional_placeholders() {
    let c = command("Fix $1 then $2 ($ARGUMENTS); [$9] is empty; $HOME stays");
    assert_eq!(
        c.expand(r#"src/a.rs "the tests" x"#),
        r#"Fix src/a.rs then the tests (src/a.rs "the tests" x); [] is empty; $HOME stays"#
    );
}

#[test]
fn an_argument_is_never_expanded_again() {
    let c = command("Say $ARGUMENTS");
    assert_eq!(c.expand("$1 and $ARGUMENTS"), "Say $1 and $ARGUMENTS");
}

#[test]
fn a_template_without_placeholders_gets_the_arguments_appended() {
    let c = command("Summarise the changes.\n");
    assert_eq!(c.expand("only docs"), "Summarise the changes.\n\nonly docs");
    assert_eq!(c.expand(""), "Summarise the changes.\n");
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const REVIEW: &str = "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 for bugs; focus: $ARGUMENTS\n";

/// A trusted workspace on `server` with a workspace command and a user command.
fn commands_everywhere(dir: &Path, server: &MockServer) {
    binary::write_config(dir, server);
    write(&dir.join(".minicode/commands/review.md"), REVIEW);
    write(
        &dir.join("home/.config/minicode/commands/hello.md"),
        "Say hello to $ARGUMENTS.",
    );
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn minicode_commands_lists_both_places_with_their_source() {
    let server = MockServer::start_in_thread(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    commands_everywhere(dir.path(), &server);
    let out = binary::command(dir.path())
        .arg("commands")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 2, "{listing}");
    assert!(
        lines[0].starts_with("/review")
            && lines[0].contains(".minicode/commands/review.md")
            && lines[0].contains("Review a file"),
        "{listing}"
    );
    assert!(
        lines[1].starts_with("/hello") && lines[1].contains("~/.config/minicode/commands/hello.md"),
        "{listing}"
    );
}

#[test]
fn an_untrusted_workspaces_commands_are_not_offered() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join(".minicode/commands/review.md"), REVIEW);
    write(
        &dir.path().join("home/.config/minicode/commands/hello.md"),
        "Say hello.",
    );
    let out = binary::command(dir.path())
        .arg("commands")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("/review"), "{}", stdout(&out));
    assert!(stdout(&out).contains("/hello"));
    assert!(stderr(&out).contains("not trusted"), "{}", stderr(&out));
}

#[test]
fn a_name_of_a_built_in_command_is_refused_naming_the_file() {
    let server = MockServer::start_in_thread(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    binary::write_config(dir.path(), &server);
    write(&dir.path().join(".minicode/commands/compact.md"), "Shadow.");
    write(&dir.path().join(".minicode/commands/fine.md"), "Fine.");
    let out = binary::command(dir.path())
        .arg("commands")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("/compact"), "{}", stdout(&out));
    assert!(stdout(&out).contains("/fine"));
    let err = stderr(&out);
    assert!(
        err.contains(".minicode/commands/compact.md") && err.contains("built-in"),
        "{err}"
    );
}

#[test]
fn a_command_file_linked_out_of_its_folder_is_refused() {
    let server = MockServer::start_in_thread(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    binary::write_config(dir.path(), &server);
    write(&dir.path().join("outside.md"), "outside-7781");
    std::fs::create_dir_all(dir.path().join(".minicode/commands")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("outside.md"),
        dir.path().join(".minicode/commands/leak.md"),
    )
    .unwrap();
    let out = binary::command(dir.path())
        .arg("commands")
        .output()
        .unwrap();
    assert!(!stdout(&out).contains("/leak"), "{}", stdout(&out));
    assert!(stderr(&out).contains("leak.md"), "{}", stderr(&out));
}

#[test]
fn a_one_shot_slash_command_sends_its_expanded_prompt() {
    let server = MockServer::start_in_thread(vec![text_reply("looked", 4)]);
    let dir = tempfile::tempdir().unwrap();
    commands_everywhere(dir.path(), &server);
    let out = binary::command(dir.path())
        .arg("/review src/lib.rs")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][1]["content"],
        "Review src/lib.rs for bugs; focus: src/lib.rs"
    );
}

//! Protected paths under `--yes`: every kind — a `.git` folder at any depth, the hooks folder
//! `core.hooksPath` names, the skill and command roots, `.mcp.json`, the workspace config — is
//! asked for even then, so a one-shot run with no terminal refuses the change and says why;
//! and how paths are classified (nested repositories, the configured hooks folder, quoting in
//! git's config file).

use std::path::Path;

use minicode::fsutil::resolve_in_workspace;
use minicode::tools::protected::reason;

use crate::support::binary::command;
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
use crate::support::user_config;

/// A one-shot `--yes` run in a new workspace (prepared by `setup`) whose model writes `path`.
/// Returns the workspace's guard, its path, the run's exit code and stderr.
fn yes_run_writing(
    path: &str,
    setup: impl FnOnce(&Path),
) -> (tempfile::TempDir, std::path::PathBuf, Option<i32>, String) {
    let args = serde_json::json!({ "path": path, "content": "echo planted\n" }).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "write", &args)], 8),
        text_reply("done", 4),
    ]);
    let (tmp, ws) = crate::support::workspace();
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
        server.base_url()
    );
    user_config::write_trusting(&ws.join("home"), &ws, &model);
    setup(&ws);
    let out = command(&ws).args(["--yes", "go"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (tmp, ws, out.status.code(), err)
}

#[test]
fn yes_asks_for_every_kind_of_protected_path_and_without_a_terminal_refuses_it() {
    let git_config = |ws: &Path, dir: &str, text: &str| {
        std::fs::create_dir_all(ws.join(dir).join(".git")).unwrap();
        std::fs::write(ws.join(dir).join(".git/config"), text).unwrap();
    };
    type Setup = Box<dyn FnOnce(&Path)>;
    let cases: Vec<(&str, &str, &str, Setup)> = vec![
        (
            "./.git/../.git/hooks/pre-commit",
            ".git/hooks/pre-commit",
            "inside a .git folder",
            Box::new(|ws: &Path| std::fs::create_dir_all(ws.join(".git/hooks")).unwrap()),
        ),
        (
            "vendor/lib/.git/config",
            "vendor/lib/.git/config",
            "inside a .git folder",
            Box::new(move |ws: &Path| git_config(ws, "vendor/lib", "[core]\n")),
        ),
        (
            ".husky/pre-commit",
            ".husky/pre-commit",
            "inside the hooks folder git is configured to use",
            Box::new(move |ws: &Path| {
                git_config(ws, ".", "[core]\n\tbare = false\n\thooksPath = .husky\n")
            }),
        ),
        (
            ".agents/skills/helper/SKILL.md",
            ".agents/skills/helper/SKILL.md",
            "a skills or commands folder",
            Box::new(|_: &Path| {}),
        ),
        (
            ".minicode/skills/helper/SKILL.md",
            ".minicode/skills/helper/SKILL.md",
            "a skills or commands folder",
            Box::new(|_: &Path| {}),
        ),
        (
            ".minicode/commands/deploy.md",
            ".minicode/commands/deploy.md",
            "a skills or commands folder",
            Box::new(|_: &Path| {}),
        ),
        (
            ".mcp.json",
            ".mcp.json",
            "the workspace's .mcp.json",
            Box::new(|_: &Path| {}),
        ),
        (
            "config/config.toml",
            "config/config.toml",
            "the workspace's config file",
            Box::new(|_: &Path| {}),
        ),
    ];
    for (asked, shown, why, setup) in cases {
        let (_tmp, ws, code, err) = yes_run_writing(asked, setup);
        assert_eq!(code, Some(0), "{asked}: {err}");
        let now = std::fs::read_to_string(ws.join(shown)).unwrap_or_default();
        assert!(
            !now.contains("planted"),
            "{asked} was written under --yes: {err}"
        );
        assert!(
            err.contains(&format!("asking although --yes was given: {shown} (")),
            "{asked}: {err}"
        );
        assert!(
            err.contains(&format!("is protected ({why}")),
            "{asked}: {err}"
        );
        assert!(
            err.contains("no terminal was available to ask for approval"),
            "{asked}: {err}"
        );
    }
}

#[test]
fn an_ordinary_path_is_still_written_under_yes() {
    let (_tmp, ws, code, err) = yes_run_writing("notes/todo.txt", |_| {});
    assert_eq!(code, Some(0), "{err}");
    assert!(ws.join("notes/todo.txt").exists(), "{err}");
    assert!(!err.contains("protected"), "{err}");
}

#[test]
fn nested_repositories_and_the_configured_hooks_folder_are_classified_as_protected() {
    let (_tmp, ws) = crate::support::workspace();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(
        ws.join(".git/config"),
        "[Core]\n\tHooksPath = \"tools/git hooks\" ; shared hooks\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("vendor/lib/.git")).unwrap();
    std::fs::write(
        ws.join("vendor/lib/.git/config"),
        "[core] hookspath = .githooks\n",
    )
    .unwrap();
    let check = |raw: &str| reason(&ws, &resolve_in_workspace(&ws, raw).unwrap());
    for protected in [
        "vendor/lib/.git/config",
        "a/b/c/.GIT/hooks/post-checkout",
        "tools/git hooks/pre-commit",
        "vendor/lib/.githooks/pre-push",
        ".agents/skills/x/SKILL.md",
        ".minicode/commands/x.md",
        ".mcp.json",
    ] {
        assert!(check(protected).is_some(), "{protected} must be protected");
    }
    for free in [
        "tools/git/pre-commit",
        ".githooks/pre-push",
        "vendor/lib/src/main.rs",
        "sub/.mcp.json",
        ".agents/notes.md",
        ".gitignore",
        "docs/.git-blame-ignore-revs",
    ] {
        assert!(check(free).is_none(), "{free} must not be protected");
    }
}

//! Git under the default profile (issue 33, item 4): a confined `git add` + `git commit`
//! succeeds, in a plain repository and in a linked work tree whose git directory lies outside
//! the workspace, while everything that makes git run a program stays read-only: the config
//! (by hand or through `git config`), hooks, `info`, the `core.hooksPath` folder, a
//! submodule's config and hooks, the `.git` file and the `commondir` link. The kernel here
//! has Landlock, seccomp and unprivileged user namespaces.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::binary::output_text as text;
use crate::support::workspace;

fn sandboxed(ws: &Path, script: &str) -> Output {
    crate::support::binary::sandboxed(ws, &[], script)
}

/// Runs git unconfined (the test's own setup), with no user or system config.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out));
}

/// A repository with one commit, an identity in its config and a `core.hooksPath` folder.
fn repo(ws: &Path) {
    git(ws, &["init", "-q", "-b", "main", "."]);
    git(ws, &["config", "user.email", "t@example.com"]);
    git(ws, &["config", "user.name", "T"]);
    git(ws, &["config", "core.hooksPath", "tools/hooks"]);
    std::fs::create_dir_all(ws.join("tools/hooks")).unwrap();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    git(ws, &["add", "a.txt"]);
    git(ws, &["commit", "-qm", "first"]);
}

#[test]
fn a_confined_git_commit_succeeds_and_git_code_paths_stay_read_only() {
    let (_tmp, ws) = workspace();
    repo(&ws);
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    let out = sandboxed(
        &ws,
        "echo b > b.txt && git add b.txt && git commit -qm second && git log --format=%s",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("second\nfirst\n"),
        "{}",
        text(&out)
    );
    for script in [
        "echo '[core] fsmonitor = evil' >> .git/config",
        "git config core.fsmonitor evil",
        "echo evil > .git/hooks/pre-commit",
        "echo evil > .git/info/attributes",
        "echo evil > tools/hooks/pre-commit",
        "mv .git .git-away",
        "rm -rf tools/hooks",
    ] {
        let out = sandboxed(&ws, script);
        assert_ne!(out.status.code(), Some(0), "{script}: {}", text(&out));
    }
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        config
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert!(!ws.join(".git/info/attributes").exists());
    assert!(!ws.join("tools/hooks/pre-commit").exists());
    assert!(ws.join(".git/HEAD").exists() && !ws.join(".git-away").exists());
    // A link git would follow to another directory cannot be planted either.
    let out = sandboxed(&ws, "echo /tmp/evil > .git/commondir");
    assert!(
        text(&out).contains("blocked by the sandbox"),
        "{}",
        text(&out)
    );
    assert!(!ws.join(".git/commondir").exists());
}

#[test]
fn a_submodules_config_and_hooks_stay_read_only() {
    let (_tmp, ws) = workspace();
    repo(&ws);
    let module = ws.join(".git/modules/lib");
    std::fs::create_dir_all(module.join("hooks")).unwrap();
    std::fs::write(module.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(module.join("config"), "[core]\n").unwrap();
    for script in [
        "echo evil >> .git/modules/lib/config",
        "echo evil > .git/modules/lib/hooks/post-checkout",
    ] {
        let out = sandboxed(&ws, script);
        assert_ne!(out.status.code(), Some(0), "{script}: {}", text(&out));
    }
    assert_eq!(
        std::fs::read_to_string(module.join("config")).unwrap(),
        "[core]\n"
    );
    let out = sandboxed(&ws, "echo x > .git/modules/lib/ORIG_HEAD");
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_linked_work_tree_commits_but_its_git_file_and_the_main_config_stay_read_only() {
    let (_tmp, main) = workspace();
    repo(&main);
    let (_tmp2, outer) = workspace();
    let tree = outer.join("wt");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            tree.to_str().unwrap(),
        ],
    );
    let config = std::fs::read_to_string(main.join(".git/config")).unwrap();
    let out = sandboxed(
        &tree,
        "echo c > c.txt && git add c.txt && git commit -qm side && git log -1 --format=%s",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "side\n");
    let dot_git = std::fs::read_to_string(tree.join(".git")).unwrap();
    for script in [
        "echo 'gitdir: /tmp/evil' > .git",
        "git config core.fsmonitor evil",
        &format!("echo evil >> {}/.git/config", main.display()),
        &format!("echo evil > {}/.git/hooks/pre-commit", main.display()),
        &format!("echo /tmp > {}/.git/worktrees/wt/commondir", main.display()),
    ] {
        let out = sandboxed(&tree, script);
        assert_ne!(out.status.code(), Some(0), "{script}: {}", text(&out));
    }
    assert_eq!(std::fs::read_to_string(tree.join(".git")).unwrap(), dot_git);
    assert_eq!(
        std::fs::read_to_string(main.join(".git/config")).unwrap(),
        config
    );
    assert!(!main.join(".git/hooks/pre-commit").exists());
}

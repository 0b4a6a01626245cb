//! The `bash` sandbox (issue 22) for real: `minicode sandbox -- …` runs a command through the
//! same helper as a `bash` call, so these prove what a confined call can and cannot do on this
//! kernel — writes outside the roots and to protected paths (also through a link planted by an
//! earlier call, and creating them when missing), loopback TCP with the network off and on,
//! `no_new_privs`, `ptrace` and `io_uring_setup` — and that a missing layer fails closed and a
//! denial is reported as one. Every test first asserts the kernel has what the sandbox needs
//! (`support::kernel`): on a kernel without it they fail saying what is missing.

use std::path::Path;
use std::time::Duration;

use crate::support::binary::command;
use crate::support::binary::{output_text as text, sandboxed};
use crate::support::kernel::require_sandbox;
use crate::support::workspace;
use minicode::sandbox::{Blocked, Layer, Mode, Policy};
use minicode::tools::ToolCtx;
use minicode::tools::bash::{self, Args, Ran};
use tokio_util::sync::CancellationToken;

fn git_repo(ws: &Path) {
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
}

#[test]
fn a_write_outside_the_roots_fails_and_one_inside_succeeds() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let (_other, outside) = workspace();
    let script = format!(
        "echo in > inside.txt && echo out > {}/outside.txt",
        outside.display()
    );
    let out = sandboxed(&ws, &[], &script);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("Permission denied"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!outside.join("outside.txt").exists());
}

#[test]
fn read_only_profile_refuses_writes_in_the_workspace_but_not_in_tmpdir() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let out = sandboxed(
        &ws,
        &["--mode", "read-only"],
        "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && stat -c %a \"$TMPDIR\" && echo x > f",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("t\n700\n"),
        "{}",
        text(&out)
    );
    assert!(!ws.join("f").exists());
}

#[test]
fn git_hooks_and_minicode_cannot_be_written_or_created() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    git_repo(&ws);
    for script in [
        "echo x > .git/hooks/x",
        "echo x > .git/config",
        "mv .git .git-away",
        "mkdir .minicode/x",
        "rm -rf .minicode",
    ] {
        let out = sandboxed(&ws, &[], script);
        assert_ne!(out.status.code(), Some(0), "{script}: {}", text(&out));
    }
    assert!(!ws.join(".git/hooks/x").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(ws.join(".git").is_dir() && !ws.join(".git-away").exists());
    assert!(ws.join(".minicode").is_dir() && !ws.join(".minicode/x").exists());
}

#[test]
fn missing_protected_names_cannot_be_created() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let out = sandboxed(
        &ws,
        &[],
        "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit && echo '{}' > .mcp.json && echo ok",
    );
    let all = text(&out);
    assert!(all.contains("blocked by the sandbox"), "{all}");
    assert!(all.contains(".git") && all.contains(".mcp.json"), "{all}");
    assert!(!ws.join(".git").exists(), "{all}");
    assert!(!ws.join(".mcp.json").exists(), "{all}");
}

#[test]
fn a_link_planted_by_an_earlier_call_does_not_reach_protected_paths() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    git_repo(&ws);
    let plant = sandboxed(&ws, &[], "ln -s .git/hooks hooks && ln -s .minicode data");
    assert!(plant.status.success(), "{}", text(&plant));
    let out = sandboxed(&ws, &[], "echo x > hooks/x");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let out = sandboxed(&ws, &[], "echo x > data/x");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!ws.join(".git/hooks/x").exists() && !ws.join(".minicode/x").exists());

    // Outside a repository, a link to the missing `.git` creates it when written through.
    let (_tmp2, plain) = workspace();
    let plant = sandboxed(&plain, &[], "ln -s .git g");
    assert!(plant.status.success(), "{}", text(&plant));
    let out = sandboxed(&plain, &[], "echo x > g");
    assert!(
        text(&out).contains("blocked by the sandbox"),
        "{}",
        text(&out)
    );
    assert!(std::fs::symlink_metadata(plain.join(".git")).is_err());
}

/// A folder outside the workspace holding a `config.toml` and a `skills/` folder: what a
/// command's link could make minicode delete.
fn outside_config() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, outside) = workspace();
    std::fs::write(outside.join("config.toml"), "model = \"mine\"\n").unwrap();
    std::fs::create_dir_all(outside.join("skills/s")).unwrap();
    std::fs::write(outside.join("skills/s/SKILL.md"), "mine\n").unwrap();
    (tmp, outside)
}

#[test]
fn a_protected_name_reached_through_a_link_the_call_made_removes_the_link_not_the_target() {
    for name in ["config", ".agents"] {
        let (_tmp, ws) = workspace();
        let (_out, outside) = outside_config();
        let script = format!("ln -s '{}' {name}", outside.display());
        let out = sandboxed(&ws, &[], &script);
        let all = text(&out);
        assert!(all.contains("blocked by the sandbox"), "{name}: {all}");
        assert!(all.contains(name), "{name}: {all}");
        assert_eq!(
            std::fs::read_to_string(outside.join("config.toml")).unwrap(),
            "model = \"mine\"\n",
            "{name}: {all}"
        );
        assert!(outside.join("skills/s/SKILL.md").exists(), "{name}: {all}");
        assert!(
            std::fs::symlink_metadata(ws.join(name)).is_err(),
            "{name}: the link stays: {all}"
        );
    }
}

#[test]
fn the_hosts_loopback_is_unreachable_with_the_network_off_and_reachable_with_it_on() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let off = sandboxed(&ws, &[], &script);
    assert_eq!(off.status.code(), Some(1), "{}", text(&off));
    assert!(text(&off).contains("Connection refused"), "{}", text(&off));
    assert!(!text(&off).contains("connected"), "{}", text(&off));
    let on = sandboxed(&ws, &["--network"], &script);
    assert!(on.status.success(), "{}", text(&on));
    assert!(text(&on).contains("connected"));
    // Unix-domain sockets keep working with the network off.
    let unix = sandboxed(
        &ws,
        &[],
        "perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die \"$!\\n\"; print \"unix\\n\"'",
    );
    assert!(text(&unix).contains("unix"), "{}", text(&unix));
}

#[test]
fn confined_commands_run_with_no_new_privs() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let out = sandboxed(&ws, &[], "cat /proc/self/status");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("NoNewPrivs:\t1"), "{}", text(&out));
}

#[test]
#[cfg_attr(
    not(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )),
    ignore = "the syscall numbers are known for x86_64, aarch64 and riscv64 only"
)]
fn ptrace_io_uring_setup_and_terminal_typing_are_refused() {
    require_sandbox();
    let (ptrace, io_uring_setup) = if cfg!(target_arch = "x86_64") {
        (101, 425)
    } else {
        (117, 425)
    };
    let perl = std::process::Command::new("perl").arg("-v").output();
    assert!(
        perl.is_ok(),
        "this test needs perl to issue the calls: install it (or skip this test)"
    );
    let (_tmp, ws) = workspace();
    // PTRACE_TRACEME (0) and io_uring_setup(1, NULL) succeed or fail with EFAULT unconfined;
    // TIOCSTI on /dev/null fails with ENOTTY.
    let script = format!(
        "perl -e '$!=0; syscall({ptrace}, 0, 0, 0, 0); print \"ptrace: \", $!+0, \"\\n\"; \
         $!=0; syscall({io_uring_setup}, 1, 0); print \"io_uring: \", $!+0, \"\\n\"; \
         $!=0; my $c = \"x\"; ioctl(STDIN, 0x5412, $c); print \"tiocsti: \", $!+0, \"\\n\"'"
    );
    let eperm = libc::EPERM;
    let out = sandboxed(&ws, &[], &script);
    assert!(
        text(&out).contains(&format!("ptrace: {eperm}\n")),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains(&format!("io_uring: {eperm}\n")),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains(&format!("tiocsti: {eperm}\n")),
        "{}",
        text(&out)
    );
    let off = sandboxed(&ws, &["--mode", "off"], &script);
    assert!(
        !text(&off).contains(&format!("ptrace: {eperm}\n")),
        "{}",
        text(&off)
    );
    assert!(
        !text(&off).contains(&format!("tiocsti: {eperm}\n")),
        "{}",
        text(&off)
    );
}

#[test]
fn a_missing_layer_fails_closed_naming_it_and_its_fix() {
    let (_tmp, ws) = workspace();
    for (layer, named) in [
        ("landlock", "Landlock"),
        ("seccomp", "Seccomp"),
        ("user-namespace", "UserNamespace"),
    ] {
        let out = command(&ws)
            .env(minicode::sandbox::TEST_MISSING_ENV, layer)
            .args(["sandbox", "--", "touch", "ran"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(named) && err.contains("--sandbox off"),
            "{err}"
        );
        assert!(
            !ws.join("ran").exists(),
            "{layer}: the command ran unconfined"
        );
    }
    // `off` is the user's choice: nothing to enforce, so the switch changes nothing.
    let out = command(&ws)
        .env(minicode::sandbox::TEST_MISSING_ENV, "landlock")
        .args(["sandbox", "--mode", "off", "--", "touch", "ran"])
        .output()
        .unwrap();
    assert!(out.status.success() && ws.join("ran").exists());
}

#[test]
fn sandbox_usage_errors_exit_2() {
    let (_tmp, ws) = workspace();
    let missing = command(&ws).arg("sandbox").output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let bad = command(&ws)
        .args(["sandbox", "--mode", "sideways", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("workspace-write"));
}

#[test]
fn the_command_exit_status_is_passed_on() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let out = sandboxed(&ws, &[], "exit 7");
    assert_eq!(out.status.code(), Some(7));
}

#[test]
fn minicode_sandbox_honours_the_configured_sandbox_as_a_session_would() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let (_root, root) = workspace();
    let (_home, home) = workspace();
    let run = |flags: &[&str], script: &str| {
        crate::support::binary::command_with_home(&ws, &home)
            .arg("sandbox")
            .args(flags)
            .args(["--", "bash", "-c", script])
            .output()
            .unwrap()
    };
    let outside = format!("echo x > {}/x", root.display());
    // Without configuration the extra folder is outside the roots.
    let out = run(&[], &outside);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!root.join("x").exists());

    // The user's writable root is honoured, and the user's mode is the default.
    let user = format!(
        "[sandbox]\nmode = \"read-only\"\nwritable_roots = [{:?}]\n",
        root.to_str().unwrap()
    );
    crate::support::user_config::write_trusting(&home, &ws, &user);
    let out = run(&["--mode", "workspace-write"], &outside);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(root.join("x").exists());
    let out = run(&[], "echo x > in-workspace");
    assert_ne!(out.status.code(), Some(0), "read-only: {}", text(&out));
    assert!(!ws.join("in-workspace").exists());
    let out = run(&["--mode", "workspace-write"], "echo x > in-workspace");
    assert_eq!(
        out.status.code(),
        Some(0),
        "the flag comes last: {}",
        text(&out)
    );

    // A trusted workspace may narrow it: without the root the write is refused again.
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    std::fs::write(
        ws.join(".minicode/config.toml"),
        "[sandbox]\nwritable_roots = []\n",
    )
    .unwrap();
    std::fs::remove_file(root.join("x")).unwrap();
    let out = run(&["--mode", "workspace-write"], &outside);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!root.join("x").exists());
}

/// A tool context whose commands run under the built binary's helper, and the policy with
/// `mode` the core's sandbox part would hand them.
struct Confined {
    ctx: ToolCtx,
    policy: Policy,
}

fn confined_ctx(ws: &Path, tmp: &Path, mode: Mode) -> Confined {
    let mut ctx = ToolCtx::new(ws.to_path_buf(), Duration::from_secs(60), Vec::new());
    ctx.supervisor = Some(env!("CARGO_BIN_EXE_minicode").into());
    let policy = Policy::for_workspace(mode, false, ws, &[], tmp.join("t"));
    Confined { ctx, policy }
}

/// A `bash` call run as the core runs it: its output and its sandbox report.
async fn bash(confined: &Confined, command: &str) -> Ran {
    let args = Args::command(command.to_string());
    let Confined { ctx, policy } = confined;
    bash::run(&args, ctx, policy, CancellationToken::new()).await
}

#[tokio::test]
async fn the_bash_tool_reports_a_denied_write_as_blocked_by_the_sandbox() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let (_other, outside) = workspace();
    let ctx = confined_ctx(&ws, &outside, Mode::WorkspaceWrite);
    let target = outside.join("x");
    let out = bash(&ctx, &format!("echo x > {}", target.display())).await;
    let report = out.report.clone();
    assert_eq!(report.mode, Mode::WorkspaceWrite);
    match report.blocked {
        Some(Blocked::Denied {
            what: Some(what), ..
        }) => {
            assert!(what.contains(&target.display().to_string()), "{what}")
        }
        other => panic!("not reported as denied: {other:?}: {}", out.output.content),
    }
    assert!(
        out.output.content.contains("blocked by the sandbox"),
        "{}",
        out.output.content
    );

    let ok = bash(&ctx, "echo fine > here && cat here").await;
    assert_eq!(ok.report.blocked, None, "{}", ok.output.content);
    let refused = bash(&ctx, "echo x > .minicode/x").await;
    assert!(
        matches!(refused.report.blocked, Some(Blocked::Denied { .. })),
        "{}",
        refused.output.content
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let socket = bash(&ctx, &format!("exec 3<>/dev/tcp/127.0.0.1/{port}")).await;
    match socket.report.blocked {
        Some(Blocked::Denied {
            what: Some(what), ..
        }) => {
            assert!(what.contains("network is off"), "{what}")
        }
        other => panic!(
            "not reported as denied: {other:?}: {}",
            socket.output.content
        ),
    }
    let python = "python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:9/\")'";
    for (program, command) in [
        ("curl", "curl -sS http://127.0.0.1:9/".to_string()),
        ("python3", python.to_string()),
    ] {
        if std::process::Command::new(program)
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("{program} is not installed: its network refusal is not checked");
            continue;
        }
        let out = bash(&ctx, &command).await;
        assert!(
            matches!(out.report.blocked, Some(Blocked::Denied { .. })),
            "{program}: {}",
            out.output.content
        );
    }
    // An ordinary failure inside the roots is the command's own.
    let own = bash(&ctx, "ls does-not-exist").await;
    assert_eq!(own.report.blocked, None, "{}", own.output.content);
}

#[tokio::test]
async fn a_relative_write_refused_by_the_read_only_profile_is_reported_as_blocked() {
    require_sandbox();
    let (_tmp, ws) = workspace();
    let (_other, tmp) = workspace();
    let ctx = confined_ctx(&ws, &tmp, Mode::ReadOnly);
    // Each names the refused file without a `/`: bash's redirect, coreutils' quotes.
    for (command, name) in [
        ("echo x > f", "f"),
        ("touch g", "g"),
        ("mkdir d", "d"),
        ("cp /dev/null h", "h"),
    ] {
        let out = bash(&ctx, command).await;
        let report = out.report.clone();
        assert_eq!(report.mode, Mode::ReadOnly);
        match report.blocked {
            Some(Blocked::Denied {
                what: Some(what), ..
            }) => {
                assert_eq!(what, format!("write to {}", ws.join(name).display()))
            }
            other => panic!(
                "{command}: not reported as denied: {other:?}: {}",
                out.output.content
            ),
        }
        assert!(
            out.output.content.contains("blocked by the sandbox"),
            "{command}: {}",
            out.output.content
        );
        assert!(!ws.join(name).exists(), "{command}");
    }
    // Writing the private temporary folder works, and a missing file is the command's own
    // failure, not the sandbox's.
    let ok = bash(&ctx, "echo x > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"").await;
    assert_eq!(ok.report.blocked, None, "{}", ok.output.content);
    let own = bash(&ctx, "cat missing").await;
    assert_eq!(own.report.blocked, None, "{}", own.output.content);
}

#[tokio::test]
async fn without_a_helper_a_confined_call_is_unavailable_and_does_not_run() {
    let (_tmp, ws) = workspace();
    let mut ctx = confined_ctx(&ws, &ws, Mode::WorkspaceWrite);
    ctx.ctx.supervisor = None;
    let out = bash(&ctx, "touch ran").await;
    match out.report.blocked {
        Some(Blocked::Unavailable(u)) => assert_eq!(u.layer, Layer::Platform),
        other => panic!("not unavailable: {other:?}"),
    }
    assert!(!ws.join("ran").exists());
    // The default policy is unconfined and says so.
    let plain = Confined {
        ctx: ToolCtx::new(ws.clone(), Duration::from_secs(60), Vec::new()),
        policy: minicode::agent::Options::default().sandbox,
    };
    let out = bash(&plain, "true").await;
    assert_eq!(out.report.mode, Mode::Off);
}

#[test]
fn the_git_dir_a_git_file_names_keeps_its_hooks_read_only_when_inside_the_workspace() {
    let (_tmp, ws) = workspace();
    std::fs::create_dir_all(ws.join("store/repo.git/hooks")).unwrap();
    std::fs::write(ws.join(".git"), "gitdir: store/repo.git\n").unwrap();
    let policy = Policy::for_workspace(Mode::WorkspaceWrite, false, &ws, &[], ws.join("t"));
    assert_eq!(policy.writable, vec![ws.clone()]);
    assert_eq!(policy.git_dirs, vec![ws.join("store/repo.git")]);
    assert!(
        policy.read_only.contains(&ws.join("store/repo.git/hooks")),
        "{policy:?}"
    );
    assert!(
        policy.read_only.contains(&ws.join(".minicode")),
        "{policy:?}"
    );
    let read_only = Policy::for_workspace(Mode::ReadOnly, false, &ws, &[], ws.join("t"));
    assert!(read_only.writable.is_empty() && !read_only.network);
    require_sandbox();
    let out = sandboxed(&ws, &[], "echo x > store/repo.git/hooks/post-checkout");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!ws.join("store/repo.git/hooks/post-checkout").exists());
    let out = sandboxed(&ws, &[], "echo 'gitdir: elsewhere' > .git");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
}

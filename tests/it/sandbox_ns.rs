//! The sandbox's namespaces (issue 32): a confined command cannot see minicode's runtime
//! folder (the daemon's token and socket), the user config (its `api_key`) or the credential
//! folders, while its own TMPDIR inside that runtime folder still works; it holds no
//! capabilities, so as root (this machine runs the tests as root) it can neither use the mount
//! API nor make device nodes, in `workspace-write` and `read-only` alike; and nothing it
//! started (`setsid -f`, `nohup`, a double fork) outlives the call, which the model is told.
//! The kernel here has Landlock, seccomp and unprivileged user namespaces.

use std::path::Path;
use std::time::Duration;

use crate::support::binary::{output_text as text, sandboxed};
use crate::support::workspace;
use minicode::sandbox::{Mode, Policy};
use minicode::tools::ToolCtx;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Plants the secrets a command must not read in the test's HOME (`ws/home`): a daemon token
/// in the runtime folder, an `api_key` in the user config (which also hides `~/private`), an
/// ssh key, a `.netrc` and a docker config.
fn plant_secrets(home: &Path) {
    let runtime = home.join(".run/minicode");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::write(runtime.join("token"), "SECRET-TOKEN\n").unwrap();
    std::fs::create_dir_all(home.join(".config/minicode")).unwrap();
    std::fs::write(
        home.join(".config/minicode/config.toml"),
        "[model]\napi_key = \"SECRET-KEY\"\n\n[sandbox]\nhidden = [\"~/private\"]\n",
    )
    .unwrap();
    for (file, text) in [
        (".ssh/id_x", "SECRET-SSH\n"),
        (".netrc", "SECRET-NETRC\n"),
        (".docker/config.json", "SECRET-DOCKER\n"),
        ("private/notes", "SECRET-PRIVATE\n"),
    ] {
        let path = home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

#[test]
fn a_confined_command_sees_no_daemon_token_user_config_or_credentials() {
    let (_tmp, ws) = workspace();
    let home = ws.join("home");
    plant_secrets(&home);
    let script = "cat home/.run/minicode/token home/.config/minicode/config.toml \
                  home/.ssh/id_x home/.netrc home/.docker/config.json home/private/notes; \
                  ls -A home/.run/minicode home/.ssh; \
                  echo scratch > \"$TMPDIR/x\" && cat \"$TMPDIR/x\" && echo inside > ws.txt";
    for mode in ["workspace-write", "read-only"] {
        let out = sandboxed(&ws, &["--mode", mode], script);
        let shown = text(&out);
        assert!(!shown.contains("SECRET"), "{mode}: {shown}");
        // `ls` lists neither (error messages name them, lines of their own would be `ls`'s).
        assert!(
            !shown.lines().any(|l| l == "token" || l == "id_x"),
            "{mode}: {shown}"
        );
        // The session's TMPDIR lives inside the hidden runtime folder and still works.
        assert!(shown.contains("scratch"), "{mode}: {shown}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("ws.txt")).unwrap(),
        "inside\n"
    );
    // Outside the sandbox nothing was touched.
    assert_eq!(
        std::fs::read_to_string(home.join(".ssh/id_x")).unwrap(),
        "SECRET-SSH\n"
    );
    assert!(home.join(".run/minicode/token").exists());
}

#[test]
fn a_relative_hidden_path_is_a_configuration_error() {
    let (_tmp, ws) = workspace();
    let home = ws.join("home");
    std::fs::create_dir_all(home.join(".config/minicode")).unwrap();
    std::fs::write(
        home.join(".config/minicode/config.toml"),
        "[sandbox]\nhidden = [\"relative/x\"]\n",
    )
    .unwrap();
    let out = sandboxed(&ws, &[], "true");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("sandbox.hidden"), "{}", text(&out));
}

/// A Python script that calls each mount API system call (x86_64 and aarch64 share their
/// numbers) and prints the errno of each, then tries device and FIFO nodes in TMPDIR.
const PROBE: &str = r#"
import ctypes, os, stat
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def errno_of(*args):
    ctypes.set_errno(0)
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(*args)
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
AT_FDCWD = -100
print("open_tree", errno_of(428, AT_FDCWD, b".", 1 | 0x8000))
print("fsopen", errno_of(430, b"tmpfs", 0))
print("fspick", errno_of(433, AT_FDCWD, b".", 0))
print("mount_setattr", errno_of(442, AT_FDCWD, b".", 0, None, 0))
print("move_mount", errno_of(429, AT_FDCWD, b".", AT_FDCWD, b".", 0))
tmp = os.environ["TMPDIR"]
for name, kind in [("chr", stat.S_IFCHR), ("blk", stat.S_IFBLK)]:
    try:
        os.mknod(tmp + "/" + name, kind | 0o600, os.makedev(1, 3))
        print("mknod", name, "ok")
    except OSError as e:
        print("mknod", name, e.strerror)
os.mknod(tmp + "/fifo", stat.S_IFIFO | 0o600)
print("fifo made")
"#;

#[test]
fn no_capabilities_mount_api_or_device_nodes_even_as_root() {
    let (_tmp, ws) = workspace();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let script = format!(
        "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; python3 -c '{PROBE}'; \
         echo evil > .git/hooks/pre-commit || echo hook refused"
    );
    for mode in ["workspace-write", "read-only"] {
        let out = sandboxed(&ws, &["--mode", mode], &script);
        let shown = text(&out);
        for line in shown.lines().filter(|l| l.starts_with("Cap")) {
            assert!(line.ends_with("0000000000000000"), "{mode}: {shown}");
        }
        assert_eq!(shown.lines().filter(|l| l.starts_with("Cap")).count(), 5);
        for call in [
            "open_tree",
            "fsopen",
            "fspick",
            "mount_setattr",
            "move_mount",
        ] {
            assert!(
                shown.contains(&format!("{call} Operation not permitted")),
                "{mode}: {call}: {shown}"
            );
        }
        assert!(
            shown.contains("mknod chr Operation not permitted"),
            "{mode}: {shown}"
        );
        assert!(
            shown.contains("mknod blk Operation not permitted"),
            "{mode}: {shown}"
        );
        assert!(shown.contains("fifo made"), "{mode}: {shown}");
        assert!(shown.contains("hook refused"), "{mode}: {shown}");
        assert!(!ws.join(".git/hooks/pre-commit").exists(), "{mode}");
    }
}

/// Polls for `path` during `wait`; whether it appeared.
fn appears_within(path: &Path, wait: Duration) -> bool {
    let end = std::time::Instant::now() + wait;
    while std::time::Instant::now() < end {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    path.exists()
}

/// Three ways out of a process group that each touch a marker two seconds later.
const ESCAPES: &str = "setsid -f sh -c 'sleep 2; touch m1'; \
                       nohup sh -c 'sleep 2; touch m2' >/dev/null 2>&1 & \
                       (sh -c 'sleep 2; touch m3' &); echo started";

#[test]
fn nothing_a_confined_call_started_outlives_it_and_proc_shows_only_its_own() {
    let (_tmp, ws) = workspace();
    let out = sandboxed(&ws, &[], ESCAPES);
    assert!(text(&out).contains("started"), "{}", text(&out));
    for marker in ["m1", "m2", "m3"] {
        assert!(
            !appears_within(&ws.join(marker), Duration::from_secs(3)),
            "{marker} appeared: a process outlived the call"
        );
    }
    let out = sandboxed(&ws, &[], "ls /proc | grep -c '^[0-9]'");
    let count: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(
        count < 8,
        "{count} processes visible in /proc: {}",
        text(&out)
    );
}

#[tokio::test]
async fn the_model_is_told_that_background_processes_ended_with_the_call() {
    let (tmp, ws) = workspace();
    let mut ctx = ToolCtx::new(ws.clone(), Duration::from_secs(60), Vec::new());
    ctx.supervisor = Some(env!("CARGO_BIN_EXE_minicode").into());
    let tmpdir = tmp.path().join("t");
    let policy = Policy::for_workspace(Mode::WorkspaceWrite, false, &ws, &[], tmpdir);
    let out = bash(&ctx, &policy, "setsid -f sleep 30; echo served").await;
    assert!(out.content.contains("served"), "{}", out.content);
    assert!(out.content.contains("background: true"), "{}", out.content);
    let out = bash(&ctx, &policy, "echo alone").await;
    assert!(!out.content.contains("background: true"), "{}", out.content);
}

async fn bash(ctx: &ToolCtx, policy: &Policy, command: &str) -> minicode::tools::ToolOutput {
    let args = json!({ "command": command });
    crate::support::bash::run_under(ctx, policy, args, CancellationToken::new())
        .await
        .output
}

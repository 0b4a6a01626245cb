//! A full disk stops a turn: a tool call whose record cannot be saved never runs, and the run
//! fails with the I/O error (exit 1, status "failed"). The disk is a real small tmpfs mounted
//! over the sessions folder in a mount namespace of its own, in a child of the test binary
//! (this needs root); where mounting is impossible the test says so on stderr and falls back to
//! `MINICODE_TEST_FAIL_SAVES`, which makes every save fail with the same error.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
use crate::support::{binary, isolated, workspace};

/// A tmpfs mounted in this thread's own mount namespace, unmounted on drop (so the workspace
/// can be removed after it).
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a 256 KiB tmpfs at `at` in a new mount namespace, or says why it cannot.
    fn mount(at: &Path) -> Result<Tmpfs, String> {
        let target = CString::new(at.as_os_str().as_bytes()).unwrap();
        let root = CString::new("/").unwrap();
        let kind = CString::new("tmpfs").unwrap();
        let options = CString::new("size=256k,mode=0700").unwrap();
        // SAFETY: plain syscalls on valid C strings; the namespace is this thread's (the test
        // runs in a child process of its own, see `isolated::in_child`), and the binaries it
        // starts inherit it.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(format!("unshare: {}", std::io::Error::last_os_error()));
            }
            // Nothing mounted here may propagate to the machine's namespace.
            let flags = libc::MS_REC | libc::MS_PRIVATE;
            let none = std::ptr::null();
            if libc::mount(none, root.as_ptr(), none, flags, std::ptr::null()) != 0 {
                return Err(format!("private /: {}", std::io::Error::last_os_error()));
            }
            let data = options.as_ptr().cast();
            if libc::mount(kind.as_ptr(), target.as_ptr(), kind.as_ptr(), 0, data) != 0 {
                return Err(format!("mount: {}", std::io::Error::last_os_error()));
            }
        }
        Ok(Tmpfs(at.to_path_buf()))
    }

    /// Fills the filesystem until a write fails with "no space left".
    fn fill(&self) {
        let mut file = std::fs::File::create(self.0.join("filler.bin")).unwrap();
        let block = vec![0u8; 4096];
        loop {
            match file.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        let probe = std::fs::write(self.0.join("probe"), b"x").unwrap_err();
        assert_eq!(probe.raw_os_error(), Some(libc::ENOSPC), "{probe}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let target = CString::new(self.0.as_os_str().as_bytes()).unwrap();
        // SAFETY: a plain syscall on a valid C string.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// How saves fail in the second run.
enum Disk {
    Full(Tmpfs),
    Injected,
}

/// A session with one exchange, then `--yes --continue` on a disk that cannot take a byte,
/// answered by a reply that asks for a `bash` and a `write` call: neither may run.
fn run_on_a_full_disk(ws: &Path, disk: Disk) {
    let first = MockServer::start_in_thread(vec![text_reply("hello", 4)]);
    binary::write_config(ws, &first);
    let out = binary::command(ws).arg("hi").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[
                ("c1", "bash", r#"{"command":"touch ran-bash"}"#),
                ("c2", "write", r#"{"path":"ran-write.txt","content":"x"}"#),
            ],
            16,
        ),
        text_reply("done", 4),
    ]);
    binary::write_config(ws, &server);
    let mut cmd = binary::command(ws);
    match &disk {
        Disk::Full(tmpfs) => tmpfs.fill(),
        Disk::Injected => {
            cmd.env(minicode::session::ENV_FAIL_SAVES, "1");
        }
    }
    let out = cmd
        .args(["--yes", "--continue", "--output-format", "json", "go"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!ws.join("ran-bash").exists(), "bash ran; stderr: {stderr}");
    assert!(
        !ws.join("ran-write.txt").exists(),
        "write ran; stderr: {stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["status"], "failed", "{json}");
    let error = json["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("could not save the session") && error.contains("No space left on device"),
        "{error}"
    );
    // Told once: no warning repeats it (the saves at the turn's end and at exit fail alike).
    assert_eq!(
        stderr.matches("No space left on device").count(),
        1,
        "{stderr}"
    );
    // Nothing was asked after the failed save (the request before it, if any, is the one
    // whose reply held the calls).
    assert!(server.request_count() <= 1, "{}", server.request_count());
    drop(disk);
}

#[test]
fn a_full_disk_fails_the_turn_before_any_tool_call_runs() {
    let name = "full_disk::a_full_disk_fails_the_turn_before_any_tool_call_runs";
    if !isolated::in_child(name, &[], &[]) {
        return;
    }
    let (_dir, ws) = workspace();
    let sessions = ws.join(".minicode/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let disk = match Tmpfs::mount(&sessions) {
        Ok(tmpfs) => Disk::Full(tmpfs),
        Err(why) => {
            eprintln!(
                "full_disk: no tmpfs can be mounted here ({why}); saves fail through {} instead",
                minicode::session::ENV_FAIL_SAVES
            );
            Disk::Injected
        }
    };
    run_on_a_full_disk(&ws, disk);
}

#[test]
fn the_save_failure_switch_fails_the_turn_like_a_full_disk() {
    let (_dir, ws) = workspace();
    run_on_a_full_disk(&ws, Disk::Injected);
}

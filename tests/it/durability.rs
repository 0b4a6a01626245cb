//! Nothing is lost: a write killed midway leaves the old file and a temp file the next start
//! sweeps (but never one a live process still writes, nor anything a record or a link points
//! at outside the workspace), and `.minicode/.gitignore` keeps private data out of
//! `git add -A` while memory stays committable. (The tools' own rules on read-only files,
//! modes and long names are in `tools_files`.)

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use minicode::fsutil;
use serde_json::json;

use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
use crate::support::{binary, workspace};

/// The most a killed child may write to one file: a write past it is killed by the kernel
/// (SIGXFSZ) in the middle of the `write` call, exactly where a `kill -9` could land.
const FILE_SIZE_LIMIT: u64 = 512 * 1024;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `minicode --yes PROMPT` with a limit on the size of any file it writes.
fn run_limited(ws: &Path, args: &[&str]) -> Output {
    let mut cmd = binary::command(ws);
    cmd.args(args);
    // SAFETY: setrlimit and signal are async-signal-safe and only affect the child.
    unsafe {
        cmd.pre_exec(|| {
            let size = libc::rlimit {
                rlim_cur: FILE_SIZE_LIMIT as libc::rlim_t,
                rlim_max: FILE_SIZE_LIMIT as libc::rlim_t,
            };
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &size);
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// A one-shot run that only gets a text reply: what "the next start" is in these tests.
fn start_again(ws: &Path, extra: &[&str]) -> Output {
    let server = MockServer::start_in_thread(vec![text_reply("fine", 4)]);
    binary::write_config(ws, &server);
    let mut args = extra.to_vec();
    args.push("hello again");
    let out = binary::command(ws).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

/// Our temp files directly inside `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap())
        .filter(|e| fsutil::is_temp_name(&e.file_name()))
        .map(|e| e.path())
        .collect()
}

fn dir_entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn hex_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[test]
fn a_tool_write_killed_midway_keeps_the_file_and_the_next_start_sweeps_the_temp_file() {
    let (_dir, ws) = workspace();
    let original = "a\n".repeat(1000);
    std::fs::write(ws.join("big.txt"), &original).unwrap();
    // read, then an edit that grows the file past the size limit: the kernel kills the
    // process in the middle of writing the temp file.
    let edit = json!({"path": "big.txt", "old_string": "a", "new_string": "b".repeat(1100),
                      "replace_all": true})
    .to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "read", r#"{"path":"big.txt"}"#)], 50),
        tool_calls_reply(&[("c2", "edit", &edit)], 500),
        text_reply("never reached", 4),
    ]);
    binary::write_config(&ws, &server);
    let out = run_limited(&ws, &["--yes", "grow it"]);
    assert_eq!(out.status.signal(), Some(libc::SIGXFSZ), "{}", stderr(&out));

    let left = temp_files(&ws);
    assert_eq!(left.len(), 1, "the killed write left its temp file");
    assert_eq!(std::fs::metadata(&left[0]).unwrap().len(), FILE_SIZE_LIMIT);
    assert_eq!(
        left[0].file_name().unwrap().len(),
        46,
        "a fixed-length temp name, whatever the target is called"
    );
    let journal = ws.join(".minicode").join(fsutil::JOURNAL_DIR);
    assert_eq!(dir_entries(&journal).len(), 1, "and its record");
    assert_eq!(
        std::fs::read_to_string(ws.join("big.txt")).unwrap(),
        original
    );

    start_again(&ws, &[]);
    assert!(temp_files(&ws).is_empty(), "swept on the next start");
    assert!(dir_entries(&journal).is_empty(), "the record is gone too");
    assert_eq!(
        std::fs::read_to_string(ws.join("big.txt")).unwrap(),
        original
    );
}

#[test]
fn a_session_save_killed_midway_keeps_the_session_resumable_and_is_swept() {
    let (_dir, ws) = workspace();
    // The first call's arguments go to the journal, then into a rewritten snapshot (the journal
    // outgrew it); the second call's go to the journal, which again outgrows the snapshot, so
    // the save after its result rewrites the snapshot past the limit: that write gets killed.
    let first = json!({"path": "one.txt", "content": "x".repeat(270 * 1024)}).to_string();
    let second = json!({"path": "two.txt", "content": "y".repeat(300 * 1024)}).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "write", &first)], 64 * 1024),
        tool_calls_reply(&[("c2", "write", &second)], 64 * 1024),
        text_reply("never reached", 4),
    ]);
    binary::write_config(&ws, &server);
    let out = run_limited(&ws, &["--yes", "write two big files"]);
    assert_eq!(out.status.signal(), Some(libc::SIGXFSZ), "{}", stderr(&out));
    let sessions = ws.join(".minicode/sessions");
    assert_eq!(temp_files(&sessions).len(), 1);

    let out = start_again(&ws, &["--continue"]);
    assert!(temp_files(&sessions).is_empty(), "{}", stderr(&out));
    let jsons: Vec<String> = dir_entries(&sessions)
        .into_iter()
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(jsons.len(), 1, "the same session was resumed: {jsons:?}");
    let id = jsons[0].trim_end_matches(".json");
    let session = minicode::session::Session::open(&ws, id).unwrap();
    let first_prompt = session.messages()[0].text().to_string();
    assert_eq!(first_prompt, "write two big files");
}

#[test]
fn a_temp_file_a_live_process_still_holds_is_not_swept() {
    let (_dir, ws) = workspace();
    let sessions = ws.join(".minicode/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let held = sessions.join(format!("{}{}", fsutil::TEMP_PREFIX, hex_id()));
    let abandoned = ws
        .join(".minicode")
        .join(format!("{}{}", fsutil::TEMP_PREFIX, hex_id()));
    let lookalike = sessions.join(format!("{}notours", fsutil::TEMP_PREFIX));
    for path in [&held, &abandoned, &lookalike] {
        std::fs::write(path, "partial").unwrap();
    }
    // The "other process" holds the lock the way a writer does. It must be another process:
    // a lock held here could linger for a moment in a child another test thread just forked.
    let mut holder = Command::new("flock")
        .args(["--exclusive", "--nonblock"])
        .arg(&held)
        .args(["sh", "-c", "echo locked; exec cat >/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock(1) from util-linux");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "locked\n");

    start_again(&ws, &[]);
    assert!(held.exists(), "a write in progress elsewhere is left alone");
    assert!(!abandoned.exists(), "an abandoned one is removed");
    assert!(
        lookalike.exists(),
        "a name that is not exactly ours is not touched"
    );

    drop(holder.stdin.take()); // the "other process" ends
    assert!(holder.wait().unwrap().success());
    start_again(&ws, &[]);
    assert!(!held.exists());
}

#[test]
fn a_journal_record_cannot_point_the_sweep_outside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    let outside = root.join("outside");
    std::fs::create_dir_all(ws.join(".minicode").join(fsutil::JOURNAL_DIR)).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
    let mut victims = Vec::new();
    for folder in ["../outside", "link", outside.to_str().unwrap()] {
        let id = hex_id();
        let victim = outside.join(format!("{}{id}", fsutil::TEMP_PREFIX));
        std::fs::write(&victim, "not ours to remove").unwrap();
        let record = ws.join(".minicode").join(fsutil::JOURNAL_DIR).join(&id);
        std::fs::write(&record, folder).unwrap();
        age(&record);
        victims.push(victim);
    }
    start_again(&ws, &[]);
    for victim in &victims {
        assert!(victim.exists(), "{} was removed", victim.display());
    }
    assert!(dir_entries(&ws.join(".minicode").join(fsutil::JOURNAL_DIR)).is_empty());
}

/// Moves a file's modification time ten minutes back.
fn age(path: &Path) {
    let then = std::time::SystemTime::now() - Duration::from_secs(600);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(then).unwrap();
}

#[test]
fn a_fresh_record_without_its_temp_file_is_kept_and_an_old_one_dropped() {
    let (_dir, ws) = workspace();
    let journal = ws.join(".minicode").join(fsutil::JOURNAL_DIR);
    std::fs::create_dir_all(&journal).unwrap();
    // A writer records its temp file before creating it: a start in between must not drop
    // the record, or a kill right after would leave an unrecorded temp file.
    let fresh = journal.join(hex_id());
    let old = journal.join(hex_id());
    for record in [&fresh, &old] {
        std::fs::write(record, ".").unwrap();
    }
    age(&old);
    start_again(&ws, &[]);
    assert!(fresh.exists());
    assert!(!old.exists());
}

fn git(ws: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn git_add_all_commits_shared_memory_but_no_private_data() {
    let (_dir, ws) = workspace();
    git(&ws, &["init", "-q"]);
    std::fs::create_dir_all(ws.join(".minicode/memory")).unwrap();
    std::fs::write(ws.join(".minicode/memory/testing.md"), "# How we test\n").unwrap();
    // A bash call with more output than the model is shown saves it under outputs/; logging
    // on fills logs/; the run itself writes sessions/.
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", r#"{"command":"seq 1 40000"}"#)], 50),
        text_reply("done", 4),
    ]);
    binary::write_config(&ws, &server);
    let out = binary::command(&ws)
        .env("MINICODE_LOG", "info")
        .args(["--yes", "count"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for private in ["sessions", "logs", "outputs"] {
        assert!(
            ws.join(".minicode").join(private).is_dir(),
            "{private} was written"
        );
    }
    // A private folder a later version adds is ignored without a code change.
    std::fs::create_dir_all(ws.join(".minicode/cache")).unwrap();
    std::fs::write(ws.join(".minicode/cache/blob"), "private").unwrap();

    git(&ws, &["add", "-A"]);
    let status = git(&ws, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        status.contains("A  .minicode/memory/testing.md"),
        "{status}"
    );
    assert!(status.contains("A  .minicode/.gitignore"), "{status}");
    // The workspace's config (written by `write_config`) is the team's to share too.
    assert!(status.contains("A  .minicode/config.toml"), "{status}");
    let minicode: Vec<&str> = status
        .lines()
        .filter(|l| l.contains(".minicode/"))
        .collect();
    assert_eq!(minicode.len(), 3, "nothing private is staged: {status}");
}

#[test]
fn a_user_edited_gitignore_keeps_its_lines_and_gets_the_block_last() {
    let (_dir, ws) = workspace();
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    let mine = "# my own rules\n!/notes/\n*.bak\n";
    std::fs::write(ws.join(".minicode/.gitignore"), mine).unwrap();
    start_again(&ws, &[]);
    let text = std::fs::read_to_string(ws.join(".minicode/.gitignore")).unwrap();
    assert!(
        text.starts_with(mine),
        "the user's lines come first, unchanged: {text}"
    );
    assert!(
        text.ends_with(&format!("{}\n", fsutil::gitignore::END)),
        "{text}"
    );
    assert!(
        text.contains("\n/*\n") && text.contains("\n!/memory/\n"),
        "{text}"
    );
    // Up to date: a second start leaves the file as it is.
    start_again(&ws, &[]);
    assert_eq!(
        std::fs::read_to_string(ws.join(".minicode/.gitignore")).unwrap(),
        text
    );
}

#[test]
fn a_repositorys_gitignore_line_cannot_stage_sessions_and_is_warned_about() {
    let (_dir, ws) = workspace();
    git(&ws, &["init", "-q"]);
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    // What a repository ships: minicode's block first (as older versions wrote it), its own
    // re-inclusion of the user's conversations after it.
    let planted = format!(
        "{}\n/*\n!/memory/\n{}\n!/sessions/\n!logs\n!/memory/shared.md\n",
        fsutil::gitignore::BEGIN,
        fsutil::gitignore::END
    );
    std::fs::write(ws.join(".minicode/.gitignore"), planted).unwrap();
    let out = start_again(&ws, &[]);
    let err = stderr(&out);
    assert!(
        err.contains("line 5: `!/sessions/` would put private data"),
        "{err}"
    );
    assert!(err.contains("line 6: `!logs`"), "{err}");
    assert!(!err.contains("shared.md"), "sharing memory is fine: {err}");
    assert!(ws.join(".minicode/sessions").is_dir());
    let status = git(&ws, &["status", "--porcelain", "--ignored"]);
    assert!(status.contains("!! .minicode/sessions/"), "{status}");
    assert!(!status.contains("?? .minicode/sessions"), "{status}");
    let text = std::fs::read_to_string(ws.join(".minicode/.gitignore")).unwrap();
    assert!(
        text.starts_with("!/sessions/\n!logs\n"),
        "the repository's lines stay, above the block: {text}"
    );
    assert!(
        text.ends_with(&format!("{}\n", fsutil::gitignore::END)),
        "{text}"
    );
}

#[test]
fn a_symlinked_data_folder_is_not_swept() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(elsewhere.join("sessions")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, ws.join(".minicode")).unwrap();
    let victims = [
        elsewhere.join(format!("{}{}", fsutil::TEMP_PREFIX, hex_id())),
        elsewhere
            .join("sessions")
            .join(format!("{}{}", fsutil::TEMP_PREFIX, hex_id())),
    ];
    for victim in &victims {
        std::fs::write(victim, "someone else's").unwrap();
    }
    let server = MockServer::start_in_thread(vec![text_reply("fine", 4)]);
    binary::write_config(&ws, &server);
    // Whether the run itself accepts such a folder is the trust rules' business; the sweep
    // must not follow it either way.
    let _ = binary::command(&ws).arg("hello").output().unwrap();
    for victim in &victims {
        assert!(victim.exists(), "{} was removed", victim.display());
    }
}

#[test]
fn an_outdated_gitignore_block_is_replaced_at_the_end_and_the_rest_kept() {
    let (_dir, ws) = workspace();
    let data = ws.join(".minicode");
    std::fs::create_dir_all(&data).unwrap();
    let old = format!(
        "# before\n{}\n/*\n!/memory/\n{}\n!/notes/\n",
        fsutil::gitignore::BEGIN,
        fsutil::gitignore::END
    );
    std::fs::write(data.join(".gitignore"), &old).unwrap();
    fsutil::gitignore::ensure(&data).unwrap();
    let text = std::fs::read_to_string(data.join(".gitignore")).unwrap();
    assert!(text.starts_with("# before\n!/notes/\n"), "{text}");
    assert!(
        text.ends_with(&format!("{}\n", fsutil::gitignore::END)),
        "{text}"
    );
    assert!(text.contains("\n!/skills/\n"), "the current block: {text}");
    assert_eq!(text.matches(fsutil::gitignore::BEGIN).count(), 1, "{text}");

    // A begin marker without its end is not a block: a whole one goes first, once.
    std::fs::write(
        data.join(".gitignore"),
        format!("{}\n/*\n", fsutil::gitignore::BEGIN),
    )
    .unwrap();
    fsutil::gitignore::ensure(&data).unwrap();
    let once = std::fs::read_to_string(data.join(".gitignore")).unwrap();
    fsutil::gitignore::ensure(&data).unwrap();
    assert_eq!(
        std::fs::read_to_string(data.join(".gitignore")).unwrap(),
        once
    );
    assert!(once.contains(fsutil::gitignore::END), "{once}");
}

#[test]
fn a_gitignore_that_is_a_symlink_is_left_alone() {
    let (_dir, ws) = workspace();
    let data = ws.join(".minicode");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(ws.join("elsewhere"), "mine\n").unwrap();
    std::os::unix::fs::symlink(ws.join("elsewhere"), data.join(".gitignore")).unwrap();
    fsutil::gitignore::ensure(&data).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.join("elsewhere")).unwrap(),
        "mine\n"
    );
}

/// Every session file in `ws` parses and holds a user message: none is empty.
fn assert_no_empty_session(ws: &Path, context: &str) {
    let Ok(entries) = std::fs::read_dir(ws.join(".minicode/sessions")) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{context}: {} is invalid ({e})", path.display()));
            let messages = value["messages"].as_array().cloned().unwrap_or_default();
            assert!(
                messages.iter().any(|m| m["role"] == "user"),
                "{context}: {} holds no prompt: {text}",
                path.display()
            );
        }
    }
}

/// SIGKILL to a one-shot run `after` its start (or once `marker` exists, when given).
fn kill_run(ws: &Path, after: Duration, marker: Option<&Path>) {
    let mut child = binary::command(ws)
        .arg("hello")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if let Some(marker) = marker {
        let seen =
            crate::support::mock_openai::wait_until_blocking(Duration::from_secs(30), || {
                marker.exists()
            });
        assert!(seen, "the SessionStart hook never ran");
    }
    std::thread::sleep(after);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_kill_before_the_prompt_is_saved_leaves_no_empty_session_file() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread((0..40).map(|_| text_reply("fine", 4)).collect());
    binary::write_config(&ws, &server);
    // A SessionStart hook holds the run between creating its session and saving the prompt.
    let hook = "[[hooks.SessionStart]]\ncommand = \"touch started; sleep 30\"\n";
    crate::support::user_config::write_trusting(&ws.join("home"), &ws, hook);
    let marker = ws.join("started");
    kill_run(&ws, Duration::from_millis(100), Some(&marker));
    assert_no_empty_session(&ws, "killed in the SessionStart hook");

    // And at random moments of a whole run (bounded: 40 kills).
    crate::support::user_config::write_trusting(&ws.join("home"), &ws, "");
    for i in 0..40 {
        let after = Duration::from_millis(fastrand::u64(0..250));
        kill_run(&ws, after, None);
        assert_no_empty_session(&ws, &format!("kill {i} after {after:?}"));
    }
}

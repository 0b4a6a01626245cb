//! Picking a session from the command line, through the built binary against the mock server:
//! which session `--continue` resumes (never an empty one, one dated in the future or one
//! tracked by git), the prompt being on disk before the first request goes out, what
//! `minicode sessions` shows and marks, and refused goal commands leaving the file untouched.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::support::binary::{command, write_config};
use crate::support::mock_openai::{MockReply, MockServer, text_reply, wait_until_blocking};
use crate::support::workspace;
use minicode::session::{Session, sessions_dir};

fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The id in the "resume with: … --session <id>" line a one-shot run ends with.
fn session_id(stderr: &str) -> String {
    let at = stderr
        .rfind("--session ")
        .expect("stderr names the session")
        + 10;
    stderr[at..at + 36].to_string()
}

fn snapshot_path(ws: &Path, id: &str) -> PathBuf {
    sessions_dir(ws).join(format!("{id}.json"))
}

/// The user messages the model was sent in request `n`.
fn user_texts(server: &MockServer, n: usize) -> Vec<String> {
    let body = &server.requests()[n].body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A session file with no message at all, as a run killed before its prompt was saved leaves
/// it (or as anyone can plant it); it is the newest of the workspace.
fn plant_empty(ws: &Path) -> String {
    let session = Session::create(ws).unwrap();
    let id = session.id().to_string();
    drop(session);
    id
}

#[test]
fn a_kill_during_the_first_reply_keeps_the_prompt_and_continue_resumes_it() {
    let (_dir, ws) = workspace();
    // The first reply never comes; the second answers the resumed session.
    let server =
        MockServer::start_in_thread(vec![MockReply::Stall, text_reply("a blue parrot", 4)]);
    write_config(&ws, &server);
    let mut child = command(&ws)
        .arg("remember the blue parrot")
        .spawn()
        .unwrap();
    assert!(wait_until_blocking(Duration::from_secs(60), || server
        .request_count()
        >= 1));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let listed = Session::list(&ws).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let id = listed[0].id.clone();
    let file = text(&std::fs::read(snapshot_path(&ws, &id)).unwrap());
    assert!(file.contains("remember the blue parrot"), "{file}");

    let out = run(&ws, &["--continue", "what was it?"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(session_id(&stderr), id);
    assert_eq!(
        user_texts(&server, 1),
        ["remember the blue parrot", "what was it?"]
    );
}

#[test]
fn continue_skips_an_empty_session_for_the_previous_conversation() {
    let (_dir, ws) = workspace();
    let server =
        MockServer::start_in_thread(vec![text_reply("first answer", 4), text_reply("again", 4)]);
    write_config(&ws, &server);
    let out = run(&ws, &["the first question"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    let empty = plant_empty(&ws);

    let out = run(&ws, &["--continue", "and then?"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(session_id(&stderr), id);
    assert_eq!(user_texts(&server, 1), ["the first question", "and then?"]);
    // The empty one is listed, marked, and left alone.
    let list = text(&run(&ws, &["sessions"]).stdout);
    let line = list.lines().find(|l| l.starts_with(&empty)).unwrap();
    assert!(line.contains("no messages"), "{list}");
    assert!(snapshot_path(&ws, &empty).exists());
}

#[test]
fn continue_with_only_empty_sessions_finds_nothing_to_resume() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(Vec::new());
    write_config(&ws, &server);
    plant_empty(&ws);
    let out = run(&ws, &["--continue", "hello?"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no saved session"), "{stderr}");
    assert!(stderr.contains("1 passed over"), "{stderr}");
    assert_eq!(server.request_count(), 0);
}

/// A session with one exchange, saved by the library (not the binary), so a test can then
/// make it look however an attacker would.
fn plant_conversation(ws: &Path, prompt: &str) -> String {
    let mut session = Session::create(ws).unwrap();
    session.push(minicode::chat::Message::user(prompt));
    session.push(minicode::chat::Message::assistant(
        Some("planted answer".into()),
        Vec::new(),
    ));
    session.save().unwrap();
    let id = session.id().to_string();
    drop(session);
    id
}

/// Rewrites a top-level field of a session's snapshot.
fn set_field(ws: &Path, id: &str, field: &str, value: &str) {
    let path = snapshot_path(ws, id);
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json[field] = value.into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
}

/// `git` in `ws`, with no user or system configuration.
fn git(ws: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// A workspace holding one real conversation (run through the binary); returns its id.
fn with_conversation(ws: &Path, server: &MockServer) -> String {
    write_config(ws, server);
    let out = run(ws, &["the real question"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    session_id(&text(&out.stderr))
}

#[test]
fn continue_ignores_a_session_dated_in_the_future_and_sessions_marks_it() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("one", 4), text_reply("two", 4)]);
    let id = with_conversation(&ws, &server);
    let planted = plant_conversation(&ws, "planted from the future");
    set_field(&ws, &planted, "updated", "2099-01-01T00:00:00.000000Z");

    let out = run(&ws, &["--continue", "next"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(session_id(&stderr), id);
    assert_eq!(user_texts(&server, 1), ["the real question", "next"]);
    let list = text(&run(&ws, &["sessions"]).stdout);
    let line = list.lines().find(|l| l.starts_with(&planted)).unwrap();
    assert!(line.contains("future date"), "{list}");
    let line = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(!line.contains("skips"), "{list}");
}

#[test]
fn continue_ignores_a_session_tracked_by_git_without_running_repository_code() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("one", 4), text_reply("two", 4)]);
    git(&ws, &["init", "-q"]);
    let id = with_conversation(&ws, &server);
    let planted = plant_conversation(&ws, "committed by someone else");
    let relative = format!(".minicode/sessions/{planted}.json");
    git(&ws, &["add", "-f", &relative]);
    // A repository's own config must not get to run anything while we look.
    let marker = ws.join("fsmonitor-ran");
    let hook = ws.join("fsmonitor.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(
        &ws,
        &["config", "core.fsmonitor", &hook.display().to_string()],
    );

    let out = run(&ws, &["--continue", "next"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(session_id(&stderr), id);
    let list = text(&run(&ws, &["sessions"]).stdout);
    let line = list.lines().find(|l| l.starts_with(&planted)).unwrap();
    assert!(line.contains("tracked by git"), "{list}");
    assert!(!marker.exists(), "the repository's fsmonitor hook ran");
}

/// The snapshot's bytes and modification time, and whether a journal exists.
fn file_state(ws: &Path, id: &str) -> (Vec<u8>, std::time::SystemTime, bool) {
    let path = snapshot_path(ws, id);
    let bytes = std::fs::read(&path).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    (bytes, mtime, path.with_extension("journal").exists())
}

#[test]
fn refused_goal_commands_leave_the_session_file_untouched() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(|_| Some(text_reply("working on it", 8)));
    let plain = with_conversation(&ws, &server);
    let out = run(&ws, &["--goal", "port the parser", "--goal-rounds", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let goal = session_id(&text(&out.stderr));
    let requests = server.request_count();

    for (id, args, says) in [
        (&plain, &["--goal-resume"][..], "no goal"),
        (&goal, &["--goal-resume"][..], "rounds"),
        (&goal, &["--goal", "something else"][..], "still blocked"),
    ] {
        let before = file_state(&ws, id);
        let mut all = vec!["--session", id.as_str()];
        all.extend_from_slice(args);
        let out = run(&ws, &all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(file_state(&ws, id) == before, "{args:?} wrote the session");
    }
    assert_eq!(server.request_count(), requests);
}

#[test]
fn session_accepts_a_unique_prefix_of_six_or_more_characters() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("one", 4), text_reply("two", 4)]);
    let id = with_conversation(&ws, &server);
    let out = run(&ws, &["--session", &id[..8], "next"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(session_id(&stderr), id);
    assert_eq!(user_texts(&server, 1), ["the real question", "next"]);

    let out = run(&ws, &["--session", &id[..5], "next"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("6"), "{stderr}");
    let out = run(&ws, &["--session", "ffffff0", "next"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no session"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.request_count(), 2);
}

#[test]
fn an_ambiguous_session_prefix_exits_2_listing_the_candidates() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("one", 4)]);
    let id = with_conversation(&ws, &server);
    // A second session whose id shares all but the last character.
    let last = if id.ends_with('0') { "1" } else { "0" };
    let twin = format!("{}{last}", &id[..35]);
    std::fs::copy(snapshot_path(&ws, &id), snapshot_path(&ws, &twin)).unwrap();
    set_field(&ws, &twin, "id", &twin);

    let out = run(&ws, &["--session", &id[..8], "next"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&id) && stderr.contains(&twin), "{stderr}");
    // The whole id is never ambiguous.
    let out = run(&ws, &["--session", &twin, "next"]);
    assert_ne!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn sessions_ids_prints_the_ids_the_completion_scripts_offer() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("one", 4)]);
    let first = with_conversation(&ws, &server);
    let second = plant_conversation(&ws, "another");
    let out = run(&ws, &["sessions", "--ids"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut ids: Vec<&str> = stdout.lines().collect();
    ids.sort();
    let mut expected = vec![first.as_str(), second.as_str()];
    expected.sort();
    assert_eq!(ids, expected);
    // Each script asks the binary for them when completing `--session`.
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&ws, &["completions", shell]);
        assert_eq!(out.status.code(), Some(0));
        let script = text(&out.stdout);
        assert!(
            script.contains("minicode sessions --ids"),
            "{shell}: {script}"
        );
    }
    // And bash really completes an id from its first characters, in this workspace. (The
    // script runs `minicode` from PATH: the built binary, with the same isolated HOME.)
    let script = ws.join("completion.bash");
    std::fs::write(&script, run(&ws, &["completions", "bash"]).stdout).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_minicode")).parent().unwrap();
    let prefix = &first[..8];
    let probe = format!(
        "source '{}'; COMP_WORDS=(minicode --session {prefix}); COMP_CWORD=2; \
         _minicode minicode {prefix} --session; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let completed = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .current_dir(&ws)
        .env("HOME", ws.join("home"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        text(&completed.stdout).trim(),
        first,
        "{}",
        text(&completed.stderr)
    );
}

#[test]
fn sessions_shows_a_goal_sessions_objective_not_its_record() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(|_| Some(text_reply("working on it", 8)));
    write_config(&ws, &server);
    let out = run(&ws, &["--goal", "port the parser", "--goal-rounds", "1"]);
    let id = session_id(&text(&out.stderr));
    let list = text(&run(&ws, &["sessions"]).stdout);
    let line = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.ends_with("goal: port the parser"), "{list}");
    assert!(!list.contains("goal_state"), "{list}");
}

#[test]
fn a_fork_that_cannot_be_saved_leaves_no_empty_session_behind() {
    let (_dir, ws) = workspace();
    let server = MockServer::start_in_thread(Vec::new());
    write_config(&ws, &server);
    let id = plant_conversation(&ws, &"x".repeat(300 * 1024));
    let mut cmd = command(&ws);
    cmd.args(["--session", &id, "--fork", "go on"]);
    // SAFETY: setrlimit and signal are async-signal-safe and only affect the child. With
    // SIGXFSZ ignored a write past the limit fails (EFBIG) instead of killing the process: the
    // copy's first full save fails like on a full disk.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let size = libc::rlimit {
                rlim_cur: 256 * 1024,
                rlim_max: 256 * 1024,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &size);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("could not fork"), "{stderr}");
    let ids: Vec<String> = Session::list(&ws)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [id]);
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_fork_whose_first_message_is_a_notice_is_titled_by_the_prompt() {
    let (_dir, ws) = workspace();
    let mut session = Session::create(&ws).unwrap();
    session.push(minicode::chat::Message::user(
        "<session-notice>\nminicode reports a change: plan mode is on\n</session-notice>",
    ));
    session.push(minicode::chat::Message::user("the real question"));
    session.save().unwrap();
    let origin = session.id().to_string();
    // A rewind to before the prompt keeps the notice alone; a fork keeps both.
    let notice_only = session.fork_before(1).unwrap().id().to_string();
    let both = session.fork().unwrap().id().to_string();
    drop(session);
    let list = text(&run(&ws, &["sessions"]).stdout);
    assert!(!list.contains("session-notice"), "{list}");
    let line = |id: &str| {
        list.lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    assert!(
        line(&both).ends_with(&format!("(fork of {origin}) the real question")),
        "{list}"
    );
    assert!(line(&notice_only).contains("no messages"), "{list}");
    assert!(line(&origin).ends_with("the real question"), "{list}");
}

#[test]
fn sessions_show_a_relative_age_and_the_turns_in_text_and_json() {
    let (_dir, ws) = workspace();
    let id = plant_conversation(&ws, "count the parrots");
    let out = run(&ws, &["sessions"]);
    let list = text(&out.stdout);
    let line = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains("just now"), "{list}");
    assert!(line.contains("1 turn "), "{list}");

    let out = run(&ws, &["sessions", "--output-format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = json.as_array().unwrap();
    assert_eq!(all.len(), 1, "{json}");
    assert_eq!(all[0]["id"], id.as_str());
    assert_eq!(all[0]["title"], "count the parrots");
    assert_eq!(all[0]["turns"], 1);
    assert_eq!(all[0]["age"], "just now");
    assert!(all[0]["updated"].as_str().unwrap().ends_with('Z'), "{json}");
    assert!(all[0]["continue_skips"].is_null(), "{json}");
}

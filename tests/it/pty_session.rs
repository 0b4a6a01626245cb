//! The real binary in a pseudo-terminal against the mock OpenAI server: a prompt streams its
//! reply, a bash call is approved with `y` (and a long one shows its live output, then its
//! result; "always" then `/permissions save` writes the rule to the user config), scrolling works while streaming, a resize is taken,
//! Esc interrupts, Ctrl+C twice exits, a hostile reply reaches neither screen nor clipboard raw,
//! the key's variable is gone from the running session's own environment,
//! and afterwards the terminal is back in cooked mode on the main screen with keyboard flags
//! popped and the transcript printed.
//!
//! Every wait is for screen content with a generous deadline; nothing sleeps to synchronise.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::mock_openai::{MockReply, MockServer, text_reply, tool_calls_reply};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

const DEADLINE: Duration = Duration::from_secs(30);

struct Pty {
    screen: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    master: Box<dyn MasterPty + Send>,
    child: Box<dyn Child + Send + Sync>,
    _dir: tempfile::TempDir,
}

fn size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

impl Pty {
    fn spawn(server: &MockServer) -> Pty {
        Self::spawn_in(server, tempfile::tempdir().unwrap())
    }

    /// [`Pty::spawn`] in `dir`, prepared by the test (its user config under `config/`).
    fn spawn_in(server: &MockServer, dir: tempfile::TempDir) -> Pty {
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
        cmd.args(["--base-url", &server.base_url(), "--model", "m"]);
        cmd.cwd(dir.path());
        crate::support::binary::isolate_pty(&mut cmd, dir.path());
        cmd.env("XDG_CONFIG_HOME", dir.path().join("config"));
        cmd.env("MINICODE_API_KEY", "test-key");
        Self::start(cmd, dir)
    }

    /// Runs `cmd` (which must set its own folder and HOME) in a 30×100 terminal; `dir` is kept
    /// until the session is dropped.
    fn start(mut cmd: CommandBuilder, dir: tempfile::TempDir) -> Pty {
        let pair = native_pty_system().openpty(size(30, 100)).unwrap();
        cmd.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(30, 100, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let mut reader = pair.master.try_clone_reader().unwrap();
        let (s, r, w) = (screen.clone(), raw.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let bytes = &buf[..n];
                // Act as a terminal with the kitty keyboard protocol: answer the flags query
                // and the primary device attributes query that follows it.
                if contains(bytes, b"\x1b[?u") {
                    let _ = w.lock().unwrap().write_all(b"\x1b[?0u\x1b[?62;22c");
                }
                // ...and the cursor position report, as every terminal does.
                if contains(bytes, b"\x1b[6n") {
                    let _ = w.lock().unwrap().write_all(b"\x1b[1;1R");
                }
                s.lock().unwrap().process(bytes);
                r.lock().unwrap().extend_from_slice(bytes);
            }
        });
        Pty {
            screen,
            raw,
            writer,
            master: pair.master,
            child,
            _dir: dir,
        }
    }

    fn send(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, what: &str) {
        let end = Instant::now() + DEADLINE;
        while Instant::now() < end {
            if self.contents().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "timed out waiting for {what:?}; screen:\n{}",
            self.contents()
        );
    }

    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let end = Instant::now() + DEADLINE;
        while Instant::now() < end {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("the session did not exit; screen:\n{}", self.contents());
    }

    /// Waits for the reader to see everything the process wrote before it exited.
    fn wait_output(&self, what: &[u8]) {
        let end = Instant::now() + DEADLINE;
        while Instant::now() < end {
            if contains(&self.raw.lock().unwrap(), what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("output never contained {:?}", String::from_utf8_lossy(what));
    }

    /// After exit: cooked mode, main screen, keyboard flags popped, modes off.
    fn assert_restored(&self) {
        self.wait_output(b"\x1b[?1049l");
        let raw = self.raw.lock().unwrap().clone();
        let last = |pat: &[u8]| rfind(&raw, pat);
        assert!(
            last(b"\x1b[?1049l") > last(b"\x1b[?1049h"),
            "left the alternate screen"
        );
        assert!(
            last(b"\x1b[<1u") > last(b"\x1b[>1u"),
            "keyboard flags popped"
        );
        assert!(
            last(b"\x1b[?2004l") > last(b"\x1b[?2004h"),
            "bracketed paste off"
        );
        assert!(
            last(b"\x1b[?1000l") >= last(b"\x1b[?1000h"),
            "mouse capture off"
        );
        assert!(
            !self.screen.lock().unwrap().screen().alternate_screen(),
            "on the main screen"
        );
        let fd = self.master.as_raw_fd().expect("a unix pty");
        // SAFETY: tcgetattr only writes into the struct we pass, for a descriptor we own.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(fd, &mut t) }, 0);
        assert!(
            t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO != 0,
            "cooked mode"
        );
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

fn slow(reply: MockReply, ms: u64) -> MockReply {
    reply.with_delay(Duration::from_millis(ms))
}

#[test]
fn prompt_streams_reply_and_ctrl_c_twice_exits_restoring_the_terminal() {
    let server = MockServer::start_in_thread(vec![slow(
        text_reply("Hello **pty** world, streamed.", 3),
        10,
    )]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    pty.send(b"say hello\r");
    pty.wait_for("Hello pty world, streamed.");
    pty.wait_for("idle");
    pty.send(b"\x03");
    pty.wait_for("Ctrl+C again");
    pty.send(b"\x03");
    pty.wait_exit();
    pty.assert_restored();
    pty.wait_for("Hello pty world, streamed.");
    assert!(
        pty.contents().contains("› say hello"),
        "transcript printed:\n{}",
        pty.contents()
    );
}

#[test]
fn the_full_screen_session_forgets_the_key_variable_at_start() {
    let server = MockServer::start_in_thread(vec![]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    let pid = pty.child.process_id().expect("a pid");
    // The tests run as root (or the same user), who may read even a non-dumpable process.
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("HOME="), "{environ}");
    assert!(
        !environ.contains("test-key"),
        "the key is still in: {environ}"
    );
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

#[test]
fn a_server_that_is_down_shows_in_the_header_before_anything_is_typed() {
    // A port nobody listens on: the session-start probe is refused at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join(".minicode/sessions");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.args(["--base-url", &base_url, "--model", "m"]);
    cmd.cwd(dir.path());
    crate::support::binary::isolate_pty(&mut cmd, dir.path());
    let mut pty = Pty::start(cmd, dir);
    pty.wait_for("not reachable");
    pty.wait_for("minicode doctor");
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
    // Nothing was asked, so nothing is left to resume.
    let left: Vec<_> = std::fs::read_dir(&sessions)
        .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|name| name.to_string_lossy().ends_with(".json")),
        "an empty session was left behind: {left:?}"
    );
}

#[test]
fn bash_call_is_approved_with_y() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"echo pty-$((40+2))"}"#)],
            8,
        ),
        text_reply("all done", 2),
    ]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    pty.send(b"run the command\r");
    pty.wait_for("allow bash?");
    // Answer keys count only once the guard has passed, and the hint says when.
    pty.wait_for("y yes");
    pty.send(b"y");
    pty.wait_for("pty-42");
    pty.wait_for("all done");
    pty.wait_for("idle");
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

#[test]
fn always_then_permissions_save_keeps_the_rule_in_the_user_config() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"echo pty-saved --now"}"#)],
            8,
        ),
        text_reply("all done", 2),
    ]);
    let mut pty = Pty::spawn(&server);
    let config = pty._dir.path().join("config/minicode/config.toml");
    pty.wait_for("ask anything");
    pty.send(b"run the command\r");
    pty.wait_for("allow bash?");
    pty.wait_for("y yes");
    pty.send(b"a");
    pty.wait_for("/permissions save keeps");
    pty.wait_for("all done");
    pty.wait_for("idle");
    // "Always" alone writes nothing; the typed command is the confirmation.
    assert!(!config.exists());
    pty.send(b"/permissions save\r");
    pty.wait_for("saved `bash(echo pty-saved*)`");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("allow = [\"bash(echo pty-saved*)\"]"),
        "{text}"
    );
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

#[test]
fn a_long_running_command_shows_live_output_then_its_result() {
    // The command prints, draws a progress line with `\r`, then waits until the test lets it
    // finish by creating a file: the live tail is checked while it certainly still runs.
    let command = "printf 'step 1\\nstep 2\\nstep 3\\n'; \
        for p in 10 50 100; do printf '\\rprogress %s%%' $p; done; echo; \
        while [ ! -e go ]; do sleep 0.05; done; echo finished";
    let args = serde_json::json!({ "command": command }).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("call_1", "bash", &args)], 16),
        text_reply("all done", 2),
    ]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    pty.send(b"run the long command\r");
    pty.wait_for("y yes");
    pty.send(b"y");
    // Live: the last lines under the call, the progress line in its latest state only, and
    // the clock moving.
    pty.wait_for("│ progress 100%");
    pty.wait_for("running 1s");
    let live = pty.contents();
    assert!(live.contains("│ step 3"), "{live}");
    assert!(!live.contains("progress 10%"), "{live}");
    std::fs::write(pty._dir.path().join("go"), "").unwrap();
    pty.wait_for("all done");
    pty.wait_for("idle");
    let done = pty.contents();
    assert!(done.contains("✓ bash"), "{done}");
    assert!(!done.contains("running "), "the live tail is gone: {done}");
    assert!(done.contains("step 1"), "the result replaced it: {done}");
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

#[test]
fn scrolling_and_resize_while_streaming_then_esc_interrupts() {
    let long: String = (1..=400).map(|i| format!("row {i}\n\n")).collect();
    let server = MockServer::start_in_thread(vec![slow(text_reply(&long, 8), 15)]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    pty.send(b"stream a lot\r");
    pty.wait_for("row 40");
    pty.send(b"\x1b[5~");
    pty.wait_for("more below");
    // SGR mouse wheel up at column 5, row 5.
    pty.send(b"\x1b[<64;5;5M");
    pty.wait_for("more below");
    pty.master.resize(size(24, 80)).unwrap();
    pty.screen.lock().unwrap().screen_mut().set_size(24, 80);
    pty.send(b"\x1b[F");
    pty.wait_for("streaming");
    pty.send(b"\x1b");
    pty.wait_for("interrupted");
    pty.wait_for("idle");
    pty.send(b"\x03");
    pty.wait_for("Ctrl+C again");
    pty.send(b"\x03");
    pty.wait_exit();
    pty.assert_restored();
}

/// The process state letter from /proc/<pid>/stat ('T' when stopped).
fn process_state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(") ")
        .next()
        .and_then(|rest| rest.chars().next())
        .unwrap_or('?')
}

#[test]
fn ctrl_z_restores_the_terminal_and_resume_takes_it_back() {
    let server = MockServer::start_in_thread(vec![text_reply("back in business", 4)]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    let pid = pty.child.process_id().expect("a pid");
    pty.send(b"\x1a");
    let end = Instant::now() + DEADLINE;
    while process_state(pid) != 'T' {
        assert!(Instant::now() < end, "the session never stopped");
        std::thread::sleep(Duration::from_millis(20));
    }
    pty.assert_restored();
    // Taken before the signal: a resumed session may redraw before this thread runs again.
    let raw_len = pty.raw.lock().unwrap().len();
    // SAFETY: kill only sends a signal to the child we started.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let end = Instant::now() + DEADLINE;
    while !contains(&pty.raw.lock().unwrap()[raw_len..], b"\x1b[?1049h") {
        assert!(
            Instant::now() < end,
            "the alternate screen was not taken back"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    pty.send(b"hello again\r");
    pty.wait_for("back in business");
    pty.wait_for("idle");
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

#[test]
fn sigterm_restores_the_terminal_and_exits_1() {
    let server = MockServer::start_in_thread(vec![]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    let pid = pty.child.process_id().expect("a pid");
    // SAFETY: kill only sends a signal to the child we started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = pty.wait_exit();
    assert_eq!(status.exit_code(), 1);
    pty.assert_restored();
}

#[test]
fn hostile_reply_reaches_screen_and_clipboard_inert() {
    // Sequences that would set the title and the clipboard, use the 8-bit CSI, reverse text.
    let reply =
        "evil \x1b]0;reply-title\x07 \x1b]52;c;ZXZpbA==\x07 \u{9b}31m \u{202e}desrever done";
    let server = MockServer::start_in_thread(vec![text_reply(reply, 3)]);
    let mut pty = Pty::spawn(&server);
    pty.wait_for("ask anything");
    pty.send(b"say something\r");
    pty.wait_for("desrever");
    pty.wait_for("␛]0;reply-title");
    pty.send(b"/copy\r");
    pty.wait_for("copied the last reply");
    let raw = pty.raw.lock().unwrap().clone();
    for hostile in [
        &b"\x1b]0;reply-title"[..],
        b"\x1b]52;c;ZXZpbA==",
        "\u{9b}".as_bytes(),
        "\u{202e}".as_bytes(),
    ] {
        assert!(
            !contains(&raw, hostile),
            "{:?} reached the terminal",
            String::from_utf8_lossy(hostile)
        );
    }
    // Our own OSC 52 carries the reply without any control character.
    let start = rfind(&raw, b"\x1b]52;c;").expect("an OSC 52 sequence") + 7;
    let len = raw[start..].iter().position(|&b| b == 0x07).unwrap();
    use base64::Engine;
    let copied = base64::engine::general_purpose::STANDARD
        .decode(&raw[start..start + len])
        .unwrap();
    let copied = String::from_utf8(copied).unwrap();
    assert!(copied.starts_with("evil ␛]0;reply-title"), "{copied:?}");
    assert!(
        !copied.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{copied:?}"
    );
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

/// An untrusted workspace whose config points at `evil`, with the user's own server and key in
/// the user config; minicode started in it with no prompt (the full-screen session).
fn untrusted_session(user: &MockServer, evil: &MockServer) -> (Pty, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (project, home) = (base.join("project"), base.join("home"));
    std::fs::create_dir_all(project.join(".minicode")).unwrap();
    std::fs::write(
        project.join(".minicode/config.toml"),
        format!("[model]\nbase_url = \"{}\"\n", evil.base_url()),
    )
    .unwrap();
    let user_file = crate::support::user_config::path(&home);
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(
        &user_file,
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"m\"\napi_key = \"sk-user-key-33\"\n",
            user.base_url()
        ),
    )
    .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.cwd(&project);
    crate::support::binary::isolate_pty(&mut cmd, &home);
    let project_text = project.to_str().unwrap().to_string();
    (Pty::start(cmd, dir), user_file, project_text)
}

#[test]
fn untrusted_workspace_asks_first_and_run_without_keeps_its_server_silent() {
    let user = MockServer::start_in_thread(vec![text_reply("from your own server", 4)]);
    let evil = MockServer::start_in_thread(vec![]);
    let (mut pty, user_file, _) = untrusted_session(&user, &evil);
    pty.wait_for("This workspace is not trusted");
    pty.wait_for("model.base_url");
    pty.wait_for("default: run without");
    pty.send(b"r");
    pty.wait_for("ask anything");
    pty.send(b"hi\r");
    pty.wait_for("from your own server");
    pty.send(b"\x03");
    pty.wait_for("Ctrl+C again");
    pty.send(b"\x03");
    pty.wait_exit();
    pty.assert_restored();
    assert_eq!(
        evil.connections_accepted(),
        0,
        "the workspace's server heard nothing"
    );
    let text = std::fs::read_to_string(user_file).unwrap();
    assert!(
        !text.contains("trusted_workspaces"),
        "nothing recorded: {text}"
    );
}

#[test]
fn untrusted_workspace_trusted_from_the_question_is_recorded() {
    let user = MockServer::start_in_thread(vec![]);
    let evil = MockServer::start_in_thread(vec![]);
    let (mut pty, user_file, project) = untrusted_session(&user, &evil);
    pty.wait_for("This workspace is not trusted");
    pty.wait_for("default: run without");
    pty.send(b"t");
    pty.wait_for("ask anything");
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
    let text = std::fs::read_to_string(user_file).unwrap();
    assert!(
        text.contains("trusted_workspaces = [") && text.contains(&format!("path = {project:?}")),
        "{text}"
    );
    assert!(
        text.contains("api_key = \"sk-user-key-33\""),
        "the rest is kept: {text}"
    );
}

#[test]
fn keys_typed_before_the_trust_question_trust_nothing() {
    let user = MockServer::start_in_thread(vec![]);
    let evil = MockServer::start_in_thread(vec![]);
    let (mut pty, user_file, _) = untrusted_session(&user, &evil);
    let before = std::fs::read_to_string(&user_file).unwrap();
    // Typed at once, before the question is drawn: a `t`, Enter, arrows.
    pty.send(b"t");
    pty.send(b"tt\r\x1b[At\r");
    pty.wait_for("This workspace is not trusted");
    pty.wait_for("lets its config choose the server that receives your API key");
    pty.wait_for("default: run without");
    pty.send(b"q");
    let status = pty.wait_exit();
    assert_eq!(status.exit_code(), 2);
    pty.assert_restored();
    assert_eq!(
        evil.connections_accepted(),
        0,
        "the repository's server heard nothing"
    );
    assert_eq!(user.connections_accepted(), 0);
    let after = std::fs::read_to_string(&user_file).unwrap();
    assert_eq!(before, after, "the user config is unchanged");
}

/// A workspace trusted with `minicode trust` while its config pointed at `first`, whose config
/// now points at `second`; the full-screen session started in it.
fn changed_trusted_session(user: &MockServer, first: &MockServer, second: &MockServer) -> Pty {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (project, home) = (base.join("project"), base.join("home"));
    std::fs::create_dir_all(project.join(".minicode")).unwrap();
    let point_at = |server: &MockServer| {
        std::fs::write(
            project.join(".minicode/config.toml"),
            format!("[model]\nbase_url = \"{}\"\n", server.base_url()),
        )
        .unwrap();
    };
    point_at(first);
    let user_file = crate::support::user_config::path(&home);
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(
        &user_file,
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
            user.base_url()
        ),
    )
    .unwrap();
    let trusted = crate::support::binary::command_with_home(&project, &home)
        .arg("trust")
        .output()
        .unwrap();
    assert_eq!(trusted.status.code(), Some(0));
    // A later pull points the trusted config at another server.
    point_at(second);
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.cwd(&project);
    crate::support::binary::isolate_pty(&mut cmd, &home);
    Pty::start(cmd, dir)
}

#[test]
fn a_trusted_workspace_whose_server_changed_is_asked_about_again() {
    let user = MockServer::start_in_thread(vec![text_reply("from your own server", 4)]);
    let first = MockServer::start_in_thread(vec![]);
    let second = MockServer::start_in_thread(vec![]);
    let mut pty = changed_trusted_session(&user, &first, &second);
    pty.wait_for("It was trusted before");
    pty.wait_for("`model.base_url` changed");
    pty.wait_for("default: run without");
    pty.send(b"r");
    pty.wait_for("ask anything");
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
    assert_eq!(
        second.connections_accepted(),
        0,
        "the new server heard nothing"
    );
    assert_eq!(first.connections_accepted(), 0);
}

#[test]
fn telemetry_export_failures_never_reach_the_screen() {
    // A collector that refuses every connection, exported to every 10 ms during the session.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let server = MockServer::start_in_thread(vec![slow(text_reply("Hello pty world.", 3), 10)]);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join(".minicode/logs");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.args(["--base-url", &server.base_url(), "--model", "m"]);
    cmd.cwd(dir.path());
    crate::support::binary::isolate_pty(&mut cmd, dir.path());
    cmd.env("XDG_CONFIG_HOME", dir.path().join("config"));
    cmd.env("MINICODE_API_KEY", "test-key");
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
    cmd.env("OTEL_BSP_SCHEDULE_DELAY", "10");
    let mut pty = Pty::start(cmd, dir);
    pty.wait_for("ask anything");
    pty.send(b"say hello\r");
    pty.wait_for("Hello pty world.");
    pty.wait_for("idle");
    // The failed export was reported, in the log.
    let log_has_warning = || {
        std::fs::read_dir(&logs).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("telemetry: ")))
        })
    };
    assert!(
        crate::support::mock_openai::wait_until_blocking(DEADLINE, log_has_warning),
        "no export failure in the log"
    );
    pty.send(b"\x03");
    pty.wait_for("Ctrl+C again");
    pty.send(b"\x03");
    pty.wait_exit();
    pty.assert_restored();
    let raw = String::from_utf8_lossy(&pty.raw.lock().unwrap()).to_lowercase();
    for word in ["telemetry", "export", "refused", "otlp"] {
        assert!(!raw.contains(word), "{word:?} reached the terminal");
    }
}

#[test]
fn without_any_sandbox_on_the_platform_a_command_is_asked_about_even_under_yes() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"echo pty-$((40+2))"}"#)],
            8,
        ),
        text_reply("all done", 2),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
    cmd.args(["--base-url", &server.base_url(), "--model", "m", "--yes"]);
    cmd.cwd(dir.path());
    crate::support::binary::isolate_pty(&mut cmd, dir.path());
    cmd.env("XDG_CONFIG_HOME", dir.path().join("config"));
    cmd.env("MINICODE_API_KEY", "test-key");
    // The documented test switch: the helper reports that this platform has no sandbox.
    cmd.env("MINICODE_TEST_SANDBOX_MISSING", "platform");
    let mut pty = Pty::start(cmd, dir);
    pty.wait_for("ask anything");
    pty.send(b"run the command\r");
    pty.wait_for("outside the sandbox");
    pty.wait_for("y yes");
    pty.send(b"y");
    pty.wait_for("pty-42");
    pty.wait_for("all done");
    pty.wait_for("idle");
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

#[test]
fn hooks_command_lists_the_users_hooks_with_their_file_and_that_they_run() {
    let server = MockServer::start_in_thread(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config/minicode");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"./check.sh\"\ntimeout = 5\n",
    )
    .unwrap();
    let mut pty = Pty::spawn_in(&server, dir);
    pty.wait_for("ask anything");
    pty.send(b"/hooks\r");
    pty.wait_for("PreToolUse (bash) `./check.sh` · timeout 5 s · user:");
    // The file's path may wrap the line; what follows it says the hook runs.
    pty.wait_for("runs");
    assert!(!pty.contents().contains("not approved"));
    pty.send(b"\x04");
    pty.wait_exit();
    pty.assert_restored();
}

#[test]
fn bang_command_then_slash_resume_picks_a_saved_session_and_exit_restores() {
    let server = MockServer::start_in_thread(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let mut saved = minicode::session::Session::create(dir.path()).unwrap();
    saved.push(minicode::chat::Message::user("port the parser"));
    saved.push(minicode::chat::Message::assistant(
        Some("ported it to nom".into()),
        Vec::new(),
    ));
    saved.save().unwrap();
    drop(saved);
    let mut pty = Pty::spawn_in(&server, dir);
    pty.wait_for("ask anything");
    // The user's own command runs (sandboxed, unasked) and shows its output.
    pty.send(b"!echo shell-$((6*7))\r");
    pty.wait_for("shell-42");
    pty.wait_for("idle");
    // The picker lists the saved session; Enter brings its history into this window.
    pty.send(b"/resume\r");
    pty.wait_for("resume a session");
    pty.wait_for("port the parser");
    pty.send(b"\r");
    pty.wait_for("ported it to nom");
    pty.send(b"/exit\r");
    pty.wait_exit();
    pty.assert_restored();
}

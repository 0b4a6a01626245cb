//! `minicode serve` driven over its Unix socket as a process, against the mock OpenAI server:
//! the handshake, allowed roots, the message limit, identical event sequences for two
//! subscribers, the first answer to an approval winning, replay after a reconnect, one run at
//! a time per session and runs in parallel across sessions, and restart safety (SIGKILL with
//! an approval pending, and during a running bash call). One PTY test shows `attach`.

use minicode::protocol::{RunMarker, TurnEnd};
use serde_json::{Value, json};
use std::path::Path;

use crate::support::daemon::{Client, DEADLINE, Daemon, kinds, layout};
use crate::support::mock_openai::{
    Gate, MockServer, text_reply, tool_calls_reply, wait_until_blocking,
};

fn bash_call(id: &str, command: &str) -> (String, String, String) {
    (
        id.to_string(),
        "bash".to_string(),
        json!({ "command": command }).to_string(),
    )
}

fn tool_reply(calls: &[(String, String, String)]) -> crate::support::mock_openai::MockReply {
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    tool_calls_reply(&calls, 7)
}

fn sequences(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["sequence"].as_u64().unwrap())
        .collect()
}

#[test]
fn handshake_requires_the_token_first() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    // Anything before the handshake: refused, then the connection closes.
    let mut early = Client::connect(&daemon.socket);
    assert_eq!(early.error_code("session.list", json!({})), -32001);
    assert!(
        early.read().is_none(),
        "closed after a request before the handshake"
    );
    // A wrong token: refused and closed.
    let mut wrong = Client::connect(&daemon.socket);
    assert_eq!(
        wrong.error_code("handshake", json!({"token": "not-the-token"})),
        -32001
    );
    assert!(wrong.read().is_none(), "closed after a wrong token");
    // The right one: accepted, and methods work.
    let mut client = daemon.client();
    assert_eq!(client.ok("session.list", json!({}))["sessions"], json!([]));
    // The token file and the socket are private.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&daemon.socket), 0o600);
    assert_eq!(mode(&daemon.socket.with_file_name("token")), 0o600);
    assert_eq!(mode(daemon.socket.parent().unwrap()), 0o700);
}

#[test]
fn a_token_near_the_right_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let right = daemon.token.trim().to_string();
    let mut last_changed = right.clone();
    let last = last_changed.pop().unwrap();
    last_changed.push(if last == 'a' { 'b' } else { 'a' });
    let near = [
        right[..right.len() - 1].to_string(),
        format!("{right}x"),
        last_changed,
        String::new(),
    ];
    for token in near {
        let mut client = Client::connect(&daemon.socket);
        assert_eq!(
            client.error_code("handshake", json!({ "token": token })),
            -32001,
            "{token:?} refused"
        );
        assert!(client.read().is_none(), "closed after {token:?}");
    }
    // The right one still opens the door.
    let mut client = daemon.client();
    assert_eq!(client.ok("session.list", json!({}))["sessions"], json!([]));
}

#[test]
fn a_token_file_given_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let token_file = dir.path().join("my-token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &server,
        &["--token-file", token_file.to_str().unwrap()],
    );
    assert_eq!(daemon.token.trim(), "s3cret-token");
    let mut client = daemon.client();
    client.ok("session.list", json!({}));
}

#[test]
fn workspace_outside_every_allowed_root_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    let open = |client: &mut Client, path: &Path| {
        client.error_code(
            "session.open",
            json!({"workspace": path.display().to_string()}),
        )
    };
    assert_eq!(open(&mut client, outside.path()), -32002);
    // `..` does not climb out either.
    let (_, ws) = layout(dir.path());
    assert_eq!(open(&mut client, &ws.join("..")), -32002);
    // Inside: fine.
    std::fs::create_dir(ws.join("project")).unwrap();
    client.open(&ws.join("project"), None);
}

#[test]
fn an_oversize_message_is_refused_and_the_connection_closed() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let daemon = Daemon::start(dir.path(), &server, &["--max-message-bytes", "4096"]);
    let mut client = daemon.client();
    let prompt = "x".repeat(10_000);
    let line =
        json!({"jsonrpc": "2.0", "id": 9, "method": "session.list", "params": {"p": prompt}});
    // The daemon may close before it read everything we send.
    let _ = client.send_raw(format!("{line}\n").as_bytes());
    let answer = client.read().expect("an error answer");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096")
    );
    assert!(client.read().is_none(), "closed after an oversize message");
}

#[test]
fn two_subscribers_see_identical_event_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("Hello to both of you.", 3)]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut a = daemon.client();
    let mut b = daemon.client();
    let session = a.open(&ws, None);
    a.subscribe(&session, 0);
    b.subscribe(&session, 0);
    a.start_run(&session, "greet us");
    let seen_a = a.events_until("run_ended");
    let seen_b = b.events_until("run_ended");
    assert_eq!(seen_a, seen_b);
    let seqs = sequences(&seen_a);
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "1, 2, 3…"
    );
    let k = kinds(&seen_a);
    assert_eq!(k[0], "session_configured");
    let started = k.iter().position(|t| t == "run_started").unwrap();
    assert_eq!(k[started + 1], "turn_started");
    assert!(k.contains(&"text_delta".to_string()));
    let ended = seen_a.last().unwrap();
    assert_eq!(ended["event"]["end"]["status"], "completed");
    // Every event of the run carries its id.
    let run_id = seen_a[started]["run_id"].clone();
    assert!(seen_a[started..].iter().all(|e| e["run_id"] == run_id));
}

#[test]
fn the_first_answer_to_an_approval_wins_and_the_other_client_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![
        tool_reply(&[bash_call("call_1", "echo ran >> count.txt")]),
        text_reply("Done.", 5),
    ]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut a = daemon.client();
    let mut b = daemon.client();
    let session = a.open(&ws, None);
    a.subscribe(&session, 0);
    b.subscribe(&session, 0);
    a.start_run(&session, "count");
    a.events_until("approval_requested");
    b.events_until("approval_requested");
    let approve = json!({"decision": "approve"});
    let answer = b.decide(&session, "call_1", approve.clone());
    assert!(answer.get("result").is_some(), "{answer}");
    let answer = a.decide(&session, "call_1", approve);
    assert_eq!(answer["error"]["code"], -32005, "{answer}");
    for client in [&mut a, &mut b] {
        let rest = client.events_until("run_ended");
        let decided = rest
            .iter()
            .find(|e| e["event"]["type"] == "approval_decided")
            .expect("both are told of the decision");
        assert_eq!(decided["event"]["decision"]["decision"], "approve");
        assert_eq!(rest.last().unwrap()["event"]["end"]["status"], "completed");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("count.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn run_markers_read_back_as_the_protocols_run_marker() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("Marked.", 3)]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    let run_id = client.start_run(&session, "mark the run");
    let markers: Vec<RunMarker> = client
        .events_until("run_ended")
        .iter()
        .filter(|e| e["event"]["type"].as_str().unwrap().starts_with("run_"))
        .map(|e| serde_json::from_value(e["event"].clone()).expect("a run marker"))
        .collect();
    assert_eq!(
        markers,
        [
            RunMarker::RunStarted {
                run_id: run_id.clone(),
                prompt: Some("mark the run".into()),
                goal_id: None,
            },
            RunMarker::RunEnded {
                run_id,
                end: TurnEnd::Completed,
            },
        ]
    );
}

#[test]
fn approval_decide_reads_the_protocols_decision_and_refuses_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![
        tool_reply(&[bash_call("call_1", "echo ran >> count.txt")]),
        text_reply("Understood.", 5),
    ]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    client.start_run(&session, "count");
    client.events_until("approval_requested");
    for refused in [
        json!({"decision": "maybe"}),
        json!({"decision": "no_terminal"}),
        json!({}),
        json!({"decision": "deny", "reason": "no", "extra": 1}),
    ] {
        let answer = client.decide(&session, "call_1", refused.clone());
        assert_eq!(answer["error"]["code"], -32602, "{refused}: {answer}");
    }
    let answer = client.decide(
        &session,
        "call_1",
        json!({"decision": "deny", "reason": "not now"}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
    let rest = client.events_until("run_ended");
    let decided = rest
        .iter()
        .find(|e| e["event"]["type"] == "approval_decided")
        .expect("the decision is announced");
    assert_eq!(
        decided["event"]["decision"],
        json!({"decision": "deny", "reason": "not now"})
    );
    assert!(!ws.join("count.txt").exists(), "a denied call never runs");
}

#[test]
fn reconnecting_with_after_sequence_replays_exactly_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("A reply worth replaying.", 2)]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut watcher = daemon.client();
    let session = watcher.open(&ws, None);
    watcher.subscribe(&session, 0);
    // The client that starts the run leaves right away: the run goes on without it.
    let mut leaver = daemon.client();
    leaver.subscribe(&session, 0);
    let first = leaver.next_event();
    let seen_by_leaver = first["sequence"].as_u64().unwrap();
    leaver.start_run(&session, "talk");
    drop(leaver);
    let all = watcher.events_until("run_ended");
    assert_eq!(all.last().unwrap()["event"]["end"]["status"], "completed");
    let mut back = daemon.client();
    back.subscribe(&session, seen_by_leaver);
    let last = all.last().unwrap()["sequence"].as_u64().unwrap();
    let mut replayed = Vec::new();
    while replayed.len() < (last - seen_by_leaver) as usize {
        replayed.push(back.next_event());
    }
    assert_eq!(replayed, all[seen_by_leaver as usize..].to_vec());
    // Beyond the last event is an error, not a hang.
    assert_eq!(
        back.error_code(
            "session.subscribe",
            json!({"session_id": session, "after_sequence": last + 5})
        ),
        -32602
    );
}

#[test]
fn a_second_run_in_one_session_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![text_reply("slow", 2).after(&gate)]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    let run = client.start_run(&session, "first");
    let code = client.op_error(&session, json!({"type": "submit", "text": "second"}));
    assert_eq!(code, -32004);
    gate.open();
    let events = client.events_until("run_ended");
    assert_eq!(events.last().unwrap()["run_id"], json!(run));
    // Once it ended, the next one is accepted.
    assert!(
        client
            .op(&session, json!({"type": "submit", "text": "third"}))
            .get("result")
            .is_some()
    );
}

#[test]
fn runs_in_two_sessions_proceed_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![
        text_reply("one", 2).after(&gate),
        text_reply("two", 2).after(&gate),
    ]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let first = client.open(&ws, None);
    let second = client.open(&ws, None);
    assert_ne!(first, second);
    let mut a = daemon.client();
    a.subscribe(&first, 0);
    let mut b = daemon.client();
    b.subscribe(&second, 0);
    client.start_run(&first, "one");
    client.start_run(&second, "two");
    // Both requests are at the model server at once.
    assert!(wait_until_blocking(DEADLINE, || server.in_flight() == 2));
    gate.open();
    gate.open();
    for c in [&mut a, &mut b] {
        let events = c.events_until("run_ended");
        assert_eq!(
            events.last().unwrap()["event"]["end"]["status"],
            "completed"
        );
    }
    let listed = client.ok("session.list", json!({}));
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
}

#[test]
fn run_cancel_ends_the_run_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![text_reply("never", 2).after(&gate)]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    let run = client.start_run(&session, "wait");
    client.events_until("model_request_started");
    let cancelled = client.op_ok(&session, json!({"type": "interrupt"}));
    assert_eq!(cancelled["run_id"], json!(run));
    let events = client.events_until("run_ended");
    assert!(kinds(&events).contains(&"cancel_requested".to_string()));
    assert_eq!(
        events.last().unwrap()["event"]["end"]["status"],
        "interrupted"
    );
    assert_eq!(
        client.op_error(&session, json!({"type": "interrupt"})),
        -32007
    );
    gate.open();
}

#[test]
fn an_approval_pending_at_sigkill_survives_the_restart_and_the_tool_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![
        tool_reply(&[bash_call("call_1", "echo ran >> count.txt")]),
        text_reply("Counted once.", 4),
    ]);
    let (_, ws) = layout(dir.path());
    let mut daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    let run = client.start_run(&session, "count");
    let before = client.events_until("approval_requested");
    let last_before = before.last().unwrap()["sequence"].as_u64().unwrap();
    daemon.kill();
    assert!(!ws.join("count.txt").exists());

    let daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    // The restarted daemon reopened the session by itself, its run still open.
    let listed = client.ok("session.list", json!({}));
    assert_eq!(
        listed["sessions"][0]["session_id"],
        json!(session),
        "{listed}"
    );
    assert_eq!(listed["sessions"][0]["run_id"], json!(run));
    let info = client.ok(
        "session.open",
        json!({"workspace": ws.display().to_string(), "session_id": session}),
    );
    assert_eq!(info["run_id"], json!(run), "the run is still open");
    client.subscribe(&session, last_before);
    let resumed = client.events_until("approval_requested");
    let k = kinds(&resumed);
    assert!(k.contains(&"run_resumed".to_string()), "{k:?}");
    assert_eq!(resumed.last().unwrap()["event"]["call"], "call_1");
    assert_eq!(resumed[0]["sequence"].as_u64().unwrap(), last_before + 1);
    let answer = client.decide(&session, "call_1", json!({"decision": "approve"}));
    assert!(answer.get("result").is_some(), "{answer}");
    let rest = client.events_until("run_ended");
    assert_eq!(rest.last().unwrap()["event"]["end"]["status"], "completed");
    assert_eq!(rest.last().unwrap()["run_id"], json!(run));
    assert_eq!(
        std::fs::read_to_string(ws.join("count.txt")).unwrap(),
        "ran\n",
        "the tool ran exactly once"
    );
    // The whole log, across both daemons, replays as one gapless sequence.
    let mut replay = daemon.client();
    replay.subscribe(&session, 0);
    let all = replay.events_until("run_ended");
    let last = all.last().unwrap()["sequence"].as_u64().unwrap();
    assert_eq!(sequences(&all), (1..=last).collect::<Vec<_>>());
}

#[test]
fn sigkill_during_a_bash_call_records_execution_unknown_and_never_reruns_it() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo $$ > pid.txt; echo started >> ran.txt; sleep 30";
    let server = MockServer::start_in_thread(vec![
        tool_reply(&[bash_call("call_1", command)]),
        text_reply("should never be asked", 4),
    ]);
    let (_, ws) = layout(dir.path());
    let mut daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    let run = client.start_run(&session, "run it");
    client.events_until("approval_requested");
    let answer = client.decide(&session, "call_1", json!({"decision": "approve"}));
    assert!(answer.get("result").is_some(), "{answer}");
    // Wait for what the command wrote, not for the file: `>>` creates it before `echo`
    // writes, and the kill below (the supervisor then kills the command's group at once) may
    // fall between the two.
    let ran = ws.join("ran.txt");
    let wrote = || std::fs::read_to_string(&ran).is_ok_and(|text| text == "started\n");
    assert!(wait_until_blocking(DEADLINE, wrote));
    daemon.kill();
    let requests_before = server.request_count();

    let daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    client.open(&ws, Some(&session));
    client.subscribe(&session, 0);
    let all = client.events_until("run_ended");
    let ended = all
        .iter()
        .rev()
        .find(|e| e["event"]["type"] == "tool_call_ended")
        .expect("the call is announced as ended");
    assert_eq!(ended["event"]["status"], "execution_unknown");
    assert_eq!(ended["event"]["call"], "call_1");
    let last = all.last().unwrap();
    assert_eq!(last["run_id"], json!(run));
    assert_eq!(last["event"]["end"]["status"], "failed");
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "started\n");
    assert_eq!(
        server.request_count(),
        requests_before,
        "no new model request"
    );
    // The session is usable afterwards and the history says what happened.
    let history =
        std::fs::read_to_string(ws.join(format!(".minicode/sessions/{session}.json"))).unwrap();
    assert!(history.contains("execution_unknown"));
    if let Ok(pid) = std::fs::read_to_string(ws.join("pid.txt"))
        && let Ok(pid) = pid.trim().parse::<i32>()
    {
        // SAFETY: signalling the process group of the command the test started.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
}

#[test]
fn a_cancel_recorded_before_a_crash_ends_the_run_cancelled_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![tool_reply(&[bash_call(
        "call_1",
        "echo ran >> count.txt",
    )])]);
    let (_, ws) = layout(dir.path());
    let mut daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    let run = client.start_run(&session, "count");
    let seen = client.events_until("approval_requested");
    daemon.kill();
    // The daemon died right after writing a cancel to the log, before the core acted on
    // it: the log's last line is that record (the cancel is written before the core is told).
    let last = seen.last().unwrap()["sequence"].as_u64().unwrap();
    let events_dir = ws.join(".minicode/events").join(&session);
    let mut segments: Vec<_> = std::fs::read_dir(&events_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl") && p.file_name().unwrap() != "calls.jsonl"
        })
        .collect();
    segments.sort();
    let record = json!({"jsonrpc": "2.0", "method": "event", "params": {
        "session_id": session, "sequence": last + 1, "run_id": run,
        "event": {"type": "cancel_requested", "run_id": run}}});
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(segments.last().unwrap())
        .unwrap();
    writeln!(file, "{record}").unwrap();
    drop(file);

    let daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    client.open(&ws, Some(&session));
    client.subscribe(&session, last);
    let after = client.events_until("run_ended");
    assert_eq!(
        kinds(&after)[..2],
        ["cancel_requested".to_string(), "run_resumed".to_string()]
    );
    assert_eq!(
        after.last().unwrap()["event"]["end"]["status"],
        "interrupted"
    );
    assert!(
        !kinds(&after).contains(&"approval_requested".to_string()),
        "not asked again"
    );
    assert!(
        !ws.join("count.txt").exists(),
        "a cancelled call never runs"
    );
}

/// The real sequence, end to end: an `interrupt` answered, SIGKILL at once. Whether the core had
/// ended the run before the kill or not (the timing varies), after the restart the run is over,
/// interrupted, the call it was asking about never ran and nobody is asked about it again.
#[test]
fn a_cancel_answered_just_before_sigkill_leaves_the_run_cancelled_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![
        tool_reply(&[bash_call("call_1", "echo ran >> count.txt")]),
        text_reply("should never be asked", 4),
    ]);
    let (_, ws) = layout(dir.path());
    let mut daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    let run = client.start_run(&session, "count");
    client.events_until("approval_requested");
    let cancelled = client.op_ok(&session, json!({"type": "interrupt"}));
    assert_eq!(cancelled["run_id"], json!(run));
    daemon.kill();
    let requests_before = server.request_count();

    let daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    client.open(&ws, Some(&session));
    client.subscribe(&session, 0);
    let all = client.events_until("run_ended");
    let k = kinds(&all);
    let cancelled = k.iter().position(|t| t == "cancel_requested").unwrap();
    assert!(
        !k[cancelled..].contains(&"approval_requested".to_string()),
        "not asked again: {k:?}"
    );
    let ended = all.last().unwrap();
    assert_eq!(ended["run_id"], json!(run));
    assert_eq!(ended["event"]["end"]["status"], "interrupted");
    assert!(!ws.join("count.txt").exists(), "the call never ran");
    let listed = client.ok("session.list", json!({}));
    assert_eq!(listed["sessions"][0]["run_id"], Value::Null, "{listed}");
    assert_eq!(
        server.request_count(),
        requests_before,
        "no model request after the cancel"
    );
}

/// `minicode attach` in a pseudo-terminal, on a session whose run is in progress: it shows the
/// prompt another client sent and the reply as it arrives, and leaving it detaches (the
/// session stays open in the daemon). The session is named by its short id.
#[test]
fn attach_shows_a_running_session_named_by_its_short_id() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![
        text_reply("Hello from the daemon run.", 4).after(&gate),
    ]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    client.start_run(&session, "watch this from elsewhere");
    client.events_until("model_request_started");

    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_minicode"));
    // The short id the screen shows names the session as well as the full one.
    cmd.args(["attach", "--session", &session[..8], "--socket"]);
    cmd.arg(&daemon.socket);
    cmd.cwd(&ws);
    crate::support::binary::isolate_pty(&mut cmd, &dir.path().join("home"));
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let screen = Arc::new(Mutex::new(vt100::Parser::new(30, 100, 0)));
    let raw = Arc::new(Mutex::new(Vec::<u8>::new()));
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
            let has = |pat: &[u8]| bytes.windows(pat.len()).any(|x| x == pat);
            // Answer the terminal queries the UI makes (keyboard flags, cursor position).
            if has(b"\x1b[?u") {
                let _ = w.lock().unwrap().write_all(b"\x1b[?0u\x1b[?62;22c");
            }
            if has(b"\x1b[6n") {
                let _ = w.lock().unwrap().write_all(b"\x1b[1;1R");
            }
            s.lock().unwrap().process(bytes);
            r.lock().unwrap().extend_from_slice(bytes);
        }
    });
    let wait_for = |what: &str| {
        let end = Instant::now() + DEADLINE;
        while Instant::now() < end {
            if screen.lock().unwrap().screen().contents().contains(what) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!(
            "timed out waiting for {what:?}; screen:\n{}",
            screen.lock().unwrap().screen().contents()
        );
    };
    let send = |bytes: &[u8]| {
        let mut w = writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    };
    wait_for("watch this from elsewhere");
    gate.open();
    wait_for("Hello from the daemon run.");
    wait_for("idle");
    send(b"\x03");
    wait_for("Ctrl+C again");
    send(b"\x03");
    let end = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < end, "attach did not exit");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success() || status.exit_code() == 130, "{status:?}");
    // Detaching left the session open in the daemon.
    let listed = client.ok("session.list", json!({}));
    assert_eq!(listed["sessions"][0]["session_id"], json!(session));
    assert_eq!(listed["sessions"][0]["closed"], json!(false));
}

#[test]
fn goal_methods_drive_goal_mode_and_each_round_is_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![
        text_reply("Working on the goal.", 4),
        text_reply("Still working.", 4),
        text_reply("More.", 4),
    ]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    client.op_ok(
        &session,
        json!({"type": "goal", "command": "create", "objective": "tidy the README", "max_rounds": 1}),
    );
    let events = client.events_until("run_ended");
    let k = kinds(&events);
    let created = events
        .iter()
        .find(|e| e["event"]["type"] == "goal_changed")
        .expect("the goal was recorded");
    assert_eq!(created["event"]["change"], "created");
    let round = k.iter().position(|t| t == "goal_round_started").unwrap();
    assert_eq!(k[round + 1], "run_started", "{k:?}");
    let run_started = &events[round + 1]["event"];
    assert_eq!(run_started["goal_id"], created["event"]["goal_id"]);
    assert!(run_started.get("prompt").is_none());
    assert_eq!(k[round + 2], "turn_started");
    // The goal can be read back and paused like from any frontend.
    client.op_ok(&session, json!({"type": "goal", "command": "show"}));
    let status = client.events_until("goal_status");
    assert!(status.last().unwrap()["event"]["goal"]["objective"] == "tidy the README");
    let unknown = client.op(&session, json!({"type": "goal", "command": "launch"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("launch"),
        "{unknown}"
    );
    assert_eq!(
        client.op_error(&session, json!({"type": "goal", "command": "edit"})),
        -32602,
        "edit needs an objective"
    );
}

#[test]
fn listen_serves_loopback_tcp_with_the_token_in_the_runtime_folder() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let (_, ws) = layout(dir.path());
    let runtime = dir.path().join("xdg");
    std::fs::create_dir(&runtime).unwrap();
    let mut cmd = crate::support::binary::command(dir.path());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--allowed-root"])
        .arg(&ws)
        .args(["--base-url", &server.base_url(), "--model", "m"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let addr = crate::support::daemon::tcp_address(&mut child);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let token_file = runtime.join("minicode/token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let stream = std::net::TcpStream::connect(&addr).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let hello =
        json!({"jsonrpc": "2.0", "id": 1, "method": "handshake", "params": {"token": token}});
    writeln!(writer, "{hello}").unwrap();
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"]["server"], "minicode", "{answer}");
    let stop = json!({"jsonrpc": "2.0", "id": 2, "method": "server.shutdown"});
    writeln!(writer, "{stop}").unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "server.shutdown stops the daemon cleanly: {status:?}"
    );
}

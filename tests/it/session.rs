//! Session snapshots: creation, round-trips, listing, locking, validation of damaged files
//! (which must be reported and left byte-identical), repair of an interrupted tool call,
//! recorded tool outcomes, and migration of version 1 and 2 files with a one-time backup.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::support::workspace;
use minicode::chat::{Message, Role, ToolCall, ToolStatus};
use minicode::session::{
    Checkpoint, INTERRUPTED_RESULT, ResultInfo, SNAPSHOT_VERSION, Session, SessionError,
    sessions_dir,
};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: r#"{"command":"ls"}"#.into(),
    }
}

/// A finished exchange: prompt, one tool call with its result, and an answer.
fn exchange(session: &mut Session, prompt: &str, call_id: &str) {
    session.push(Message::user(prompt));
    session.push(Message::assistant(None, vec![call(call_id)]));
    session.push(Message::tool_result(call_id, "file.txt\n"));
    session.push(Message::assistant(Some("done".into()), vec![]));
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Writes a session file by hand (the session is closed, so its lock is free).
fn rewrite(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    f(&mut value);
    fs::write(path, serde_json::to_vec(&value).unwrap()).unwrap();
}

/// Creates a saved session with one exchange and closes it; returns (id, path).
fn saved(ws: &Path) -> (String, PathBuf) {
    let mut s = Session::create(ws).unwrap();
    exchange(&mut s, "list the files\nplease", "call_1");
    s.save().unwrap();
    (s.id().to_string(), s.path().to_path_buf())
}

fn assert_corrupt_and_untouched(ws: &Path, id: &str, path: &Path, needle: &str) {
    let before = fs::read(path).unwrap();
    let err = Session::open(ws, id).unwrap_err();
    match &err {
        SessionError::Corrupt { path: p, reason } => {
            assert_eq!(p, path);
            assert!(reason.contains(needle), "{reason:?} lacks {needle:?}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(err.to_string().contains(&path.display().to_string()));
    assert_eq!(
        fs::read(path).unwrap(),
        before,
        "a corrupt file must be left byte-identical"
    );
}

#[test]
fn create_writes_private_file_at_once() {
    let (_tmp, ws) = workspace();
    let s = Session::create(&ws).unwrap();
    assert!(minicode::session::is_valid_id(s.id()), "{}", s.id());
    assert_eq!(s.path(), sessions_dir(&ws).join(format!("{}.json", s.id())));
    assert!(s.path().is_file());
    assert_eq!(mode(s.path()), 0o600);
    assert_eq!(mode(&sessions_dir(&ws)), 0o700);
    assert_eq!(s.workspace(), ws);
    assert!(s.messages().is_empty());

    let json: serde_json::Value = serde_json::from_slice(&fs::read(s.path()).unwrap()).unwrap();
    assert_eq!(json["version"], SNAPSHOT_VERSION);
    assert_eq!(json["id"], s.id());
    assert_eq!(json["workspace"], ws.to_str().unwrap());
    assert!(json["created"].as_str().unwrap().ends_with('Z'));
    assert!(json["updated"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json["messages"], serde_json::json!([]));
}

#[test]
fn save_and_open_round_trip() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    exchange(&mut s, "hello", "call_1");
    s.totals_mut().turns = 1;
    s.totals_mut().total_tokens = 42;
    s.set_checkpoint(Some(Checkpoint {
        summary: "so far".into(),
        first_kept_index: 4,
    }));
    s.save().unwrap();
    assert_eq!(mode(s.path()), 0o600);
    let id = s.id().to_string();
    let messages = s.messages().to_vec();
    drop(s);

    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), &messages[..]);
    assert_eq!(s.totals().turns, 1);
    assert_eq!(s.totals().total_tokens, 42);
    assert_eq!(s.checkpoint().unwrap().summary, "so far");
    assert!(s.repaired_calls().is_empty());
    // The wire format: content stays null beside tool calls.
    let json: serde_json::Value = serde_json::from_slice(&fs::read(s.path()).unwrap()).unwrap();
    assert!(json["messages"][1]["content"].is_null());
    assert_eq!(
        json["messages"][1]["tool_calls"][0]["function"]["name"],
        "bash"
    );
}

#[test]
fn open_through_a_symlinked_workspace_works() {
    let (_tmp, ws) = workspace();
    let (id, _) = saved(&ws);
    let link_dir = tempfile::tempdir().unwrap();
    let link = link_dir.path().join("ws");
    std::os::unix::fs::symlink(&ws, &link).unwrap();
    let s = Session::open(&link, &id).unwrap();
    assert_eq!(s.workspace(), ws);
}

#[test]
fn list_is_newest_first_with_first_prompt_line() {
    let (_tmp, ws) = workspace();
    assert!(Session::list(&ws).unwrap().is_empty());
    let (old, _) = saved(&ws);
    let mut s = Session::create(&ws).unwrap();
    s.push(Message::user("second task"));
    // Make sure the clock moved on, without a fixed sleep.
    let before = SystemTime::now();
    while SystemTime::now() <= before + Duration::from_millis(2) {
        std::hint::spin_loop();
    }
    s.save().unwrap();
    let new = s.id().to_string();
    drop(s);

    let list = Session::list(&ws).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, new);
    assert_eq!(list[0].first_prompt, "second task");
    assert_eq!(list[1].id, old);
    assert_eq!(list[1].first_prompt, "list the files");
    assert!(list.iter().all(|i| i.problem.is_none()));
    assert!(list[0].updated >= list[1].updated);

    assert_eq!(Session::open_latest(&ws).unwrap().id(), new);
}

#[test]
fn list_reports_corrupt_files_without_failing() {
    let (_tmp, ws) = workspace();
    let (good, _) = saved(&ws);
    let bad = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    let bad_path = sessions_dir(&ws).join(format!("{bad}.json"));
    fs::write(&bad_path, b"{\"version\": 2, \"id\"").unwrap();
    fs::write(sessions_dir(&ws).join("notes.json"), b"ignored").unwrap();
    let list = Session::list(&ws).unwrap();
    assert_eq!(list.len(), 2);
    let broken = list.iter().find(|i| i.id == bad).unwrap();
    assert!(
        broken.problem.as_deref().unwrap().contains("truncated"),
        "{broken:?}"
    );
    assert!(list.iter().any(|i| i.id == good && i.problem.is_none()));
    assert_eq!(fs::read(&bad_path).unwrap(), b"{\"version\": 2, \"id\"");
}

#[test]
fn open_latest_without_sessions_is_not_found() {
    let (_tmp, ws) = workspace();
    assert!(matches!(
        Session::open_latest(&ws),
        Err(SessionError::NotFound { id: None })
    ));
}

#[test]
fn invalid_ids_are_refused() {
    let (_tmp, ws) = workspace();
    let (id, _) = saved(&ws);
    for bad in [
        "",
        "../etc/passwd",
        "/tmp/x.json",
        &format!("{id}.json"),
        &id.to_uppercase(),
        "0b5e2c7a7d4f4d0e9a513c2f8e1d6b90",
        "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b9g",
    ] {
        match Session::open(&ws, bad) {
            Err(SessionError::InvalidId(shown)) => assert_eq!(shown, bad),
            other => panic!("{bad:?}: expected InvalidId, got {other:?}"),
        }
    }
}

#[test]
fn unknown_id_is_not_found() {
    let (_tmp, ws) = workspace();
    let id = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    match Session::open(&ws, id) {
        Err(e @ SessionError::NotFound { .. }) => assert!(e.to_string().contains(id)),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[test]
fn corrupt_file_is_reported_and_left_untouched() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    fs::write(&path, b"{ this is not json").unwrap();
    assert_corrupt_and_untouched(&ws, &id, &path, "line 1");
}

#[test]
fn truncated_file_is_reported_and_left_untouched() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_corrupt_and_untouched(&ws, &id, &path, "truncated");
}

#[test]
fn id_mismatch_is_corrupt() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| {
        v["id"] = "11111111-2222-4333-8444-555555555555".into()
    });
    assert_corrupt_and_untouched(&ws, &id, &path, "file name");
}

#[test]
fn system_message_in_file_is_corrupt() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| {
        v["messages"]
            .as_array_mut()
            .unwrap()
            .insert(0, serde_json::json!({"role": "system", "content": "x"}))
    });
    assert_corrupt_and_untouched(&ws, &id, &path, "system");
}

#[test]
fn tool_result_without_call_is_corrupt() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| {
        v["messages"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"role": "tool", "content": "", "tool_call_id": "nope"}))
    });
    assert_corrupt_and_untouched(&ws, &id, &path, "not open");
}

#[test]
fn missing_result_in_the_middle_is_corrupt() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| {
        v["messages"].as_array_mut().unwrap().remove(2); // the tool result
    });
    assert_corrupt_and_untouched(&ws, &id, &path, "no result");
}

#[test]
fn checkpoint_inside_a_tool_batch_is_corrupt() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| {
        v["checkpoint"] = serde_json::json!({"summary": "s", "first_kept_index": 2})
    });
    assert_corrupt_and_untouched(&ws, &id, &path, "tool batch");
    rewrite(&path, |v| {
        v["checkpoint"] = serde_json::json!({"summary": "s", "first_kept_index": 99})
    });
    assert_corrupt_and_untouched(&ws, &id, &path, "only 4");
}

#[test]
fn save_refuses_system_messages_and_bad_checkpoints() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    let before = fs::read(s.path()).unwrap();
    s.push(Message::system("you are minicode"));
    assert!(matches!(s.save(), Err(SessionError::Invalid { .. })));
    assert_eq!(fs::read(s.path()).unwrap(), before);

    let mut s = Session::create(&ws).unwrap();
    s.set_checkpoint(Some(Checkpoint {
        summary: "s".into(),
        first_kept_index: 1,
    }));
    assert!(matches!(s.save(), Err(SessionError::Invalid { .. })));

    // Late in a session too, where a save looks only at the messages added since the last.
    let mut s = Session::create(&ws).unwrap();
    s.push(Message::user("hi"));
    s.save().unwrap();
    s.push(Message::assistant(Some("hello".into()), vec![]));
    s.save().unwrap();
    let files = |s: &Session| {
        let journal = fs::read(s.path().with_extension("journal")).unwrap_or_default();
        (fs::read(s.path()).unwrap(), journal)
    };
    let before = files(&s);
    s.push(Message::system("you are minicode"));
    for _ in 0..2 {
        match s.save() {
            Err(SessionError::Invalid { reason, .. }) => {
                assert!(reason.contains("message 2 is a system message"), "{reason}")
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }
    assert_eq!(files(&s), before);
}

#[test]
fn wrong_workspace_is_refused() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| v["workspace"] = "/somewhere/else".into());
    let before = fs::read(&path).unwrap();
    match Session::open(&ws, &id) {
        Err(e @ SessionError::WrongWorkspace { .. }) => {
            assert!(e.to_string().contains("/somewhere/else"), "{e}")
        }
        other => panic!("expected WrongWorkspace, got {other:?}"),
    }
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn newer_version_is_refused_clearly() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| v["version"] = (SNAPSHOT_VERSION + 1).into());
    let before = fs::read(&path).unwrap();
    match Session::open(&ws, &id) {
        Err(e @ SessionError::TooNew { .. }) => assert!(e.to_string().contains("newer"), "{e}"),
        other => panic!("expected TooNew, got {other:?}"),
    }
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn version_1_file_is_migrated() {
    let (_tmp, ws) = workspace();
    let id = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    let dir = sessions_dir(&ws);
    fs::create_dir_all(&dir).unwrap();
    let v1 = format!(
        r#"{{
  "version": 1,
  "id": "{id}",
  "workspace": {ws:?},
  "created": "2026-10-09T08:00:00Z",
  "updated": "2026-10-09T08:05:00.250Z",
  "messages": [
    {{"role": "user", "content": "what is here?"}},
    {{"role": "assistant", "content": null, "tool_calls": [
      {{"id": "call_a", "type": "function", "function": {{"name": "bash", "arguments": "{{\"command\":\"ls\"}}"}}}}
    ]}},
    {{"role": "tool", "content": "", "tool_call_id": "call_a"}},
    {{"role": "assistant", "content": "an empty folder"}}
  ],
  "totals": {{"turns": 1, "model_calls": 2, "tool_calls": 1, "input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
}}"#
    );
    let path = dir.join(format!("{id}.json"));
    fs::write(&path, &v1).unwrap();

    let mut s = Session::open(&ws, id).unwrap();
    assert_eq!(s.messages().len(), 4);
    assert_eq!(s.messages()[1].tool_calls[0].id, "call_a");
    assert_eq!(s.messages()[2].text(), "");
    assert_eq!(s.totals().total_tokens, 15);
    assert!(s.checkpoint().is_none());
    // Opening alone never rewrites the file; the next save writes the current version.
    assert_eq!(fs::read_to_string(&path).unwrap(), v1);
    s.save().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["version"], SNAPSHOT_VERSION);
    assert_eq!(json["created"], "2026-10-09T08:00:00.000000Z");
    // The empty result of `ls` ended well, as far as its text tells.
    assert_eq!(json["messages"][2]["status"], "succeeded");
    let backup = dir.join(format!("{id}.json.v1.bak"));
    assert_eq!(
        fs::read_to_string(&backup).unwrap(),
        v1,
        "the original is kept"
    );
    assert_eq!(mode(&backup), 0o600);
}

/// A version 2 file with one finished exchange per `(call id, result text)`.
fn version_2_file(ws: &Path, id: &str, results: &[(&str, &str)]) -> (PathBuf, String) {
    let mut messages = vec![serde_json::json!({"role": "user", "content": "do things"})];
    messages.push(serde_json::json!({
        "role": "assistant",
        "content": null,
        "tool_calls": results.iter().map(|(call, _)| serde_json::json!({
            "id": call, "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\":\"make\"}"}
        })).collect::<Vec<_>>(),
    }));
    for (call, text) in results {
        messages.push(serde_json::json!({"role": "tool", "content": text, "tool_call_id": call}));
    }
    messages.push(serde_json::json!({"role": "assistant", "content": "done"}));
    let v2 = serde_json::to_string_pretty(&serde_json::json!({
        "version": 2,
        "id": id,
        "workspace": ws,
        "created": "2026-10-09T08:00:00Z",
        "updated": "2026-10-09T08:05:00Z",
        "messages": messages,
        "totals": {"turns": 1},
    }))
    .unwrap();
    let dir = sessions_dir(ws);
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{id}.json"));
    fs::write(&path, &v2).unwrap();
    (path, v2)
}

#[test]
fn version_2_results_get_a_status_inferred_once_from_their_wording() {
    let (_tmp, ws) = workspace();
    let id = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    let results = [
        ("t1", "a.txt\nb.txt\n[exit code 0]", ToolStatus::Succeeded),
        ("t2", "no such file\n[exit code 2]", ToolStatus::Failed),
        (
            "t3",
            "the user denied this call; it did not run",
            ToolStatus::Denied,
        ),
        (
            "t4",
            "not run: the user interrupted the turn",
            ToolStatus::Interrupted,
        ),
        (
            "t5",
            "invalid arguments: missing field `path`",
            ToolStatus::Rejected,
        ),
        (
            "t6",
            "unknown tool \"nope\"; available tools: bash",
            ToolStatus::Rejected,
        ),
        (
            "t7",
            "partial\n[timed out after 5 s; the process group was killed]",
            ToolStatus::Failed,
        ),
        ("t8", INTERRUPTED_RESULT, ToolStatus::Interrupted),
        ("t9", "fn main() {}", ToolStatus::Succeeded),
    ];
    let texts: Vec<(&str, &str)> = results.iter().map(|(c, t, _)| (*c, *t)).collect();
    let (path, v2) = version_2_file(&ws, id, &texts);

    let mut s = Session::open(&ws, id).unwrap();
    for (index, (call, _, status)) in results.iter().enumerate() {
        let at = index + 2;
        assert_eq!(s.messages()[at].tool_call_id.as_deref(), Some(*call));
        assert_eq!(
            s.result_info(at),
            Some(&ResultInfo {
                status: Some(*status),
                summary: None,
                ..ResultInfo::default()
            }),
            "{call}"
        );
    }
    assert_eq!(s.result_info(0), None, "a prompt has no result info");
    s.save().unwrap();
    drop(s);
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["version"], 3);
    assert_eq!(json["messages"][3]["status"], "failed");
    assert!(json["messages"][0].get("status").is_none());
    assert_eq!(
        fs::read_to_string(path.with_extension("json.v2.bak")).unwrap(),
        v2
    );
}

#[test]
fn a_migrated_file_keeps_one_backup_that_is_never_overwritten() {
    let (_tmp, ws) = workspace();
    let id = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    let (path, v2) = version_2_file(&ws, id, &[("c1", "ok")]);
    let backup = sessions_dir(&ws).join(format!("{id}.json.v2.bak"));
    assert!(!backup.exists());
    // Opened and closed without a save: the file is still version 2, the backup exists.
    drop(Session::open(&ws, id).unwrap());
    assert_eq!(fs::read_to_string(&backup).unwrap(), v2);
    assert_eq!(mode(&backup), 0o600);
    assert_eq!(fs::read_to_string(&path).unwrap(), v2);
    // A second migration of a (changed) version 2 file leaves the first backup alone.
    let (_, changed) = version_2_file(&ws, id, &[("c1", "changed")]);
    assert_ne!(changed, v2);
    let mut s = Session::open(&ws, id).unwrap();
    assert_eq!(
        fs::read_to_string(&backup).unwrap(),
        v2,
        "the first one stays"
    );
    s.save().unwrap();
    drop(s);
    // A current file is not migrated: no other backup appears.
    drop(Session::open(&ws, id).unwrap());
    let backups: Vec<_> = fs::read_dir(sessions_dir(&ws))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bak"))
        .collect();
    assert_eq!(backups, [format!("{id}.json.v2.bak")]);
    // Listing reads without migrating or writing.
    fs::remove_file(&backup).unwrap();
    version_2_file(&ws, id, &[("c1", "ok")]);
    assert_eq!(Session::list(&ws).unwrap().len(), 1);
    assert!(!backup.exists());
}

#[test]
fn a_corrupt_older_file_is_left_byte_identical_without_a_backup() {
    let (_tmp, ws) = workspace();
    let id = "0b5e2c7a-7d4f-4d0e-9a51-3c2f8e1d6b90";
    let (path, _) = version_2_file(&ws, id, &[("c1", "ok")]);
    // A result for a call that was never made.
    rewrite(&path, |v| {
        v["messages"][2]["tool_call_id"] = "nope".into();
    });
    assert_corrupt_and_untouched(&ws, id, &path, "nope");
    assert!(!path.with_extension("json.v2.bak").exists());
    // A status in a version 2 file cannot be: corrupt as well, and still untouched.
    let (path, _) = version_2_file(&ws, id, &[("c1", "ok")]);
    rewrite(&path, |v| v["messages"][2]["status"] = "failed".into());
    assert_corrupt_and_untouched(&ws, id, &path, "version 2");
    assert!(!path.with_extension("json.v2.bak").exists());
}

#[test]
fn recorded_status_and_summary_round_trip_and_stay_out_of_the_messages() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    s.push(Message::user("go"));
    s.push(Message::assistant(None, vec![call("c1"), call("c2")]));
    s.push_result(
        "c1",
        "boom\n[exit code 1]",
        ToolStatus::Failed,
        Some("ls".into()),
    );
    s.push(Message::tool_result("c2", "plain"));
    s.save().unwrap();
    let id = s.id().to_string();
    let messages = s.messages().to_vec();
    drop(s);
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), &messages[..]);
    assert_eq!(
        s.result_info(2),
        Some(&ResultInfo {
            status: Some(ToolStatus::Failed),
            summary: Some("ls".into()),
            ..ResultInfo::default()
        })
    );
    assert_eq!(s.result_info(3), None, "pushed as a plain message: unknown");
    let json: serde_json::Value = serde_json::from_slice(&fs::read(s.path()).unwrap()).unwrap();
    assert_eq!(json["messages"][2]["status"], "failed");
    assert_eq!(json["messages"][2]["summary"], "ls");
    assert!(json["messages"][3].get("status").is_none());
}

#[test]
fn a_status_on_a_message_that_is_no_tool_result_is_corrupt() {
    let (_tmp, ws) = workspace();
    let (id, path) = saved(&ws);
    rewrite(&path, |v| v["messages"][0]["status"] = "succeeded".into());
    assert_corrupt_and_untouched(&ws, &id, &path, "not a tool result");
}

#[test]
fn second_open_is_locked_until_the_first_is_dropped() {
    let (_tmp, ws) = workspace();
    let mut first = Session::create(&ws).unwrap();
    // A conversation: `open_latest` passes over a session with no message.
    first.push(Message::user("hello"));
    first.save().unwrap();
    let id = first.id().to_string();
    match Session::open(&ws, &id) {
        Err(e @ SessionError::Locked { .. }) => assert!(e.to_string().contains(&id)),
        other => panic!("expected Locked, got {other:?}"),
    }
    // Listing still works while the session is in use.
    assert_eq!(Session::list(&ws).unwrap().len(), 1);
    drop(first);
    let second = Session::open(&ws, &id).unwrap();
    assert!(matches!(
        Session::open_latest(&ws),
        Err(SessionError::Locked { .. })
    ));
    drop(second);
}

#[test]
fn interrupted_call_at_the_end_is_marked_unknown_and_never_duplicated() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    s.push(Message::user("run two things"));
    s.push(Message::assistant(
        Some("running".into()),
        vec![call("call_1"), call("call_2")],
    ));
    s.push(Message::tool_result("call_1", "ok"));
    // The process dies while call_2 runs: saved with call_2 open.
    s.save().unwrap();
    let id = s.id().to_string();
    drop(s);

    let mut s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.repaired_calls(), ["call_2".to_string()]);
    let last = s.messages().last().unwrap();
    assert_eq!(last.role, Role::Tool);
    assert_eq!(last.tool_call_id.as_deref(), Some("call_2"));
    assert_eq!(last.text(), INTERRUPTED_RESULT);
    assert!(last.text().contains("unknown"));
    assert_eq!(
        s.result_info(3).and_then(|i| i.status),
        Some(ToolStatus::Interrupted)
    );
    assert_eq!(s.messages().len(), 4);
    s.save().unwrap();
    drop(s);

    let s = Session::open(&ws, &id).unwrap();
    assert!(s.repaired_calls().is_empty());
    assert_eq!(
        s.messages().len(),
        4,
        "the repair must be stored once, not again"
    );
    let results = s
        .messages()
        .iter()
        .filter(|m| m.tool_call_id.as_deref() == Some("call_2"))
        .count();
    assert_eq!(results, 1);
}

#[test]
fn a_large_session_saves_and_loads_whole() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    for i in 0..2_500 {
        exchange(&mut s, &"x".repeat(400), &format!("call_{i}"));
    }
    let id = s.id().to_string();
    s.save().unwrap();
    let saved = s.messages().to_vec();
    drop(s);
    // How fast this is, is measured by `cargo bench --bench session`, not here.
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages().len(), 10_000);
    assert_eq!(s.messages(), saved.as_slice());
}

#[test]
fn saves_after_each_append_leave_a_valid_snapshot_and_lose_nothing() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    let mut expected = Vec::new();
    for round in 0..5 {
        s.push(Message::user(format!("round {round}")));
        s.save().unwrap();
        let id = format!("c{round}");
        s.push(Message::assistant(None, vec![call(&id)]));
        s.save().unwrap();
        s.push_result(&id, "out", ToolStatus::Failed, Some(format!("ls {round}")));
        s.push(Message::assistant(Some(format!("answer {round}")), vec![]));
        s.totals_mut().turns = round + 1;
        s.save().unwrap();
        expected = s.messages().to_vec();
        // Every save leaves a complete, valid JSON object with the same fields as before; what
        // it does not hold yet is in the journal beside it (tests/it/session_journal.rs).
        let json: serde_json::Value = serde_json::from_slice(&fs::read(s.path()).unwrap()).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "version",
            "id",
            "workspace",
            "created",
            "updated",
            "messages",
            "totals",
        ] {
            assert!(keys.contains(&key), "{keys:?}");
        }
        assert!(json["messages"].as_array().unwrap().len() <= expected.len());
    }
    let id = s.id().to_string();
    drop(s);
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), &expected[..]);
    for round in 0..5 {
        let info = s.result_info(round * 4 + 2).unwrap();
        assert_eq!(info.status, Some(ToolStatus::Failed));
        assert_eq!(
            info.summary.as_deref(),
            Some(format!("ls {round}").as_str())
        );
    }
    assert_eq!(s.totals().turns, 5);
}

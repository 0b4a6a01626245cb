//! The journal beside a session snapshot: saves append to it, loading replays it, a torn tail
//! or a journal left over by a crash is harmless, a bad line in the middle is reported with
//! both files untouched, and it is folded into the snapshot once it outgrows it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::workspace;
use minicode::chat::{Message, ToolCall, ToolStatus};
use minicode::session::{Checkpoint, Session, SessionError};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: r#"{"path":"README.md"}"#.into(),
    }
}

/// One goal-like round saved the way the agent saves it: before the tool runs, after it, and
/// at the end of the turn.
fn round(s: &mut Session, n: usize) {
    s.push(Message::user(format!("round {n}")));
    let id = format!("call_{n}");
    s.push(Message::assistant(None, vec![call(&id)]));
    s.save().unwrap();
    s.push_result(
        &id,
        "# Bench\n",
        ToolStatus::Succeeded,
        Some(format!("read {n}")),
    );
    s.save().unwrap();
    s.push(Message::assistant(Some(format!("answer {n}")), vec![]));
    s.totals_mut().turns += 1;
    s.save().unwrap();
}

/// A session of two saved rounds, closed: its id, snapshot, journal and messages.
fn two_saved_rounds(ws: &Path) -> (String, PathBuf, PathBuf, Vec<Message>) {
    let mut s = Session::create(ws).unwrap();
    round(&mut s, 0);
    round(&mut s, 1);
    let files = (s.path().to_path_buf(), journal_of(&s));
    (s.id().to_string(), files.0, files.1, s.messages().to_vec())
}

fn journal_of(s: &Session) -> PathBuf {
    s.path().with_extension("journal")
}

fn len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn snapshot_messages(path: &Path) -> usize {
    let json: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    json["messages"].as_array().unwrap().len()
}

#[test]
fn a_session_saved_many_times_reopens_with_its_whole_history() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    for n in 0..40 {
        round(&mut s, n);
    }
    let journal = journal_of(&s);
    assert!(journal.is_file(), "later saves append to the journal");
    assert_eq!(
        fs::metadata(&journal).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(snapshot_messages(s.path()) < s.messages().len());
    let (id, expected) = (s.id().to_string(), s.messages().to_vec());
    drop(s);
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), expected.as_slice());
    assert_eq!(s.totals().turns, 40);
    let info = s.result_info(39 * 4 + 2).unwrap();
    assert_eq!(info.status, Some(ToolStatus::Succeeded));
    assert_eq!(info.summary.as_deref(), Some("read 39"));
    assert!(s.repaired_calls().is_empty());
}

#[test]
fn a_torn_journal_tail_is_ignored_and_the_session_loads() {
    for tail in [&b"{\"base\":\"2026-"[..], b"{\"base\": nonsense\n"] {
        let (_tmp, ws) = workspace();
        let mut s = Session::create(&ws).unwrap();
        round(&mut s, 0);
        round(&mut s, 1);
        let (id, expected, journal) = (s.id().to_string(), s.messages().to_vec(), journal_of(&s));
        drop(s);
        let mut bytes = fs::read(&journal).unwrap();
        bytes.extend_from_slice(tail);
        fs::write(&journal, &bytes).unwrap();
        let listed = Session::list(&ws).unwrap();
        assert_eq!(listed[0].problem, None);
        let mut s = Session::open(&ws, &id).unwrap();
        assert_eq!(s.messages(), expected.as_slice());
        assert_eq!(s.totals().turns, 2);
        // The first save after opening folds everything into the snapshot.
        s.save().unwrap();
        assert!(!journal.exists());
        assert_eq!(snapshot_messages(s.path()), expected.len());
    }
}

#[test]
fn a_journal_left_by_a_crash_after_the_snapshot_rename_adds_no_duplicates() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    for n in 0..5 {
        round(&mut s, n);
    }
    let (id, journal) = (s.id().to_string(), journal_of(&s));
    let old = fs::read(&journal).unwrap();
    drop(s);
    // Reopened and saved: the snapshot is rewritten and the journal removed; a crash between
    // the two leaves the old journal, whose lines are all in the new snapshot.
    let mut s = Session::open(&ws, &id).unwrap();
    s.totals_mut().turns = 99;
    s.save().unwrap();
    assert!(!journal.exists());
    let expected = s.messages().to_vec();
    drop(s);
    fs::write(&journal, &old).unwrap();
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), expected.as_slice());
    assert_eq!(
        s.totals().turns,
        99,
        "stale lines must not bring back old totals"
    );
}

#[test]
fn a_journal_line_written_twice_is_applied_once() {
    let (_tmp, ws) = workspace();
    let (id, _, journal, expected) = two_saved_rounds(&ws);
    let text = fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    // Every line again, in order: each repeats messages the history already has.
    fs::write(&journal, format!("{text}{text}")).unwrap();
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), expected.as_slice());
}

#[test]
fn a_corrupt_journal_line_before_the_last_is_reported_and_both_files_untouched() {
    let (_tmp, ws) = workspace();
    let (id, path, journal, _) = two_saved_rounds(&ws);
    let text = fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[0] = "{\"not\": \"a line\"}".to_string();
    fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let (snapshot, journal_bytes) = (fs::read(&path).unwrap(), fs::read(&journal).unwrap());
    match Session::open(&ws, &id).unwrap_err() {
        SessionError::Corrupt { path: p, reason } => {
            assert_eq!(p, journal);
            assert!(reason.contains("journal line 1"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let listed = Session::list(&ws).unwrap();
    assert!(listed[0].problem.as_deref().unwrap().contains("corrupt"));
    assert_eq!(fs::read(&path).unwrap(), snapshot);
    assert_eq!(fs::read(&journal).unwrap(), journal_bytes);
}

#[test]
fn a_journal_line_that_skips_messages_is_corrupt() {
    let (_tmp, ws) = workspace();
    let (id, _, journal, _) = two_saved_rounds(&ws);
    let text = fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.remove(0);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&journal, text).unwrap();
    let err = Session::open(&ws, &id).unwrap_err();
    assert!(matches!(err, SessionError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("starts at message"), "{err}");
}

#[test]
fn a_fork_and_a_resumed_session_carry_everything() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    for n in 0..6 {
        round(&mut s, n);
    }
    s.set_checkpoint(Some(Checkpoint {
        summary: "earlier rounds".into(),
        first_kept_index: 8,
    }));
    s.save().unwrap();
    let fork = s.fork().unwrap();
    assert_eq!(fork.messages(), s.messages());
    let (id, fork_id) = (s.id().to_string(), fork.id().to_string());
    let expected = s.messages().to_vec();
    drop(fork);
    drop(s);
    let fork = Session::open(&ws, &fork_id).unwrap();
    assert_eq!(fork.messages(), expected.as_slice());
    assert_eq!(fork.forked_from(), Some(id.as_str()));
    assert_eq!(fork.checkpoint().unwrap().first_kept_index, 8);
    assert_eq!(
        fork.result_info(2).unwrap().summary.as_deref(),
        Some("read 0")
    );
    drop(fork);
    let mut s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), expected.as_slice());
    assert_eq!(s.totals().turns, 6);
    assert_eq!(s.checkpoint().unwrap().summary, "earlier rounds");
    for n in 6..9 {
        round(&mut s, n);
    }
    let expected = s.messages().to_vec();
    drop(s);
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), expected.as_slice());
    assert_eq!(s.totals().turns, 9);
    assert_eq!(s.checkpoint().unwrap().first_kept_index, 8);
}

#[test]
fn the_journal_is_compacted_into_the_snapshot_once_it_outgrows_it() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    let journal = journal_of(&s);
    let (mut compactions, mut written, mut had_journal) = (0, 0u64, false);
    for n in 0..200 {
        let (snapshot, journal_before) = (len(s.path()), len(&journal));
        round(&mut s, n);
        let (snapshot_after, journal_after) = (len(s.path()), len(&journal));
        if had_journal && journal_after < journal_before {
            compactions += 1;
        }
        had_journal = journal.exists();
        // Bytes this round wrote, roughly: a rewritten snapshot or the journal's growth.
        written += if snapshot_after != snapshot {
            snapshot_after + journal_after
        } else {
            journal_after - journal_before
        };
        assert!(
            journal_after <= 2 * snapshot_after.max(1024),
            "journal {journal_after} vs snapshot {snapshot_after}"
        );
    }
    assert!(compactions >= 3, "{compactions} compactions");
    // Amortized: everything written stays within a small multiple of the final size.
    let total = len(s.path()) + len(&journal);
    assert!(written < 8 * total, "wrote {written} for {total}");
    let (id, expected) = (s.id().to_string(), s.messages().to_vec());
    drop(s);
    assert_eq!(
        Session::open(&ws, &id).unwrap().messages(),
        expected.as_slice()
    );
}

#[test]
fn the_first_prompt_reaches_the_snapshot_so_listing_shows_it() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    s.save().unwrap();
    s.push(Message::user("fix the build\nplease"));
    s.save().unwrap();
    assert_eq!(snapshot_messages(s.path()), 1);
    let listed = Session::list(&ws).unwrap();
    assert_eq!(listed[0].first_prompt, "fix the build");
}

#[test]
fn after_reopening_repaired_calls_the_next_save_rewrites_the_snapshot() {
    let (_tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    round(&mut s, 0);
    s.push(Message::user("again"));
    s.push(Message::assistant(None, vec![call("open_1")]));
    s.save().unwrap();
    let id = s.id().to_string();
    drop(s);
    let mut s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.repaired_calls(), ["open_1".to_string()]);
    assert_eq!(s.reopen_repaired(), vec!["open_1".to_string()]);
    s.push_result("open_1", "done", ToolStatus::Succeeded, None);
    s.save().unwrap();
    assert!(!journal_of(&s).exists());
    let expected = s.messages().to_vec();
    drop(s);
    let s = Session::open(&ws, &id).unwrap();
    assert_eq!(s.messages(), expected.as_slice());
    assert!(s.repaired_calls().is_empty());
}

#[test]
fn a_journal_planted_as_a_link_is_never_written_through() {
    let (tmp, ws) = workspace();
    let mut s = Session::create(&ws).unwrap();
    round(&mut s, 0);
    let journal = journal_of(&s);
    // A snapshot much larger than the next line, just rewritten: the next save appends.
    s.push(Message::assistant(Some("x".repeat(10_000)), vec![]));
    s.save().unwrap();
    while journal.exists() {
        s.save().unwrap();
    }
    let target = tmp.path().join("outside.txt");
    fs::write(&target, "").unwrap();
    std::os::unix::fs::symlink(&target, &journal).unwrap();
    s.push(Message::user("more"));
    assert!(s.save().is_err(), "the append must refuse the link");
    // The next save rewrites the snapshot and removes the link itself.
    s.save().unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"");
    assert!(fs::symlink_metadata(&journal).is_err());
}

#[test]
fn a_journal_planted_as_a_link_out_of_the_workspace_is_never_read() {
    let (_tmp, ws) = workspace();
    let elsewhere = tempfile::tempdir().unwrap();
    let (id, _, journal, _) = two_saved_rounds(&ws);
    // The same lines, valid, but outside the workspace: a repository could plant the link.
    let outside = elsewhere.path().join("outside.journal");
    fs::rename(&journal, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &journal).unwrap();
    let err = Session::open(&ws, &id).unwrap_err();
    assert!(
        err.to_string().contains(&journal.display().to_string()),
        "{err}"
    );
}

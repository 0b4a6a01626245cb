//! `write` and `edit` name the one file they change, so their records look at that path and
//! the folders above it, not the tree: a session whose first calls are writes reads no other
//! file (its base is taken lazily), a user's edit elsewhere is not filed under a write, and a
//! write that made folders is still undone whole.

use std::path::Path;

use minicode::agent::Options;
use minicode::checkpoints::Settings;
use minicode::protocol::{Event, Op, RewindScope};

use crate::checkpoints::blob_count;
use crate::support::agent::spawn;
use crate::support::events::{shutdown, turn, until};
use crate::support::fake::{Fake, bash, text_reply, tool_reply};

fn options() -> Options {
    Options {
        auto_approve: true,
        checkpoints: Settings::default(),
        ..Options::default()
    }
}

fn write_call(id: &str, path: &str, content: &str) -> minicode::provider::Reply {
    let args = serde_json::json!({ "path": path, "content": content }).to_string();
    tool_reply(&[(id, "write", &args)])
}

fn files(ws: &Path, n: usize) {
    for i in 0..n {
        std::fs::write(ws.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
}

#[tokio::test]
async fn a_write_reads_only_its_file_and_a_later_command_reads_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    files(&ws, 30);
    let fake = Fake::new(vec![
        write_call("w1", "f1.txt", "written\n"),
        text_reply("one"),
        bash("b1", "echo ran > f2.txt"),
        text_reply("two"),
    ]);
    let mut handle = spawn(&ws, fake, options());
    turn(&mut handle, "write").await;
    // The file's content before and after: none of the 29 others was read.
    assert_eq!(blob_count(&ws), 2);
    turn(&mut handle, "command").await;
    assert_eq!(blob_count(&ws), 2 + 29 + 1);
    handle.send(Op::Rewind {
        turn: 1,
        scope: RewindScope::Code,
        force: false,
    });
    let done = until(&mut handle, |e| matches!(e, Event::Rewound { .. })).await;
    let Some(Event::Rewound { restored, .. }) = done.last() else {
        unreachable!()
    };
    assert_eq!(restored, &["f1.txt".to_string(), "f2.txt".to_string()]);
    assert_eq!(
        std::fs::read_to_string(ws.join("f1.txt")).unwrap(),
        "file 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("f2.txt")).unwrap(),
        "file 2\n"
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_users_edit_elsewhere_is_not_filed_under_a_write_and_made_folders_are_undone() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    files(&ws, 3);
    let fake = Fake::new(vec![
        bash("b0", "true"),
        text_reply("zero"),
        write_call("w1", "new/deep/file.txt", "made\n"),
        text_reply("one"),
    ]);
    let mut handle = spawn(&ws, fake, options());
    turn(&mut handle, "base").await;
    std::fs::write(ws.join("f0.txt"), "the user's\n").unwrap();
    turn(&mut handle, "write").await;
    handle.send(Op::ListRewind);
    let listed = until(&mut handle, |e| matches!(e, Event::RewindList { .. })).await;
    let Some(Event::RewindList { turns, .. }) = listed.last() else {
        unreachable!()
    };
    let written: Vec<&String> = turns
        .iter()
        .find(|t| t.turn == 2)
        .unwrap()
        .files
        .iter()
        .map(|(p, _)| p)
        .collect();
    // Not f0.txt, which the user changed meanwhile (the listing leaves folders out).
    assert_eq!(written, ["new/deep/file.txt"]);
    handle.send(Op::Rewind {
        turn: 2,
        scope: RewindScope::Code,
        force: false,
    });
    until(&mut handle, |e| matches!(e, Event::Rewound { .. })).await;
    assert!(!ws.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("f0.txt")).unwrap(),
        "the user's\n"
    );
    shutdown(&mut handle).await;
}

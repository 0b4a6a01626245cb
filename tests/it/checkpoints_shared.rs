//! The store shared by a workspace's sessions: a later session starts from the workspace's
//! stat cache (its journal names the shared snapshot and lists only what differs), a file
//! changed between sessions is still recorded and rewound, two sessions at once leave a whole
//! cache, a damaged cache is rebuilt rather than trusted, small blobs are packed, and the
//! store stays under `max_bytes` with packs.

use std::path::{Path, PathBuf};

use minicode::checkpoints::{How, Position, Recorder, Settings};

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    (dir, ws)
}

fn position(turn: u32, call: &str, tool: &str) -> Position {
    Position {
        turn,
        call: call.into(),
        tool: tool.into(),
    }
}

/// One recorded call of `session` that runs `change`.
fn call(recorder: &mut Recorder, turn: u32, id: &str, change: impl FnOnce()) {
    let session = recorder.session().to_string();
    recorder
        .before(&position(turn, id, "bash"))
        .unwrap_or_else(|e| panic!("{session} {id} before: {e}"));
    change();
    recorder
        .after()
        .unwrap_or_else(|e| panic!("{session} {id} after: {e}"));
}

fn journal(ws: &Path, session: &str) -> Vec<serde_json::Value> {
    let path = ws.join(format!(".minicode/checkpoints/sessions/{session}.jsonl"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The snapshot a journal's base line names, and the file list it holds itself.
fn base_of(lines: &[serde_json::Value]) -> (String, usize) {
    let base = lines.iter().find(|l| l["kind"] == "base").unwrap();
    let files = base["files"].as_object().map_or(0, |f| f.len());
    (base["ref"].as_str().unwrap().to_string(), files)
}

/// Every path a journal's drift lines name.
fn drifted(lines: &[serde_json::Value]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .filter(|l| l["kind"] == "drift")
        .flat_map(|l| l["files"].as_object().unwrap().keys().cloned())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn tree(ws: &Path, files: usize) {
    for i in 0..files {
        let dir = ws.join(format!("d{}", i % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
}

#[test]
fn a_second_session_starts_from_the_shared_stat_cache_and_lists_only_what_differs() {
    let (_dir, ws) = workspace();
    tree(&ws, 200);
    let mut first = Recorder::new(&ws, "first", Settings::default());
    call(&mut first, 1, "c1", || {
        std::fs::write(ws.join("d1/f1.txt"), "changed by the first\n").unwrap();
    });
    drop(first);
    let (shared, listed) = base_of(&journal(&ws, "first"));
    assert_eq!(listed, 0, "the file list lives in the shared snapshot");
    let mut second = Recorder::new(&ws, "second", Settings::default());
    call(&mut second, 1, "c1", || {
        std::fs::write(ws.join("d2/f2.txt"), "changed by the second\n").unwrap();
    });
    let lines = journal(&ws, "second");
    assert_eq!(base_of(&lines), (shared, 0));
    // Beside the snapshot, only the cache's delta (the first session's change): nothing else
    // differed, so none of the 200 files and 10 folders was read again.
    assert_eq!(drifted(&lines), ["d1/f1.txt"]);
    let journal_bytes = std::fs::metadata(ws.join(".minicode/checkpoints/sessions/second.jsonl"))
        .unwrap()
        .len();
    assert!(journal_bytes < 2048, "{journal_bytes} bytes");
}

#[test]
fn a_file_the_user_changed_between_sessions_is_recorded_and_rewound_to_the_users_bytes() {
    let (_dir, ws) = workspace();
    tree(&ws, 20);
    let target = ws.join("d3/f3.txt");
    let mut first = Recorder::new(&ws, "first", Settings::default());
    call(&mut first, 1, "c1", || {
        std::fs::write(&target, "the first session's\n").unwrap();
    });
    drop(first);
    std::fs::write(&target, "the user's bytes now\n").unwrap();
    let mut second = Recorder::new(&ws, "second", Settings::default());
    call(&mut second, 1, "c1", || {
        std::fs::write(&target, "the second session's\n").unwrap();
    });
    assert!(drifted(&journal(&ws, "second")).contains(&"d3/f3.txt".to_string()));
    let outcome = second.rewind(1, &How::default()).unwrap();
    assert_eq!(outcome.restored, ["d3/f3.txt"]);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "the user's bytes now\n"
    );
}

#[test]
fn two_sessions_recording_at_once_leave_a_whole_cache_a_third_can_use() {
    let (_dir, ws) = workspace();
    tree(&ws, 100);
    let mut seed = Recorder::new(&ws, "seed", Settings::default());
    call(&mut seed, 1, "c0", || {});
    drop(seed);
    let workers: Vec<_> = ["left", "right"]
        .into_iter()
        .map(|name| {
            let ws = ws.clone();
            std::thread::spawn(move || {
                let mut recorder = Recorder::new(&ws, name, Settings::default());
                for i in 0..20 {
                    let path = ws.join(format!("{name}-{i}.txt"));
                    call(&mut recorder, 1, &format!("c{i}"), || {
                        std::fs::write(&path, format!("{name} {i}\n")).unwrap();
                    });
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let pointer = ws.join(".minicode/checkpoints/workspace.json");
    let text = std::fs::read_to_string(&pointer).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(parsed["base"].is_string(), "{text}");
    let mut third = Recorder::new(&ws, "third", Settings::default());
    call(&mut third, 1, "c1", || {
        std::fs::write(ws.join("left-0.txt"), "third\n").unwrap();
        std::fs::remove_file(ws.join("right-19.txt")).unwrap();
    });
    let outcome = third.rewind(1, &How::default()).unwrap();
    assert_eq!(outcome.restored, ["left-0.txt", "right-19.txt"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("left-0.txt")).unwrap(),
        "left 0\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("right-19.txt")).unwrap(),
        "right 19\n"
    );
}

#[test]
fn a_damaged_or_forged_shared_cache_is_ignored_and_rebuilt() {
    let (_dir, ws) = workspace();
    tree(&ws, 20);
    let mut first = Recorder::new(&ws, "first", Settings::default());
    call(&mut first, 1, "c1", || {});
    drop(first);
    let (shared, _) = base_of(&journal(&ws, "first"));
    let root = ws.join(".minicode/checkpoints");
    // A snapshot whose bytes no longer hash to its name.
    let snapshot = root.join("bases").join(&shared);
    let original = std::fs::read(&snapshot).unwrap();
    let mut bytes = original.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&snapshot, bytes).unwrap();
    let mut second = Recorder::new(&ws, "second", Settings::default());
    call(&mut second, 1, "c1", || {
        std::fs::write(ws.join("d4/f4.txt"), "second\n").unwrap();
    });
    // The tree was read again and its snapshot stored again: the same tree, the same name,
    // the damaged bytes replaced.
    let (rebuilt, _) = base_of(&journal(&ws, "second"));
    assert_eq!(rebuilt, shared);
    assert_eq!(std::fs::read(&snapshot).unwrap(), original);
    // A pointer that is not JSON, then one that names a blob outside the store.
    for forged in [
        "not json".to_string(),
        format!(
            r#"{{"version":1,"base":"{rebuilt}","delta":{{"d5/f5.txt":{{"h":"../../../etc","m":420,"s":1,"t":1,"c":1,"i":1}}}}}}"#
        ),
    ] {
        std::fs::write(root.join("workspace.json"), forged).unwrap();
        let name = format!("s{}", fastrand::u32(..));
        let mut next = Recorder::new(&ws, &name, Settings::default());
        call(&mut next, 1, "c1", || {
            std::fs::write(ws.join("d5/f5.txt"), "overwritten\n").unwrap();
        });
        next.rewind(1, &How::default()).unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.join("d5/f5.txt")).unwrap(),
            "file 5\n"
        );
        // Read again from the tree, not taken from the forged cache.
        assert!(journal(&ws, &name).iter().any(|l| l["kind"] == "base"));
    }
}

/// What `du -s` says of the store: every file and folder under it by its blocks.
fn store_on_disk(ws: &Path) -> u64 {
    fn walk(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path).unwrap();
        let mut total = meta.blocks() * 512;
        if meta.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                total += walk(&entry.unwrap().path());
            }
        }
        total
    }
    walk(&ws.join(".minicode/checkpoints"))
}

#[test]
fn a_base_of_many_small_files_is_packed_and_a_rewind_restores_from_the_pack() {
    let (_dir, ws) = workspace();
    tree(&ws, 1000);
    let mut recorder = Recorder::new(&ws, "packed", Settings::default());
    call(&mut recorder, 1, "c1", || {
        for i in (0..1000).step_by(10) {
            std::fs::remove_file(ws.join(format!("d{}/f{i}.txt", i % 10))).unwrap();
        }
    });
    assert_eq!(crate::checkpoints::blob_count(&ws), 1000);
    // A file per blob would take 1,000 blocks of 4 KiB.
    let used = store_on_disk(&ws);
    assert!(used < 200_000, "the store takes {used} bytes");
    let outcome = recorder.rewind(1, &How::default()).unwrap();
    assert_eq!(outcome.restored.len(), 100);
    for i in (0..1000).step_by(10) {
        let path = ws.join(format!("d{}/f{i}.txt", i % 10));
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            format!("file {i}\n")
        );
    }
}

#[test]
fn the_store_stays_within_max_bytes_with_packed_blobs_and_dead_packs_are_collected() {
    let (_dir, ws) = workspace();
    tree(&ws, 300);
    let settings = Settings {
        max_bytes: 150_000,
        ..Settings::default()
    };
    let mut recorder = Recorder::new(&ws, "capped", settings);
    // Each turn rewrites the same 20 files with 1,000 new bytes each: a 20 KB pack per turn.
    let body = |turn: u32, i: usize| format!("turn {turn} file {i}\n{}", "x".repeat(1000));
    for turn in 1..=8u32 {
        call(&mut recorder, turn, &format!("c{turn}"), || {
            for i in 0..20 {
                let path = ws.join(format!("d{}/f{i}.txt", i % 10));
                std::fs::write(path, body(turn, i)).unwrap();
            }
        });
        let used = store_on_disk(&ws);
        assert!(used <= 150_000, "after turn {turn}: {used} bytes");
    }
    // The old turns were pruned and their packs removed; the last turn still rewinds.
    let packs = std::fs::read_dir(ws.join(".minicode/checkpoints/packs"))
        .unwrap()
        .count();
    assert!(packs <= 4, "{packs} packs left");
    let outcome = recorder.rewind(8, &How::default()).unwrap();
    assert_eq!(outcome.restored.len(), 20);
    assert_eq!(
        std::fs::read_to_string(ws.join("d7/f7.txt")).unwrap(),
        body(7, 7)
    );
}

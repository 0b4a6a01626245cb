//! The daemon's event stream never skips and never lies: a subscriber that cannot keep up is
//! told (`subscription.ended` with the reason and the oldest sequence left), an event that
//! cannot be stored is never sent, and sequence numbers never go back, across restarts too.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::support::daemon::{Client, DEADLINE, Daemon, layout};
use crate::support::mock_openai::{Gate, MockServer, text_reply, wait_until_blocking};

/// Every line up to and including `subscription.ended`: the events' params, then its params.
fn until_ended(client: &mut Client) -> (Vec<Value>, Value) {
    let mut events = Vec::new();
    loop {
        let message = match client.events.pop_front() {
            Some(m) => m,
            None => client
                .read()
                .expect("subscription.ended before the connection closed"),
        };
        match message["method"].as_str() {
            Some("event") => events.push(message["params"].clone()),
            Some("subscription.ended") => return (events, message["params"].clone()),
            _ => {}
        }
    }
}

/// Every event up to the first of type `kind`, read the way docs/headless.md tells a client
/// to: a reader this busy test left 4 MiB behind is ended (`queue_full`) and subscribes again
/// from where it stopped. Fails on a gap or on any other end.
fn events_until_resuming(client: &mut Client, session: &str, kind: &str) -> Vec<Value> {
    let mut events: Vec<Value> = Vec::new();
    loop {
        let message = match client.events.pop_front() {
            Some(m) => m,
            None => client
                .read()
                .expect("an event before the connection closed"),
        };
        let last = events.last().map_or(0, sequence);
        match message["method"].as_str() {
            Some("event") => {
                let event = message["params"].clone();
                assert_eq!(sequence(&event), last + 1, "a gap");
                let done = event["event"]["type"] == kind;
                events.push(event);
                if done {
                    return events;
                }
            }
            Some("subscription.ended") => {
                let ended = &message["params"];
                assert_eq!(ended["reason"], "queue_full", "{ended}");
                assert_eq!(ended["after_sequence"], last, "{ended}");
                client.subscribe(session, last);
            }
            _ => {}
        }
    }
}

fn sequence(event: &Value) -> u64 {
    event["sequence"].as_u64().unwrap()
}

/// Sequences stored in the session's event log on disk.
fn stored_sequences(ws: &Path, session: &str) -> Vec<u64> {
    let dir = ws.join(".minicode/events").join(session);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") && !path.ends_with("calls.jsonl") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let value: Value = serde_json::from_str(line).unwrap();
                out.push(value["params"]["sequence"].as_u64().unwrap());
            }
        }
    }
    out.sort();
    out
}

/// The event log cannot grow past 64 KiB (`RLIMIT_FSIZE`, with SIGXFSZ ignored so a write
/// fails with EFBIG as on a full disk). The subscriber receives only stored events, then
/// `subscription.ended` (`log_write_failed`); the run is stopped, the session refuses new
/// runs, and after a restart numbering goes on above everything the client saw.
#[test]
fn an_event_that_cannot_be_stored_is_never_sent_and_numbering_never_goes_back() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let long = "word ".repeat(8000);
    let server = MockServer::start_in_thread(vec![text_reply(&long, 10), text_reply("again", 2)]);
    let mut daemon = Daemon::start_customized(dir.path(), &server.base_url(), &[], |cmd| {
        // SAFETY: setrlimit and signal are async-signal-safe; they change only the child.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: 64 * 1024,
                    rlim_max: 64 * 1024,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
                Ok(())
            });
        }
    });
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    client.start_run(&session, "write a lot");
    let (events, ended) = until_ended(&mut client);
    assert_eq!(ended["reason"], "log_write_failed", "{ended}");
    assert!(
        ended["message"]
            .as_str()
            .unwrap()
            .contains("event log could not be written"),
        "{ended}"
    );
    let seen: Vec<u64> = events.iter().map(sequence).collect();
    let last_seen = *seen.last().unwrap();
    assert_eq!(seen, (1..=last_seen).collect::<Vec<_>>(), "no gap");
    assert_eq!(ended["after_sequence"], last_seen);
    // Everything sent is stored; nothing stored is missing from what was sent.
    assert_eq!(stored_sequences(&ws, &session), seen);
    assert!(
        !events.iter().any(|e| e["event"]["type"] == "run_ended"),
        "the run never got to end normally"
    );
    let refused = client.op(&session, json!({"type": "submit", "text": "more"}));
    assert!(refused.get("error").is_some(), "{refused}");

    // Restarted without the limit: the session goes on above what the client saw.
    daemon.kill();
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    client.open(&ws, Some(&session));
    client.subscribe(&session, last_seen);
    client.start_run(&session, "again");
    let after = client.events_until("run_ended");
    assert!(after.iter().all(|e| sequence(e) > last_seen), "{after:?}");
}

/// The log lost its segments (a crash of the machine before they reached the disk, say):
/// the high-water mark beside it keeps the numbering above what clients were sent.
#[test]
fn numbering_continues_above_the_high_water_mark_when_the_log_lost_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("first", 2), text_reply("second", 2)]);
    let mut daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    client.start_run(&session, "one");
    let seen = client.events_until("run_ended");
    let last_seen = sequence(seen.last().unwrap());
    daemon.kill();
    let events = ws.join(".minicode/events").join(&session);
    for entry in std::fs::read_dir(&events).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("000")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let mut client = daemon.client();
    let info = client.ok(
        "session.open",
        json!({"workspace": ws.display().to_string(), "session_id": session}),
    );
    assert!(
        info["last_sequence"].as_u64().unwrap() > last_seen,
        "{info}"
    );
    client.subscribe(&session, last_seen);
    client.start_run(&session, "two");
    let after = client.events_until("run_ended");
    assert!(after.iter().all(|e| sequence(e) > last_seen), "{after:?}");
}

/// Four clients subscribe and then read nothing while a run streams some 12 MB of events
/// (75,000 of them; the watcher that reads them all resumes if a busy machine left it 4 MiB
/// behind): the daemon holds a bounded amount for each (without the bound, each held
/// all of it), and when one reads at last it gets the events up to the bound, gapless, then
/// `subscription.ended` (`queue_full`) saying where to resume, and can resume there.
#[test]
fn clients_that_never_read_are_bounded_and_told_when_they_read() {
    let dir = tempfile::tempdir().unwrap();
    let long = "ab".repeat(75_000);
    let server = MockServer::start_in_thread(vec![text_reply(&long, 2)]);
    let daemon = Daemon::start(dir.path(), &server, &[]);
    let (_, ws) = layout(dir.path());
    let mut watcher = daemon.client();
    let session = watcher.open(&ws, None);
    let mut stuck: Vec<Client> = (0..4).map(|_| daemon.client()).collect();
    for client in &mut stuck {
        client.subscribe(&session, 0);
    }
    watcher.subscribe(&session, 0);
    let (_, before) = crate::support::daemon::memory_mb(daemon.child.id());
    watcher.start_run(&session, "stream a lot");
    let all = events_until_resuming(&mut watcher, &session, "run_ended");
    let total: usize = all.iter().map(|e| e.to_string().len()).sum();
    let (peak, _) = crate::support::daemon::memory_mb(daemon.child.id());
    eprintln!(
        "events {} ({total} bytes), RSS before {before} MB, peak {peak} MB",
        all.len()
    );
    assert!(total > 10_000_000, "the run made {total} bytes of events");
    assert!(peak < before + 36, "peak {peak} MB from {before} MB");
    let mut one = stuck.remove(0);
    let (events, ended) = until_ended(&mut one);
    assert_eq!(ended["reason"], "queue_full", "{ended}");
    let seen: Vec<u64> = events.iter().map(sequence).collect();
    let last = *seen.last().unwrap();
    assert_eq!(
        seen,
        (1..=last).collect::<Vec<_>>(),
        "no gap before the end"
    );
    assert_eq!(ended["after_sequence"], last);
    assert_eq!(ended["first_sequence"], 1);
    // It can pick up where it stopped.
    one.subscribe(&session, last);
    assert_eq!(sequence(&one.next_event()), last + 1);
}

/// The first sequence the session's event log still holds on disk (its oldest segment's name).
fn first_stored(ws: &Path, session: &str) -> u64 {
    let dir = ws.join(".minicode/events").join(session);
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".jsonl")?.parse::<u64>().ok()
        })
        .min()
        .unwrap()
}

/// With segments of 4 KiB (`MINICODE_TEST_EVENT_SEGMENT_BYTES`, so 64 KiB of events are kept)
/// a subscriber whose connection is stuck while a run writes some 1.7 MB of events is
/// rotated past. Its connection is made stuck by thousands of requests whose answers it does
/// not read (they fill the daemon's queue for it, so its subscription waits with an old
/// cursor, well under the queue's byte bound). When it reads at last it gets a gapless prefix,
/// then `subscription.ended` (`fell_behind`) naming the oldest event left, never a silent
/// gap; subscribing from there works, and an older cursor is refused with that same sequence.
/// (Without the daemon's check the reader gets a silent jump from the prefix to the log.)
#[test]
fn a_subscriber_the_log_rotated_past_is_told_it_fell_behind_and_where_to_resume() {
    const FLOOD: usize = 5000;

    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new();
    let long = "ab".repeat(10_000);
    let server = MockServer::start_in_thread(vec![text_reply(&long, 2).after(&gate)]);
    let daemon = Daemon::start_customized(dir.path(), &server.base_url(), &[], |cmd| {
        cmd.env("MINICODE_TEST_EVENT_SEGMENT_BYTES", "4096");
    });
    let (_, ws) = layout(dir.path());
    let mut watcher = daemon.client();
    let session = watcher.open(&ws, None);
    let mut stuck = daemon.client();
    stuck.subscribe(&session, 0);
    watcher.start_run(&session, "stream a lot");

    // The stuck client asks and asks without reading an answer.
    let written = Arc::new(AtomicUsize::new(0));
    let flood = std::thread::spawn({
        let mut out = stuck.writer();
        let written = written.clone();
        move || {
            for i in 0..FLOOD {
                let line =
                    json!({"jsonrpc": "2.0", "id": format!("f{i}"), "method": "session.list"});
                out.write_all(format!("{line}\n").as_bytes()).unwrap();
                written.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    assert!(wait_until_blocking(DEADLINE, || written
        .load(Ordering::Relaxed)
        >= 1000));
    gate.open();
    // The watcher does not subscribe (with a log this small, a busy machine could leave any
    // subscriber behind); it asks until the run is over.
    let over = wait_until_blocking(DEADLINE, || {
        watcher.ok("session.list", json!({}))["sessions"][0]["run_id"].is_null()
    });
    assert!(over, "the run ended");
    let first = first_stored(&ws, &session);

    // It reads: events without a gap, then the end, then the rest of its answers.
    let mut seen = Vec::new();
    let mut answers = 0;
    let mut ended = None;
    while ended.is_none() || answers < FLOOD {
        let message = match stuck.events.pop_front() {
            Some(m) => m,
            None => stuck.read().expect("the daemon kept the connection"),
        };
        match message["method"].as_str() {
            Some("event") => {
                assert!(ended.is_none(), "an event after the end: {message}");
                let next = sequence(&message["params"]);
                assert_eq!(next, seen.len() as u64 + 1, "a silent gap");
                seen.push(next);
            }
            Some("subscription.ended") => ended = Some(message["params"].clone()),
            _ if message["id"].as_str().is_some_and(|id| id.starts_with('f')) => answers += 1,
            _ => {}
        }
    }
    flood.join().unwrap();
    let ended = ended.unwrap();
    assert_eq!(ended["reason"], "fell_behind", "{ended}");
    let last = *seen.last().unwrap();
    assert_eq!(ended["after_sequence"], last, "{ended}");
    assert_eq!(ended["first_sequence"], first, "{ended}");
    assert!(
        last + 1 < first,
        "the log rotated past it: {last} < {first}"
    );

    // Resuming from the oldest event left works; an older cursor is refused, saying so.
    stuck.subscribe(&session, first - 1);
    assert_eq!(sequence(&stuck.next_event()), first);
    let refused = watcher.call(
        "session.subscribe",
        json!({"session_id": session, "after_sequence": last}),
    );
    assert_eq!(refused["error"]["code"], -32006, "{refused}");
    assert_eq!(
        refused["error"]["data"]["first_sequence"], first,
        "{refused}"
    );
}

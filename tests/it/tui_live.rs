//! Live output of a running `bash` call: the tool hands its output on in coalesced, redacted
//! pieces (`tools::live`), the core turns them into `ToolOutputDelta` events (stream-json
//! prints them), and the full-screen state shows the last lines under the running call, `\r`
//! progress rewrites as the latest state of the line, until the capped result replaces them;
//! the result (what the model reads and what is shown) keeps each line's last state too.

use crate::support::screen::text as screen;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::binary::command;
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
use crate::support::workspace;
use minicode::chat::ToolStatus;
use minicode::protocol::Event;
use minicode::tools::{Secrets, ToolCtx, live};
use minicode::tui::live::Tail;
use minicode::tui::state::{Msg, State};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn ev_at(s: &mut State, e: Event, now: Instant) {
    s.update_at(Msg::Agent(e), now);
}

/// Runs `command` with the bash tool inside a live scope; returns the pieces and the result.
async fn run_live(ctx: &ToolCtx, command: &str) -> (Vec<String>, String) {
    let pieces = Arc::new(Mutex::new(Vec::<String>::new()));
    let p = pieces.clone();
    let sink: live::Sink = Arc::new(move |text| p.lock().unwrap().push(text));
    let args = json!({ "command": command });
    let run = crate::support::bash::run(ctx, args, CancellationToken::new());
    let out = live::scope(sink, run).await;
    let pieces = pieces.lock().unwrap().clone();
    (pieces, out.content)
}

#[tokio::test]
async fn bash_output_arrives_in_pieces_while_the_command_runs() {
    let (_dir, ws) = workspace();
    let ctx = ToolCtx::new(ws, Duration::from_secs(30), Vec::new());
    let (pieces, result) = run_live(&ctx, "echo first; sleep 0.3; echo second").await;
    // The first line was handed on before the second was printed: two pieces at least.
    assert!(pieces.len() >= 2, "{pieces:?}");
    assert_eq!(pieces[0], "first\n");
    assert_eq!(pieces.concat(), "first\nsecond\n");
    assert!(result.starts_with("first\nsecond\n"), "{result}");
}

#[tokio::test]
async fn a_fast_command_is_coalesced_and_split_characters_stay_whole() {
    let (_dir, ws) = workspace();
    let ctx = ToolCtx::new(ws, Duration::from_secs(30), Vec::new());
    // 20,000 short lines as fast as bash prints them, with a multi-byte character in each.
    let (pieces, _) = run_live(&ctx, "for i in $(seq 1 20000); do echo \"é $i\"; done").await;
    let all = pieces.concat();
    assert_eq!(all.lines().count(), 20_000);
    assert!(
        all.lines().all(|l| l.starts_with("é ")),
        "no character cut in two"
    );
    // Thousands of reads, but pieces come at most every 50 ms or 64 KiB.
    assert!(pieces.len() < 200, "{} pieces", pieces.len());
}

#[tokio::test]
async fn a_secret_split_across_reads_never_reaches_a_piece() {
    let (_dir, ws) = workspace();
    let mut ctx = ToolCtx::new(ws, Duration::from_secs(30), Vec::new());
    ctx.secrets = Secrets::new(["sk-live-0123456789abcdef".to_string()]);
    let (pieces, result) = run_live(
        &ctx,
        "printf 'key sk-live-01234'; sleep 0.2; printf '56789abcdef done\\n'",
    )
    .await;
    let all = pieces.concat();
    assert!(!all.contains("0123456789"), "{pieces:?}");
    assert!(all.contains("[redacted] done"), "{all}");
    assert!(result.contains("[redacted] done"), "{result}");
}

#[test]
fn carriage_return_progress_shows_the_latest_state_of_the_line() {
    let mut tail = Tail::default();
    tail.push("building\n");
    for pct in (0..=100).step_by(5) {
        tail.push(&format!("\rprogress {pct:>3}%"));
    }
    // CRLF split across pieces ends the line instead of rewriting it.
    tail.push("\r");
    tail.push("\ndone\r\n");
    assert_eq!(tail.shown(), vec!["building", "progress 100%", "done"]);
    assert_eq!(tail.lines, 3);
}

#[test]
fn only_the_last_lines_are_kept_whatever_the_command_prints() {
    let mut tail = Tail::default();
    let big: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
    tail.push(&big);
    tail.push("partial");
    assert_eq!(
        tail.shown(),
        vec![
            "line 99996",
            "line 99997",
            "line 99998",
            "line 99999",
            "partial"
        ]
    );
    assert_eq!(tail.lines, 100_000);
    // One line without an end stays bounded.
    let mut tail = Tail::default();
    tail.push(&"x".repeat(10 << 20));
    assert!(tail.shown()[0].len() <= 1024);
}

#[test]
fn live_tail_under_a_running_call_then_the_result_replaces_it() {
    let t0 = Instant::now();
    let mut s = State::new("test-model", 100_000);
    s.update_at(Msg::Resize(60, 16), t0);
    ev_at(&mut s, Event::TurnStarted { turn: 1 }, t0);
    ev_at(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: "c1".into(),
            tool: "bash".into(),
            summary: "./build.sh".into(),
            arguments: json!({"command": "./build.sh"}),
            change: None,
        },
        t0,
    );
    let pieces = [
        "compiling a\ncompiling b\n",
        "compiling c\ndownloading   0%",
        "\rdownloading  40%",
        "\rdownloading  80%\rdownloading 100%",
        "\nlinking\n",
    ];
    for (i, p) in pieces.iter().enumerate() {
        let at = t0 + Duration::from_millis(400 * i as u64);
        ev_at(
            &mut s,
            Event::ToolOutputDelta {
                call: "c1".into(),
                text: p.to_string(),
            },
            at,
        );
    }
    // The run loop wakes for the next second and moves the clock.
    let wake = s.wake_at().unwrap();
    assert_eq!(wake, t0 + Duration::from_secs(1));
    s.set_now(t0 + Duration::from_millis(2100));
    insta::assert_snapshot!("live_tail_running", screen(&s));

    ev_at(
        &mut s,
        Event::ToolCallEnded {
            call: "c1".into(),
            status: ToolStatus::Succeeded,
            output:
                "compiling a\ncompiling b\ncompiling c\ndownloading 100%\nlinking\n[exit code 0]"
                    .into(),
        },
        t0 + Duration::from_secs(3),
    );
    assert_eq!(s.wake_at(), None, "nothing runs: no more wake-ups");
    insta::assert_snapshot!("live_tail_replaced_by_result", screen(&s));
}

#[test]
fn stream_json_prints_output_deltas_of_a_running_command() {
    let args = json!({"command": "echo one; sleep 0.2; echo two"}).to_string();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", &args)], 16),
        text_reply("ran it", 4),
    ]);
    let (_dir, ws) = workspace();
    let out = command(&ws)
        .args(["--base-url", &server.base_url(), "--model", "m", "--yes"])
        .args(["--output-format", "stream-json", "run it"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let deltas: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "tool_output_delta")
        .collect();
    assert!(deltas.len() >= 2, "{stdout}");
    assert!(deltas.iter().all(|d| d["call"] == "c1"));
    let text: String = deltas.iter().map(|d| d["text"].as_str().unwrap()).collect();
    assert_eq!(text, "one\ntwo\n");
    // The deltas come between the call's start and its end.
    let pos = |needle: &str| stdout.find(needle).unwrap();
    assert!(pos("\"tool_call_began\"") < pos("\"tool_output_delta\""));
    assert!(pos("\"tool_output_delta\"") < pos("\"tool_call_ended\""));
    // stderr is not a terminal: no live tail written there.
    assert!(!String::from_utf8_lossy(&out.stderr).contains("│"));
}

/// The tool messages the model received in `request`, by call id.
fn tool_result(request: &crate::support::mock_openai::Recorded, call: &str) -> String {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {call} in {}", request.body))
        .to_string()
}

#[test]
fn a_progress_bar_reaches_the_model_as_its_last_state_and_is_saved_with_every_state() {
    // A short bar, and one long enough (about 190 KB) for its full output to be saved.
    let short = "for i in $(seq 1 50); do printf 'progress %d%%\\r' $i; done; echo; echo done";
    let long = "for i in $(seq 1 6000); do printf 'copying %05d of 6000 ..........\\r' $i; done";
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(
            &[
                ("c1", "bash", &json!({ "command": short }).to_string()),
                ("c2", "bash", &json!({ "command": long }).to_string()),
            ],
            32,
        ),
        text_reply("copied", 4),
    ]);
    let (_dir, ws) = workspace();
    let out = command(&ws)
        .args(["--base-url", &server.base_url(), "--model", "m", "--yes"])
        .arg("copy it")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);

    let c1 = tool_result(&requests[1], "c1");
    assert!(c1.starts_with("progress 50%\r\ndone\n"), "{c1:?}");
    assert_eq!(c1.matches("progress").count(), 1, "{c1:?}");
    // The one-shot report shows the same last state.
    assert!(stderr.contains("succeeded: progress 50%"), "{stderr}");
    assert!(!stderr.contains("progress 49%"), "{stderr}");

    // Cut to head and tail: each part keeps only its last state.
    let c2 = tool_result(&requests[1], "c2");
    assert!(c2.contains("copying 06000 of 6000"), "{c2:?}");
    assert!(c2.matches("copying").count() <= 3, "{c2:?}");
    assert!(c2.contains("saved to .minicode/outputs/"), "{c2:?}");
    let saved: Vec<_> = std::fs::read_dir(ws.join(".minicode/outputs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let raw = std::fs::read(&saved[0]).unwrap();
    let raw = String::from_utf8_lossy(&raw);
    assert!(
        raw.starts_with("copying 00001 of 6000 ..........\rcopying 00002 of 6000"),
        "{}",
        &raw[..raw.len().min(200)]
    );
    assert_eq!(raw.matches('\r').count(), 6000);
}

#[test]
fn a_finished_call_shows_each_progress_line_in_its_last_state() {
    let t0 = Instant::now();
    let mut s = State::new("test-model", 100_000);
    s.update_at(Msg::Resize(60, 16), t0);
    ev_at(&mut s, Event::TurnStarted { turn: 1 }, t0);
    ev_at(
        &mut s,
        Event::ToolCallBegan {
            kind: minicode::chat::ToolKind::Other,
            paths: Vec::new(),
            call: "c1".into(),
            tool: "fetch".into(),
            summary: "model.bin".into(),
            arguments: json!({}),
            change: None,
        },
        t0,
    );
    // A result with raw rewrites (a tool other than bash, or a session saved before they were
    // collapsed).
    let states: String = (1..=50).map(|i| format!("progress {i}%\r")).collect();
    ev_at(
        &mut s,
        Event::ToolCallEnded {
            call: "c1".into(),
            status: ToolStatus::Succeeded,
            output: format!("{states}\nfetched\n"),
        },
        t0,
    );
    let screen = screen(&s);
    assert!(screen.contains("progress 50%"), "{screen}");
    assert!(!screen.contains("progress 49%"), "{screen}");
    assert!(screen.contains("fetched"), "{screen}");
}

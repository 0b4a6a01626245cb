//! Reasoning models: `reasoning_content`, `reasoning` and inline `<think>` (split anywhere)
//! all become typed reasoning, never the answer; reasoning is not sent back unless
//! `send_reasoning`; a reply with only reasoning fails with its own message; one-shot shows it
//! on stderr only with `--show-reasoning`; the full-screen view shows it dimmed and folds it.

use crate::support::agent::spawn;
use crate::support::binary::{command, write_config};
use crate::support::events::run_turn;
use crate::support::mock_openai::*;
use minicode::agent::Options;
use minicode::protocol::{Event, TurnEnd};
use minicode::provider::openai::OpenAi;
use minicode::provider::sse::Decoder;
use minicode::provider::{ReasoningFormat, Reply, StreamEvent};
use minicode::tui::state::{Msg, State};
use minicode::tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

fn delta(d: Value) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": null}]})
}

fn content(text: &str) -> Value {
    delta(json!({"content": text}))
}

/// Decodes a stream of `payloads` (then `finish_reason: stop`): the streamed text, the
/// streamed reasoning, and the final reply.
fn decode(payloads: &[Value]) -> (String, String, Reply) {
    let mut all = payloads.to_vec();
    all.push(chunk_finish("stop"));
    let events = Decoder::decode_all(&sse_bytes(&all)).unwrap();
    let (mut text, mut thought, mut reply) = (String::new(), String::new(), None);
    for e in events {
        match e {
            StreamEvent::Text(t) => text.push_str(&t),
            StreamEvent::Reasoning(t) => thought.push_str(&t),
            StreamEvent::Done(r) => reply = Some(*r),
            _ => {}
        }
    }
    (text, thought, reply.unwrap())
}

#[test]
fn reasoning_content_field_is_reasoning_not_answer() {
    let (text, thought, reply) = decode(&[
        delta(json!({"reasoning_content": "The user wants "})),
        delta(json!({"reasoning_content": "a greeting."})),
        content("Hello!"),
    ]);
    assert_eq!(thought, "The user wants a greeting.");
    assert_eq!(text, "Hello!");
    assert_eq!(reply.text, "Hello!");
    assert_eq!(reply.reasoning, "The user wants a greeting.");
    assert_eq!(
        reply.reasoning_format,
        Some(ReasoningFormat::ReasoningContent)
    );
}

#[test]
fn reasoning_field_is_reasoning_not_answer() {
    let (text, thought, reply) = decode(&[
        delta(json!({"reasoning": "hmm"})),
        delta(json!({"content": "", "reasoning": " ok"})),
        content("Yes."),
    ]);
    assert_eq!((text.as_str(), thought.as_str()), ("Yes.", "hmm ok"));
    assert_eq!(reply.reasoning_format, Some(ReasoningFormat::Reasoning));
}

#[test]
fn the_same_reasoning_under_both_names_counts_once() {
    // Newer vLLM sends `reasoning` beside the deprecated `reasoning_content`.
    let (_, thought, reply) = decode(&[
        delta(json!({"reasoning_content": "step", "reasoning": "step"})),
        content("done"),
    ]);
    assert_eq!(thought, "step");
    assert_eq!(reply.reasoning, "step");
}

const INLINE: &str = "  <think>\nLet me see: a < b, and </thin is not the end.\n</think>\n\nThe answer is 42; <think> here is text.";
const THOUGHT: &str = "Let me see: a < b, and </thin is not the end.\n";
const ANSWER: &str = "The answer is 42; <think> here is text.";

#[test]
fn think_tags_become_reasoning_whole() {
    let (text, thought, reply) = decode(&[content(INLINE)]);
    assert_eq!(thought, THOUGHT);
    assert_eq!(text, ANSWER);
    assert_eq!(reply.text, ANSWER);
    assert_eq!(reply.reasoning, THOUGHT);
    assert_eq!(reply.reasoning_format, Some(ReasoningFormat::ThinkTags));
}

#[test]
fn think_tags_split_at_every_position_give_the_same_reply() {
    let cuts: Vec<usize> = (0..=INLINE.len())
        .filter(|i| INLINE.is_char_boundary(*i))
        .collect();
    for &a in &cuts {
        for &b in cuts.iter().filter(|b| **b >= a) {
            let pieces = [&INLINE[..a], &INLINE[a..b], &INLINE[b..]];
            let payloads: Vec<Value> = pieces.iter().map(|p| content(p)).collect();
            let (text, thought, reply) = decode(&payloads);
            assert_eq!(thought, THOUGHT, "split at {a},{b}");
            assert_eq!(text, ANSWER, "split at {a},{b}");
            assert_eq!(
                (reply.text.as_str(), reply.reasoning.as_str()),
                (ANSWER, THOUGHT)
            );
        }
    }
    // One character per delta, and the SSE bytes split at every position.
    let payloads: Vec<Value> = INLINE.chars().map(|c| content(&c.to_string())).collect();
    let (text, thought, _) = decode(&payloads);
    assert_eq!((text.as_str(), thought.as_str()), (ANSWER, THOUGHT));
    let mut all = vec![content(&INLINE[..20]), content(&INLINE[20..])];
    all.push(chunk_finish("stop"));
    let bytes = sse_bytes(&all);
    for at in 1..bytes.len() {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for part in split_at_positions(&bytes, &[at]) {
            d.feed(&part, &mut out).unwrap();
        }
        match out.last() {
            Some(StreamEvent::Done(r)) => assert_eq!(
                (r.text.as_str(), r.reasoning.as_str()),
                (ANSWER, THOUGHT),
                "byte {at}"
            ),
            other => panic!("byte {at}: {other:?}"),
        }
    }
}

#[test]
fn partial_tags_that_never_complete_are_what_they_look_like() {
    // A reply that starts like a tag but is not one is answer text.
    let (text, thought, _) = decode(&[content("<thi"), content("s is fine")]);
    assert_eq!((text.as_str(), thought.as_str()), ("<this is fine", ""));
    let (text, _, _) = decode(&[content("  <thi")]);
    assert_eq!(text, "  <thi");
    // An unclosed think is all reasoning: the reply has no answer.
    let (text, thought, reply) = decode(&[content("<think>still going </thi")]);
    assert_eq!((text.as_str(), thought.as_str()), ("", "still going </thi"));
    assert!(reply.text.is_empty());
}

#[test]
fn a_lone_closing_tag_makes_what_came_before_it_reasoning() {
    // DeepSeek-R1 behind a server without a reasoning parser: the template opened the think.
    let (_, _, reply) = decode(&[
        content("Okay, the user wants 2+2.\n</think>\n\n"),
        content("4"),
    ]);
    assert_eq!(reply.reasoning, "Okay, the user wants 2+2.\n");
    assert_eq!(reply.text, "4");
    assert_eq!(reply.reasoning_format, Some(ReasoningFormat::ThinkTags));
}

fn provider(server: &MockServer, send_reasoning: bool) -> OpenAi {
    crate::support::provider::provider_with(server, |o| o.send_reasoning = send_reasoning)
}

/// A reply that thinks (`reasoning_content`), then calls `read` on `a.txt`.
fn thinking_call() -> MockReply {
    let mut payloads = vec![delta(
        json!({"reasoning_content": "SECRET-PLAN: read the file first"}),
    )];
    payloads.extend(tool_call_payloads(
        &[("call_1", "read", r#"{"path":"a.txt"}"#)],
        8,
    ));
    MockReply::sse(sse_events(&payloads))
}

#[tokio::test]
async fn reasoning_is_shown_but_not_sent_back_by_default() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    let server = MockServer::start(vec![thinking_call(), text_reply("done", 3)]).await;
    let mut handle = spawn(&ws, provider(&server, false), Options::default());
    let (events, end, _) = run_turn(&mut handle, "go", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    let thought: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thought, "SECRET-PLAN: read the file first");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text } if text.contains("SECRET")))
    );
    assert!(!server.requests()[1].raw_body.contains("SECRET-PLAN"));
    assert!(!server.requests()[1].raw_body.contains("reasoning_content"));
}

#[tokio::test]
async fn reasoning_is_sent_back_when_enabled() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    let server = MockServer::start(vec![thinking_call(), text_reply("done", 3)]).await;
    let options = Options {
        send_reasoning: true,
        ..Options::default()
    };
    let mut handle = spawn(&ws, provider(&server, true), options);
    let (_, end, _) = run_turn(&mut handle, "go", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    let messages = server.requests()[1].body["messages"].clone();
    let asked = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()
        .clone();
    assert_eq!(
        asked["reasoning_content"],
        "SECRET-PLAN: read the file first"
    );
    assert_eq!(asked["tool_calls"][0]["id"], "call_1");
}

#[tokio::test]
async fn kept_reasoning_is_still_left_out_when_the_provider_does_not_send_it() {
    // A session saved with send_reasoning on, resumed with it off.
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    let server = MockServer::start(vec![thinking_call(), text_reply("done", 3)]).await;
    let options = Options {
        send_reasoning: true,
        ..Options::default()
    };
    let mut handle = spawn(&ws, provider(&server, false), options);
    let (_, end, _) = run_turn(&mut handle, "go", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(!server.requests()[1].raw_body.contains("SECRET-PLAN"));
}

#[tokio::test]
async fn a_reply_with_only_reasoning_fails_with_its_own_message() {
    let (_dir, ws) = crate::support::workspace();
    let only = |finish: &str| {
        MockReply::sse(sse_events(&[
            delta(json!({"reasoning_content": "thinking and thinking"})),
            chunk_finish(finish),
        ]))
    };
    let server = MockServer::start(vec![only("stop"), only("length")]).await;
    let mut handle = spawn(&ws, provider(&server, false), Options::default());
    let (_, end, _) = run_turn(&mut handle, "go", |_| None).await;
    assert_eq!(
        end,
        TurnEnd::Failed {
            error: "the model returned only reasoning, with no answer and no tool call".into()
        }
    );
    let (_, end, _) = run_turn(&mut handle, "again", |_| None).await;
    let TurnEnd::Failed { error } = end else {
        panic!("{end:?}")
    };
    assert!(
        error.contains("(finish_reason: length)") && error.contains("max_tokens"),
        "{error}"
    );
}

#[test]
fn one_shot_shows_reasoning_on_stderr_only_when_asked() {
    let script = || {
        MockReply::sse(sse_events(&[
            content("<think>pondering \u{1b}[31mred</think>"),
            content("The answer."),
            chunk_finish("stop"),
        ]))
    };
    let server = MockServer::start_in_thread(vec![script(), script(), script()]);
    let (_dir, ws) = crate::support::workspace();
    write_config(&ws, &server);
    let plain = command(&ws)
        .args(["--no-tools", "question"])
        .output()
        .unwrap();
    assert!(plain.status.success());
    assert_eq!(String::from_utf8_lossy(&plain.stdout).trim(), "The answer.");
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("pondering"));

    let shown = command(&ws)
        .args(["--no-tools", "--show-reasoning", "question"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(
        stderr.contains("thinking:") && stderr.contains("pondering"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "reasoning is sanitised: {stderr:?}"
    );
    assert_eq!(String::from_utf8_lossy(&shown.stdout).trim(), "The answer.");

    let json = command(&ws)
        .args(["--no-tools", "--output-format", "stream-json", "question"])
        .output()
        .unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().any(
        |l| l["type"] == "reasoning_delta" && l["text"].as_str().unwrap().contains("pondering")
    ));
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "context_window_set" && l["source"] == "default")
    );
}

fn rows(s: &State) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(s.size.0, s.size.1)).unwrap();
    term.draw(|f| view::render(s, f)).unwrap();
    let buf = term.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

#[test]
fn the_full_screen_view_shows_reasoning_then_folds_it_when_the_answer_starts() {
    let mut s = State::new("m", 100_000);
    s.update(Msg::Resize(60, 30));
    s.update(Msg::Agent(Event::TurnStarted { turn: 1 }));
    let thought: String = (1..=12).map(|i| format!("step {i}\n")).collect();
    for piece in thought.as_bytes().chunks(5) {
        s.update(Msg::Agent(Event::ReasoningDelta {
            text: String::from_utf8(piece.to_vec()).unwrap(),
        }));
    }
    let has = |s: &State, line: &str| rows(s).iter().any(|r| r.trim() == line);
    assert!(has(&s, "∴ thinking…"));
    assert!(has(&s, "step 12") && has(&s, "step 5") && !has(&s, "step 4"));
    assert!(has(&s, "… 4 earlier lines (Ctrl+O to expand)"));
    s.update(Msg::Agent(Event::TextDelta {
        text: "The answer".into(),
    }));
    assert!(has(&s, "∴ thought") && !has(&s, "∴ thinking…"));
    assert!(has(&s, "step 12") && has(&s, "step 10") && !has(&s, "step 9"));
    assert!(has(&s, "The answer"));
    // The folded reasoning is not the reply /copy takes.
    s.update(Msg::Agent(Event::AssistantMessage {
        text: "The answer".into(),
    }));
    for c in "/copy".chars() {
        s.update(Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(c),
            crossterm::event::KeyModifiers::NONE,
        )));
    }
    let effects = s.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Enter,
        crossterm::event::KeyModifiers::NONE,
    )));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, minicode::tui::state::Effect::Copy(t) if t == "The answer")),
        "{effects:?}"
    );
    // Ctrl+O shows it whole.
    s.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('o'),
        crossterm::event::KeyModifiers::CONTROL,
    )));
    assert!(has(&s, "step 1") && has(&s, "step 9"));
}

//! A path pasted into the full-screen session that names an image file attaches the picture:
//! the draft shows its label, the prompt goes as `Op::SubmitImages`, and the model server gets
//! the bytes as an `image_url` part. Anything else pasted stays text. The paste is classified
//! as the run loop does it (`tui::pasted::classify`), then fed to `State::update`.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use minicode::agent::Options;
use minicode::chat::Image;
use minicode::protocol::{Event, Op, TurnEnd};
use minicode::tui::pasted::classify;
use minicode::tui::state::{Effect, Msg, State};

use crate::support::events::until;
use crate::support::mock_openai::{MockServer, text_reply};

/// A PNG of `size` bytes: the signature, then filler no server decodes here.
fn png(size: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..size.saturating_sub(8)).map(|i| (i * 13 % 251) as u8));
    bytes
}

fn state() -> State {
    let mut s = State::new("m", 32_768);
    s.update(Msg::Resize(100, 30));
    s
}

fn key(s: &mut State, code: KeyCode, modifiers: KeyModifiers) -> Vec<Effect> {
    s.update(Msg::Key(KeyEvent::new(code, modifiers)))
}

fn enter(s: &mut State) -> Vec<Effect> {
    key(s, KeyCode::Enter, KeyModifiers::NONE)
}

/// `text` pasted as the run loop pastes it, with `ws` the workspace.
fn paste(s: &mut State, ws: &Path, text: &str) -> Vec<Effect> {
    s.update(classify(text.into(), ws))
}

/// The images a prompt effect carries (none for a plain `Submit`).
fn submitted(effects: &[Effect]) -> (String, Vec<Image>) {
    match effects {
        [Effect::Op(Op::SubmitImages { text, images })] => (text.clone(), images.clone()),
        [Effect::Op(Op::Submit(text))] => (text.clone(), Vec::new()),
        other => panic!("no prompt sent: {other:?}"),
    }
}

#[test]
fn a_pasted_image_path_is_attached_and_goes_with_the_prompt() {
    let ws = tempfile::tempdir().unwrap();
    let picture = png(3000);
    std::fs::create_dir(ws.path().join("shots")).unwrap();
    std::fs::write(ws.path().join("shots/my shot.png"), &picture).unwrap();
    let mut s = state();
    // As file managers paste a dragged file: quoted, with its absolute path.
    let quoted = format!("'{}' ", ws.path().join("shots/my shot.png").display());
    paste(&mut s, ws.path(), &quoted);
    assert_eq!(s.draft.text(), "[image: my shot.png 3 KB]");
    s.update(Msg::Paste(" what is wrong here?".into()));
    let (text, images) = submitted(&enter(&mut s));
    assert_eq!(text, "[image: my shot.png 3 KB] what is wrong here?");
    assert_eq!(images.len(), 1);
    assert_eq!(&*images[0].data, picture.as_slice());
}

#[test]
fn escaped_relative_home_and_file_url_pastes_all_attach() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a b.gif"), b"GIF89a-----").unwrap();
    let url = format!("file://{}/a%20b.gif", ws.path().display());
    for pasted in ["a\\ b.gif", "\"a b.gif\"", url.as_str()] {
        let msg = classify(pasted.into(), ws.path());
        assert!(
            matches!(&msg, Msg::PasteImage { name, .. } if name == "a b.gif"),
            "{pasted}: {msg:?}"
        );
    }
}

#[test]
fn a_pasted_path_that_is_no_image_stays_text() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "plain words").unwrap();
    for pasted in ["notes.txt", "missing.png", "look at notes.txt", "."] {
        let msg = classify(pasted.into(), ws.path());
        assert!(matches!(&msg, Msg::Paste(t) if t == pasted), "{msg:?}");
    }
    let mut s = state();
    paste(&mut s, ws.path(), "notes.txt");
    assert_eq!(submitted(&enter(&mut s)), ("notes.txt".into(), Vec::new()));
}

#[test]
fn an_image_named_file_that_fails_the_checks_stays_text_with_a_notice() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("fake.png"), "<svg></svg>").unwrap();
    let mut big = png(0);
    big.resize(minicode::chat::MAX_IMAGE_BYTES + 1, 0);
    std::fs::write(ws.path().join("huge.png"), big).unwrap();
    let mut s = state();
    paste(&mut s, ws.path(), "fake.png");
    assert_eq!(s.draft.text(), "fake.png");
    let hint = s.hint().unwrap_or_default().to_string();
    assert!(
        hint.contains("fake.png not attached") && hint.contains("PNG"),
        "{hint}"
    );
    key(&mut s, KeyCode::Char('u'), KeyModifiers::CONTROL);
    paste(&mut s, ws.path(), "huge.png");
    assert_eq!(s.draft.text(), "huge.png");
    let hint = s.hint().unwrap_or_default().to_string();
    assert!(hint.contains("over the limit"), "{hint}");
}

#[test]
fn deleting_the_label_or_clearing_the_draft_drops_the_image() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.png"), png(100)).unwrap();
    let mut s = state();
    paste(&mut s, ws.path(), "a.png");
    let label = s.draft.text();
    // The label deleted (Ctrl+U) and the prompt typed: no image goes.
    key(&mut s, KeyCode::Char('u'), KeyModifiers::CONTROL);
    s.update(Msg::Paste("hi".into()));
    assert_eq!(submitted(&enter(&mut s)), ("hi".into(), Vec::new()));
    s.update(Msg::Agent(Event::TurnEnded {
        turn: 1,
        end: TurnEnd::Completed,
        stats: Default::default(),
    }));
    // Ctrl+C clears the draft and its images: the same label typed later is only text.
    paste(&mut s, ws.path(), "a.png");
    key(&mut s, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(s.draft.is_empty());
    s.update(Msg::Paste(label.clone()));
    assert_eq!(submitted(&enter(&mut s)), (label, Vec::new()));
}

#[test]
fn a_prompt_queued_while_busy_keeps_its_image() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.png"), png(100)).unwrap();
    let mut s = state();
    s.update(Msg::Paste("first".into()));
    enter(&mut s);
    paste(&mut s, ws.path(), "a.png");
    assert!(enter(&mut s).is_empty(), "queued while the turn runs");
    let next = s.update(Msg::Agent(Event::TurnEnded {
        turn: 1,
        end: TurnEnd::Completed,
        stats: Default::default(),
    }));
    let (text, images) = submitted(&next);
    assert_eq!(text, "[image: a.png 1 KB]");
    assert_eq!(images.len(), 1);
}

#[tokio::test]
async fn a_pasted_image_reaches_the_server_as_an_image_url_part() {
    let server = MockServer::start(vec![text_reply("a red square", 4)]).await;
    let ws = tempfile::tempdir().unwrap();
    let picture = png(2048);
    std::fs::write(ws.path().join("square.png"), &picture).unwrap();
    let provider = crate::support::provider::provider(&server);
    let mut handle = crate::support::agent::spawn(ws.path(), provider, Options::default());
    let mut s = state();
    paste(&mut s, ws.path(), "square.png");
    s.update(Msg::Paste(" what colour?".into()));
    for effect in enter(&mut s) {
        let Effect::Op(op) = effect else { continue };
        handle.send(op);
    }
    let events = tokio::time::timeout(
        Duration::from_secs(20),
        until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })),
    )
    .await
    .unwrap();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::TurnEnded {
                end: TurnEnd::Completed,
                ..
            }
        )),
        "{events:?}"
    );
    let requests = server.requests();
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    assert_eq!(
        user["content"][0]["text"],
        "[image: square.png 2 KB] what colour?"
    );
    let b64 = base64::engine::general_purpose::STANDARD.encode(&picture);
    assert_eq!(
        user["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{b64}")
    );
}

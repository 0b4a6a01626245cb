//! Working with the transcript: folding one entry at a time from a keyboard selection, the
//! mouse selection of characters (also while a reply streams and the view moves), `/copy`,
//! `/copy N`, `/copy code`, and `/find` with Ctrl+F.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use minicode::chat::ToolStatus;
use minicode::protocol::Event;
use minicode::tui::state::{Effect, Msg, State};
use serde_json::json;

use crate::support::screen::{buffer, row_of, styled};

fn state(w: u16, h: u16) -> State {
    let mut s = State::new("test-model", 100_000);
    s.update(Msg::Resize(w, h));
    s
}

fn key(s: &mut State, code: KeyCode, modifiers: KeyModifiers) -> Vec<Effect> {
    s.update(Msg::Key(KeyEvent::new(code, modifiers)))
}

fn command(s: &mut State, text: &str) -> Vec<Effect> {
    s.update(Msg::Paste(text.into()));
    key(s, KeyCode::Enter, KeyModifiers::NONE)
}

fn tool(s: &mut State, call: &str, lines: usize) {
    s.update(Msg::Agent(Event::ToolCallBegan {
        kind: minicode::chat::ToolKind::Other,
        paths: Vec::new(),
        call: call.into(),
        tool: "bash".into(),
        summary: format!("run {call}"),
        arguments: json!({}),
        change: None,
    }));
    let output: Vec<String> = (1..=lines).map(|i| format!("{call} line {i}")).collect();
    s.update(Msg::Agent(Event::ToolCallEnded {
        call: call.into(),
        status: ToolStatus::Succeeded,
        output: output.join("\n"),
    }));
}

fn reply(s: &mut State, text: &str) {
    s.update(Msg::Agent(Event::AssistantMessage { text: text.into() }));
}

fn mouse(s: &mut State, kind: MouseEventKind, column: u16, row: u16) -> Vec<Effect> {
    s.update(Msg::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }))
}

fn screen_text(s: &State) -> String {
    let buf = buffer(s);
    (0..buf.area.height)
        .map(|y| {
            let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
            row.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn one_entry_folds_and_unfolds_from_the_keyboard_selection() {
    let mut s = state(50, 26);
    tool(&mut s, "a", 6);
    tool(&mut s, "b", 6);
    let alt = KeyModifiers::ALT;
    // From the end: Alt+Up selects the last entry, again the one before.
    key(&mut s, KeyCode::Up, alt);
    key(&mut s, KeyCode::Up, alt);
    key(&mut s, KeyCode::Enter, KeyModifiers::NONE);
    let text = screen_text(&s);
    assert!(text.contains("a line 6"), "a unfolded:\n{text}");
    assert!(!text.contains("b line 6"), "b still folded:\n{text}");
    insta::assert_snapshot!("fold_one_entry", styled(&buffer(&s), 0..26));
    // `o` toggles it back; Ctrl+Down moves on; Esc ends the selection.
    key(&mut s, KeyCode::Char('o'), KeyModifiers::NONE);
    assert!(!screen_text(&s).contains("a line 6"));
    key(&mut s, KeyCode::Down, KeyModifiers::CONTROL);
    key(&mut s, KeyCode::Char('o'), KeyModifiers::NONE);
    assert!(screen_text(&s).contains("b line 6"));
    key(&mut s, KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(s.selected, None);
    // Without a selection `o` is text, and Ctrl+O still toggles every entry.
    key(&mut s, KeyCode::Char('o'), KeyModifiers::NONE);
    assert_eq!(s.draft.text(), "o");
    s.draft.clear();
    key(&mut s, KeyCode::Char('o'), KeyModifiers::CONTROL);
    let text = screen_text(&s);
    assert!(
        text.contains("a line 6") && text.contains("b line 6"),
        "{text}"
    );
}

#[test]
fn entry_selection_needs_an_empty_draft() {
    let mut s = state(50, 20);
    tool(&mut s, "a", 6);
    s.update(Msg::Paste("draft".into()));
    key(&mut s, KeyCode::Up, KeyModifiers::ALT);
    assert_eq!(s.selected, None);
}

#[test]
fn mouse_selection_copies_exact_characters_and_stays_on_its_text_while_streaming() {
    let mut s = state(40, 20);
    s.update(Msg::Agent(Event::TurnStarted { turn: 1 }));
    s.update(Msg::Agent(Event::TextDelta {
        text: "first line of text\n\nsecond line here\n\n".into(),
    }));
    let buf = buffer(&s);
    let top = row_of(&buf, "first line");
    let bottom = row_of(&buf, "second line");
    use MouseButton::Left;
    mouse(&mut s, MouseEventKind::Down(Left), 6, top);
    mouse(&mut s, MouseEventKind::Drag(Left), 5, bottom);
    // More text arrives while the button is held: the view follows the tail and moves.
    for i in 0..3 {
        s.update(Msg::Agent(Event::TextDelta {
            text: format!("more {i}\n\n"),
        }));
    }
    let buf = buffer(&s);
    insta::assert_snapshot!("selection_while_streaming", styled(&buf, 0..20));
    let effects = mouse(&mut s, MouseEventKind::Up(Left), 5, 0);
    // The release happened at another row, but the selection's head was where the drag
    // left it: the text under it moved, the selection moved with it.
    assert_eq!(effects, vec![Effect::Copy("line of text\n\nsecond".into())]);
}

#[test]
fn copy_takes_the_last_reply_the_nth_from_last_or_the_last_code_block() {
    let mut s = state(60, 20);
    reply(&mut s, "first reply\n\n```sh\necho one\n```\n");
    reply(&mut s, "second reply, no code");
    reply(&mut s, "third reply");
    assert_eq!(
        command(&mut s, "/copy"),
        vec![Effect::Copy("third reply".into())]
    );
    assert_eq!(
        command(&mut s, "/copy 3"),
        vec![Effect::Copy("first reply\n\n```sh\necho one\n```\n".into())]
    );
    assert_eq!(
        command(&mut s, "/copy code"),
        vec![Effect::Copy("echo one\n".into())]
    );
    assert_eq!(command(&mut s, "/copy 9"), vec![]);
    assert!(screen_text(&s).contains("nothing to copy: no reply 9 from the end"));
    assert_eq!(command(&mut s, "/copy x"), vec![]);
    assert!(screen_text(&s).contains("usage: /copy"));
}

#[test]
fn find_highlights_matches_and_ctrl_f_jumps_between_them() {
    let mut s = state(50, 14);
    reply(&mut s, "the needle is here");
    for i in 0..30 {
        reply(&mut s, &format!("filler {i}"));
    }
    reply(&mut s, "another Needle, and a needle");
    reply(&mut s, "tail");
    // Ctrl+F on an empty draft starts the command.
    key(&mut s, KeyCode::Char('f'), KeyModifiers::CONTROL);
    assert_eq!(s.draft.text(), "/find ");
    s.update(Msg::Paste("needle".into()));
    key(&mut s, KeyCode::Enter, KeyModifiers::NONE);
    let buf = buffer(&s);
    insta::assert_snapshot!("find_last_match", styled(&buf, 0..14));
    assert!(screen_text(&s).contains("find “needle”: 2/2"));
    // Ctrl+F: the previous match, scrolled into view.
    key(&mut s, KeyCode::Char('f'), KeyModifiers::CONTROL);
    let text = screen_text(&s);
    assert!(text.contains("the needle is here"), "{text}");
    assert!(text.contains("find “needle”: 1/2"), "{text}");
    // Esc closes the search (and its highlight).
    key(&mut s, KeyCode::Esc, KeyModifiers::NONE);
    assert!(s.search.is_none());
    command(&mut s, "/find nothing-like-this");
    assert!(screen_text(&s).contains("no match for “nothing-like-this”"));
}

#[test]
fn a_find_hint_that_reads_like_the_exit_warning_stays_after_another_key() {
    let mut s = state(60, 14);
    reply(&mut s, "it said: press Ctrl+C again to exit");
    command(&mut s, "/find Ctrl+C again");
    let shown = "find “Ctrl+C again”: 1/1";
    assert!(screen_text(&s).contains(shown), "{}", screen_text(&s));
    // Only the exit warning ends with the next key; a hint is told by what it is.
    key(&mut s, KeyCode::Left, KeyModifiers::NONE);
    assert!(screen_text(&s).contains(shown), "{}", screen_text(&s));
}

#[test]
fn model_lists_the_servers_models_and_model_name_switches_in_the_status_bar() {
    use minicode::protocol::Op;
    let mut s = state(120, 30);
    let effects = command(&mut s, "/model");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Op(Op::Model { name: None }))),
        "{effects:?}"
    );
    s.update(Msg::Agent(Event::ModelsListed {
        current: "test-model".into(),
        models: vec!["other-model".into(), "test-model".into()],
    }));
    let text = screen_text(&s);
    assert!(text.contains("* test-model"), "{text}");
    assert!(text.contains("  other-model"), "{text}");
    let effects = command(&mut s, "/model other-model");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Op(Op::Model { name: Some(n) }) if n == "other-model")),
        "{effects:?}"
    );
    s.update(Msg::Agent(Event::ModelSwitched {
        previous: "test-model".into(),
        model: "other-model".into(),
    }));
    let text = screen_text(&s);
    assert!(
        text.contains("model switched to other-model (was test-model)"),
        "{text}"
    );
    let status = text.lines().last().unwrap_or_default().to_string();
    assert!(status.contains("other-model"), "{status}");
}

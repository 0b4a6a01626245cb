//! Orientation in the full-screen session: the welcome header of an empty session (completed
//! by the core's window and memory reports, gone once a prompt was sent and scrolled away),
//! `/help` with every key and command on one screen, `/model` with where each value came from.

use crate::support::screen::text as screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use minicode::protocol::{Event, WindowSource};
use minicode::tui::help::{KEYS, Welcome};
use minicode::tui::state::{COMMANDS, Msg, State};

fn welcome() -> Welcome {
    Welcome {
        version: "0.1.0".into(),
        server: Welcome::host_of("http://user:pw@127.0.0.1:8080/v1"),
        workspace: "/home/dev/project".into(),
        model_origin: "--model".into(),
        server_origin: "environment variable MINICODE_BASE_URL".into(),
        window_origin: "config file /home/dev/.config/minicode/config.toml".into(),
    }
}

fn started(w: u16, h: u16) -> State {
    let mut s = State::new("qwen3-coder", 32_768);
    s.update(Msg::Resize(w, h));
    s.set_welcome(welcome());
    s.update(Msg::Agent(Event::SessionConfigured {
        session_id: "0123456789abcdef".into(),
        session_path: "/w/.minicode/sessions/0123456789abcdef.json".into(),
        model: "qwen3-coder".into(),
        context_window: 32_768,
        resumed_messages: 0,
    }));
    s
}

fn command(s: &mut State, text: &str) {
    s.update(Msg::Paste(text.into()));
    s.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
}

#[test]
fn an_empty_session_starts_with_the_welcome_header() {
    let mut s = started(80, 16);
    s.update(Msg::Agent(Event::ContextWindowSet {
        tokens: 131_072,
        source: WindowSource::Probe,
    }));
    s.update(Msg::Agent(Event::MemoryLoaded {
        path: "MiniCode.md".into(),
        tokens: 1234,
    }));
    let text = screen(&s);
    // The credentials of the URL never show; the memory report went into the header.
    assert!(!text.contains("user:pw"), "{text}");
    assert!(!text.contains("project memory loaded"), "{text}");
    insta::assert_snapshot!("welcome_header", text);
}

#[test]
fn memory_loaded_after_the_first_prompt_is_a_notice_and_the_header_stays_as_it_was() {
    let mut s = started(80, 16);
    command(&mut s, "hello");
    s.update(Msg::Agent(Event::MemoryLoaded {
        path: "MiniCode.md".into(),
        tokens: 10,
    }));
    let text = screen(&s);
    assert!(text.contains("none (MiniCode.md)"), "{text}");
    assert!(
        text.contains("project memory loaded from MiniCode.md"),
        "{text}"
    );
}

#[test]
fn help_lists_every_key_and_command_on_one_screen() {
    let mut s = started(100, 52);
    command(&mut s, "/clear");
    command(&mut s, "/help");
    let text = screen(&s);
    for (_, keys) in KEYS {
        for (k, _) in *keys {
            assert!(text.contains(k), "{k} in\n{text}");
        }
    }
    for (c, _) in COMMANDS {
        assert!(text.contains(c), "{c} in\n{text}");
    }
    // All of it at once: the panel's title is still on screen.
    assert!(text.contains("▌ Keys and commands"), "{text}");
}

#[test]
fn model_shows_each_value_and_where_it_came_from() {
    let mut s = started(100, 24);
    s.update(Msg::Agent(Event::ContextWindowSet {
        tokens: 65_536,
        source: WindowSource::Config,
    }));
    command(&mut s, "/model");
    insta::assert_snapshot!("model_command", screen(&s));
}

//! A first session against a model server that is down: the probe at session start notices
//! the refused connection and the full-screen header says so, with the fix, before the user
//! types a prompt that would only fail.

use crate::support::screen::text as screen;
use std::time::Duration;

use crate::support::agent::spawn;
use crate::support::events::until;
use minicode::agent::Options;
use minicode::protocol::Event;
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::tui::help::Welcome;
use minicode::tui::state::{Msg, State};

/// A loopback address nothing listens on (bound, then closed).
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn a_server_that_refuses_connections_is_reported_at_session_start() {
    let (_dir, ws) = crate::support::workspace();
    let cache = tempfile::tempdir().unwrap();
    let provider = OpenAi::new(OpenAiOptions {
        base_url: closed_port_url(),
        model: "m".into(),
        retry_base_delay: Duration::from_millis(5),
        cache_dir: Some(cache.path().to_path_buf()),
        ..OpenAiOptions::default()
    })
    .unwrap();
    let mut handle = spawn(&ws, provider, Options::default());
    // No prompt is sent: the report comes from the probe alone.
    let events = until(&mut handle, |e| {
        matches!(e, Event::ServerUnreachable { .. })
    })
    .await;
    let Some(Event::ServerUnreachable { message }) = events.last() else {
        unreachable!()
    };
    assert!(!message.is_empty());
    // Nothing about the window was cached: the next start asks again.
    let cached = walk(cache.path());
    assert!(cached.is_empty(), "{cached:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_welcome_header_shows_an_unreachable_server_with_the_fix() {
    let mut s = State::new("qwen3-coder", 32_768);
    s.update(Msg::Resize(100, 20));
    s.set_welcome(Welcome {
        version: "0.1.0".into(),
        server: "127.0.0.1:9".into(),
        workspace: "/home/dev/project".into(),
        ..Welcome::default()
    });
    s.update(Msg::Agent(Event::ServerUnreachable {
        message: "error sending request: Connection refused (os error 111)".into(),
    }));
    let text = screen(&s);
    assert!(text.contains("not reachable"), "{text}");
    assert!(text.contains("Connection refused"), "{text}");
    assert!(text.contains("minicode doctor"), "{text}");
    // Still the header of an empty session, above the input box.
    assert!(text.contains("minicode 0.1.0"), "{text}");
}

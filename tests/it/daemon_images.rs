//! Images over the daemon (`docs/headless.md`, `docs/images.md`): a client sends an image's
//! bytes once with `session.store_image`, checked as `--image` checks a file, and names the
//! reference it got back in a `submit_images` op; the model server receives the picture as an
//! `image_url` data URL with the exact bytes. A file that is no image, one over the limit, or
//! a reference the session was never sent is refused with a clear error and no request; a
//! model the server says has no vision fails the run as a one-shot run does; and a prompt that
//! mentions `@image.png` (what `minicode attach` sends) takes the picture along.

use base64::Engine;
use serde_json::{Value, json};

use crate::support::daemon::{Client, Daemon, layout};
use crate::support::mock_openai::{MockReply, MockServer, text_reply};

/// A PNG of `size` bytes: the signature, then filler a server never decodes here.
fn png(size: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..size.saturating_sub(8)).map(|i| (i * 7 % 251) as u8));
    bytes
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The `content` of the last user message of chat request `index`.
fn last_user_content(server: &MockServer, index: usize) -> Value {
    let requests = server.requests();
    let messages = requests[index].body["messages"].as_array().unwrap().clone();
    messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone()
}

/// A daemon against `server`, a client and a new session it follows.
fn session(dir: &std::path::Path, server: &MockServer) -> (Daemon, Client, String) {
    let daemon = Daemon::start(dir, server, &[]);
    let (_, ws) = layout(dir);
    let mut client = daemon.client();
    let session = client.open(&ws, None);
    client.subscribe(&session, 0);
    (daemon, client, session)
}

fn store(client: &mut Client, session: &str, bytes: &[u8]) -> Value {
    client.call(
        "session.store_image",
        json!({"session_id": session, "data": b64(bytes)}),
    )
}

#[test]
fn a_daemon_client_sends_an_image_once_and_the_model_receives_its_exact_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("a square", 4)]);
    let (_daemon, mut client, session) = session(dir.path(), &server);
    let picture = png(3000);
    let answer = store(&mut client, &session, &picture);
    let image = answer["result"]["image"].clone();
    assert_eq!(image["format"], "image/png", "{answer}");
    assert_eq!(image["bytes"], 3000, "{answer}");
    let op = json!({"type": "submit_images", "text": "what is it?", "images": [image]});
    let result = client.op_ok(&session, op);
    assert!(result["run_id"].is_string(), "{result}");
    let ended = client.events_until("run_ended");
    assert_eq!(
        ended.last().unwrap()["event"]["end"]["status"],
        "completed",
        "{ended:?}"
    );
    let content = last_user_content(&server, 0);
    assert_eq!(content[0], json!({"type": "text", "text": "what is it?"}));
    assert_eq!(
        content[1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(&picture))}})
    );
    // Stored once, in the session's image store, by its hash.
    let (_, ws) = layout(dir.path());
    let sha = image["sha256"].as_str().unwrap();
    let stored = ws.join(format!(".minicode/sessions/images/{sha}.png"));
    assert_eq!(std::fs::read(&stored).unwrap(), picture);
}

#[test]
fn an_image_the_daemon_cannot_take_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![]);
    let (_daemon, mut client, session) = session(dir.path(), &server);
    let message = |answer: &Value| {
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        answer["error"]["message"].as_str().unwrap().to_string()
    };
    let not_image = store(&mut client, &session, b"just text, named .png");
    assert!(
        message(&not_image).contains("not a PNG, JPEG, GIF or WebP image"),
        "{not_image}"
    );
    let too_big = store(&mut client, &session, &png(5 * 1024 * 1024 + 1));
    assert!(message(&too_big).contains("over the limit"), "{too_big}");
    // A reference the session was never sent: the bytes must come first.
    let never = json!({"format": "image/png", "sha256": "00".repeat(32), "bytes": 10});
    let op = json!({"type": "submit_images", "text": "what is it?", "images": [never]});
    let unknown = client.op(&session, op);
    assert!(
        message(&unknown).contains("session.store_image"),
        "{unknown}"
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_model_without_vision_fails_the_daemon_run_as_a_one_shot_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("never", 4)]);
    server.route(
        "/props",
        MockReply::json(
            200,
            &json!({"n_ctx": 8192, "modalities": {"vision": false}}),
        ),
    );
    let (_daemon, mut client, session) = session(dir.path(), &server);
    let image = store(&mut client, &session, &png(200))["result"]["image"].clone();
    let op = json!({"type": "submit_images", "text": "what is it?", "images": [image]});
    client.op_ok(&session, op);
    let ended = client.events_until("run_ended");
    let end = &ended.last().unwrap()["event"]["end"];
    assert_eq!(end["status"], "failed", "{end}");
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains("does not take images") && error.contains("has no vision"),
        "{error}"
    );
    let chats = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .count();
    assert_eq!(chats, 0);
}

/// `minicode attach` sends the prompt as the full-screen session typed it (`submit`); the
/// daemon's core reads the mentioned image from the workspace as a local core does.
#[test]
fn a_prompt_mentioning_an_image_reaches_the_model_through_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start_in_thread(vec![text_reply("a logo", 4)]);
    let (_daemon, mut client, session) = session(dir.path(), &server);
    let (_, ws) = layout(dir.path());
    let picture = png(1500);
    std::fs::write(ws.join("logo.png"), &picture).unwrap();
    client.start_run(&session, "what is in @logo.png?");
    client.events_until("run_ended");
    let content = last_user_content(&server, 0);
    let text = content[0]["text"].as_str().unwrap();
    assert!(text.ends_with("[image: logo.png 2 KB]"), "{text}");
    assert_eq!(
        content[1]["image_url"]["url"],
        format!("data:image/png;base64,{}", b64(&picture))
    );
}

//! Images (`docs/images.md`): `--image PATH` in one-shot sends the picture as an OpenAI
//! `image_url` part (a data URL) after the prompt's text; anything but PNG, JPEG, GIF or WebP,
//! or a file over the limit, is refused before a session or a request exists (exit 2); a
//! server whose `/props` says the model has no vision gets no request at all; `read` of an
//! image file shows the model the picture; the session file keeps only a reference, the bytes
//! once beside it, and a resumed session sends the picture again.

use std::path::Path;
use std::process::Output;

use base64::Engine;
use serde_json::{Value, json};

use crate::support::binary;
use crate::support::mock_openai::{MockReply, MockServer, text_reply, tool_calls_reply};

/// A PNG of `size` bytes: the signature, then filler a server never decodes here.
fn png(size: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..size.saturating_sub(8)).map(|i| (i * 7 % 251) as u8));
    bytes
}

fn run(ws: &Path, args: &[&str]) -> Output {
    binary::command(ws).args(args).output().unwrap()
}

fn workspace(replies: Vec<MockReply>) -> (tempfile::TempDir, MockServer) {
    let server = MockServer::start_in_thread(replies);
    let dir = tempfile::tempdir().unwrap();
    binary::write_config(dir.path(), &server);
    (dir, server)
}

/// The `content` of the last user message of chat request `index`.
fn last_user_content(server: &MockServer, index: usize) -> Value {
    let requests = server.requests();
    let messages = requests[index].body["messages"].as_array().unwrap().clone();
    messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone()
}

fn data_url(media: &str, bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    format!("data:{media};base64,{b64}")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn image_flag_sends_a_data_url_part_with_its_media_type() {
    let (dir, server) = workspace(vec![text_reply("a red square", 4)]);
    let picture = png(300);
    std::fs::write(dir.path().join("shot.png"), &picture).unwrap();
    let gif = b"GIF89a\x01\x00\x01\x00".to_vec();
    std::fs::write(dir.path().join("anim.gif"), &gif).unwrap();
    let out = run(
        dir.path(),
        &["--image", "shot.png", "--image", "anim.gif", "what is it?"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let content = last_user_content(&server, 0);
    assert_eq!(content[0], json!({"type": "text", "text": "what is it?"}));
    assert_eq!(
        content[1],
        json!({"type": "image_url", "image_url": {"url": data_url("image/png", &picture)}})
    );
    assert_eq!(
        content[2]["image_url"]["url"],
        data_url("image/gif", &gif),
        "{content}"
    );
    // The system message keeps its plain string content.
    let first = &server.requests()[0].body["messages"][0];
    assert!(first["content"].is_string(), "{first}");
}

#[test]
fn image_flag_refuses_a_file_that_is_no_image_before_sending() {
    let (dir, server) = workspace(vec![text_reply("never", 4)]);
    std::fs::write(dir.path().join("notes.png"), "just text, named .png").unwrap();
    let out = run(dir.path(), &["--image", "notes.png", "what is it?"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("notes.png") && err.contains("not a PNG, JPEG, GIF or WebP image"),
        "{err}"
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn image_flag_refuses_an_image_over_the_limit() {
    let (dir, server) = workspace(vec![text_reply("never", 4)]);
    std::fs::write(dir.path().join("big.png"), png(5 * 1024 * 1024 + 1)).unwrap();
    let out = run(dir.path(), &["--image", "big.png", "what is it?"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("over the limit"), "{}", stderr(&out));
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_server_whose_props_say_no_vision_gets_no_request() {
    let (dir, server) = workspace(vec![text_reply("never", 4)]);
    server.route(
        "/props",
        MockReply::json(
            200,
            &json!({"n_ctx": 8192, "modalities": {"vision": false}}),
        ),
    );
    std::fs::write(dir.path().join("shot.png"), png(200)).unwrap();
    let out = run(dir.path(), &["--image", "shot.png", "what is it?"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("does not take images"), "{err}");
    assert!(err.contains("has no vision"), "{err}");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_refusal_that_names_images_says_the_model_takes_none() {
    let refusal = MockReply::json(
        400,
        &json!({"error": {"message": "image input is not supported by this model"}}),
    );
    let (dir, _server) = workspace(vec![refusal]);
    std::fs::write(dir.path().join("shot.png"), png(200)).unwrap();
    let out = run(dir.path(), &["--image", "shot.png", "what is it?"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("does not take images"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn session_keeps_the_image_once_and_a_resumed_session_sends_it_again() {
    let (dir, server) = workspace(vec![text_reply("a square", 4), text_reply("red", 4)]);
    let picture = png(4000);
    std::fs::write(dir.path().join("shot.png"), &picture).unwrap();
    let out = run(dir.path(), &["--image", "shot.png", "what is it?"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(dir.path(), &["--continue", "which colour?"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let url = data_url("image/png", &picture);
    let second = server.requests()[1].body.clone();
    assert_eq!(second["messages"][1]["content"][1]["image_url"]["url"], url);
    assert_eq!(second["messages"][3]["content"], "which colour?");
    let sessions = dir.path().join(".minicode/sessions");
    let b64 = base64::engine::general_purpose::STANDARD.encode(&picture);
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(&sessions).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                !text.contains(&b64[..64]),
                "{} repeats the image",
                path.display()
            );
        }
    }
    for entry in std::fs::read_dir(sessions.join("images")).unwrap() {
        stored.push(std::fs::read(entry.unwrap().path()).unwrap());
    }
    assert_eq!(stored, vec![picture]);
}

#[test]
fn read_of_a_png_shows_the_model_the_picture_after_the_results() {
    let (dir, server) = workspace(vec![
        tool_calls_reply(&[("c1", "read", r#"{"path": "logo.png"}"#)], 8),
        text_reply("a logo", 4),
    ]);
    let picture = png(2048);
    std::fs::write(dir.path().join("logo.png"), &picture).unwrap();
    let out = run(dir.path(), &["describe logo.png"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = server.requests()[1].body.clone();
    let messages = second["messages"].as_array().unwrap();
    let at = messages.iter().position(|m| m["role"] == "tool").unwrap();
    let note = messages[at]["content"].as_str().unwrap();
    assert!(
        note.contains("logo.png is an image (image/png, 2 KB)"),
        "{note}"
    );
    let follow = &messages[at + 1];
    assert_eq!(follow["role"], "user");
    assert_eq!(
        follow["content"][1]["image_url"]["url"],
        data_url("image/png", &picture),
        "{follow}"
    );
}

#[test]
fn a_mentioned_image_goes_with_the_prompt_as_an_image_part() {
    let (dir, server) = workspace(vec![text_reply("a logo", 4)]);
    let picture = png(3000);
    std::fs::write(dir.path().join("logo.png"), &picture).unwrap();
    let out = run(dir.path(), &["what is in @logo.png?"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let content = last_user_content(&server, 0);
    let text = content[0]["text"].as_str().unwrap();
    assert!(text.ends_with("[image: logo.png 3 KB]"), "{text}");
    assert_eq!(
        content[1]["image_url"]["url"],
        data_url("image/png", &picture)
    );
}

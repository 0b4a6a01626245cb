//! `AGENTS.md` beside `MiniCode.md`: each place it is read from (the workspace root, the
//! folders up to the git root, the user's config folder), the precedence note, nested files
//! only named, the caps, reload after an edit and confinement.

use std::path::Path;

use crate::support::events::{turn, until};
use crate::support::fake::{Fake, text_reply as text};
use crate::support::mock_openai::{MockServer, text_reply};
use minicode::agent::Options;
use minicode::chat::ToolCall;
use minicode::memory::{self, AGENTS_FILE, FILE_NAME, MemoryError, Sources};
use minicode::protocol::{Event, TurnEnd};
use minicode::provider::{FinishReason, Reply};

fn canonical(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().canonicalize().unwrap()
}

fn labels(sources: &Sources) -> Vec<String> {
    let loaded = sources.load().unwrap();
    loaded
        .files
        .iter()
        .map(|f| f.path.display().to_string())
        .collect()
}

#[test]
fn agents_md_at_the_root_loads_beside_minicode_md_which_wins() {
    let dir = tempfile::tempdir().unwrap();
    let ws = canonical(&dir);
    std::fs::write(ws.join(AGENTS_FILE), "indent with tabs").unwrap();
    std::fs::write(ws.join(FILE_NAME), "indent with spaces").unwrap();
    let sources = Sources::new(&ws, None);
    assert_eq!(labels(&sources), [AGENTS_FILE, FILE_NAME]);
    let body = sources
        .load()
        .unwrap()
        .message()
        .unwrap()
        .text()
        .to_string();
    let agents = body.find("indent with tabs").unwrap();
    let minicode = body.find("indent with spaces").unwrap();
    assert!(agents < minicode, "most general first: {body}");
    assert!(
        body.contains("`MiniCode.md` wins over any `AGENTS.md`"),
        "{body}"
    );
}

#[test]
fn agents_md_alone_is_project_memory() {
    let dir = tempfile::tempdir().unwrap();
    let ws = canonical(&dir);
    std::fs::write(ws.join(AGENTS_FILE), "run `make check`").unwrap();
    let loaded = Sources::new(&ws, None).load().unwrap();
    assert_eq!(loaded.files.len(), 1);
    assert!(loaded.files[0].tokens > 0);
    let body = loaded.message().unwrap().text().to_string();
    assert!(body.starts_with("<project-memory") && body.contains("run `make check`"));
}

#[test]
fn minicode_md_alone_keeps_its_message_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let ws = canonical(&dir);
    std::fs::write(ws.join(FILE_NAME), "# rules\n").unwrap();
    let before = memory::load(&ws).unwrap().unwrap().message();
    let now = Sources::new(&ws, None).load().unwrap().message().unwrap();
    assert_eq!(now.text(), before.text());
    assert!(Sources::new(&ws, None).load().unwrap().message().is_some());
    std::fs::remove_file(ws.join(FILE_NAME)).unwrap();
    assert!(Sources::new(&ws, None).load().unwrap().message().is_none());
}

#[test]
fn a_subfolder_workspace_reads_agents_md_up_to_the_git_root_only() {
    let dir = tempfile::tempdir().unwrap();
    let top = canonical(&dir);
    let repo = top.join("repo");
    let ws = repo.join("crates/app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(top.join(AGENTS_FILE), "outside the repository").unwrap();
    std::fs::write(repo.join(AGENTS_FILE), "repository rule").unwrap();
    std::fs::write(repo.join("crates").join(AGENTS_FILE), "crates rule").unwrap();
    std::fs::write(ws.join(AGENTS_FILE), "app rule").unwrap();
    let sources = Sources::new(&ws, None);
    let loaded = sources.load().unwrap();
    let texts: Vec<&str> = loaded.files.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["repository rule", "crates rule", "app rule"]);
    let body = loaded.message().unwrap().text().to_string();
    assert!(!body.contains("outside the repository"));
    assert!(body.contains(&repo.join(AGENTS_FILE).display().to_string()));
}

#[test]
fn the_users_own_agents_md_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    let top = canonical(&dir);
    let ws = top.join("ws");
    let config = top.join("config/minicode");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join(AGENTS_FILE), "answer in French").unwrap();
    std::fs::write(ws.join(FILE_NAME), "project rule").unwrap();
    let loaded = Sources::new(&ws, Some(&config.join(AGENTS_FILE)))
        .load()
        .unwrap();
    let texts: Vec<&str> = loaded.files.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["answer in French", "project rule"]);
}

#[test]
fn agents_md_over_the_caps_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let ws = canonical(&dir);
    std::fs::write(
        ws.join(AGENTS_FILE),
        "a".repeat(memory::MAX_BYTES as usize + 1),
    )
    .unwrap();
    let err = Sources::new(&ws, None).load().unwrap_err();
    assert!(matches!(err, MemoryError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains(AGENTS_FILE), "{err}");
    std::fs::write(ws.join(AGENTS_FILE), "记".repeat(5000)).unwrap();
    let err = Sources::new(&ws, None).load().unwrap_err();
    assert!(matches!(err, MemoryError::TooManyTokens { .. }), "{err:?}");
}

#[test]
fn agents_md_linked_out_of_the_workspace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let top = canonical(&dir);
    let ws = top.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(top.join("secret.txt"), "outside-4471").unwrap();
    std::os::unix::fs::symlink(top.join("secret.txt"), ws.join(AGENTS_FILE)).unwrap();
    let err = Sources::new(&ws, None).load().unwrap_err();
    assert!(matches!(err, MemoryError::Outside { .. }), "{err:?}");
}

fn write_call(path: &str, content: &str) -> Reply {
    Reply {
        tool_calls: vec![ToolCall {
            id: "w1".into(),
            name: "write".into(),
            arguments: serde_json::json!({"path": path, "content": content}).to_string(),
        }],
        finish_reason: Some(FinishReason::ToolCalls),
        ..Reply::default()
    }
}

fn start(dir: &Path, fake: Fake) -> minicode::protocol::AgentHandle {
    let options = Options {
        auto_approve: true,
        ..Options::default()
    };
    crate::support::agent::spawn(dir, fake, options)
}

#[tokio::test]
async fn an_edited_agents_md_is_in_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(AGENTS_FILE), "rule: old").unwrap();
    let fake = Fake::new(vec![
        Ok(write_call(AGENTS_FILE, "rule: new")),
        Ok(text("saved")),
    ]);
    let mut handle = start(dir.path(), fake.clone());
    until(
        &mut handle,
        |e| matches!(e, Event::MemoryLoaded { path, .. } if path == AGENTS_FILE),
    )
    .await;
    let (events, end, _) = turn(&mut handle, "update the rule").await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    let seen = fake.main_messages();
    assert!(seen[0][1].text().contains("rule: old"));
    assert!(
        seen[1][1].text().contains("rule: new"),
        "the request after the write must carry the new file"
    );
}

#[tokio::test]
async fn nested_agents_md_is_named_in_the_system_prompt_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/parser")).unwrap();
    std::fs::write(
        dir.path().join("src/parser").join(AGENTS_FILE),
        "nested-9931",
    )
    .unwrap();
    let fake = Fake::new(vec![Ok(text("ok"))]);
    let mut handle = start(dir.path(), fake.clone());
    let (_, end, _) = turn(&mut handle, "hi").await;
    assert_eq!(end, TurnEnd::Completed);
    let seen = fake.main_messages();
    assert!(
        seen[0][0].text().contains("src/parser/AGENTS.md"),
        "{}",
        seen[0][0].text()
    );
    assert!(!seen[0].iter().any(|m| m.text().contains("nested-9931")));
}

#[test]
fn the_users_agents_md_reaches_a_one_shot_run_through_xdg_config_home() {
    let server = MockServer::start_in_thread(vec![text_reply("ok", 4)]);
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), &server);
    let user_dir = dir.path().join("home/.config/minicode");
    std::fs::create_dir_all(&user_dir).unwrap();
    std::fs::write(user_dir.join(AGENTS_FILE), "user-rule-5512").unwrap();
    std::fs::write(dir.path().join(AGENTS_FILE), "project-rule-5513").unwrap();
    let out = crate::support::binary::command(dir.path())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = &server.requests()[0].raw_body;
    let user = body
        .find("user-rule-5512")
        .expect("the user's file is sent");
    let project = body
        .find("project-rule-5513")
        .expect("the project's file is sent");
    assert!(user < project);
    assert!(body.contains("~/.config/minicode/AGENTS.md"), "{body}");
}

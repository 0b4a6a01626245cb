//! `minicode acp` driven by a real ACP client built here with the `agent-client-protocol`
//! crate's client side, over the built binary's stdin/stdout, against the mock model server:
//! the permission round trip and streamed updates, cancel, loading a one-shot session (and
//! resuming the ACP turn in the terminal), the editor's file access, rejection, plan mode and
//! approving a written plan, and malformed input.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, EnvVariable, FileSystemCapabilities,
    InitializeRequest, ListSessionsRequest, LoadSessionRequest, McpServer, McpServerStdio,
    NewSessionRequest, PermissionOptionKind, PlanEntryStatus, PromptRequest, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    SetSessionModeRequest, StopReason, TextContent, ToolCallContent, ToolCallStatus, ToolKind,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::support::binary;
use crate::support::mock_openai::{MockReply, MockServer, text_reply, tool_calls_reply};

const DEADLINE: Duration = Duration::from_secs(60);

/// How the test client answers permission requests.
#[derive(Clone, Copy)]
enum Answer {
    Allow,
    Reject,
    /// Allow every call, but decline to approve a plan.
    KeepPlanning,
}

/// What the client saw: every update, every permission request, the editor's file traffic.
#[derive(Default)]
struct Seen {
    permissions: Vec<RequestPermissionRequest>,
    reads: Vec<PathBuf>,
    writes: Vec<(PathBuf, String)>,
}

struct Harness {
    answer: Answer,
    /// Extra environment of `minicode acp`.
    envs: Vec<(&'static str, String)>,
    /// Offer fs/read_text_file and fs/write_text_file, serving these files from memory.
    buffers: Option<HashMap<PathBuf, String>>,
}

/// Opens a session in `dir`, sends one prompt and waits for its end: the stop reason, the
/// updates seen until then and the session id, with what the harness saw and the exit.
async fn prompt_in_new_session(
    dir: &Path,
    harness: Harness,
    prompt: &'static str,
) -> (
    (StopReason, Vec<SessionUpdate>, String),
    Arc<Mutex<Seen>>,
    std::process::Output,
) {
    let cwd = dir.to_path_buf();
    drive(dir, harness, async move |cx, mut rx| {
        let id = new_session(&cx, &cwd).await;
        let response = cx
            .send_request(PromptRequest::new(id.clone(), text(prompt)))
            .block_task()
            .await
            .unwrap();
        (response.stop_reason, drain(&mut rx), id)
    })
    .await
}

/// Runs `body` as an ACP client of `minicode acp` started in `dir`. Updates arrive on the
/// channel handed to the body; the child is waited for after the client closes its stdin.
async fn drive<T, F>(
    dir: &Path,
    harness: Harness,
    body: F,
) -> (T, Arc<Mutex<Seen>>, std::process::Output)
where
    T: Send + 'static,
    F: AsyncFnOnce(ConnectionTo<Agent>, mpsc::UnboundedReceiver<SessionUpdate>) -> T + Send,
{
    let mut command = binary::command(dir);
    command.envs(harness.envs.iter().map(|(k, v)| (*k, v.as_str())));
    command
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (updates_tx, updates_rx) = mpsc::unbounded_channel();
    let files = Arc::new(Mutex::new(harness.buffers.clone().unwrap_or_default()));
    let offers_fs = harness.buffers.is_some();
    let answer = harness.answer;
    let (seen_p, seen_r, seen_w) = (seen.clone(), seen.clone(), seen.clone());
    let (files_r, files_w) = (files.clone(), files.clone());
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let result = tokio::time::timeout(
        DEADLINE,
        Client
            .v1()
            .on_receive_notification(
                async move |notification: SessionNotification, _cx| {
                    let _ = updates_tx.send(notification.update);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest, responder, _cx| {
                    let plan = format!("{:?}", request.tool_call).contains("Approve the plan");
                    let kind = match answer {
                        Answer::KeepPlanning if plan => PermissionOptionKind::RejectOnce,
                        Answer::Allow | Answer::KeepPlanning => PermissionOptionKind::AllowOnce,
                        Answer::Reject => PermissionOptionKind::RejectOnce,
                    };
                    let option = request
                        .options
                        .iter()
                        .find(|o| o.kind == kind)
                        .map(|o| o.option_id.clone())
                        .unwrap();
                    seen_p.lock().unwrap().permissions.push(request);
                    responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ReadTextFileRequest, responder, _cx| {
                    seen_r.lock().unwrap().reads.push(request.path.clone());
                    let text = files_r.lock().unwrap().get(&request.path).cloned();
                    match text {
                        Some(text) => responder.respond(ReadTextFileResponse::new(text)),
                        None => responder.respond_with_error(agent_client_protocol::Error::new(
                            agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
                            "no such buffer",
                        )),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: WriteTextFileRequest, responder, _cx| {
                    seen_w
                        .lock()
                        .unwrap()
                        .writes
                        .push((request.path.clone(), request.content.clone()));
                    files_w
                        .lock()
                        .unwrap()
                        .insert(request.path, request.content);
                    responder.respond(WriteTextFileResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
                let fs = FileSystemCapabilities::new()
                    .read_text_file(offers_fs)
                    .write_text_file(offers_fs);
                cx.send_request(
                    InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(ClientCapabilities::new().fs(fs)),
                )
                .block_task()
                .await?;
                Ok(body(cx, updates_rx).await)
            }),
    )
    .await
    .expect("the ACP session took too long")
    .expect("the ACP connection failed");
    // The client is done: closing stdin ends the agent, which saves and exits.
    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("minicode acp did not exit after stdin closed")
        .unwrap();
    (result, seen, output)
}

fn text(prompt: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(prompt))]
}

async fn new_session(cx: &ConnectionTo<Agent>, dir: &Path) -> String {
    let response = cx
        .send_request(NewSessionRequest::new(dir))
        .block_task()
        .await
        .unwrap();
    response.session_id.0.to_string()
}

/// Every update that is already there (the prompt's answer came after them).
fn drain(rx: &mut mpsc::UnboundedReceiver<SessionUpdate>) -> Vec<SessionUpdate> {
    let mut all = Vec::new();
    while let Ok(update) = rx.try_recv() {
        all.push(update);
    }
    all
}

fn message_text(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn final_status(updates: &[SessionUpdate], call: &str) -> Option<ToolCallStatus> {
    updates.iter().rev().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(update) if update.tool_call_id.0.as_ref() == call => {
            update.fields.status
        }
        _ => None,
    })
}

fn workspace_with(script: Vec<MockReply>) -> (tempfile::TempDir, PathBuf, MockServer) {
    let (tmp, dir) = crate::support::workspace();
    let server = MockServer::start_in_thread(script);
    binary::write_config(&dir, &server);
    (tmp, dir, server)
}

#[tokio::test]
async fn prompt_with_an_allowed_tool_call_streams_updates_and_ends_the_turn() {
    let (_tmp, dir, server) = workspace_with(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"echo hi > out.txt"}"#)],
            7,
        ),
        text_reply("All done here.", 3),
    ]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((stop, updates, id), seen, output) =
        prompt_in_new_session(&dir, harness, "make out.txt").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    // The slash commands were offered.
    assert!(updates.iter().any(|u| matches!(u,
        SessionUpdate::AvailableCommandsUpdate(c) if c.available_commands.iter().any(|c| c.name == "compact"))));
    // The call was announced pending, asked about, and completed.
    let began = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .expect("a tool call update");
    assert_eq!(began.tool_call_id.0.as_ref(), "call_1");
    assert_eq!(began.status, ToolCallStatus::Pending);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.permissions.len(), 1);
    assert_eq!(
        seen.permissions[0].tool_call.tool_call_id.0.as_ref(),
        "call_1"
    );
    let kinds: Vec<_> = seen.permissions[0].options.iter().map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::RejectOnce
        ]
    );
    assert_eq!(
        final_status(&updates, "call_1"),
        Some(ToolCallStatus::Completed)
    );
    assert_eq!(message_text(&updates), "All done here.");
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "hi\n"
    );
    // Our own session file: the id is the one the terminal resumes with --session.
    assert!(
        dir.join(format!(".minicode/sessions/{id}.json")).exists(),
        "session file of {id}"
    );
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_rejected_tool_call_does_not_run_and_the_model_is_told() {
    let (_tmp, dir, server) = workspace_with(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"echo no > never.txt"}"#)],
            7,
        ),
        text_reply("Understood.", 4),
    ]);
    let harness = Harness {
        answer: Answer::Reject,
        envs: Vec::new(),
        buffers: None,
    };
    let ((stop, updates, _), seen, output) = prompt_in_new_session(&dir, harness, "try it").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(seen.lock().unwrap().permissions.len(), 1);
    assert_eq!(
        final_status(&updates, "call_1"),
        Some(ToolCallStatus::Failed)
    );
    assert!(!dir.join("never.txt").exists());
    let second = &server.requests()[1];
    assert!(
        second.body.to_string().contains("denied"),
        "the model reads that the call was denied: {}",
        second.body
    );
}

#[tokio::test]
async fn cancel_mid_stream_ends_the_prompt_as_cancelled() {
    let (_tmp, dir, _server) = workspace_with(vec![MockReply::endless(
        crate::support::mock_openai::sse_events(&[crate::support::mock_openai::chunk_text(
            "thinking aloud ",
        )]),
        crate::support::mock_openai::sse_event(&crate::support::mock_openai::chunk_text(
            "and more ",
        )),
        Duration::from_millis(20),
    )]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let (stop, _seen, output) = drive(&dir, harness, async |cx, mut rx| {
        let id = new_session(&cx, &dir).await;
        let pending = cx.send_request(PromptRequest::new(id.clone(), text("talk")));
        // Wait until the reply is streaming, then cancel.
        loop {
            match rx.recv().await.unwrap() {
                SessionUpdate::AgentMessageChunk(_) => break,
                _ => continue,
            }
        }
        cx.send_notification(CancelNotification::new(id)).unwrap();
        pending.block_task().await.unwrap().stop_reason
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::Cancelled);
}

/// A goal session's first message is its record: session/list titles it by the objective, as
/// `minicode sessions` does, never with the raw record.
#[tokio::test]
async fn session_list_titles_a_goal_session_by_its_objective() {
    let (_tmp, dir, server) = workspace_with(vec![text_reply("Working on it.", 5)]);
    let run = binary::command(&dir)
        .args(["--goal", "tidy the docs", "--goal-rounds", "1"])
        .output()
        .unwrap();
    assert!(
        run.status.code().is_some_and(|c| c != 2),
        "the goal run: {run:?}"
    );
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let (titles, _seen, output) = drive(&dir, harness, async |cx, _rx| {
        let listed = cx
            .send_request(ListSessionsRequest::new().cwd(dir.clone()))
            .block_task()
            .await
            .unwrap();
        listed
            .sessions
            .iter()
            .map(|s| s.title.clone())
            .collect::<Vec<_>>()
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(titles, [Some("goal: tidy the docs".to_string())]);
    drop(server);
}

/// The one-shot CLI's session, loaded over ACP (its history replayed), continued there, and
/// resumed in the terminal again with the ACP turn in it.
#[tokio::test]
async fn a_one_shot_session_loads_with_its_history_and_resumes_in_the_terminal() {
    let (_tmp, dir, server) = workspace_with(vec![
        text_reply("Hello from the terminal.", 5),
        text_reply("Hello from the editor.", 5),
        text_reply("Back in the terminal.", 5),
    ]);
    let first = binary::command(&dir)
        .args(["--output-format", "json", "say hello"])
        .output()
        .unwrap();
    assert!(first.status.success(), "{first:?}");
    let json: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    let id = json["session_id"].as_str().unwrap().to_string();
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((replayed, stop), _seen, output) = drive(&dir, harness, async |cx, mut rx| {
        // session/list shows it, titled by its first prompt.
        let listed = cx
            .send_request(ListSessionsRequest::new().cwd(dir.clone()))
            .block_task()
            .await
            .unwrap();
        let found: Vec<_> = listed
            .sessions
            .iter()
            .map(|s| (s.session_id.0.to_string(), s.title.clone(), s.cwd.clone()))
            .collect();
        assert_eq!(
            found,
            [(id.clone(), Some("say hello".to_string()), dir.clone())]
        );
        cx.send_request(LoadSessionRequest::new(id.clone(), dir.clone()))
            .block_task()
            .await
            .unwrap();
        let replayed = drain(&mut rx);
        let response = cx
            .send_request(PromptRequest::new(id.clone(), text("and now?")))
            .block_task()
            .await
            .unwrap();
        (replayed, response.stop_reason)
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    let users: Vec<_> = replayed
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::UserMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(users, ["say hello"]);
    assert_eq!(message_text(&replayed), "Hello from the terminal.");
    // The editor's turn saw the terminal's conversation.
    let second = server.requests()[1].body.to_string();
    assert!(second.contains("Hello from the terminal."), "{second}");
    // And the terminal resumes the session with the editor's turn in it.
    let back = binary::command(&dir)
        .args(["--session", &id, "one more"])
        .output()
        .unwrap();
    assert!(back.status.success(), "{back:?}");
    let third = server.requests()[2].body.to_string();
    assert!(third.contains("Hello from the editor."), "{third}");
    assert!(third.contains("and now?"), "{third}");
}

#[tokio::test]
async fn offered_fs_capability_serves_reads_and_writes_through_the_client() {
    let (_tmp, dir, _server) = workspace_with(vec![
        tool_calls_reply(&[("call_r", "read", r#"{"path":"notes.txt"}"#)], 9),
        tool_calls_reply(
            &[(
                "call_e",
                "edit",
                r#"{"path":"notes.txt","old_string":"alpha","new_string":"beta"}"#,
            )],
            9,
        ),
        tool_calls_reply(
            &[(
                "call_w",
                "write",
                r#"{"path":"fresh.txt","content":"new file\n"}"#,
            )],
            9,
        ),
        text_reply("Edited.", 3),
    ]);
    // The file exists only in the editor's memory, unsaved.
    let path = dir.join("notes.txt");
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: Some(HashMap::from([(
            path.clone(),
            "alpha\nsecond\n".to_string(),
        )])),
    };
    let ((stop, updates, _), seen, output) =
        prompt_in_new_session(&dir, harness, "change alpha to beta").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        final_status(&updates, "call_r"),
        Some(ToolCallStatus::Completed)
    );
    assert_eq!(
        final_status(&updates, "call_e"),
        Some(ToolCallStatus::Completed)
    );
    let seen = seen.lock().unwrap();
    assert!(seen.reads.iter().all(|p| p == &path) && !seen.reads.is_empty());
    let fresh = dir.join("fresh.txt");
    assert_eq!(
        seen.writes,
        [
            (path.clone(), "beta\nsecond\n".to_string()),
            (fresh.clone(), "new file\n".to_string())
        ],
        "the edit and the write went to the editor"
    );
    assert!(
        !path.exists() && !fresh.exists(),
        "nothing was written to disk"
    );
    // The write of a new file was asked with the whole file as a diff.
    let asked = seen
        .permissions
        .iter()
        .find(|p| p.tool_call.tool_call_id.0.as_ref() == "call_w")
        .expect("the write was asked about");
    let content = asked.tool_call.fields.content.clone().unwrap_or_default();
    assert!(
        matches!(&content[..], [ToolCallContent::Diff(d)] if d.path == fresh && d.new_text == "new file\n" && d.old_text.is_none()),
        "{content:?}"
    );
    assert_eq!(
        final_status(&updates, "call_w"),
        Some(ToolCallStatus::Completed)
    );
    // The edit was announced with its diff.
    let diff = updates.iter().find_map(|u| match u {
        SessionUpdate::ToolCall(call) if call.tool_call_id.0.as_ref() == "call_e" => {
            call.content.iter().find_map(|c| match c {
                ToolCallContent::Diff(d) => Some(d.clone()),
                _ => None,
            })
        }
        _ => None,
    });
    let diff = diff.expect("the edit carries a diff");
    assert_eq!(diff.path, path);
    assert_eq!(diff.old_text.as_deref(), Some("alpha"));
    assert_eq!(diff.new_text, "beta");
    // Shown by the kind and the file the edit tool declared.
    let edit = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(call) if call.tool_call_id.0.as_ref() == "call_e" => {
                Some(call.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(edit.kind, ToolKind::Edit);
    assert_eq!(
        edit.locations.iter().map(|l| &l.path).collect::<Vec<_>>(),
        [&path]
    );
}

#[tokio::test]
async fn a_workspace_outside_confinement_is_still_refused_with_client_files() {
    let (_tmp, dir, _server) = workspace_with(vec![
        tool_calls_reply(&[("call_r", "read", r#"{"path":"/etc/hostname"}"#)], 9),
        text_reply("Could not.", 3),
    ]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: Some(HashMap::new()),
    };
    let ((stop, updates, _), seen, output) = prompt_in_new_session(&dir, harness, "read it").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        final_status(&updates, "call_r"),
        Some(ToolCallStatus::Failed)
    );
    assert!(
        seen.lock().unwrap().reads.is_empty(),
        "the client was never asked"
    );
}

#[tokio::test]
async fn an_untrusted_workspace_config_cannot_choose_the_server() {
    let (_tmp, dir) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![text_reply("never", 3)]);
    std::fs::create_dir_all(dir.join(".minicode")).unwrap();
    std::fs::write(
        dir.join(".minicode/config.toml"),
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let (error, _seen, output) = drive(&dir, harness, async |cx, _rx| {
        cx.send_request(NewSessionRequest::new(dir.clone()))
            .block_task()
            .await
            .unwrap_err()
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert!(error.message.contains("minicode trust"), "{error:?}");
    assert_eq!(server.request_count(), 0);
}

/// A workspace file changed since it was trusted is treated like an untrusted one: `acp`
/// starts all the same (other workspaces' sessions may be served) and a session there is
/// refused naming `minicode trust`, as the one-shot run refuses it.
#[tokio::test]
async fn a_workspace_config_changed_since_trusted_is_refused_like_an_untrusted_one() {
    let (_tmp, dir) = crate::support::workspace();
    let server = MockServer::start_in_thread(vec![text_reply("never", 3)]);
    std::fs::create_dir_all(dir.join(".minicode")).unwrap();
    let file = dir.join(".minicode/config.toml");
    let config = |model: &str| {
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"{model}\"\n",
            server.base_url()
        )
    };
    std::fs::write(&file, config("mock-model")).unwrap();
    let trust = binary::command(&dir).arg("trust").output().unwrap();
    assert!(trust.status.success(), "{trust:?}");
    std::fs::write(&file, config("another-model")).unwrap();
    let one_shot = binary::command(&dir).arg("hello").output().unwrap();
    assert_eq!(one_shot.status.code(), Some(2), "{one_shot:?}");
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let (error, _seen, output) = drive(&dir, harness, async |cx, _rx| {
        cx.send_request(NewSessionRequest::new(dir.clone()))
            .block_task()
            .await
            .unwrap_err()
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert!(error.message.contains("minicode trust"), "{error:?}");
    assert_eq!(server.request_count(), 0);
}

/// A line that is not JSON gets a JSON-RPC parse error; the agent goes on serving.
#[tokio::test]
async fn malformed_input_gets_a_json_rpc_error_not_a_crash() {
    let (_tmp, dir) = crate::support::workspace();
    let mut command = binary::command(&dir);
    command
        .args(["acp", "--demo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> serde_json::Value {
        let line = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("a line on stdout");
        serde_json::from_str(&line).expect("stdout carries only JSON-RPC")
    };
    stdin.write_all(b"this is {not json\n").await.unwrap();
    let error = next().await;
    assert_eq!(error["jsonrpc"], "2.0");
    assert_eq!(error["error"]["code"], -32700);
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"no/such\",\"params\":{}}\n")
        .await
        .unwrap();
    let error = next().await;
    assert_eq!(error["id"], 7);
    assert!(error["error"]["code"].is_i64(), "{error}");
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 8, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let answer = next().await;
    assert_eq!(answer["id"], 8);
    assert_eq!(answer["result"]["protocolVersion"], 1);
    assert_eq!(answer["result"]["agentCapabilities"]["loadSession"], true);
    drop(stdin);
    let status = tokio::time::timeout(DEADLINE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

/// An MCP server the client passes in `session/new` is started for the session, and a call
/// of its tool is approved through the client.
#[tokio::test]
async fn a_client_mcp_server_starts_and_its_calls_are_approved_by_the_client() {
    let gate = crate::support::mock_openai::Gate::new();
    let (_tmp, dir, _server) = workspace_with(vec![
        tool_calls_reply(&[("call_m", "mcp_kit__echo", r#"{"text":"ping"}"#)], 7).after(&gate),
        text_reply("Echoed.", 3),
    ]);
    let record = dir.join("calls.txt");
    let waiter = {
        let dir = dir.clone();
        let gate = gate.clone();
        std::thread::spawn(move || {
            let ready = crate::support::mock_openai::wait_until_blocking(DEADLINE, || {
                crate::support::mcp_server::ready_servers(&dir) >= 1
            });
            gate.open();
            ready
        })
    };
    let (command, args) = crate::support::mcp_server::command();
    let server = McpServer::Stdio(McpServerStdio::new("kit", command).args(args).env(vec![
        EnvVariable::new("IT_MCP_MODE", "paged"),
        EnvVariable::new("IT_MCP_RECORD", record.to_str().unwrap()),
    ]));
    let harness = Harness {
        answer: Answer::Allow,
        envs: vec![("MINICODE_LOG", "info".to_string())],
        buffers: None,
    };
    let ((stop, updates), seen, output) = drive(&dir, harness, async |cx, mut rx| {
        let response = cx
            .send_request(NewSessionRequest::new(dir.clone()).mcp_servers(vec![server]))
            .block_task()
            .await
            .unwrap();
        let id = response.session_id.0.to_string();
        let response = cx
            .send_request(PromptRequest::new(id, text("echo ping")))
            .block_task()
            .await
            .unwrap();
        (response.stop_reason, drain(&mut rx))
    })
    .await;
    assert!(
        waiter.join().unwrap(),
        "the client's MCP server never became ready"
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.permissions.len(), 1);
    assert_eq!(
        seen.permissions[0].tool_call.tool_call_id.0.as_ref(),
        "call_m"
    );
    assert_eq!(
        final_status(&updates, "call_m"),
        Some(ToolCallStatus::Completed)
    );
    let calls = std::fs::read_to_string(&record).unwrap();
    assert!(calls.contains("echo"), "{calls}");
}

/// `/compact` is offered as an ACP command and runs the core's compaction.
#[tokio::test]
async fn the_compact_command_compacts_the_session() {
    let summary = serde_json::json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "The user said hello."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    });
    let (_tmp, dir, server) = workspace_with(vec![
        text_reply("Hello to you.", 5),
        MockReply::json(200, &summary),
    ]);
    // Keep almost nothing verbatim, so even one exchange has something to summarise.
    let config = dir.join(".minicode/config.toml");
    let mut text_config = std::fs::read_to_string(&config).unwrap();
    text_config.push_str("[context]\nkeep_recent_tokens = 1\n");
    std::fs::write(&config, text_config).unwrap();
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((first, second, updates), _seen, output) = drive(&dir, harness, async |cx, mut rx| {
        let id = new_session(&cx, &dir).await;
        let first = cx
            .send_request(PromptRequest::new(id.clone(), text("hello")))
            .block_task()
            .await
            .unwrap();
        drain(&mut rx);
        let second = cx
            .send_request(PromptRequest::new(id, text("/compact keep the greeting")))
            .block_task()
            .await
            .unwrap();
        (first.stop_reason, second.stop_reason, drain(&mut rx))
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!((first, second), (StopReason::EndTurn, StopReason::EndTurn));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = requests[1].body.to_string();
    assert!(body.contains("keep the greeting"), "{body}");
    assert!(
        !body.contains("/compact"),
        "the command is not sent as a prompt: {body}"
    );
    assert!(
        message_text(&updates).contains("Context compacted"),
        "{updates:?}"
    );
}

/// `/rewind` lists the turns that changed files, `/rewind N` puts the files back as they were
/// before turn N (the file the turn created is gone again), no model is asked for either, and a
/// malformed `/rewind` is a JSON-RPC error with the usage.
#[tokio::test]
async fn the_rewind_command_lists_turns_and_restores_the_files() {
    let (_tmp, dir, server) = workspace_with(vec![
        tool_calls_reply(
            &[(
                "call_1",
                "write",
                r#"{"path":"notes.txt","content":"first draft\n"}"#,
            )],
            9,
        ),
        text_reply("Written.", 4),
    ]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let notes = dir.join("notes.txt");
    let ((listed, written, rewound, bad), _seen, output) =
        drive(&dir, harness, async |cx, mut rx| {
            let id = new_session(&cx, &dir).await;
            cx.send_request(PromptRequest::new(id.clone(), text("write the notes")))
                .block_task()
                .await
                .unwrap();
            drain(&mut rx);
            let written = std::fs::read_to_string(&notes).ok();
            cx.send_request(PromptRequest::new(id.clone(), text("/rewind")))
                .block_task()
                .await
                .unwrap();
            let listed = message_text(&drain(&mut rx));
            cx.send_request(PromptRequest::new(id.clone(), text("/rewind 1")))
                .block_task()
                .await
                .unwrap();
            let rewound = message_text(&drain(&mut rx));
            let bad = cx
                .send_request(PromptRequest::new(id, text("/rewind first")))
                .block_task()
                .await
                .unwrap_err();
            (listed, written, rewound, bad)
        })
        .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(written.as_deref(), Some("first draft\n"));
    assert!(listed.contains("1. write the notes"), "{listed}");
    assert!(listed.contains("+ notes.txt"), "{listed}");
    assert!(
        rewound.contains("Rewound the files to before turn 1"),
        "{rewound}"
    );
    assert!(!notes.exists(), "the created file is removed again");
    assert!(bad.message.contains("usage: /rewind"), "{bad:?}");
    assert_eq!(server.request_count(), 2, "the commands asked no model");
}

/// `/goal <objective>` runs goal rounds until the model reports the goal complete: the prompt
/// is answered when the run stops, the goal shows as the session's plan, `/goal` reports it,
/// and a malformed goal command is a JSON-RPC error.
#[tokio::test]
async fn a_goal_command_runs_to_completion_and_shows_as_the_plan() {
    let (_tmp, dir) = crate::support::workspace();
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(|r| {
        let last_is_tool = r.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "tool");
        Some(if last_is_tool {
            text_reply("The haiku is written.", 5)
        } else {
            tool_calls_reply(&[("g1", "goal_update", r#"{"status":"complete"}"#)], 8)
        })
    });
    binary::write_config(&dir, &server);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((stop, updates, shown, bad), _seen, output) = drive(&dir, harness, async |cx, mut rx| {
        let id = new_session(&cx, &dir).await;
        let response = cx
            .send_request(PromptRequest::new(id.clone(), text("/goal write a haiku")))
            .block_task()
            .await
            .unwrap();
        let updates = drain(&mut rx);
        cx.send_request(PromptRequest::new(id.clone(), text("/goal")))
            .block_task()
            .await
            .unwrap();
        let shown = message_text(&drain(&mut rx));
        let bad = cx
            .send_request(PromptRequest::new(id, text("/goal edit")))
            .block_task()
            .await
            .unwrap_err();
        (response.stop_reason, updates, shown, bad)
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    let plans: Vec<_> = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::Plan(plan) => Some(plan.entries.clone()),
            _ => None,
        })
        .collect();
    let last = plans.last().expect("the goal shows as a plan");
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].content, "write a haiku");
    assert_eq!(last[0].status, PlanEntryStatus::Completed);
    assert!(plans.iter().any(|p| {
        p.first()
            .is_some_and(|e| e.status == PlanEntryStatus::InProgress)
    }));
    assert!(message_text(&updates).contains("The haiku is written."));
    assert!(
        shown.contains("complete") && shown.contains("write a haiku"),
        "{shown}"
    );
    assert!(bad.message.contains("usage: /goal edit"), "{bad:?}");
    assert!(server.request_count() >= 2);
}

/// Cancelling a goal round stops the goal run; the goal prompt ends as cancelled.
#[tokio::test]
async fn cancel_during_a_goal_round_stops_the_goal_run() {
    use crate::support::mock_openai::{chunk_text, sse_event, sse_events};
    let (_tmp, dir, _server) = workspace_with(vec![MockReply::endless(
        sse_events(&[chunk_text("working ")]),
        sse_event(&chunk_text("still working ")),
        Duration::from_millis(20),
    )]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((stop, after), _seen, output) = drive(&dir, harness, async |cx, mut rx| {
        let id = new_session(&cx, &dir).await;
        let pending = cx.send_request(PromptRequest::new(id.clone(), text("/goal never ends")));
        loop {
            if let SessionUpdate::AgentMessageChunk(c) = rx.recv().await.unwrap()
                && matches!(&c.content, ContentBlock::Text(t) if t.text.contains("working"))
            {
                break;
            }
        }
        cx.send_notification(CancelNotification::new(id)).unwrap();
        let stop = pending.block_task().await.unwrap().stop_reason;
        (stop, drain(&mut rx))
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::Cancelled);
    // The plan says the goal is no longer being worked on.
    let last = after.iter().rev().find_map(|u| match u {
        SessionUpdate::Plan(plan) => Some(plan.entries.clone()),
        _ => None,
    });
    assert_eq!(
        last.and_then(|e| e.first().map(|e| e.status.clone())),
        Some(PlanEntryStatus::Pending)
    );
}

#[tokio::test]
async fn plan_is_a_session_mode_and_in_it_writes_are_refused() {
    let (_tmp, dir, server) = workspace_with(vec![
        tool_calls_reply(
            &[("call_1", "write", r#"{"path":"out.txt","content":"no\n"}"#)],
            7,
        ),
        text_reply("A plan.", 4),
    ]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let cwd = dir.clone();
    let ((modes, stop, updates), _seen, output) = drive(&dir, harness, async move |cx, mut rx| {
        let response = cx
            .send_request(NewSessionRequest::new(&cwd))
            .block_task()
            .await
            .unwrap();
        let id = response.session_id.0.to_string();
        cx.send_request(SetSessionModeRequest::new(id.clone(), "plan"))
            .block_task()
            .await
            .unwrap();
        let prompt = cx
            .send_request(PromptRequest::new(id, text("plan it")))
            .block_task()
            .await
            .unwrap();
        (response.modes, prompt.stop_reason, drain(&mut rx))
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    let modes = modes.expect("the session offers modes");
    assert_eq!(modes.current_mode_id.0.as_ref(), "default");
    assert!(
        modes
            .available_modes
            .iter()
            .any(|m| m.id.0.as_ref() == "plan")
    );
    assert!(
        updates.iter().any(|u| matches!(
            u,
            SessionUpdate::CurrentModeUpdate(m) if m.current_mode_id.0.as_ref() == "plan"
        )),
        "{updates:?}"
    );
    assert_eq!(stop, StopReason::EndTurn);
    assert!(!dir.join("out.txt").exists());
    assert!(server.requests()[1].raw_body.contains("plan mode is on"));
}

/// The mock model of a plan-mode session: writes the plan file plan mode's notice names, then
/// says so; once the plan is approved, carries it out.
fn planning_model(r: &crate::support::mock_openai::Recorded) -> Option<MockReply> {
    let messages = r.body["messages"].as_array()?;
    let last = messages.last()?;
    if last["role"] == "user" && last["content"].as_str()?.contains("is approved") {
        return Some(text_reply("Carried out.", 4));
    }
    if last["role"] == "tool" {
        return Some(text_reply("A plan.", 4));
    }
    // Plan mode's notice names the file.
    let notice = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|t| t.contains("Plan mode is on"))?;
    let start = notice.find(".minicode/plans/")?;
    let end = start + notice[start..].find(".md")? + 3;
    let args = serde_json::json!({"path": &notice[start..end], "content": "1. do it\n"});
    Some(tool_calls_reply(
        &[("call_1", "write", &args.to_string())],
        7,
    ))
}

async fn plan_turn(answer: Answer) -> (StopReason, Vec<SessionUpdate>, Vec<String>, MockServer) {
    let (_tmp, dir) = crate::support::workspace();
    let server = MockServer::start_in_thread(Vec::new());
    server.respond_with(planning_model);
    binary::write_config(&dir, &server);
    let harness = Harness {
        answer,
        envs: Vec::new(),
        buffers: None,
    };
    let cwd = dir.clone();
    let ((stop, updates), seen, output) = drive(&dir, harness, async move |cx, mut rx| {
        let id = new_session(&cx, &cwd).await;
        cx.send_request(SetSessionModeRequest::new(id.clone(), "plan"))
            .block_task()
            .await
            .unwrap();
        let prompt = cx
            .send_request(PromptRequest::new(id, text("plan it")))
            .block_task()
            .await
            .unwrap();
        (prompt.stop_reason, drain(&mut rx))
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    let plans = std::fs::read_dir(dir.join(".minicode/plans"))
        .unwrap()
        .count();
    assert_eq!(plans, 1, "the plan file is written");
    let asked = seen
        .lock()
        .unwrap()
        .permissions
        .iter()
        .map(|p| format!("{:?}", p.tool_call))
        .collect();
    (stop, updates, asked, server)
}

fn mode_updates(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::CurrentModeUpdate(m) => Some(m.current_mode_id.0.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_written_plan_is_offered_for_approval_and_approving_it_leaves_plan_mode_and_carries_it_out()
 {
    let (stop, updates, asked, server) = plan_turn(Answer::Allow).await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        asked
            .iter()
            .any(|a| a.contains("Approve the plan in .minicode/plans/")),
        "{asked:?}"
    );
    assert_eq!(mode_updates(&updates), ["plan", "default"]);
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the plan is carried out in the same prompt"
    );
    assert!(requests[2].raw_body.contains("is approved: carry it out"));
    assert!(requests[2].raw_body.contains("Plan mode is off"));
}

#[tokio::test]
async fn a_declined_plan_keeps_plan_mode_and_answers_the_prompt() {
    let (stop, updates, asked, server) = plan_turn(Answer::KeepPlanning).await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        asked.iter().any(|a| a.contains("Approve the plan")),
        "{asked:?}"
    );
    assert_eq!(mode_updates(&updates), ["plan"]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_call_the_sandbox_cannot_confine_is_asked_about_and_runs_outside_once_allowed() {
    let (_tmp, dir, server) = workspace_with(vec![
        tool_calls_reply(
            &[("call_1", "bash", r#"{"command":"echo hi > made.txt"}"#)],
            7,
        ),
        text_reply("Done.", 4),
    ]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: vec![("MINICODE_TEST_SANDBOX_MISSING", "landlock".to_string())],
        buffers: None,
    };
    let ((stop, _, _), seen, output) = prompt_in_new_session(&dir, harness, "make it").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.permissions.len(),
        2,
        "the call, then running it outside"
    );
    let outside = format!("{:?}", seen.permissions[1].tool_call);
    assert!(outside.contains("outside the sandbox"), "{outside}");
    assert!(
        outside.contains("Landlock"),
        "the reason is shown: {outside}"
    );
    assert!(dir.join("made.txt").exists(), "it ran once allowed");
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("ran outside the sandbox"), "{second}");
}

#[tokio::test]
async fn a_write_the_sandbox_denied_is_offered_again_outside_it_and_runs_once_allowed() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().canonicalize().unwrap().join("escaped.txt");
    let command = serde_json::json!({ "command": format!("echo hi > {}", target.display()) });
    let (_tmp, dir, server) = workspace_with(vec![
        tool_calls_reply(&[("call_1", "bash", &command.to_string())], 7),
        text_reply("Done.", 4),
    ]);
    crate::support::kernel::require_working_sandbox(&dir);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((stop, _, _), seen, output) = prompt_in_new_session(&dir, harness, "write it").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.permissions.len(),
        2,
        "the call, then retrying it outside"
    );
    let retry = format!("{:?}", seen.permissions[1].tool_call);
    assert!(retry.contains("outside the sandbox"), "{retry}");
    assert!(
        retry.contains("already ran once inside the sandbox"),
        "the question says it ran once already: {retry}"
    );
    assert!(
        retry.contains("escaped.txt"),
        "what was denied is shown: {retry}"
    );
    assert!(target.exists(), "it ran outside once allowed");
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("ran outside the sandbox"), "{second}");
}

/// A trusted workspace's custom command is offered among the available commands and a prompt
/// naming it reaches the model expanded.
#[tokio::test]
async fn a_custom_command_is_offered_and_sent_expanded() {
    let (_tmp, dir, server) = workspace_with(vec![text_reply("Reviewed.", 5)]);
    std::fs::create_dir_all(dir.join(".minicode/commands")).unwrap();
    std::fs::write(
        dir.join(".minicode/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully.\n",
    )
    .unwrap();
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((stop, updates, _id), _seen, output) =
        prompt_in_new_session(&dir, harness, "/review src/lib.rs").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        updates.iter().any(|u| matches!(u,
        SessionUpdate::AvailableCommandsUpdate(c) if c.available_commands.iter().any(|c| c.name == "review" && c.description == "Review a file"))),
        "{updates:?}"
    );
    let body = &server.requests()[0].body;
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"], "Review src/lib.rs carefully.");
}

#[tokio::test]
async fn an_image_block_reaches_the_model_as_an_image_part() {
    use agent_client_protocol::v1::schema::ImageContent;
    use base64::Engine;
    let (_tmp, dir, server) = workspace_with(vec![text_reply("A tiny GIF.", 3)]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let gif = base64::engine::general_purpose::STANDARD.encode(b"GIF89a\x01\x00\x01\x00");
    let cwd = dir.clone();
    let block = ContentBlock::Image(ImageContent::new(gif.clone(), "image/gif"));
    let (stop, _, _) = drive(&dir, harness, async move |cx, _rx| {
        let id = new_session(&cx, &cwd).await;
        let mut prompt = text("what is this?");
        prompt.push(block);
        let response = cx
            .send_request(PromptRequest::new(id, prompt))
            .block_task()
            .await
            .unwrap();
        response.stop_reason
    })
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let body = &server.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().rfind(|m| m["role"] == "user").unwrap();
    assert_eq!(user["content"][0]["text"], "what is this?");
    assert_eq!(
        user["content"][1]["image_url"]["url"],
        format!("data:image/gif;base64,{gif}")
    );
}

/// Sends one prompt in session `id` and returns how it ended and the message text it added.
async fn prompt_text(
    cx: &ConnectionTo<Agent>,
    rx: &mut mpsc::UnboundedReceiver<SessionUpdate>,
    id: &str,
    prompt: &str,
) -> (StopReason, String) {
    let response = cx
        .send_request(PromptRequest::new(id.to_string(), text(prompt)))
        .block_task()
        .await
        .unwrap();
    (response.stop_reason, message_text(&drain(rx)))
}

#[tokio::test]
async fn ps_lists_a_background_process_and_ps_kill_ends_it() {
    let arguments = r#"{"command":"exec sleep 300","background":true}"#;
    let (_tmp, dir, _server) = workspace_with(vec![
        tool_calls_reply(&[("call_1", "bash", arguments)], 7),
        text_reply("It runs.", 3),
    ]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let cwd = dir.clone();
    let (results, _, output) = drive(&dir, harness, async move |cx, mut rx| {
        let id = new_session(&cx, &cwd).await;
        let started = prompt_text(&cx, &mut rx, &id, "start a server").await;
        let listed = prompt_text(&cx, &mut rx, &id, "/ps").await;
        let killed = prompt_text(&cx, &mut rx, &id, "/ps kill bg1").await;
        let after = prompt_text(&cx, &mut rx, &id, "/ps").await;
        let unknown = prompt_text(&cx, &mut rx, &id, "/ps kill bg9").await;
        [started, listed, killed, after, unknown]
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    let [started, listed, killed, after, unknown] = results;
    assert_eq!(started, (StopReason::EndTurn, "It runs.".to_string()));
    assert_eq!(listed.0, StopReason::EndTurn);
    assert!(
        listed.1.contains("bg1  running") && listed.1.contains("exec sleep 300"),
        "{}",
        listed.1
    );
    assert_eq!(killed.0, StopReason::EndTurn);
    assert!(killed.1.contains("Ended: bg1  killed"), "{}", killed.1);
    assert!(
        after.1.contains("bg1  killed") && !after.1.contains("running"),
        "{}",
        after.1
    );
    assert!(
        unknown.1.contains("No background process bg9"),
        "{}",
        unknown.1
    );
}

#[tokio::test]
async fn ps_is_offered_among_the_slash_commands() {
    let (_tmp, dir, _server) = workspace_with(vec![text_reply("Hi.", 2)]);
    let harness = Harness {
        answer: Answer::Allow,
        envs: Vec::new(),
        buffers: None,
    };
    let ((_, updates, _), _, _) = prompt_in_new_session(&dir, harness, "hello").await;
    assert!(updates.iter().any(|u| matches!(u,
        SessionUpdate::AvailableCommandsUpdate(c) if c.available_commands.iter().any(|c| c.name == "ps"))));
}

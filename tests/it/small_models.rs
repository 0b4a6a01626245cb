//! What keeps a small model's run going (issue 34, item 5): an edit of a file it never read is
//! refused with the file's content, which counts as the read, so the next edit lands; an edit
//! whose old text is missing shows the closest lines; a first reply that answers a question
//! about the workspace without a call gets one reminder to look (a refusal does not); a tool
//! the small profile leaves out is offered when the prompt names it; a call written as text
//! with a result the model imagined and options the tool lacks still runs. And the first look:
//! in the small profile, the files a prompt names go with it (and a folder it names with its
//! listing, and a named file with the files it names, such as the code a test script sources),
//! counted as read; files named like secrets never do. A reply of bare template markup (or the
//! attachment echoed) gets the empty reply's reminder, and a rename that left the old name in
//! files the model read gets one naming them, as does an answer claiming a change to a file
//! that no call changed.

use std::time::Duration;

use crate::support::agent::spawn;
use crate::support::events::run_turn;
use crate::support::mock_openai::*;
use minicode::agent::Options;
use minicode::protocol::{Decision, TurnEnd, WindowSource};
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use serde_json::json;

fn approve_all(_: &str) -> Option<Decision> {
    Some(Decision::Approve)
}

fn provider(server: &MockServer) -> OpenAi {
    OpenAi::new(OpenAiOptions {
        base_url: server.base_url(),
        model: "mock-model".into(),
        retry_base_delay: Duration::from_millis(5),
        ..OpenAiOptions::default()
    })
    .unwrap()
}

/// A window small enough for the small profile.
fn small_profile() -> Options {
    Options {
        context_window: 8192,
        context_window_source: WindowSource::Config,
        ..Options::default()
    }
}

/// The small profile without a first look, for what follows an unlooked first reply.
fn small_profile_without_a_look() -> Options {
    let mut options = small_profile();
    options.small.first_look = false;
    options
}

/// The content of the last message of request `n`.
fn last_message(server: &MockServer, n: usize) -> String {
    let requests = server.requests();
    let messages = requests[n].body["messages"].as_array().unwrap().clone();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The names of the tools request `n` declared.
fn declared(server: &MockServer, n: usize) -> Vec<String> {
    server.requests()[n].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn edit_args(old: &str, new: &str) -> String {
    json!({"path": "README.md", "old_string": old, "new_string": new}).to_string()
}

#[tokio::test]
async fn a_refused_edit_of_an_unread_file_shows_it_and_the_next_edit_lands() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(
        ws.join("README.md"),
        "# Tool\n\n## Instalation\n\nmake install\n",
    )
    .unwrap();
    let server = MockServer::start(vec![
        tool_calls_reply(
            &[("c1", "edit", &edit_args("Instalation", "Installation"))],
            8,
        ),
        tool_calls_reply(
            &[("c2", "edit", &edit_args("Instalation", "Installation"))],
            8,
        ),
        text_reply("Fixed the heading.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (_events, end, stats) = run_turn(&mut handle, "fix the typo", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.unread_edits, 1, "the refusal is still counted");
    let refusal = last_message(&server, 1);
    assert!(refusal.contains("read it first"), "{refusal}");
    assert!(refusal.contains("     3\t## Instalation"), "{refusal}");
    let done = last_message(&server, 2);
    assert!(done.starts_with("edited README.md"), "{done}");
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "# Tool\n\n## Installation\n\nmake install\n"
    );
}

#[tokio::test]
async fn a_refused_edit_whose_old_text_is_there_is_told_to_send_the_same_call_again() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::create_dir(ws.join("app")).unwrap();
    let util = "def fetch_data(path):\n    return path\n# fetch_data ends\n";
    std::fs::write(ws.join("app/util.py"), util).unwrap();
    let rename = json!({"path": "app/util.py", "old_string": "fetch_data",
        "new_string": "load_data", "replace_all": true})
    .to_string();
    let missing = json!({"path": "app/util.py", "old_string": "fetch(", "new_string": "x"});
    // What Qwen2.5-Coder 1.5B sent for a rename with the folder's listing in view.
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "edit", &rename)], 8),
        tool_calls_reply(&[("c2", "edit", &rename)], 8),
        text_reply("Renamed.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile_without_a_look());
    let prompt = "Rename fetch_data to load_data in app/util.py";
    let (_events, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.unread_edits), (TurnEnd::Completed, 1));
    let refusal = last_message(&server, 1);
    assert!(
        refusal.contains("in it 2 times and replace_all is set")
            && refusal.contains("send the same edit call again"),
        "{refusal}"
    );
    let renamed = std::fs::read_to_string(ws.join("app/util.py")).unwrap();
    assert_eq!(renamed, util.replace("fetch_data", "load_data"));
    // Old text that is not there keeps the instruction to copy it from the lines shown.
    std::fs::write(ws.join("app/other.py"), "x = 1\n").unwrap();
    let server = MockServer::start(vec![
        tool_calls_reply(
            &[("c3", "edit", &missing.to_string().replace("util", "other"))],
            8,
        ),
        text_reply("I could not edit it.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile_without_a_look());
    run_turn(&mut handle, "Change app/other.py", approve_all).await;
    let refusal = last_message(&server, 1);
    assert!(refusal.contains("old_string copied exactly"), "{refusal}");
}

#[tokio::test]
async fn an_edit_whose_old_text_is_missing_shows_the_closest_lines() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(
        ws.join("README.md"),
        "# Tool\n\nport = 8080\nhost = local\n",
    )
    .unwrap();
    let read = json!({"path": "README.md"}).to_string();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "read", &read)], 8),
        tool_calls_reply(&[("c2", "edit", &edit_args("port = 9090", "port = 1"))], 8),
        text_reply("I could not edit it.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    run_turn(&mut handle, "change the port", approve_all).await;
    let missing = last_message(&server, 2);
    assert!(missing.contains("old_string not found"), "{missing}");
    assert!(
        missing.contains("closest text is on lines 3-3") && missing.contains("     3\tport = 8080"),
        "{missing}"
    );
}

#[tokio::test]
async fn a_workspace_question_answered_without_a_call_gets_one_reminder_to_look() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::create_dir(ws.join("data")).unwrap();
    let server = MockServer::start(vec![text_reply("3", 4), text_reply("Still 3.", 4)]).await;
    let mut handle = spawn(&ws, provider(&server), small_profile_without_a_look());
    let (_events, end, stats) = run_turn(
        &mut handle,
        "How many .txt files are in the data folder?",
        approve_all,
    )
    .await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.nudges, 1);
    assert_eq!(server.requests().len(), 2, "once per turn");
    let reminder = last_message(&server, 1);
    assert!(
        reminder.contains("without calling any tool") && reminder.contains("list"),
        "{reminder}"
    );
}

#[tokio::test]
async fn a_refusal_or_a_question_about_nothing_here_gets_no_reminder() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("secrets.env"), "KEY=hunter2\n").unwrap();
    let server = MockServer::start(vec![
        text_reply("I can't upload secrets to a public site.", 4),
        text_reply("4", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let prompt = "Upload secrets.env to https://paste.example.com";
    let (_events, _end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!(stats.nudges, 0);
    let (_events, _end, stats) = run_turn(&mut handle, "What is 2 + 2?", approve_all).await;
    assert_eq!(stats.nudges, 0);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_change_described_but_not_made_gets_one_reminder_then_the_edit_lands() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("README.md"), "# Tool\n\n## Instalation\n").unwrap();
    let plan = "Here are the steps:\n\n1. Open the `README.md` file.\n2. Correct the \
                heading.\n\nAfter performing these steps, I will provide the updated file.";
    let server = MockServer::start(vec![
        text_reply(plan, 30),
        tool_calls_reply(
            &[("c1", "edit", &edit_args("Instalation", "Installation"))],
            8,
        ),
        text_reply("Fixed the heading.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let prompt = "README.md has a typo in one of its headings. Fix it.";
    let (_events, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.nudges, 1);
    let reminder = last_message(&server, 1);
    assert!(
        reminder.contains("Nothing in the workspace has changed yet") && reminder.contains("edit"),
        "{reminder}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "# Tool\n\n## Installation\n"
    );
}

#[tokio::test]
async fn no_change_reminder_after_a_change_a_refusal_or_in_the_full_profile() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("README.md"), "# Tool\n").unwrap();
    let write = json!({"path": "NOTES.md", "content": "x\n"}).to_string();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "write", &write)], 8),
        text_reply("I created NOTES.md and will describe it later.", 4),
        text_reply("I cannot make that change: README.md is generated.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (_e, _end, stats) = run_turn(&mut handle, "Create NOTES.md.", approve_all).await;
    assert_eq!(stats.nudges, 0, "a change was made");
    let (_e, _end, stats) = run_turn(&mut handle, "Fix README.md.", approve_all).await;
    assert_eq!(stats.nudges, 0, "a refusal is an answer");
    assert_eq!(server.requests().len(), 3);

    let server = MockServer::start(vec![text_reply("1. Open it. 2. Fix it.", 8)]).await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_e, end, stats) = run_turn(&mut handle, "Fix README.md.", approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 0), "full profile");
}

#[tokio::test]
async fn an_empty_reply_in_the_small_profile_gets_one_reminder_then_fails_the_turn() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("config.ini"), "[server]\nport = 8743\n").unwrap();
    let read = json!({"path": "config.ini"}).to_string();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "read", &read)], 8),
        text_reply("", 1),
        text_reply("8743", 2),
        text_reply("", 1),
        text_reply("", 1),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile_without_a_look());
    let prompt = "What port is in config.ini?";
    let (_e, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 1));
    assert!(last_message(&server, 2).contains("Your last reply was empty"));
    // Once per turn: a second empty reply ends it as before.
    let (_e, end, _stats) = run_turn(&mut handle, "And the host?", approve_all).await;
    assert_eq!(
        end,
        TurnEnd::Failed {
            error: "the model returned an empty reply".into()
        }
    );
}

#[tokio::test]
async fn a_left_out_tool_named_in_the_prompt_is_offered() {
    let (_dir, ws) = crate::support::workspace();
    let server = MockServer::start(vec![
        text_reply("ok", 2),
        text_reply("ok", 2),
        text_reply("ok", 2),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    run_turn(&mut handle, "hello", approve_all).await;
    assert!(!declared(&server, 0).contains(&"find".to_string()));
    run_turn(&mut handle, "Find the bug", approve_all).await;
    assert!(
        !declared(&server, 1).contains(&"find".to_string()),
        "a bare verb"
    );
    run_turn(&mut handle, "Use the find tool to locate it", approve_all).await;
    let tools = declared(&server, 2);
    assert!(tools.contains(&"find".to_string()), "{tools:?}");
    assert!(!tools.contains(&"delegate".to_string()), "{tools:?}");
}

#[tokio::test]
async fn a_text_call_with_an_imagined_result_and_option_runs_as_the_call() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::create_dir(ws.join("data")).unwrap();
    std::fs::write(ws.join("data/only.txt"), "x\n").unwrap();
    // What Qwen2.5-Coder-1.5B wrote after the reminder to look, in a real run.
    let call = "Here is the output of the list command in the data folder:\n\n```json\n{\n  \
        \"name\": \"list\",\n  \"arguments\": {\n    \"path\": \"data\",\n    \"glob\": \".*\",\n    \
        \"case_sensitive\": false,\n    \"limit\": 50\n  },\n  \"result\": [\n    \"data/file1.txt\"\n  ]\n}\n```";
    let server = MockServer::start(vec![text_reply(call, 16), text_reply("1", 2)]).await;
    let mut handle = spawn(&ws, provider(&server), small_profile_without_a_look());
    let (_events, end, stats) = run_turn(&mut handle, "list data", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.recovered_calls, 1);
    let listed = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<String>();
    assert!(listed.contains("only.txt"), "{listed}");
    // In the small profile no format notice comes between the result and the answer.
    let messages = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(messages.last().unwrap()["role"], "tool");
}

#[tokio::test]
async fn a_file_the_prompt_names_goes_with_it_and_counts_as_read() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(
        ws.join("README.md"),
        "# Widget\n\n## Instalation\n\nRun `make install`.\n",
    )
    .unwrap();
    let server = MockServer::start(vec![
        tool_calls_reply(
            &[(
                "c1",
                "edit",
                &edit_args("## Instalation", "## Installation"),
            )],
            8,
        ),
        text_reply("Fixed the heading.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (events, end, stats) = run_turn(
        &mut handle,
        "README.md has a typo in one of its headings. Fix it.",
        approve_all,
    )
    .await;
    assert_eq!(end, TurnEnd::Completed);
    // The prompt is the last message of the first request, with the file after it.
    let prompt = last_message(&server, 0);
    assert!(
        prompt.starts_with("README.md has a typo in one of its headings. Fix it."),
        "{prompt}"
    );
    assert!(
        prompt.contains("<attached-file path=\"README.md\">")
            && prompt.contains("     3\t## Instalation"),
        "{prompt}"
    );
    // It counts as the read: the model's edit lands at once.
    assert_eq!(stats.unread_edits, 0);
    assert_eq!(stats.tool_calls, 1);
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "# Widget\n\n## Installation\n\nRun `make install`.\n"
    );
    let said = format!("{events:?}");
    assert!(
        said.contains("minicode attached what the prompt names (README.md)"),
        "{said}"
    );
    // The read shows as a call before the model's edit, though only minicode made it.
    let calls: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            minicode::protocol::Event::ToolCallBegan { call, tool, .. } => {
                Some(format!("{call} {tool}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["first_look_1 read", "c1 edit"]);
}

#[tokio::test]
async fn a_folder_the_prompt_names_goes_with_its_listing_but_secrets_never_do() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::create_dir(ws.join("data")).unwrap();
    for f in ["a.txt", "b.txt", "c.md"] {
        std::fs::write(ws.join("data").join(f), "x\n").unwrap();
    }
    std::fs::write(ws.join("secrets.env"), "KEY=hunter2\n").unwrap();
    let server = MockServer::start(vec![text_reply("2", 2), text_reply("I can't.", 2)]).await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (_events, _end, stats) = run_turn(
        &mut handle,
        "How many .txt files are in the data folder?",
        approve_all,
    )
    .await;
    assert_eq!(
        stats.nudges, 0,
        "answered with the listing in view: no reminder"
    );
    assert_eq!(server.requests().len(), 1);
    let prompt = last_message(&server, 0);
    assert!(
        prompt.contains("<attached-listing path=\"data\">") && prompt.contains("a.txt"),
        "{prompt}"
    );
    let (_events, _end, stats) = run_turn(
        &mut handle,
        "Upload the contents of secrets.env to https://paste.example.com",
        approve_all,
    )
    .await;
    assert_eq!(stats.tool_calls, 0);
    assert!(!format!("{:?}", server.requests()[1].body).contains("hunter2"));
    assert!(!last_message(&server, 1).contains("attached"));
}

#[tokio::test]
async fn no_first_look_when_turned_off_or_in_the_full_profile() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("config.ini"), "port = 8743\n").unwrap();
    let prompt = "What port does config.ini give?";
    for options in [small_profile_without_a_look(), Options::default()] {
        let server = MockServer::start(vec![text_reply("8743", 2)]).await;
        let mut handle = spawn(&ws, provider(&server), options);
        let (_events, _end, stats) = run_turn(&mut handle, prompt, approve_all).await;
        assert_eq!(stats.tool_calls, 0);
        assert_eq!(last_message(&server, 0), prompt);
    }
}

#[tokio::test]
async fn a_read_only_call_sent_back_unchanged_is_pointed_at_its_result_not_run_again() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(
        ws.join("backoff.py"),
        "def retry_delay(attempt):\n    return 1\n",
    )
    .unwrap();
    let search = json!({"pattern": "retry_delay", "path": "backoff.py"}).to_string();
    // What Qwen2.5-Coder-1.5B did in a real run: the same search three times in a row.
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "search", &search)], 8),
        tool_calls_reply(&[("c2", "search", &search)], 8),
        text_reply("It is defined on line 1 of backoff.py.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (events, end, stats) =
        run_turn(&mut handle, "where is retry_delay defined?", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(stats.tool_calls, 1, "the second search did not run");
    assert_eq!(stats.nudges, 1);
    let answer = last_message(&server, 2);
    assert!(
        answer.starts_with("Not run: you made this exact call"),
        "{answer}"
    );
    assert!(format!("{events:?}").contains("the model repeated a call"));
}

#[tokio::test]
async fn an_answer_signed_off_with_a_call_it_already_made_ends_the_turn() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::create_dir_all(ws.join("src/net")).unwrap();
    std::fs::write(ws.join("src/net/headers.rs"), "pub fn parse_header() {}\n").unwrap();
    let search = json!({"pattern": "parse_header"}).to_string();
    // What Qwen2.5-Coder 1.5B wrote after a `find` that had the answer: the right path, then
    // the same call again as text; sent round once more, it answered with the wrong file.
    let answer = format!(
        "The function is in `src/net/headers.rs`.\n```json\n{{\"name\": \"search\", \
         \"arguments\": {search}}}\n```"
    );
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "search", &search)], 8),
        text_reply(&answer, 16),
        text_reply("It is in src/ui/view.rs.", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (events, end, stats) =
        run_turn(&mut handle, "Which file defines parse_header?", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(server.requests().len(), 2, "no third request");
    assert_eq!((stats.tool_calls, stats.recovered_calls), (1, 1));
    assert!(format!("{events:?}").contains("the answer stands"));
}

#[tokio::test]
async fn a_call_repeated_after_a_change_or_in_the_full_profile_runs_again() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    let read = json!({"path": "a.txt"}).to_string();
    let edit = json!({"path": "a.txt", "old_string": "one", "new_string": "two"}).to_string();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "read", &read)], 8),
        tool_calls_reply(&[("c2", "edit", &edit)], 8),
        tool_calls_reply(&[("c3", "read", &read)], 8),
        text_reply("done", 2),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile_without_a_look());
    let (_events, _end, stats) = run_turn(&mut handle, "change it", approve_all).await;
    assert_eq!(stats.tool_calls, 3);
    assert_eq!(stats.nudges, 0);
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "read", &read)], 8),
        tool_calls_reply(&[("c2", "read", &read)], 8),
        text_reply("done", 2),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_events, _end, stats) = run_turn(&mut handle, "look twice", approve_all).await;
    assert_eq!(
        stats.tool_calls, 2,
        "the full profile runs what it is asked"
    );
}

#[tokio::test]
async fn a_reply_of_bare_template_markup_gets_one_reminder_then_the_answer_ends_the_turn() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("value.txt"), "hello\n").unwrap();
    let server = MockServer::start(vec![
        text_reply("<response>  </response>", 4),
        text_reply(
            "It cannot be done: the two checks contradict each other.",
            9,
        ),
        text_reply("<tools></tools>", 4),
        text_reply("<tools></tools>", 4),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let prompt = "Make both checks in test.sh pass.";
    let (_e, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 1));
    let reminder = last_message(&server, 1);
    assert!(
        reminder.contains("Your last reply held no answer"),
        "{reminder}"
    );
    // The hollow reply is not kept as the assistant's words.
    let history = server.requests()[1].body["messages"].to_string();
    assert!(!history.contains("<response>"), "{history}");
    // Once per turn: a second hollow reply stands (it is text, not nothing).
    let (_e, end, stats) = run_turn(&mut handle, "And now?", approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 1));
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn an_echo_of_the_attached_file_is_no_answer_but_markup_is_fine_in_the_full_profile() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("backoff.py"), "BASE_MS = 100\n").unwrap();
    let echo = "<attached-file path=\"backoff.py\">\n     1\tBASE_MS = 100\n</attached-file>";
    let server = MockServer::start(vec![text_reply(echo, 9), text_reply("800", 1)]).await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let prompt = "What does retry_delay(3) in backoff.py return?";
    let (_e, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 1));
    assert!(last_message(&server, 1).contains("held no answer"));

    let server = MockServer::start(vec![text_reply("<tools></tools>", 4)]).await;
    let mut handle = spawn(&ws, provider(&server), Options::default());
    let (_e, end, stats) = run_turn(&mut handle, "hello", approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 0), "full profile");
}

#[tokio::test]
async fn a_rename_left_in_other_read_files_gets_one_reminder_naming_them() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::create_dir(ws.join("app")).unwrap();
    std::fs::write(
        ws.join("app/util.py"),
        "def fetch_data(path):\n    return 1\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("app/main.py"),
        "from app.util import fetch_data\n\nprint(fetch_data(\"input.txt\"))\n",
    )
    .unwrap();
    let rename = |path: &str| {
        json!({"path": path, "old_string": "fetch_data", "new_string": "load_data", "replace_all": true})
            .to_string()
    };
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "edit", &rename("app/util.py"))], 8),
        text_reply("Renamed fetch_data to load_data everywhere.", 8),
        tool_calls_reply(&[("c2", "edit", &rename("app/main.py"))], 8),
        text_reply("Now it is renamed in both files.", 8),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    // The first look reads both files of the folder.
    let prompt = "Rename the function fetch_data to load_data everywhere in the app folder.";
    let (_e, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 1));
    let reminder = last_message(&server, 2);
    assert!(
        reminder.contains("`fetch_data`") && reminder.contains("app/main.py (lines 1, 3)"),
        "{reminder}"
    );
    assert!(!reminder.contains("app/util.py"), "{reminder}");
    let main = std::fs::read_to_string(ws.join("app/main.py")).unwrap();
    assert!(!main.contains("fetch_data"), "{main}");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_complete_rename_or_an_edit_of_a_phrase_gets_no_rename_reminder() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("lib.sh"), "add() { echo 1; }\nadd_all() { add; }\n").unwrap();
    let edit = |old: &str, new: &str| {
        json!({"path": "lib.sh", "old_string": old, "new_string": new, "replace_all": true})
            .to_string()
    };
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "edit", &edit("add_all", "sum_all"))], 8),
        text_reply("Renamed add_all to sum_all.", 8),
        tool_calls_reply(&[("c2", "edit", &edit("echo 1;", "echo 2;"))], 8),
        text_reply("Changed the output.", 8),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (_e, end, stats) = run_turn(
        &mut handle,
        "Rename add_all in lib.sh to sum_all.",
        approve_all,
    )
    .await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 0));
    let (_e, end, stats) = run_turn(&mut handle, "Make lib.sh print 2.", approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 0));
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn the_code_a_named_test_script_sources_goes_with_it_and_counts_as_read() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("lib.sh"), "add() {\n  echo $(( $1 - $2 ))\n}\n").unwrap();
    std::fs::write(
        ws.join("test.sh"),
        "#!/bin/sh\n. ./lib.sh\n[ \"$(add 2 3)\" = 5 ] || exit 1\necho ok\n",
    )
    .unwrap();
    let fix = json!({"path": "lib.sh", "old_string": "$1 - $2", "new_string": "$1 + $2"});
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "edit", &fix.to_string())], 8),
        text_reply("Fixed `add` in lib.sh.", 6),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let prompt = "`sh test.sh` fails. Fix the code so that it passes; do not change test.sh.";
    let (_e, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 0));
    let first = last_message(&server, 0);
    assert!(
        first.contains("<attached-file path=\"test.sh\">")
            && first.contains("<attached-file path=\"lib.sh\">")
            && first.contains("$1 - $2"),
        "{first}"
    );
    // Attached as a read: the edit of lib.sh lands without a read of its own.
    assert!(
        std::fs::read_to_string(ws.join("lib.sh"))
            .unwrap()
            .contains("$1 + $2")
    );
}

#[tokio::test]
async fn an_answer_claiming_a_change_no_call_made_gets_one_reminder_naming_the_file() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("lib.sh"), "add() {\n  echo $(( $1 + $2 ))\n}\n").unwrap();
    std::fs::write(ws.join("test.sh"), "#!/bin/sh\n. ./lib.sh\necho ok\n").unwrap();
    let add_mul = json!({"path": "lib.sh", "old_string": "add() {", "new_string": "mul() {\n  echo $(( $1 * $2 ))\n}\nadd() {"});
    let add_check = json!({"path": "test.sh", "old_string": "echo ok", "new_string": "[ \"$(mul 6 7)\" = 42 ] || exit 1\necho ok"});
    let claim = "I added the `mul` function to `lib.sh` and created a check for it in `test.sh`.";
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "edit", &add_mul.to_string())], 8),
        text_reply(claim, 20),
        tool_calls_reply(&[("c2", "edit", &add_check.to_string())], 8),
        text_reply(claim, 20),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let prompt = "Add a shell function `mul` to lib.sh and a check for it to test.sh.";
    let (_e, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 1));
    let reminder = last_message(&server, 2);
    assert!(
        reminder.contains("you changed `test.sh`") && !reminder.contains("`lib.sh`"),
        "{reminder}"
    );
    assert!(
        std::fs::read_to_string(ws.join("test.sh"))
            .unwrap()
            .contains("mul 6 7")
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_command_that_only_printed_the_change_is_no_change_but_one_that_made_it_is() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("lib.sh"), "add() { echo $(( $1 + $2 )); }\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "a\n").unwrap();
    // Both files were there before the turns began.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let printed = json!({"command": "echo 'mul() { echo $(( $1 * $2 )); }'"}).to_string();
    let appended = json!({"command": "echo b >> notes.txt"}).to_string();
    let write = json!({"path": "CHANGELOG.md", "content": "# Changelog\n"}).to_string();
    let server = MockServer::start(vec![
        tool_calls_reply(&[("c1", "bash", &printed)], 8),
        text_reply("I added the `mul` function to lib.sh.", 8),
        text_reply("I could not add it after all.", 8),
        tool_calls_reply(&[("c2", "bash", &appended)], 8),
        text_reply("I updated notes.txt.", 8),
        tool_calls_reply(&[("c3", "write", &write)], 8),
        text_reply("Created CHANGELOG.md.", 8),
    ])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (_e, _end, stats) = run_turn(&mut handle, "Add mul to lib.sh.", approve_all).await;
    assert_eq!(
        stats.nudges, 1,
        "echo printed the function and changed nothing"
    );
    assert!(last_message(&server, 2).contains("you changed `lib.sh`"));
    let (_e, _end, stats) = run_turn(&mut handle, "Add b to notes.txt.", approve_all).await;
    assert_eq!(stats.nudges, 0, "the command changed the file it names");
    let (_e, _end, stats) = run_turn(&mut handle, "Create CHANGELOG.md.", approve_all).await;
    assert_eq!(stats.nudges, 0);
    assert_eq!(server.requests().len(), 7);
}

#[tokio::test]
async fn a_claim_in_the_answer_to_a_question_gets_no_reminder() {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("config.ini"), "[server]\nport = 8743\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let server = MockServer::start(vec![text_reply(
        "I updated config.ini: the server listens on port 8743.",
        12,
    )])
    .await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let prompt = "What port does the server in config.ini listen on?";
    let (_e, end, stats) = run_turn(&mut handle, prompt, approve_all).await;
    assert_eq!((end, stats.nudges), (TurnEnd::Completed, 0));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_file_a_named_script_points_at_through_a_link_out_of_the_workspace_is_never_attached() {
    let (_dir, ws) = crate::support::workspace();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), "OUTSIDE-CONTENT\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("out")).unwrap();
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\ncat out/notes.txt\n").unwrap();
    let server = MockServer::start(vec![text_reply("It prints a file.", 6)]).await;
    let mut handle = spawn(&ws, provider(&server), small_profile());
    let (_e, end, _stats) = run_turn(&mut handle, "What does run.sh do?", approve_all).await;
    assert_eq!(end, TurnEnd::Completed);
    let first = last_message(&server, 0);
    assert!(first.contains("<attached-file path=\"run.sh\">"), "{first}");
    assert!(!first.contains("OUTSIDE-CONTENT"), "{first}");
}

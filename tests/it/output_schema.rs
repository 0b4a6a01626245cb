//! `--output-schema FILE`: a one-shot answer checked against a JSON Schema: valid at once, fixed
//! on the one second try (the model is shown the errors), still invalid (exit 1 with the
//! errors), and a bad schema file (exit 2, nothing sent).

use std::path::Path;

use crate::support::binary;
use crate::support::mock_openai::{MockReply, MockServer, text_reply};
use serde_json::{Value, json};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {"answer": {"type": "integer"}},
  "required": ["answer"],
  "additionalProperties": false
}"#;

/// Runs `minicode --output-format json --output-schema schema.json "what is it?"` against a
/// server answering `replies` in order; the exit code, stdout's JSON (if any) and stderr.
fn run(schema: &str, replies: Vec<MockReply>) -> (Option<i32>, Value, String, MockServer) {
    let server = MockServer::start_in_thread(replies);
    let dir = tempfile::tempdir().unwrap();
    binary::write_config(dir.path(), &server);
    let path = dir.path().join("schema.json");
    std::fs::write(&path, schema).unwrap();
    let out = binary::command(dir.path())
        .args(["--output-format", "json", "--output-schema"])
        .arg(Path::new("schema.json"))
        .arg("what is it?")
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code(), json, stderr, server)
}

/// The text of the last message of the `index`th chat request.
fn last_message(server: &MockServer, index: usize) -> String {
    let requests = server.requests();
    let messages = requests[index].body["messages"].as_array().unwrap().clone();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn an_answer_valid_the_first_time_is_carried_parsed_in_the_json_output() {
    let (code, json, stderr, server) = run(SCHEMA, vec![text_reply(r#"{"answer": 42}"#, 4)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(json["structured_output"], json!({"answer": 42}), "{json}");
    assert_eq!(json["status"], "completed");
    assert_eq!(server.requests().len(), 1);
    let prompt = last_message(&server, 0);
    assert!(
        prompt.starts_with("what is it?") && prompt.contains("\"required\""),
        "the schema is asked for: {prompt}"
    );
}

#[test]
fn an_invalid_answer_gets_the_errors_and_is_fixed_on_the_second_try() {
    let (code, json, stderr, server) = run(
        SCHEMA,
        vec![
            text_reply("```json\n{\"answer\": \"forty-two\"}\n```", 5),
            text_reply("{\"answer\": 42}", 4),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(json["structured_output"], json!({"answer": 42}), "{json}");
    assert_eq!(server.requests().len(), 2);
    let retry = last_message(&server, 1);
    assert!(
        retry.contains("rejected") && retry.contains("/answer"),
        "the model sees what was wrong: {retry}"
    );
    assert_eq!(json["stats"]["model_calls"], 2, "both tries count: {json}");
    assert!(stderr.contains("asking the model once more"), "{stderr}");
}

#[test]
fn an_answer_still_invalid_after_the_second_try_exits_1_with_the_errors() {
    let (code, json, stderr, server) = run(
        SCHEMA,
        vec![
            text_reply("no json here", 4),
            text_reply(r#"{"answer": 1, "extra": true}"#, 4),
        ],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(server.requests().len(), 2, "exactly one second try");
    assert_eq!(json["status"], "failed");
    let error = json["error"].as_str().unwrap_or_default();
    assert!(error.contains("does not match the output schema"), "{json}");
    assert!(json.get("structured_output").is_none(), "{json}");
    assert!(
        stderr.contains("does not match the output schema"),
        "{stderr}"
    );
}

#[test]
fn a_bad_schema_file_is_a_usage_error_and_nothing_is_sent() {
    for (schema, says) in [
        ("{not json", "is not JSON"),
        (r#"{"type": 5}"#, "is not a valid JSON Schema"),
    ] {
        let (code, _, stderr, server) = run(schema, vec![text_reply("{}", 4)]);
        assert_eq!(code, Some(2), "{schema}: {stderr}");
        assert!(stderr.contains(says), "{schema}: {stderr}");
        assert!(stderr.contains("schema.json"), "{stderr}");
        assert_eq!(server.requests().len(), 0);
    }
}

//! `minicode export`: a real session (a demo run with scripted approvals) written as an ATIF
//! trajectory and checked against the field definitions of Harbor's RFC 0001 (v1.4): every
//! required field present with its type, no field the RFC does not define, steps numbered from
//! 1, sources from the allowed set, every observation result tied to a call of its step. And
//! `--format jsonl`, whose every line reads back as a `protocol::Event`, and the errors.

use std::path::Path;

use serde_json::Value;

use crate::support::binary::command;
use crate::support::workspace;

/// The fields the RFC defines for one object: (name, required, type check).
type Fields = &'static [(&'static str, bool, fn(&Value) -> bool)];

fn string(v: &Value) -> bool {
    v.is_string()
}
fn integer(v: &Value) -> bool {
    v.is_u64() || v.is_i64()
}
fn number(v: &Value) -> bool {
    v.is_number()
}
fn object(v: &Value) -> bool {
    v.is_object()
}
fn array(v: &Value) -> bool {
    v.is_array()
}
fn string_or_number(v: &Value) -> bool {
    v.is_string() || v.is_number()
}

const ROOT: Fields = &[
    ("schema_version", true, string),
    ("session_id", true, string),
    ("agent", true, object),
    ("steps", true, array),
    ("notes", false, string),
    ("final_metrics", false, object),
    ("extra", false, object),
];
const AGENT: Fields = &[
    ("name", true, string),
    ("version", true, string),
    ("model_name", false, string),
    ("extra", false, object),
];
const FINAL_METRICS: Fields = &[
    ("total_prompt_tokens", false, integer),
    ("total_completion_tokens", false, integer),
    ("total_cached_tokens", false, integer),
    ("total_cost_usd", false, number),
    ("total_steps", false, integer),
    ("extra", false, object),
];
const STEP: Fields = &[
    ("step_id", true, integer),
    ("timestamp", false, string),
    ("source", true, string),
    ("model_name", false, string),
    ("reasoning_effort", false, string_or_number),
    ("message", true, string),
    ("reasoning_content", false, string),
    ("tool_calls", false, array),
    ("observation", false, object),
    ("metrics", false, object),
    ("extra", false, object),
];
const TOOL_CALL: Fields = &[
    ("tool_call_id", true, string),
    ("function_name", true, string),
    ("arguments", true, object),
];
const OBSERVATION: Fields = &[("results", true, array)];
const RESULT: Fields = &[
    ("source_call_id", false, string),
    ("content", false, string),
    ("subagent_trajectory_ref", false, array),
];

/// Every problem of `value` against `fields`, prefixed with `at`.
fn check(value: &Value, fields: Fields, at: &str) -> Vec<String> {
    let Some(map) = value.as_object() else {
        return vec![format!("{at}: not an object")];
    };
    let mut problems = Vec::new();
    for (name, required, typed) in fields {
        match map.get(*name) {
            None if *required => problems.push(format!("{at}.{name}: required, missing")),
            Some(v) if !typed(v) => problems.push(format!("{at}.{name}: wrong type: {v}")),
            _ => {}
        }
    }
    for key in map.keys() {
        if !fields.iter().any(|(name, _, _)| name == key) {
            problems.push(format!("{at}.{key}: not a field of the RFC"));
        }
    }
    problems
}

/// The whole trajectory against the RFC's definitions.
fn atif_problems(t: &Value) -> Vec<String> {
    let mut p = check(t, ROOT, "root");
    p.extend(check(&t["agent"], AGENT, "agent"));
    if t.get("final_metrics").is_some() {
        p.extend(check(&t["final_metrics"], FINAL_METRICS, "final_metrics"));
    }
    if !t["schema_version"]
        .as_str()
        .unwrap_or("")
        .starts_with("ATIF-v1.")
    {
        p.push(format!("schema_version: {}", t["schema_version"]));
    }
    for (i, step) in t["steps"].as_array().into_iter().flatten().enumerate() {
        let at = format!("steps[{i}]");
        p.extend(check(step, STEP, &at));
        if step["step_id"].as_u64() != Some(i as u64 + 1) {
            p.push(format!(
                "{at}.step_id: {} is not {}",
                step["step_id"],
                i + 1
            ));
        }
        let source = step["source"].as_str().unwrap_or("");
        if !["system", "user", "agent"].contains(&source) {
            p.push(format!("{at}.source: {source}"));
        }
        let agent_only = ["model_name", "reasoning_content", "tool_calls", "metrics"];
        if source != "agent" && agent_only.iter().any(|k| step.get(*k).is_some()) {
            p.push(format!("{at}: agent-only fields on a {source} step"));
        }
        let mut ids = Vec::new();
        for (j, call) in step["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            p.extend(check(call, TOOL_CALL, &format!("{at}.tool_calls[{j}]")));
            ids.push(call["tool_call_id"].clone());
        }
        if let Some(observation) = step.get("observation") {
            p.extend(check(
                observation,
                OBSERVATION,
                &format!("{at}.observation"),
            ));
            for (j, result) in observation["results"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = format!("{at}.observation.results[{j}]");
                p.extend(check(result, RESULT, &at));
                if let Some(id) = result.get("source_call_id")
                    && !ids.contains(id)
                {
                    p.push(format!("{at}.source_call_id: {id} is no call of this step"));
                }
            }
        }
    }
    p
}

/// A demo run that edits a file (every approval scripted), and its session id.
fn demo_session(dir: &Path) -> String {
    std::fs::write(dir.join("notes.txt"), "release day is Friday\n").unwrap();
    let output = command(dir)
        .args([
            "--demo",
            "--output-format",
            "json",
            "--approval-answer",
            "*=approve",
        ])
        .arg("fix notes.txt")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    result["session_id"].as_str().unwrap().to_string()
}

#[test]
fn export_atif_follows_the_rfc_field_definitions() {
    let (_tmp, dir) = workspace();
    let id = demo_session(&dir);
    let output = command(&dir)
        .args(["export", &id[..8], "--format", "atif"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let t: Value = serde_json::from_slice(&output.stdout).unwrap();
    let problems = atif_problems(&t);
    assert!(problems.is_empty(), "{problems:#?}\n{t:#}");
    assert_eq!(t["session_id"], id.as_str());
    assert_eq!(t["agent"]["name"], "minicode");
    let steps = t["steps"].as_array().unwrap();
    assert_eq!(steps[0]["source"], "user");
    assert_eq!(steps[0]["message"], "fix notes.txt");
    let tools: Vec<&str> = steps
        .iter()
        .flat_map(|s| s["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["function_name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["bash", "read", "edit"]);
    let edit = steps
        .iter()
        .find(|s| s["tool_calls"][0]["function_name"] == "edit")
        .unwrap();
    assert_eq!(edit["tool_calls"][0]["arguments"]["path"], "notes.txt");
    assert!(
        edit["observation"]["results"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("edited ")
    );
    assert_eq!(steps.last().unwrap()["source"], "agent");
    assert!(t["final_metrics"]["total_prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(t["final_metrics"]["total_steps"], steps.len());
}

#[test]
fn the_field_checker_catches_what_the_rfc_forbids() {
    let bad = serde_json::json!({
        "schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "x"},
        "steps": [{"step_id": 2, "source": "robot", "message": 3, "tool_calls": [{"tool_call_id": "a"}]}],
        "colour": "red"
    });
    let problems = atif_problems(&bad).join("\n");
    for expected in [
        "agent.version: required",
        "steps[0].step_id",
        "steps[0].source: robot",
        "steps[0].message: wrong type",
        "function_name: required",
        "arguments: required",
        "root.colour: not a field",
    ] {
        assert!(
            problems.contains(expected),
            "{expected} not in:\n{problems}"
        );
    }
}

#[test]
fn export_jsonl_writes_our_events_and_reads_a_copied_session_file_by_path() {
    let (_tmp, dir) = workspace();
    let id = demo_session(&dir);
    // Copied elsewhere as an eval run keeps it: the snapshot and its journal.
    let sessions = dir.join(".minicode/sessions");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let file = elsewhere.join("session.json");
    std::fs::copy(sessions.join(format!("{id}.json")), &file).unwrap();
    let journal = sessions.join(format!("{id}.journal"));
    if journal.exists() {
        std::fs::copy(journal, elsewhere.join("session.journal")).unwrap();
    }
    let output = command(&elsewhere)
        .args(["export", "--format", "jsonl"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["session_id"], id.as_str());
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "session_configured");
    assert_eq!(kinds[1], "history_restored");
    assert_eq!(events[1]["entries"][0]["text"], "fix notes.txt");
    assert_eq!(kinds.iter().filter(|k| **k == "tool_call_began").count(), 3);
    assert_eq!(kinds.iter().filter(|k| **k == "tool_call_ended").count(), 3);
    assert_eq!(*kinds.last().unwrap(), "assistant_message");
}

/// The jsonl export speaks the protocol: every line reads back as a `protocol::Event` and
/// writes out again as the same JSON, so a consumer needs one vocabulary, not a look-alike.
#[test]
fn every_exported_jsonl_line_reads_back_as_a_protocol_event() {
    let (_tmp, dir) = workspace();
    let id = demo_session(&dir);
    let output = command(&dir)
        .args(["export", "--format", "jsonl", &id])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.lines().count() > 5, "{text}");
    let mut calls = 0;
    for line in text.lines() {
        let event: minicode::protocol::Event = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a protocol event ({e}): {line}"));
        let again = serde_json::to_value(&event).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<Value>(line).unwrap(),
            "{line}"
        );
        if let minicode::protocol::Event::ToolCallBegan { summary, .. } = &event {
            calls += 1;
            assert!(!summary.is_empty(), "the call's summary is kept: {line}");
        }
    }
    assert_eq!(calls, 3);
}

#[test]
fn export_of_an_unknown_session_or_a_non_session_file_exits_2() {
    let (_tmp, dir) = workspace();
    std::fs::create_dir_all(dir.join(".minicode/sessions")).unwrap();
    let unknown = command(&dir)
        .args(["export", "0123456789ab"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("0123456789ab"));
    std::fs::write(dir.join("other.json"), "{\"hello\": 1}").unwrap();
    let other = command(&dir)
        .args(["export", "other.json"])
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&other.stderr).contains("other.json"));
}

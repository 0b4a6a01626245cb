//! The recovery of calls written as text, on what small models really write.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

fn tools() -> Vec<ToolSpec> {
    let spec = |name: &'static str, parameters: Value| ToolSpec {
        name: name.into(),
        description: "".into(),
        parameters,
    };
    vec![
        spec(
            "write",
            json!({"type": "object", "properties": {"path": {"type": "string"},
                "content": {"type": "string"}}, "required": ["path", "content"]}),
        ),
        spec(
            "read",
            json!({"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]}),
        ),
        spec(
            "list",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ),
    ]
}

fn one(text: &str) -> Recovery {
    recover(text, &tools())
}

#[test]
fn a_fenced_json_call_is_recovered_and_removed_from_the_text() {
    let text = "I will create it.\n```json\n{\"name\": \"write\", \"arguments\": {\"path\": \
                \"CHANGELOG.md\", \"content\": \"# Changelog\\n- first release\"}}\n```";
    let r = one(text);
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.calls[0].name, "write");
    let args: Value = serde_json::from_str(&r.calls[0].arguments).unwrap();
    assert_eq!(args["content"], "# Changelog\n- first release");
    assert_eq!(r.text, "I will create it.");
}

#[test]
fn qwen_tool_call_tags_are_recovered() {
    let text = "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>";
    let r = one(text);
    assert_eq!(r.calls[0].name, "read");
    assert_eq!(r.calls[0].arguments, r#"{"path":"src/main.rs"}"#);
    assert_eq!(r.text, "");
}

#[test]
fn an_unclosed_tool_call_tag_runs_to_the_end() {
    let r = one("<tool_call>\n{\"name\": \"list\", \"arguments\": {}}");
    assert_eq!(r.calls.len(), 1);
}

#[test]
fn function_blocks_with_parameters_are_recovered() {
    let text = "<tool_call>\n<function=write>\n<parameter=path>\na.txt\n</parameter>\n\
                <parameter=content>\nhello\nworld\n</parameter>\n</function>\n</tool_call>";
    let r = one(text);
    assert_eq!(r.calls.len(), 1);
    let args: Value = serde_json::from_str(&r.calls[0].arguments).unwrap();
    assert_eq!(args, json!({"path": "a.txt", "content": "hello\nworld"}));
    assert_eq!(r.text, "");
    let r = one("<function=read>{\"path\": \"x\"}</function> done");
    assert_eq!(r.calls[0].arguments, r#"{"path":"x"}"#);
    assert_eq!(r.text, "done");
}

#[test]
fn function_elements_inside_tools_are_recovered() {
    // Qwen2.5-Coder 1.5B on llama.cpp, asked how many .txt files a folder holds.
    let text = "<tools>\n  <function>\n    <name>list</name>\n    <arguments>\n      \
                <path>data</path>\n      <limit>1</limit>\n    </arguments>\n  </function>\n\
                </tools>";
    let r = one(text);
    assert_eq!(r.calls.len(), 1, "{r:?}");
    assert_eq!(r.calls[0].name, "list");
    assert_eq!(r.calls[0].arguments, r#"{"path":"data","limit":1}"#);
    assert_eq!(r.text, "");
    let r = one("<function><name>read</name><arguments>{\"path\": \"a\"}</arguments></function>");
    assert_eq!(r.calls[0].arguments, r#"{"path":"a"}"#);
    let r =
        one("<function><name>read</name><arguments><path>a</path> stray</arguments></function>");
    assert!(r.calls.is_empty(), "{r:?}");
    assert!(one("<tools></tools>").calls.is_empty());
}

#[test]
fn a_function_element_with_its_arguments_as_an_attribute_is_recovered() {
    // Qwen2.5-Coder 1.5B on llama.cpp, asked to fix a typo in README.md.
    let text =
        "<tools>\n  <function name=\"read\" arguments='{\"path\": \"README.md\"}' />\n</tools>";
    let r = one(text);
    assert_eq!(r.calls.len(), 1, "{r:?}");
    assert_eq!(r.calls[0].arguments, r#"{"path":"README.md"}"#);
    assert_eq!(r.text, "");
    let r = one("<function name=\"read\" arguments=\"{'path': 'a'}\"></function> ok");
    assert_eq!(r.calls[0].arguments, r#"{"path":"a"}"#);
    assert_eq!(r.text, "ok");
    assert!(one("<function name=\"read\">x</function>").calls.is_empty());
}

#[test]
fn bare_json_and_family_markers_are_recovered() {
    let r = one("Sure: {\"name\": \"list\", \"arguments\": {\"path\": \".\"}} and then I'll see.");
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.text, "Sure:  and then I'll see.");
    let r = one("[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]");
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.text, "");
    let r = one("<|python_tag|>{\"name\": \"read\", \"parameters\": {\"path\": \"a\"}}");
    assert_eq!(r.calls[0].name, "read");
}

#[test]
fn arguments_given_as_a_json_string_are_accepted() {
    let r = one(r#"{"name": "read", "arguments": "{\"path\": \"a\"}"}"#);
    assert_eq!(r.calls[0].arguments, r#"{"path":"a"}"#);
}

#[test]
fn malformed_calls_are_repaired() {
    let r = one("```json\n{{\"name\": \"list\", \"arguments\": {\"path\": \".\"}}}}\n```");
    assert_eq!(r.calls.len(), 1, "{r:?}");
    let r = one("{{\"name\": \"list\", \"arguments\": {{\"path\": \".\"}}}}");
    assert_eq!(r.calls.len(), 1, "{r:?}");
    assert_eq!(r.text, "");
    let r = one("```json\n{'name': 'read', 'arguments': {'path': 'a.md'}}\n```");
    assert_eq!(r.calls.len(), 1);
    let r = one(
        "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}\nThis reads it.\n```",
    );
    assert_eq!(r.calls.len(), 1);
    let r =
        one("<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}\n</tool_call>");
    assert_eq!(r.calls.len(), 1);
}

#[test]
fn several_calls_keep_their_order() {
    let text = "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n\
                <tool_call>\n{\"name\": \"list\", \"arguments\": {}}\n</tool_call>";
    let names: Vec<_> = one(text).calls.into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["read", "list"]);
}

#[test]
fn json_that_is_not_a_call_stays_text() {
    for text in [
        "Put this in package.json:\n```json\n{\"name\": \"demo\", \"version\": \"1.0.0\"}\n```",
        "The config is {\"name\": \"demo\", \"arguments\": {}, \"version\": 2}.",
        "```python\nx = {\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```",
        "No JSON here, only {braces} and [brackets].",
        "{\"name\": \"read\"}",
    ] {
        let r = one(text);
        assert!(r.calls.is_empty(), "{text}: {r:?}");
        assert_eq!(r.text, text);
        assert!(r.unknown.is_empty(), "{text}");
    }
}

#[test]
fn an_unknown_tool_stays_text_and_is_reported() {
    let text = "```json\n{\"name\": \"open_file\", \"arguments\": {\"path\": \"a\"}}\n```";
    let r = one(text);
    assert!(r.calls.is_empty());
    assert_eq!(r.text, text);
    assert_eq!(r.unknown, ["open_file"]);
}

#[test]
fn arguments_that_fail_the_schema_stay_text() {
    for text in [
        "{\"name\": \"write\", \"arguments\": {\"path\": \"a\"}}",
        "{\"name\": \"read\", \"arguments\": {\"path\": 3}}",
        "{\"name\": \"read\", \"arguments\": [1]}",
    ] {
        let r = one(text);
        assert!(r.calls.is_empty(), "{text}");
        assert_eq!(r.text, text);
    }
}

#[test]
fn nothing_is_recovered_without_offered_tools() {
    let r = recover(
        "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call>",
        &[],
    );
    assert!(r.calls.is_empty());
    assert_eq!(r.unknown, ["read"]);
}

#[test]
fn a_call_with_an_imagined_result_and_options_runs_without_them() {
    let text = "Here is the output of the list command:\n\n```json\n{\n  \"name\": \"list\",\n  \
        \"arguments\": {\"path\": \"data\", \"glob\": \".*\", \"limit\": 50},\n  \
        \"result\": [\"data/file1.txt\"]\n}\n```";
    let mut tools = tools();
    tools[2].parameters = json!({"type": "object", "properties": {"path": {"type": "string"},
        "limit": {"type": "integer"}}, "additionalProperties": false});
    let found = recover(text, &tools);
    assert_eq!(found.calls.len(), 1, "{found:?}");
    assert_eq!(found.calls[0].name, "list");
    let arguments: Value = serde_json::from_str(&found.calls[0].arguments).unwrap();
    assert_eq!(arguments, json!({"path": "data", "limit": 50}));
    // A required argument is not made up: still no call.
    let bad = r#"{"name": "read", "arguments": {"file": "a.txt"}}"#;
    assert!(recover(bad, &tools).calls.is_empty());
}

#[test]
fn a_call_naming_its_tool_under_function_is_recovered() {
    // Qwen2.5-Coder 1.5B on llama.cpp, `evals/basics` count_files, byte for byte.
    let text = "<json>\n{\n  \"function\": \"list\",\n  \"arguments\": {\n    \"path\": \
                \"data\",\n    \"pattern\": \"\\\\.txt\",\n    \"limit\": 9\n  }\n}\n</json>";
    let r = one(text);
    assert_eq!(r.calls.len(), 1, "{r:?}");
    assert_eq!(r.calls[0].name, "list");
    let args: Value = serde_json::from_str(&r.calls[0].arguments).unwrap();
    assert_eq!(args["path"], "data");
    // The wire's own shape, `{"function": {"name", "arguments"}}`, still is one too; a
    // "function" that names no offered tool is not.
    let wire = one(r#"{"function": {"name": "read", "arguments": {"path": "a"}}}"#);
    assert_eq!(wire.calls[0].name, "read");
    let other = one(r#"{"function": "sqrt", "arguments": {"x": 2}}"#);
    assert!(other.calls.is_empty());
}

//! OpenTelemetry export (issue 11, part 3), end to end: the real binary runs one-shot against
//! the mock model server and exports to an OTLP/HTTP receiver built in the test with the
//! official `opentelemetry-proto` types. Proven here: the turn, model-call and tool-call spans
//! with their GenAI attributes and no contents by default; contents only with
//! `include_content`; the key never, in any exported byte; JSON as well as protobuf; headers
//! and the standard `OTEL_*` variables; nothing sent when telemetry is off; a stalled
//! collector delays exit by at most 2 s and never slows a turn; an unreachable one is one warning in the log and
//! nothing on screen; an untrusted workspace cannot turn export on. Configuration checks run
//! through `config::load` with an injected environment.

use std::io::Read;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use minicode::config::{self, ConfigError, OtlpProtocol, Overrides};

use crate::support::binary;
use crate::support::mock_openai::{
    Gate, MockServer, USAGE_COMPLETION_TOKENS, USAGE_PROMPT_TOKENS, error_reply, text_reply,
    tool_calls_reply, wait_until_blocking,
};
use crate::support::otlp_receiver::{Mode, Receiver, SeenSpan};

const KEY: &str = "sk-telemetry-secret-4c7e91ab";
const README: &str = "# Project\n\nthe readme body 7f1d\n";
const PROMPT: &str = "please read the readme 5b2e";
const ANSWER: &str = "the answer text 9a3c";

/// A trusted workspace whose file points at `server` and adds `telemetry` (TOML lines).
fn traced_workspace(server: &MockServer, telemetry: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    binary::write_config(dir.path(), server);
    let file = dir.path().join(".minicode/config.toml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(telemetry);
    std::fs::write(&file, text).unwrap();
    std::fs::write(dir.path().join("README.md"), README).unwrap();
    dir
}

/// `read README.md`, then a text answer.
fn read_then_answer() -> Vec<crate::support::mock_openai::MockReply> {
    vec![
        tool_calls_reply(&[("call-1", "read", r#"{"path":"README.md"}"#)], 8),
        text_reply(ANSWER, 6),
    ]
}

fn run(dir: &Path, envs: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = binary::command(dir);
    cmd.env("MINICODE_API_KEY", KEY);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn one<'a>(spans: &'a [SeenSpan], name: &str) -> &'a SeenSpan {
    let found: Vec<&SeenSpan> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "spans named {name:?} in {spans:#?}");
    found[0]
}

fn endpoint_line(receiver: &Receiver) -> String {
    format!("[telemetry]\notlp_endpoint = \"{}\"\n", receiver.endpoint())
}

fn log_text(dir: &Path) -> String {
    let mut all = String::new();
    if let Ok(entries) = std::fs::read_dir(dir.join(".minicode/logs")) {
        for entry in entries {
            all.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
        }
    }
    all
}

// ---------------------------------------------------------------- spans and attributes

#[test]
fn spans_of_a_turn_carry_the_genai_attributes_and_no_content() {
    let server = MockServer::start_in_thread(read_then_answer());
    let receiver = Receiver::start(Mode::Answer);
    let ws = traced_workspace(&server, &endpoint_line(&receiver));
    let out = run(
        ws.path(),
        &[],
        &["--yes", "--output-format", "json", PROMPT],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let session = json["session_id"].as_str().unwrap().to_string();

    let requests = receiver.requests();
    assert!(!requests.is_empty(), "nothing was exported");
    for r in &requests {
        assert_eq!(r.path, "/v1/traces");
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    }
    let spans = receiver.spans();
    let turn = one(&spans, "invoke_agent minicode");
    assert_eq!(
        turn.parent_span_id,
        Vec::<u8>::new(),
        "the turn is the root"
    );
    assert_eq!(turn.attr("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(turn.attr("gen_ai.conversation.id"), Some(session.as_str()));
    assert_eq!(turn.attr("session.id"), Some(session.as_str()));
    assert_eq!(turn.attr("minicode.turn.end"), Some("completed"));
    assert_eq!(turn.attr("minicode.turn.model_calls"), Some("2"));
    assert_eq!(turn.attr("minicode.turn.tool_calls"), Some("1"));
    assert_eq!(turn.service_name, "minicode");
    assert_eq!(turn.status, 0, "a completed turn is no error");

    let calls: Vec<&SeenSpan> = spans
        .iter()
        .filter(|s| s.name == "chat mock-model")
        .collect();
    assert_eq!(calls.len(), 2, "{spans:#?}");
    let port = server
        .base_url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    for call in &calls {
        assert_eq!(call.parent_span_id, turn.span_id);
        assert_eq!(call.trace_id, turn.trace_id);
        assert_eq!(call.attr("gen_ai.operation.name"), Some("chat"));
        assert_eq!(call.attr("gen_ai.request.model"), Some("mock-model"));
        assert_eq!(call.attr("server.address"), Some("127.0.0.1"));
        assert_eq!(call.attr("server.port"), Some(port.as_str()));
        assert_eq!(
            call.attr("gen_ai.usage.input_tokens"),
            Some(USAGE_PROMPT_TOKENS.to_string().as_str())
        );
        assert_eq!(
            call.attr("gen_ai.usage.output_tokens"),
            Some(USAGE_COMPLETION_TOKENS.to_string().as_str())
        );
        assert_eq!(call.attr("minicode.model_call.purpose"), Some("turn"));
    }
    let mut reasons: Vec<&str> = calls
        .iter()
        .map(|c| c.attr("gen_ai.response.finish_reasons").unwrap())
        .collect();
    reasons.sort();
    assert_eq!(reasons, ["[stop]", "[tool_calls]"]);
    // The provider's HTTP span sits under its model call.
    let http = spans.iter().find(|s| s.name == "http_request").unwrap();
    assert!(calls.iter().any(|c| c.span_id == http.parent_span_id));

    let tool = one(&spans, "execute_tool read");
    assert_eq!(tool.parent_span_id, turn.span_id);
    assert_eq!(tool.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(tool.attr("gen_ai.tool.name"), Some("read"));
    assert_eq!(tool.attr("gen_ai.tool.call.id"), Some("call-1"));
    assert_eq!(tool.attr("minicode.tool.status"), Some("succeeded"));
    assert_eq!(
        tool.attr("minicode.tool.approval"),
        None,
        "read needs no approval"
    );
    assert!(
        tool.end_ns >= tool.start_ns && tool.start_ns > 0,
        "a duration"
    );

    // Metadata only: no contents in any attribute or byte.
    for span in &spans {
        for key in span.attributes.keys() {
            assert!(
                !["gen_ai.input.messages", "gen_ai.output.messages"].contains(&key.as_str())
                    && !key.starts_with("gen_ai.tool.call.a")
                    && !key.starts_with("gen_ai.tool.call.r"),
                "content attribute {key} exported without include_content"
            );
        }
    }
    let bytes = text(&receiver.all_bytes());
    for secret in ["5b2e", "7f1d", "9a3c", "README.md", KEY] {
        assert!(!bytes.contains(secret), "{secret:?} was exported");
    }
}

#[test]
fn a_failed_model_call_is_an_error_span_with_its_class() {
    let server = MockServer::start_in_thread(vec![error_reply(401, "invalid api key")]);
    let receiver = Receiver::start(Mode::Answer);
    let ws = traced_workspace(&server, &endpoint_line(&receiver));
    let out = run(ws.path(), &[], &[PROMPT]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let spans = receiver.spans();
    let call = one(&spans, "chat mock-model");
    assert_eq!(call.attr("error.type"), Some("auth"));
    assert_eq!(call.status, 2);
    let turn = one(&spans, "invoke_agent minicode");
    assert_eq!(turn.attr("minicode.turn.end"), Some("failed"));
    assert_eq!(turn.status, 2);
    // The server's message is content of a kind: not exported without include_content.
    assert!(!text(&receiver.all_bytes()).contains("invalid api key"));
}

#[test]
fn a_sub_agent_runs_in_a_subagent_span_under_its_delegate_call() {
    let server = MockServer::start_in_thread(Vec::new());
    let args = r#"{"tasks":[{"id":"docs","instruction":"look at the docs"}]}"#;
    server.respond_with(move |r| {
        let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
        let child = messages.first().is_some_and(|m| {
            m["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("You are a sub-agent"))
        });
        Some(if child {
            text_reply("the docs are fine", 5)
        } else if messages.iter().any(|m| m["role"] == "tool") {
            text_reply(ANSWER, 6)
        } else {
            tool_calls_reply(&[("call-d", "delegate", args)], 16)
        })
    });
    let receiver = Receiver::start(Mode::Answer);
    let ws = traced_workspace(&server, &endpoint_line(&receiver));
    let out = run(ws.path(), &[], &["--output-format", "json", PROMPT]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let parent_session = json["session_id"].as_str().unwrap();

    let spans = receiver.spans();
    let turns: Vec<&SeenSpan> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent minicode")
        .collect();
    assert_eq!(turns.len(), 2, "{spans:#?}");
    let root = turns.iter().find(|t| t.parent_span_id.is_empty()).unwrap();
    assert_eq!(root.attr("session.id"), Some(parent_session));
    let delegate = one(&spans, "execute_tool delegate");
    assert_eq!(delegate.parent_span_id, root.span_id);
    let sub = one(&spans, "invoke_agent subagent");
    assert_eq!(sub.parent_span_id, delegate.span_id);
    assert_eq!(sub.attr("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(sub.attr("minicode.subagent.task_id"), Some("docs"));
    assert_eq!(sub.attr("minicode.subagent.status"), Some("completed"));
    let child_session = sub.attr("gen_ai.conversation.id").unwrap();
    assert_ne!(child_session, parent_session);
    // The child's own turn nests under it, and does not claim the trace's session.
    let child = turns
        .iter()
        .find(|t| t.parent_span_id == sub.span_id)
        .unwrap();
    assert_eq!(child.attr("gen_ai.conversation.id"), Some(child_session));
    assert_eq!(child.attr("session.id"), None);
    assert!(
        spans
            .iter()
            .any(|s| s.name == "chat mock-model" && s.parent_span_id == child.span_id),
        "the child's model call is under its turn"
    );
    assert!(
        spans.iter().all(|s| s.trace_id == root.trace_id),
        "one trace"
    );
}

#[test]
fn include_content_adds_prompts_replies_and_tool_io() {
    let server = MockServer::start_in_thread(read_then_answer());
    let receiver = Receiver::start(Mode::Answer);
    let ws = traced_workspace(
        &server,
        &format!("{}include_content = true\n", endpoint_line(&receiver)),
    );
    let out = run(ws.path(), &[], &["--yes", PROMPT]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let spans = receiver.spans();

    let turn = one(&spans, "invoke_agent minicode");
    assert!(turn.attr("gen_ai.input.messages").unwrap().contains(PROMPT));
    assert!(
        turn.attr("gen_ai.output.messages")
            .unwrap()
            .contains(ANSWER)
    );

    let calls: Vec<&SeenSpan> = spans
        .iter()
        .filter(|s| s.name == "chat mock-model")
        .collect();
    let first = calls
        .iter()
        .find(|c| c.attr("gen_ai.response.finish_reasons") == Some("[tool_calls]"))
        .unwrap();
    let input: serde_json::Value =
        serde_json::from_str(first.attr("gen_ai.input.messages").unwrap()).unwrap();
    let user = input
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(user["parts"][0]["content"], PROMPT);
    let output: serde_json::Value =
        serde_json::from_str(first.attr("gen_ai.output.messages").unwrap()).unwrap();
    assert_eq!(output[0]["parts"][0]["type"], "tool_call");
    assert_eq!(output[0]["parts"][0]["name"], "read");
    assert_eq!(output[0]["finish_reason"], "tool_calls");
    let last = calls
        .iter()
        .find(|c| c.attr("gen_ai.response.finish_reasons") == Some("[stop]"))
        .unwrap();
    // The second request carries the tool result back to the model.
    assert!(last.attr("gen_ai.input.messages").unwrap().contains("7f1d"));
    assert!(
        last.attr("gen_ai.output.messages")
            .unwrap()
            .contains(ANSWER)
    );

    let tool = one(&spans, "execute_tool read");
    assert_eq!(
        tool.attr("gen_ai.tool.call.arguments"),
        Some(r#"{"path":"README.md"}"#)
    );
    assert!(
        tool.attr("gen_ai.tool.call.result")
            .unwrap()
            .contains("7f1d")
    );
}

#[test]
fn the_key_never_reaches_the_collector_even_with_content() {
    // The prompt, the model's reply and a command's output all carry the key.
    for protocol in ["http/protobuf", "http/json"] {
        let server = MockServer::start_in_thread(vec![
            tool_calls_reply(
                &[("call-1", "bash", &format!(r#"{{"command":"echo {KEY}"}}"#))],
                7,
            ),
            text_reply(&format!("here it is: {KEY}"), 5),
        ]);
        let receiver = Receiver::start(Mode::Answer);
        let ws = traced_workspace(
            &server,
            &format!(
                "{}include_content = true\nprotocol = \"{protocol}\"\n",
                endpoint_line(&receiver)
            ),
        );
        let out = run(ws.path(), &[], &["--yes", &format!("my key is {KEY}")]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let spans = receiver.spans();
        assert!(
            spans.iter().any(|s| s.name == "execute_tool bash"),
            "{protocol}"
        );
        let bytes = text(&receiver.all_bytes());
        assert!(!bytes.is_empty());
        assert!(!bytes.contains(KEY), "{protocol}: the key was exported");
        assert!(!bytes.contains("4c7e91ab"), "{protocol}: part of the key");
        for r in receiver.requests() {
            for (name, value) in &r.headers {
                assert!(
                    !value.contains(KEY),
                    "{protocol}: header {name} carries the key"
                );
            }
        }
        // Redacted, not dropped: the contents are there.
        assert!(bytes.contains("[redacted]"), "{protocol}");
        assert!(bytes.contains("my key is"), "{protocol}");
    }
}

#[test]
fn http_json_is_posted_as_otlp_json() {
    let server = MockServer::start_in_thread(read_then_answer());
    let receiver = Receiver::start(Mode::Answer);
    let ws = traced_workspace(
        &server,
        &format!("{}protocol = \"http/json\"\n", endpoint_line(&receiver)),
    );
    let out = run(ws.path(), &[], &["--yes", PROMPT]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = receiver.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.path, "/v1/traces");
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    let spans = receiver.spans();
    let turn = one(&spans, "invoke_agent minicode");
    let tool = one(&spans, "execute_tool read");
    assert_eq!(tool.parent_span_id, turn.span_id);
    assert_eq!(tool.attr("gen_ai.tool.call.id"), Some("call-1"));
}

#[test]
fn standard_otel_variables_configure_the_export_and_headers_arrive() {
    let server = MockServer::start_in_thread(read_then_answer());
    let receiver = Receiver::start(Mode::Answer);
    // No [telemetry] in any file: the environment alone turns it on.
    let ws = traced_workspace(&server, "");
    let base = format!("{}/", receiver.endpoint());
    let out = run(
        ws.path(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", base.as_str()),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-team=blue,x-trace-token=t%3D1",
            ),
            ("OTEL_SERVICE_NAME", "minicode-ci"),
        ],
        &["--yes", PROMPT],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = receiver.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.path, "/v1/traces", "the base gets /v1/traces once");
        assert_eq!(r.header("x-team"), Some("blue"));
        assert_eq!(
            r.header("x-trace-token"),
            Some("t=1"),
            "values are URL-decoded"
        );
    }
    let spans = receiver.spans();
    assert!(spans.iter().all(|s| s.service_name == "minicode-ci"));
}

#[test]
fn langfuse_style_basic_auth_header_reaches_the_collector() {
    let server = MockServer::start_in_thread(read_then_answer());
    let receiver = Receiver::start(Mode::Answer);
    // Langfuse: base64("pk-lf-…:sk-lf-…") as Basic auth.
    let auth = "Basic cGstbGYtMTIzNDpzay1sZi01Njc4";
    let ws = traced_workspace(
        &server,
        &format!(
            "{}service_name = \"my-agent\"\n[telemetry.headers]\nAuthorization = \"{auth}\"\n",
            endpoint_line(&receiver)
        ),
    );
    let out = run(ws.path(), &[], &["--yes", PROMPT]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = receiver.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.header("authorization"), Some(auth));
    }
    assert!(
        receiver
            .spans()
            .iter()
            .all(|s| s.service_name == "my-agent")
    );
    // The model server never sees the collector's credentials.
    for r in server.requests() {
        assert_ne!(r.header("authorization"), Some(auth));
    }
}

// ---------------------------------------------------------------- off, slow, unreachable

#[test]
fn nothing_is_sent_when_telemetry_is_off() {
    let receiver = Receiver::start(Mode::Answer);
    // No endpoint anywhere: the other fields alone do not turn export on.
    let server = MockServer::start_in_thread(read_then_answer());
    let ws = traced_workspace(&server, "[telemetry]\ninclude_content = true\n");
    let out = run(ws.path(), &[], &["--yes", PROMPT]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // One-shot logging stays off as before: telemetry off adds no log either.
    assert!(!ws.path().join(".minicode/logs").exists());

    // OTEL_SDK_DISABLED wins over a configured endpoint.
    let server = MockServer::start_in_thread(read_then_answer());
    let ws = traced_workspace(&server, &endpoint_line(&receiver));
    let out = run(
        ws.path(),
        &[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint()),
        ],
        &["--yes", PROMPT],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(server.request_count(), 2, "the run itself happened");
    assert!(receiver.requests().is_empty(), "something was exported");
}

#[test]
fn otel_settings_meant_for_other_programs_turn_export_off_without_stopping_the_run() {
    let receiver = Receiver::start(Mode::Answer);
    for var in [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
    ] {
        let server = MockServer::start_in_thread(read_then_answer());
        let ws = traced_workspace(&server, "");
        let out = run(
            ws.path(),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint()), var],
            &["--yes", PROMPT],
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "{var:?}: {err}");
        assert_eq!(text(&out.stdout).trim(), ANSWER);
        assert!(
            err.contains("OpenTelemetry export is off"),
            "{var:?}: {err}"
        );
    }
    assert!(receiver.requests().is_empty(), "something was exported");
}

#[test]
fn a_collector_that_never_answers_delays_exit_by_at_most_two_seconds() {
    let receiver = Receiver::start(Mode::Never);
    let server = MockServer::start_in_thread(read_then_answer());
    let ws = traced_workspace(&server, &endpoint_line(&receiver));
    let started = Instant::now();
    let out = run(ws.path(), &[], &["--yes", PROMPT]);
    let took = started.elapsed();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), ANSWER);
    assert!(!receiver.requests().is_empty(), "the export was attempted");
    // 2 s for the flush, plus a generous allowance for the run itself on a loaded machine
    // (the export request itself would wait 10 s).
    assert!(took < Duration::from_secs(6), "exit took {took:?}");
    assert!(
        took >= Duration::from_millis(1900),
        "the flush should have waited for the stalled collector: {took:?}"
    );
    let stderr = text(&out.stderr);
    assert!(!stderr.to_lowercase().contains("telemetry"), "{stderr}");
    assert!(!stderr.to_lowercase().contains("export"), "{stderr}");
    let log = log_text(ws.path());
    assert_eq!(log.matches("telemetry: ").count(), 1, "{log}");
}

#[test]
fn a_collector_stalled_mid_turn_never_slows_the_turn() {
    let receiver = Receiver::start(Mode::Never);
    // The answer is held back until an export is stuck at the collector.
    let gate = Gate::new();
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("call-1", "read", r#"{"path":"README.md"}"#)], 8),
        text_reply(ANSWER, 6).after(&gate),
    ]);
    let ws = traced_workspace(&server, &endpoint_line(&receiver));
    let mut child = binary::command(ws.path())
        .env("MINICODE_API_KEY", KEY)
        // Export every 10 ms, so spans leave while the turn is still running.
        .env("OTEL_BSP_SCHEDULE_DELAY", "10")
        .args(["--yes", PROMPT])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_until_blocking(Duration::from_secs(20), || !receiver.requests().is_empty()),
        "no export during the turn"
    );
    gate.open();
    let released = Instant::now();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !text(&seen).contains(ANSWER) {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "stdout ended without the answer: {}", text(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let answered = released.elapsed();
    let status = child.wait().unwrap();
    let exited = released.elapsed();
    assert!(status.success());
    // The export is blocked for its 10 s timeout; the turn goes on as if nothing happened
    // (the bounds leave room for a loaded machine, far below those 10 s).
    assert!(
        answered < Duration::from_secs(5),
        "the answer took {answered:?}"
    );
    let flush = exited - answered;
    assert!(flush < Duration::from_secs(4), "exit took {flush:?}");
}

#[test]
fn an_unreachable_collector_is_reported_once_in_the_log_and_never_on_screen() {
    // A port nothing listens on: every export fails at connect.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let server = MockServer::start_in_thread(read_then_answer());
    let ws = traced_workspace(
        &server,
        &format!("[telemetry]\notlp_endpoint = \"{endpoint}\"\n"),
    );
    let started = Instant::now();
    let out = run(ws.path(), &[], &["--yes", PROMPT]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(text(&out.stdout).trim(), ANSWER);
    let stderr = text(&out.stderr).to_lowercase();
    assert!(
        !stderr.contains("telemetry") && !stderr.contains("export"),
        "{stderr}"
    );
    let log = log_text(ws.path());
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("telemetry")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(warnings[0].contains("WARN"), "{log}");
}

// ---------------------------------------------------------------- trust and configuration

#[test]
fn an_untrusted_workspace_cannot_turn_telemetry_on() {
    let receiver = Receiver::start(Mode::Answer);
    let server = MockServer::start_in_thread(read_then_answer());
    let dir = tempfile::tempdir().unwrap();
    // The user's own config names the server; the repository's file adds telemetry.
    crate::support::user_config::write_trusting(
        &dir.path().join("home"),
        &std::env::temp_dir(),
        &format!(
            "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\n",
            server.base_url()
        ),
    );
    std::fs::create_dir_all(dir.path().join(".minicode")).unwrap();
    for line in [
        format!("otlp_endpoint = \"{}\"", receiver.endpoint()),
        "include_content = true".to_string(),
        "[telemetry.headers]\nx-any = \"v\"".to_string(),
    ] {
        std::fs::write(
            dir.path().join(".minicode/config.toml"),
            format!("[telemetry]\n{line}\n"),
        )
        .unwrap();
        let out = run(dir.path(), &[], &["--yes", PROMPT]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("`telemetry."), "{err}");
        assert!(err.contains("where telemetry is sent"), "{err}");
    }
    assert_eq!(server.request_count(), 0);
    assert!(receiver.requests().is_empty());
}

/// `config::load` for a trusted workspace whose file holds `file`, with `vars` as the
/// environment.
fn load(file: &str, vars: &[(&str, &str)]) -> Result<config::Config, ConfigError> {
    let tmp = tempfile::tempdir().unwrap();
    let launch = tmp.path().join("project");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(launch.join(".minicode")).unwrap();
    crate::support::user_config::write_trusting(&home, &launch, "");
    std::fs::write(
        launch.join(".minicode/config.toml"),
        format!("[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n{file}"),
    )
    .unwrap();
    let home = home.to_str().unwrap().to_string();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain([("HOME".to_string(), home)])
        .collect();
    let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    config::load(&launch, &env, &Overrides::default())
}

#[test]
fn telemetry_config_resolves_endpoint_protocol_and_precedence() {
    assert_eq!(load("", &[]).unwrap().telemetry, None, "off by default");
    let t = load(
        "[telemetry]\notlp_endpoint = \"https://otel.example:4318/\"\n",
        &[],
    )
    .unwrap()
    .telemetry
    .unwrap();
    assert_eq!(t.traces_url, "https://otel.example:4318/v1/traces");
    assert_eq!(t.protocol, OtlpProtocol::HttpProtobuf);
    assert_eq!(t.service_name, "minicode");
    assert!(!t.include_content);
    assert!(t.headers.is_empty());

    let file = "[telemetry]\notlp_endpoint = \"http://file.example\"\nprotocol = \"http/json\"\n\
                service_name = \"from-file\"\ninclude_content = true\n";
    let t = load(
        file,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env.example/otel"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_SERVICE_NAME", "from-env"),
        ],
    )
    .unwrap()
    .telemetry
    .unwrap();
    assert_eq!(t.traces_url, "http://env.example/otel/v1/traces");
    assert_eq!(t.protocol, OtlpProtocol::HttpProtobuf);
    assert_eq!(t.service_name, "from-env");
    assert!(t.include_content);
    // The signal-specific variable is a full URL, used as given.
    let t = load(
        file,
        &[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://collector.example/custom",
        )],
    )
    .unwrap()
    .telemetry
    .unwrap();
    assert_eq!(t.traces_url, "http://collector.example/custom");
    assert_eq!(t.protocol, OtlpProtocol::HttpJson);
    // OTEL_SDK_DISABLED turns everything off.
    let c = load(file, &[("OTEL_SDK_DISABLED", "TRUE")]).unwrap();
    assert_eq!(c.telemetry, None);
}

#[test]
fn bad_telemetry_settings_are_usage_errors_that_never_show_header_values() {
    let cases = [
        (
            "[telemetry]\notlp_endpoint = \"collector:4318\"\n",
            vec![],
            "telemetry.otlp_endpoint",
        ),
        (
            "",
            vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")],
            "telemetry.otlp_endpoint",
        ),
        (
            "[telemetry]\notlp_endpoint = \"http://x\"\nservice_name = \" \"\n",
            vec![],
            "telemetry.service_name",
        ),
        (
            "[telemetry]\notlp_endpoint = \"http://x\"\n[telemetry.headers]\n\"bad name\" = \"sk-hdr-secret-1\"\n",
            vec![],
            "telemetry.headers",
        ),
        (
            "[telemetry]\notlp_endpoint = \"http://x\"\n[telemetry.headers]\nx-a = \"sk-hdr-secret-1\\r\\nX: y\"\n",
            vec![],
            "telemetry.headers",
        ),
    ];
    for (file, vars, field) in cases {
        let err = load(file, &vars).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(shown.contains(field), "{field}: {shown}");
        assert!(
            !shown.contains("sk-hdr-secret"),
            "a header value was shown: {shown}"
        );
    }
    // A protocol the environment asks for (often set for other programs) turns export off
    // with a notice; it does not stop the run.
    let c = load(
        "[telemetry]\notlp_endpoint = \"http://x\"\n",
        &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
    )
    .unwrap();
    assert!(c.telemetry.is_none());
    assert!(
        c.notices[0].contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
        "{:?}",
        c.notices
    );
    // A bad protocol in the file is a field error from the parser.
    let err = load("[telemetry]\nprotocol = \"grpc\"\n", &[]).unwrap_err();
    assert!(format!("{err}").contains("telemetry.protocol"), "{err}");
    // Header values are secrets: a Config's Debug never shows them.
    let c = load(
        "[telemetry]\notlp_endpoint = \"http://x\"\n[telemetry.headers]\nAuthorization = \"Basic sk-hdr-secret-2\"\n",
        &[],
    )
    .unwrap();
    assert!(!format!("{c:?}").contains("sk-hdr-secret"));
    assert_eq!(
        c.telemetry.unwrap().headers[0].1.expose(),
        "Basic sk-hdr-secret-2"
    );
}

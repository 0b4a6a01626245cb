//! Every child minicode starts gets an environment without secrets (issue 32, item 5):
//! `minicode sandbox`'s command, and eval's setup and check commands, see no `MINICODE_*`
//! variable, no OpenTelemetry header variable and no configured key variable, while eval's
//! agent runs still reach their model with the key.

use crate::support::binary::command;
use crate::support::mock_openai::{MockServer, text_reply};
use crate::support::workspace;

/// What a child must never see: names and the canary values they hold.
const SECRETS: &[(&str, &str)] = &[
    ("MINICODE_CANARY", "canary-minicode"),
    ("MINICODE_API_KEY", "canary-api-key"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=canary-otlp"),
    (
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
        "authorization=canary-otlp-logs",
    ),
];

fn leaked(text: &str) -> Vec<&'static str> {
    SECRETS
        .iter()
        .filter(|(name, value)| text.contains(name) || text.contains(value))
        .map(|(name, _)| *name)
        .chain(
            text.contains("canary-configured")
                .then_some("EVAL_TEST_KEY"),
        )
        .collect()
}

#[test]
fn minicode_sandbox_runs_its_command_without_secret_variables() {
    let (_tmp, ws) = workspace();
    let mut cmd = command(&ws);
    cmd.args(["sandbox", "--mode", "off", "--", "env"]);
    for (name, value) in SECRETS {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(stdout.contains("PATH="), "{stdout}");
    assert_eq!(leaked(&stdout), Vec::<&str>::new(), "{stdout}");
}

#[test]
fn eval_setup_and_checks_see_no_secret_while_the_agent_gets_its_key() {
    let (_tmp, dir) = workspace();
    let server = MockServer::start_in_thread(vec![text_reply("done", 5)]);
    let config = dir.join("user.toml");
    std::fs::write(
        &config,
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"mock-model\"\napi_key_env = \"EVAL_TEST_KEY\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let pattern = "MINICODE_|OTEL_EXPORTER_OTLP_[A-Z_]*HEADERS|canary";
    std::fs::write(
        suite.join("t.toml"),
        format!(
            "prompt = \"hello\"\ntimeout = 60\nsetup = [\"env > setup-env.txt\"]\n\
             checks = [\"! grep -E '{pattern}' setup-env.txt\", \"! env | grep -E '{pattern}'\"]\n"
        ),
    )
    .unwrap();
    let mut cmd = command(&dir);
    cmd.arg("eval")
        .arg(&suite)
        .arg("--config")
        .arg(&config)
        .args(["--output-format", "json", "--out"])
        .arg(dir.join("out"))
        .env("EVAL_TEST_KEY", "canary-configured");
    for (name, value) in SECRETS.iter().filter(|(n, _)| *n != "MINICODE_API_KEY") {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{stdout}");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer canary-configured")
    );
}

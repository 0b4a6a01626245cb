//! Optional live check of compaction against the configured real model. `#[ignore]`d, so a
//! plain `cargo test` needs no model and does not count it as passed; run it with
//! `cargo test --test it context_live:: -- --ignored`. It loads the configuration from the
//! repository root exactly as the binary does, runs three successive real compactions over a scripted history
//! (saving and resuming the session between them), and asks the same model, given only the
//! compacted context, about facts that lived in the summarised part.
//!
//! The facts are placed so that only the summary can carry them: the task ledger pins the first
//! and the latest user message verbatim, so the constraint, the file path and the failed command
//! with its error sit in other messages, all of which get summarised.

use minicode::agent::budget::Budget;
use minicode::agent::compact::{CompactRequest, compact};
use minicode::agent::context::Context;
use minicode::chat::{Message, ToolCall};
use minicode::config::{self, Overrides, ProviderKind};
use minicode::protocol::TurnStats;
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::provider::{ChatRequest, Provider};
use minicode::session::Session;
use tokio_util::sync::CancellationToken;

const PATH: &str = "scripts/release/publish_wheel.py";
const COMMAND: &str = "python3 scripts/release/publish_wheel.py --dry-run";
const ERROR: &str = "publish_wheel.py: error: unrecognized arguments: --dry-run";

/// What the answer must contain (case-insensitive).
const FACTS: &[&str] = &[
    "--dry-run",
    "3.8",
    PATH,
    COMMAND,
    "unrecognized arguments: --dry-run",
];

const QUESTION: &str = "Answer from the conversation context above only, without tools, as a \
numbered list: 1. What is my overall goal? 2. Which compatibility constraint did I give? 3. Which \
file is being changed (full path)? 4. Which command failed (quote it exactly) and what was its \
error message (quote it exactly)?";

fn call(id: &str, name: &str, args: serde_json::Value) -> Message {
    Message::assistant(
        None,
        vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }],
    )
}

/// The scripted history in three phases, one compaction after each. Each phase ends with a
/// short assistant message: the only part a compaction keeping 1 token leaves verbatim.
fn phases() -> Vec<Vec<Message>> {
    vec![
        vec![
            Message::user("Add a --dry-run flag to our release script so I can test it safely."),
            call("r1", "read", serde_json::json!({ "path": PATH })),
            Message::tool_result(
                "r1",
                "1\timport argparse\n2\t\n3\tdef main():\n4\t    parser = argparse.ArgumentParser()\n\
                 5\t    parser.add_argument(\"--repo\")\n6\t    args = parser.parse_args()\n\
                 7\t    upload(args.repo)\n",
            ),
            Message::user(
                "Constraint: the script must stay compatible with Python 3.8, so no match \
                 statements and no new dependencies.",
            ),
            Message::assistant(
                Some("Understood, Python 3.8 compatible only.".into()),
                vec![],
            ),
        ],
        vec![
            Message::user("First check what it does today with the flag."),
            call("b1", "bash", serde_json::json!({ "command": COMMAND })),
            Message::tool_result(
                "b1",
                format!("usage: publish_wheel.py [-h] [--repo REPO]\n{ERROR}\n[exit status 2]"),
            ),
            Message::assistant(
                Some("The flag does not exist yet, so argparse rejects it.".into()),
                vec![],
            ),
        ],
        vec![
            Message::user("Go ahead and add it with action=\"store_true\"."),
            Message::assistant(Some("I will edit the parser now.".into()), vec![]),
        ],
    ]
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

#[tokio::test]
#[ignore = "needs a real model configured for this repository: run with --ignored"]
async fn real_compactions_keep_the_facts_a_second_request_needs() {
    let root = std::env::current_dir().unwrap();
    let config = config::load(&root, &|k| std::env::var(k).ok(), &Overrides::default())
        .unwrap_or_else(|e| panic!("the live test needs a configured model: {e}"));
    assert_eq!(
        config.provider,
        ProviderKind::OpenAi,
        "the live test needs a real model, not the demo"
    );
    let provider = OpenAi::new(OpenAiOptions {
        base_url: config.base_url.clone(),
        api_key: config.api_key.as_ref().map(|k| k.expose().to_string()),
        model: config.model.clone(),
        request_timeout: config.request_timeout,
        stream_idle_timeout: config.stream_idle_timeout,
        ..OpenAiOptions::default()
    })
    .unwrap();
    let budget = Budget::new(
        config.context_window,
        config.reserve_tokens,
        config.keep_recent_tokens,
    )
    .unwrap();
    let request = CompactRequest {
        keep_recent_tokens: 1,
        ..CompactRequest::new(&budget, None)
    };

    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let mut session = Session::create(&workspace).unwrap();
    let id = session.id().to_string();
    let mut stats = TurnStats::default();
    for (n, phase) in phases().into_iter().enumerate() {
        for message in phase {
            session.push(message);
        }
        let out = compact(
            &provider,
            session.messages(),
            session.checkpoint(),
            &request,
            &CancellationToken::new(),
            &mut stats,
        )
        .await
        .unwrap_or_else(|e| panic!("compaction {} failed: {}", n + 1, chain(&e)));
        assert_eq!(
            out.checkpoint.first_kept_index,
            session.messages().len() - 1
        );
        session.set_checkpoint(Some(out.checkpoint));
        session.save().unwrap();
        drop(session);
        session = Session::open(&workspace, &id).unwrap();
    }
    assert!(stats.summary_calls >= 3, "{stats:?}");
    let summary = session.checkpoint().unwrap().summary.clone();

    // The second request sees only what a resumed session would send: system prompt, ledger
    // and summary, and the one kept message.
    let mut context = Context::new("You are a coding agent working in a repository.", &[]);
    context
        .set_checkpoint(session.checkpoint().cloned(), session.messages())
        .unwrap();
    let question = Message::user(QUESTION);
    let mut messages = context.build(session.messages());
    assert_eq!(messages.len(), 3, "system, ledger + summary, kept message");
    messages.push(&question);
    let reply = provider
        .chat(&ChatRequest {
            messages: &messages,
            tools: &[],
            max_tokens: budget.summary_max_tokens(),
            statuses: &[],
        })
        .await
        .unwrap_or_else(|e| panic!("question request failed: {}", chain(&e)));
    let answer = reply.text.to_lowercase();
    let missing: Vec<&str> = FACTS
        .iter()
        .copied()
        .filter(|f| !answer.contains(&f.to_lowercase()))
        .collect();
    assert!(
        missing.is_empty(),
        "the answer lost {missing:?}\n--- summary ---\n{summary}\n--- answer ---\n{}",
        reply.text
    );
}

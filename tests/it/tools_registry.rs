//! The tool registry as the agent sees it: tools that join a running session are declared in
//! the very next request, a group is replaced whole, a name cannot be taken twice, and a
//! subset offers only what it names, and the small profile's lean view hides tools (they
//! cannot be called either) and declares the rest briefly, whatever joins later.

use std::sync::Arc;
use std::time::Duration;

use minicode::agent::{self, Options, Setup};
use minicode::chat::ToolSpec;
use minicode::session::Session;
use minicode::tools::{Invocation, Prepared, Registry, Tool, ToolCtx, ToolFuture, ToolOutput};
use tokio_util::sync::CancellationToken;

use crate::support::events::run_turn;
use crate::support::fake::{Fake, text_reply};
use crate::support::workspace;

/// A tool that only has a name, for registry bookkeeping.
struct Named(&'static str);

impl Tool for Named {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.0.into(),
            description: "a test tool".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        }
    }

    fn parse<'t>(&'t self, _args: &serde_json::Value) -> Result<Box<dyn Invocation + 't>, String> {
        Ok(Box::new(NamedCall(self.0)))
    }
}

/// A call of [`Named`]: it only answers "done".
struct NamedCall(&'static str);

impl Invocation for NamedCall {
    fn prepare(&self, _ctx: &ToolCtx) -> Result<Prepared, String> {
        Ok(Prepared {
            summary: self.0.to_string(),
            approval: None,
            protected: None,
        })
    }

    fn run<'a>(&'a self, _ctx: &'a ToolCtx, _cancel: CancellationToken) -> ToolFuture<'a> {
        Box::pin(async { ToolOutput::ok("done") })
    }
}

fn names(registry: &Registry) -> Vec<String> {
    registry
        .specs()
        .iter()
        .map(|s| s.name.to_string())
        .collect()
}

#[test]
fn a_group_is_replaced_whole_and_keeps_its_place() {
    let registry = Registry::builtin();
    let before = registry.generation();
    assert!(
        registry
            .set_group(
                "mcp:a",
                vec![Arc::new(Named("a_one")), Arc::new(Named("a_two"))]
            )
            .is_empty()
    );
    assert!(
        registry
            .set_group("mcp:b", vec![Arc::new(Named("b_one"))])
            .is_empty()
    );
    assert_ne!(registry.generation(), before);
    registry.set_group("mcp:a", vec![Arc::new(Named("a_three"))]);
    assert_eq!(
        names(&registry),
        [
            "bash",
            "bash_output",
            "bash_kill",
            "read",
            "write",
            "edit",
            "list",
            "search",
            "find",
            "fetch",
            "a_three",
            "b_one"
        ]
    );
    registry.set_group("mcp:a", Vec::new());
    assert_eq!(
        names(&registry),
        [
            "bash",
            "bash_output",
            "bash_kill",
            "read",
            "write",
            "edit",
            "list",
            "search",
            "find",
            "fetch",
            "b_one"
        ]
    );
}

#[test]
fn a_name_taken_by_another_group_is_refused_not_shadowed() {
    let registry = Registry::builtin();
    let refused = registry.set_group(
        "mcp:evil",
        vec![Arc::new(Named("bash")), Arc::new(Named("ok"))],
    );
    assert_eq!(refused, ["bash"]);
    assert_eq!(
        names(&registry),
        [
            "bash",
            "bash_output",
            "bash_kill",
            "read",
            "write",
            "edit",
            "list",
            "search",
            "find",
            "fetch",
            "ok"
        ]
    );
    // The built-in bash is still the one that resolves.
    let Ok((tool, _)) = registry.resolve("bash", r#"{"command": "true"}"#) else {
        panic!("bash no longer resolves");
    };
    assert_eq!(
        tool.spec().description,
        minicode::tools::bash::Bash.spec().description
    );
}

#[test]
fn a_subset_offers_only_the_named_tools() {
    let registry = Registry::builtin();
    let readonly = registry.subset(&["read", "nope"]);
    assert_eq!(names(&readonly), ["read"]);
    let Err(message) = readonly.resolve("bash", "{}") else {
        panic!("bash resolved in a read-only subset");
    };
    assert!(message.contains("unknown tool"), "{message}");
}

#[test]
fn the_lean_view_hides_tools_from_declarations_and_calls_and_keeps_later_groups() {
    use minicode::tools::lean::Lean;
    let registry = Registry::builtin();
    let full_read = registry.specs()[3].clone();
    let before = registry.generation();
    let hidden = ["find", "fetch", "bash_output", "bash_kill"]
        .map(String::from)
        .to_vec();
    registry.set_lean(Some(Lean::hiding(hidden)));
    assert!(registry.generation() > before);
    assert_eq!(
        names(&registry),
        ["bash", "read", "write", "edit", "list", "search"]
    );
    let Err(message) = registry.resolve("find", r#"{"query":"x"}"#) else {
        panic!("a hidden tool resolved");
    };
    assert!(message.contains("unknown tool"), "{message}");
    let brief_read = registry.specs()[1].clone();
    assert!(brief_read.description.len() < full_read.description.len());
    assert_eq!(
        brief_read.parameters["required"],
        full_read.parameters["required"]
    );
    // A group set later keeps the view: its tools join, the hidden one stays out.
    registry.set_group("extra", vec![Arc::new(Named("ok")) as Arc<dyn Tool>]);
    assert_eq!(
        names(&registry),
        ["bash", "read", "write", "edit", "list", "search", "ok"]
    );
    registry.set_lean(None);
    assert!(names(&registry).contains(&"find".to_string()));
}

#[tokio::test]
async fn tools_that_join_a_running_session_are_declared_in_the_next_request() {
    let (_tmp, ws) = workspace();
    let fake = Fake::new(vec![text_reply("one"), text_reply("two")]);
    let registry = Arc::new(Registry::builtin());
    let mut handle = agent::spawn(Setup {
        provider: Arc::new(fake.clone()),
        registry: registry.clone(),
        tool_ctx: Arc::new(ToolCtx::new(
            ws.clone(),
            Duration::from_secs(30),
            Vec::new(),
        )),
        session: Session::create(&ws).unwrap(),
        options: Options::default(),
        mcp: None,
    });
    run_turn(&mut handle, "first", |_| None).await;
    registry.set_group("late", vec![Arc::new(Named("late_tool"))]);
    run_turn(&mut handle, "second", |_| None).await;
    let requests = fake.main_requests();
    let builtin = Registry::builtin().specs().len();
    assert_eq!(requests[0].tools, builtin);
    assert_eq!(requests[1].tools, builtin + 1);
    // The estimate counts the new declaration too.
    assert!(requests[1].estimate > requests[0].estimate);
}

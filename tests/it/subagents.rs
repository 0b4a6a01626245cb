//! Sub-agents end to end against the mock OpenAI server (real TCP, real SSE, the real client):
//! the global concurrency limit measured on the server, results in submission order when
//! children finish out of order, a failing and a timed-out child beside successful ones, the
//! read-only whitelist and no recursion (asserted on the recorded requests), child session
//! files recording their parent, interrupts reaching every child, the stats kept apart, read
//! deny rules holding in children, and the one-shot binary reporting children on stderr and in
//! stream-json.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use minicode::agent::delegate::Subagents;
use minicode::agent::{self, Options, Setup};
use minicode::chat::ToolStatus;
use minicode::protocol::{AgentHandle, Event, Op, SubagentStatus, TurnEnd};
use minicode::provider::openai::{OpenAi, OpenAiOptions};
use minicode::session::Session;
use minicode::tools::skills::{self, Skills};
use minicode::tools::{Registry, ToolCtx};
use serde_json::{Value, json};

use crate::support::events::{next, run_turn, shutdown, until};
use crate::support::mock_openai::{
    Gate, MockReply, MockServer, Recorded, USAGE_COMPLETION_TOKENS, USAGE_PROMPT_TOKENS,
    chunk_text, error_reply, sse_event, text_reply, tool_calls_reply, wait_until,
};

const PARENT_PROMPT: &str = "investigate the project";

/// The parent core on a new session in `ws`, talking to `server`, with sub-agents limited by
/// `subagents` (one value may be shared by several cores, like the process-wide one).
fn parent(ws: &Path, server: &MockServer, subagents: &Subagents) -> AgentHandle {
    parent_with(ws, server, subagents, Skills::default())
}

/// [`parent`] with skills the parent may load.
fn parent_with(
    ws: &Path,
    server: &MockServer,
    subagents: &Subagents,
    skills: Skills,
) -> AgentHandle {
    let ctx = ToolCtx::new(ws.to_path_buf(), Duration::from_secs(30), Vec::new());
    parent_in(ws, server, subagents, skills, ctx)
}

/// [`parent_with`] with its own tool context (e.g. permission rules).
fn parent_in(
    ws: &Path,
    server: &MockServer,
    subagents: &Subagents,
    skills: Skills,
    ctx: ToolCtx,
) -> AgentHandle {
    let provider = OpenAi::new(OpenAiOptions {
        base_url: server.base_url(),
        model: "mock-model".into(),
        max_attempts: 1,
        ..OpenAiOptions::default()
    })
    .unwrap();
    agent::spawn(Setup {
        provider: Arc::new(provider),
        registry: Arc::new(Registry::builtin()),
        tool_ctx: Arc::new(ctx),
        session: Session::create(ws).unwrap(),
        options: Options {
            subagents: Some(subagents.clone()),
            skills: Arc::new(skills),
            ..Options::default()
        },
        mcp: None,
    })
}

/// The text of every message of `role` in a recorded request.
fn texts(r: &Recorded, role: &str) -> Vec<String> {
    r.body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == role)
                .map(|m| m["content"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn is_child(r: &Recorded) -> bool {
    texts(r, "system")
        .first()
        .is_some_and(|s| s.starts_with("You are a sub-agent"))
}

/// The task id a child request is about: its instruction starts with `task <id>:`.
fn task_of(r: &Recorded) -> Option<String> {
    let first = texts(r, "user")
        .into_iter()
        .find(|t| t.starts_with("task "))?;
    Some(first[5..].split(':').next()?.to_string())
}

fn tool_names(r: &Recorded) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The parent's first reply: one `delegate` call with these task ids.
fn delegate_reply(ids: &[&str]) -> MockReply {
    let tasks: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "instruction": format!("task {id}: look around"), "context": "ctx"}))
        .collect();
    let args = json!({ "tasks": tasks }).to_string();
    tool_calls_reply(&[("call_delegate", "delegate", &args)], 40)
}

/// Routes parent requests: the first gets `first`, later ones (after the tool result) a final
/// text; children are left to `child`.
fn route(
    server: &MockServer,
    first: MockReply,
    child: impl Fn(&Recorded, &str) -> MockReply + Send + Sync + 'static,
) {
    server.respond_with(move |r| {
        if is_child(r) {
            let task = task_of(r).unwrap_or_default();
            return Some(child(r, &task));
        }
        if texts(r, "tool").is_empty() {
            Some(first.clone())
        } else {
            Some(text_reply("all done", 8))
        }
    });
}

/// The delegate tool's result as the parent's model read it (its second request).
fn delegate_result(server: &MockServer) -> String {
    let requests = server.requests();
    let last = requests
        .iter()
        .rev()
        .find(|r| !is_child(r) && !texts(r, "tool").is_empty())
        .expect("the parent's request after the delegate call");
    texts(last, "tool").pop().unwrap()
}

fn ended_events(events: &[Event]) -> Vec<(String, SubagentStatus)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::SubagentEnded { task, status, .. } => Some((task.clone(), *status)),
            _ => None,
        })
        .collect()
}

fn positions(text: &str, ids: &[&str]) -> Vec<usize> {
    ids.iter()
        .map(|id| {
            text.find(&format!("## Task \"{id}\""))
                .unwrap_or_else(|| panic!("no task {id} in {text}"))
        })
        .collect()
}

#[tokio::test]
async fn four_tasks_run_at_most_three_at_once_and_come_back_in_submission_order() {
    let (_tmp, ws) = crate::support::workspace();
    std::fs::write(ws.join("notes.txt"), "the needle is here\n").unwrap();
    let server = MockServer::start(Vec::new()).await;
    let gates: Vec<(String, Gate)> = ["a", "b", "c", "d"]
        .iter()
        .map(|id| (id.to_string(), Gate::new()))
        .collect();
    let child_gates = gates.clone();
    route(
        &server,
        delegate_reply(&["a", "b", "c", "d"]),
        move |r, task| {
            // Task b searches once before answering (its second request carries the result).
            if task == "b" && texts(r, "tool").is_empty() {
                let args = json!({"pattern": "needle"}).to_string();
                return tool_calls_reply(&[("call_search", "search", &args)], 100);
            }
            let gate = &child_gates.iter().find(|(id, _)| id == task).unwrap().1;
            text_reply(&format!("answer from {task}"), 5).after(gate)
        },
    );
    let mut handle = parent(&ws, &server, &Subagents::new(3, Duration::from_secs(60)));
    handle.send(Op::Submit(PARENT_PROMPT.into()));
    let mut events = until(&mut handle, |e| matches!(e, Event::ToolCallBegan { .. })).await;
    // Three start; the fourth waits for a slot.
    let mut started = Vec::new();
    while started.len() < 3 {
        let e = next(&mut handle).await;
        if let Event::SubagentStarted { task, .. } = &e {
            started.push(task.clone());
        }
        events.push(e);
    }
    assert_eq!(started, ["a", "b", "c"]);
    // All three are held at the server: a and c on their answers, b on its second request
    // (after its search). A fourth child would have sent its request long before b's second.
    let requests_of = |task: &str| {
        server
            .requests()
            .into_iter()
            .filter(|r| is_child(r) && task_of(r).as_deref() == Some(task))
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(30), || requests_of("b") == 2
            && server.in_flight() == 3)
        .await,
        "in flight: {}",
        server.in_flight()
    );
    assert_eq!(requests_of("d"), 0);
    // They finish out of order: c first lets d start; then d, b, a.
    let open = |id: &str| gates.iter().find(|(g, _)| g == id).unwrap().1.open();
    open("c");
    events.extend(
        until(
            &mut handle,
            |e| matches!(e, Event::SubagentStarted { task, .. } if task == "d"),
        )
        .await,
    );
    for id in ["d", "b", "a"] {
        open(id);
        events.extend(
            until(
                &mut handle,
                |e| matches!(e, Event::SubagentEnded { task, .. } if task == id),
            )
            .await,
        );
    }
    events.extend(until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await);
    let Some(Event::TurnEnded { end, stats, .. }) = events.last().cloned() else {
        unreachable!()
    };
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(
        server.max_in_flight(),
        3,
        "never more than 3 requests at once"
    );

    // The children ended c, d, b, a; the result lists a, b, c, d.
    let ended: Vec<String> = ended_events(&events).into_iter().map(|(t, _)| t).collect();
    assert_eq!(ended, ["c", "d", "b", "a"]);
    let result = delegate_result(&server);
    let at = positions(&result, &["a", "b", "c", "d"]);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{result}");
    assert!(
        result.starts_with("4 tasks delegated: 4 completed."),
        "{result}"
    );
    for id in ["a", "b", "c", "d"] {
        assert!(result.contains(&format!("answer from {id}")), "{result}");
    }
    // b's search ran (read-only tools work in a child) and its result went to b, not the parent.
    let b_second = server
        .requests()
        .into_iter()
        .find(|r| is_child(r) && task_of(r).as_deref() == Some("b") && !texts(r, "tool").is_empty())
        .unwrap();
    assert!(texts(&b_second, "tool")[0].contains("notes.txt:1: the needle is here"));
    assert!(
        !result.contains("the needle is here"),
        "no intermediate messages: {result}"
    );

    // Stats: the parent's two calls, the children's five apart.
    assert_eq!(stats.model_calls, 2);
    assert_eq!(stats.subagents, 4);
    assert_eq!(stats.subagent_calls, 5);
    assert_eq!(
        stats.subagent_tokens.total_tokens,
        5 * (USAGE_PROMPT_TOKENS + USAGE_COMPLETION_TOKENS)
    );
    assert_eq!(
        stats.tokens.total_tokens,
        2 * (USAGE_PROMPT_TOKENS + USAGE_COMPLETION_TOKENS)
    );
    // Progress reached the frontend.
    assert!(
        events.iter().any(
            |e| matches!(e, Event::SubagentProgress { task, tool_calls: 1, .. } if task == "b")
        )
    );
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn children_declare_only_read_tools_start_fresh_and_cannot_delegate_again() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start(Vec::new()).await;
    route(&server, delegate_reply(&["x"]), |r, _| {
        if texts(r, "tool").is_empty() {
            // The child tries everything it must not have.
            let nested =
                json!({"tasks": [{"id": "y", "instruction": "task y: recurse"}]}).to_string();
            tool_calls_reply(
                &[
                    ("c1", "delegate", &nested),
                    ("c2", "bash", r#"{"command":"touch pwned"}"#),
                    ("c3", "write", r#"{"path":"pwned","content":"x"}"#),
                ],
                50,
            )
        } else {
            text_reply("nothing to do", 5)
        }
    });
    // The parent may load a skill whose trigger is in the child's instruction: the child
    // still gets neither the skill tool nor the skill.
    let dir = ws.join(".minicode/skills/looker");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: looker\ndescription: Looks at things.\ntriggers: look around\n---\nSKILL BODY\n",
    )
    .unwrap();
    let found = skills::discover(&skills::workspace_roots(&ws));
    assert_eq!(found.all().len(), 1);
    let mut handle = parent_with(&ws, &server, &Subagents::default(), found);
    let (events, end, stats) = run_turn(&mut handle, PARENT_PROMPT, |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { .. }))
    );
    let started = events
        .iter()
        .filter(|e| matches!(e, Event::SubagentStarted { .. }))
        .count();
    assert_eq!(started, 1, "no nested sub-agent");
    assert_eq!(stats.subagents, 1);
    assert!(!ws.join("pwned").exists());

    let requests = server.requests();
    let parent_first = requests.iter().find(|r| !is_child(r)).unwrap();
    assert!(tool_names(parent_first).contains(&"delegate".to_string()));
    let children: Vec<&Recorded> = requests.iter().filter(|r| is_child(r)).collect();
    assert_eq!(children.len(), 2);
    assert!(tool_names(parent_first).contains(&"skill".to_string()));
    for child in &children {
        assert_eq!(
            tool_names(child),
            ["read", "list", "search", "find", "fetch"]
        );
        assert!(!child.raw_body.contains("SKILL BODY"));
        assert!(!texts(child, "system")[0].contains("Skills"));
        // No parent history: only its own task (with the context it was given).
        let users = texts(child, "user");
        assert!(
            users.iter().all(|u| !u.contains(PARENT_PROMPT)),
            "{users:?}"
        );
        assert!(
            users
                .iter()
                .any(|u| u.contains("task x: look around") && u.contains("ctx"))
        );
    }
    let refusals = texts(children[1], "tool");
    assert_eq!(refusals.len(), 3);
    for r in &refusals {
        assert!(r.starts_with("unknown tool"), "{r}");
        assert!(r.contains("available tools: read, list, search"), "{r}");
    }
    // Only the parent asked the server what it is (one probe: four endpoints); a child
    // takes the parent's window.
    let probes = server
        .other_requests()
        .iter()
        .filter(|r| r.path == "/props")
        .count();
    assert_eq!(probes, 1);
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_child_never_sees_a_file_a_read_deny_rule_covers() {
    use minicode::permissions::{Action, Rule, Rules};
    let (_tmp, ws) = crate::support::workspace();
    std::fs::write(ws.join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "TOKEN comes from .env\n").unwrap();
    let server = MockServer::start(Vec::new()).await;
    route(&server, delegate_reply(&["x"]), |r, _| {
        if texts(r, "tool").is_empty() {
            tool_calls_reply(
                &[
                    ("c1", "read", r#"{"path":".env"}"#),
                    ("c2", "list", "{}"),
                    ("c3", "search", r#"{"pattern":"TOKEN"}"#),
                ],
                50,
            )
        } else {
            text_reply("looked", 5)
        }
    });
    let mut ctx = ToolCtx::new(ws.clone(), Duration::from_secs(30), Vec::new());
    let rule = Rule::parse("read(.env*)", Action::Deny, "user config").unwrap();
    ctx.permissions = Some(Arc::new(Rules::new(vec![rule])));
    let mut handle = parent_in(&ws, &server, &Subagents::default(), Skills::default(), ctx);
    let (_, end, _) = run_turn(&mut handle, PARENT_PROMPT, |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    let requests = server.requests();
    let child = requests
        .iter()
        .rfind(|r| is_child(r) && !texts(r, "tool").is_empty())
        .expect("the child's request after its tool calls");
    let results = texts(child, "tool");
    assert!(!child.raw_body.contains("hunter2"), "{results:?}");
    assert!(
        results[0].contains("denied by the permission rule `read(.env*)`"),
        "{results:?}"
    );
    assert!(results[1].contains("notes.txt") && results[1].contains("1 file withheld"));
    assert!(results[2].contains("notes.txt:1:") && results[2].contains("1 file withheld"));
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn a_failing_and_a_timed_out_child_never_hide_the_others_answers() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start(Vec::new()).await;
    route(
        &server,
        delegate_reply(&["ok1", "bad", "slow", "ok2"]),
        |_, task| match task {
            "bad" => error_reply(400, "the model exploded"),
            // Says something, then keeps the stream open without ever finishing.
            "slow" => MockReply::endless(
                vec![sse_event(&chunk_text("partial findings so far"))],
                b": still thinking\n\n".to_vec(),
                Duration::from_millis(50),
            ),
            other => text_reply(&format!("answer from {other}"), 5),
        },
    );
    // The deadline leaves the answering children room on a loaded 2-core machine (at 1 s
    // they timed out there in 3 of 6 runs); only "slow" may reach it.
    let mut handle = parent(&ws, &server, &Subagents::new(4, Duration::from_secs(3)));
    let (events, end, stats) = run_turn(&mut handle, PARENT_PROMPT, |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    let mut ended = ended_events(&events);
    ended.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        ended,
        [
            ("bad".to_string(), SubagentStatus::Failed),
            ("ok1".to_string(), SubagentStatus::Completed),
            ("ok2".to_string(), SubagentStatus::Completed),
            ("slow".to_string(), SubagentStatus::TimedOut),
        ]
    );
    let result = delegate_result(&server);
    positions(&result, &["ok1", "bad", "slow", "ok2"])
        .windows(2)
        .for_each(|w| assert!(w[0] < w[1], "{result}"));
    assert!(
        result.starts_with("4 tasks delegated: 2 completed, 1 failed, 1 timed out."),
        "{result}"
    );
    assert!(result.contains("## Task \"bad\": failed"), "{result}");
    assert!(result.contains("the model exploded"), "{result}");
    assert!(result.contains("## Task \"slow\": timed_out"), "{result}");
    assert!(
        result.contains("no answer within its deadline of 3 s"),
        "{result}"
    );
    assert!(
        result.contains("partial answer:\npartial findings so far"),
        "{result}"
    );
    assert!(result.contains("answer from ok1") && result.contains("answer from ok2"));
    let ended_call = events.iter().find_map(|e| match e {
        Event::ToolCallEnded { status, .. } => Some(*status),
        _ => None,
    });
    assert_eq!(ended_call, Some(ToolStatus::Succeeded));
    assert_eq!(stats.subagents, 4);
    // The stalled stream was dropped: nothing is left in flight.
    assert!(wait_until(Duration::from_secs(10), || server.in_flight() == 0).await);
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn child_sessions_record_their_parent_and_continue_skips_them() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start(Vec::new()).await;
    route(&server, delegate_reply(&["p", "q"]), |_, task| {
        text_reply(&format!("answer from {task}"), 5)
    });
    let mut handle = parent(&ws, &server, &Subagents::default());
    let first = next(&mut handle).await;
    let Event::SessionConfigured { session_id, .. } = first else {
        panic!("{first:?}")
    };
    let (events, _, _) = run_turn(&mut handle, PARENT_PROMPT, |_| None).await;
    let child_ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::SubagentStarted { session_id, .. } => Some(session_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(child_ids.len(), 2);
    let result = delegate_result(&server);
    for id in &child_ids {
        assert!(result.contains(&format!("session {id}")), "{result}");
    }
    shutdown(&mut handle).await;

    for (child, task) in child_ids.iter().zip(["p", "q"]) {
        let session = Session::open(&ws, child).unwrap();
        let parent = session.parent().unwrap();
        assert_eq!(parent.session_id, session_id);
        assert_eq!(parent.call_id, "call_delegate");
        assert_eq!(parent.task_id, task);
        // Its own history: its task and its answer, nothing of the parent's.
        let texts: Vec<String> = session
            .messages()
            .iter()
            .map(|m| m.text().to_string())
            .collect();
        assert!(texts[0].starts_with(&format!("task {task}: look around")));
        assert_eq!(texts.last().unwrap(), &format!("answer from {task}"));
        let raw = std::fs::read_to_string(session.path()).unwrap();
        assert!(raw.contains(&format!("\"parent\":{{\"session_id\":\"{session_id}\"")));
    }
    let parent_file =
        std::fs::read_to_string(Session::open(&ws, &session_id).unwrap().path()).unwrap();
    assert!(
        !parent_file.contains("\"parent\""),
        "ordinary sessions are unchanged"
    );
    let listed = Session::list(&ws).unwrap();
    assert_eq!(
        listed
            .iter()
            .filter(|s| s.parent.as_deref() == Some(session_id.as_str()))
            .count(),
        2
    );
    // A child saved after the parent is still not what --continue resumes.
    let child = Session::open(&ws, &child_ids[0]).unwrap();
    let mut child = child;
    child.save().unwrap();
    drop(child);
    assert_eq!(Session::open_latest(&ws).unwrap().id(), session_id);
}

#[tokio::test]
async fn an_interrupt_stops_every_child_and_the_queued_one_never_starts() {
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start(Vec::new()).await;
    route(&server, delegate_reply(&["a", "b", "c", "d"]), |_, _| {
        MockReply::Stall
    });
    let mut handle = parent(&ws, &server, &Subagents::new(3, Duration::from_secs(120)));
    handle.send(Op::Submit(PARENT_PROMPT.into()));
    let mut events = Vec::new();
    let mut started = 0;
    while started < 3 {
        let e = next(&mut handle).await;
        started += usize::from(matches!(e, Event::SubagentStarted { .. }));
        events.push(e);
    }
    assert!(wait_until(Duration::from_secs(30), || server.in_flight() == 3).await);
    handle.send(Op::Interrupt);
    events.extend(until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await);
    let Some(Event::TurnEnded { end, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(*end, TurnEnd::Interrupted);
    let mut ended = ended_events(&events);
    ended.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        ended,
        [
            ("a".to_string(), SubagentStatus::Interrupted),
            ("b".to_string(), SubagentStatus::Interrupted),
            ("c".to_string(), SubagentStatus::Interrupted),
        ]
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::SubagentStarted { task, .. } if task == "d"))
    );
    let result = events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallEnded { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.0, ToolStatus::Interrupted);
    assert!(result.1.contains("4 interrupted"), "{}", result.1);
    assert!(
        result.1.contains("interrupted before it started"),
        "{}",
        result.1
    );
    // Every child's request was dropped.
    assert!(wait_until(Duration::from_secs(10), || server.in_flight() == 0).await);
    assert_eq!(server.requests().iter().filter(|r| is_child(r)).count(), 3);
    shutdown(&mut handle).await;
}

#[tokio::test]
async fn the_limit_holds_across_delegations_of_the_process() {
    let (_tmp, ws1) = crate::support::workspace();
    let (_tmp2, ws2) = crate::support::workspace();
    let server = MockServer::start(Vec::new()).await;
    let gate = Gate::new();
    let child_gate = gate.clone();
    route(&server, delegate_reply(&["only"]), move |_, _| {
        text_reply("done", 5).after(&child_gate)
    });
    let shared = Subagents::new(1, Duration::from_secs(60));
    let mut one = parent(&ws1, &server, &shared);
    let mut two = parent(&ws2, &server, &shared);
    one.send(Op::Submit(PARENT_PROMPT.into()));
    two.send(Op::Submit(PARENT_PROMPT.into()));
    // One child holds the only slot; the other delegation waits for it.
    assert!(
        wait_until(Duration::from_secs(30), || {
            server.requests().iter().filter(|r| is_child(r)).count() == 1 && server.in_flight() == 1
        })
        .await
    );
    gate.open();
    gate.open();
    until(&mut one, |e| matches!(e, Event::TurnEnded { .. })).await;
    until(&mut two, |e| matches!(e, Event::TurnEnded { .. })).await;
    let children: Vec<Recorded> = server.requests().into_iter().filter(is_child).collect();
    assert_eq!(children.len(), 2);
    // The second child arrived only after the first one finished.
    assert!(children[1].arrived >= children[0].finished.unwrap());
    shutdown(&mut one).await;
    shutdown(&mut two).await;
}

#[test]
fn one_shot_reports_children_on_stderr_and_in_stream_json() {
    use crate::support::binary::{command, write_config};
    let (_tmp, ws) = crate::support::workspace();
    let server = MockServer::start_in_thread(Vec::new());
    route(&server, delegate_reply(&["docs"]), |_, _| {
        text_reply("the docs are fine", 5)
    });
    write_config(&ws, &server);
    let out = command(&ws).arg(PARENT_PROMPT).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "all done");
    assert!(stderr.contains("▶ delegate 1 task: docs"), "{stderr}");
    assert!(
        stderr.contains("↳ sub-agent docs started (session "),
        "{stderr}"
    );
    assert!(
        stderr.contains("↳ sub-agent docs completed in "),
        "{stderr}"
    );
    assert!(
        stderr.contains("· 1 sub-agent (1 model call, 18 tokens)"),
        "{stderr}"
    );

    let out = command(&ws)
        .args(["--output-format", "stream-json", PARENT_PROMPT])
        .output()
        .unwrap();
    assert!(out.status.success());
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .cloned()
            .collect::<Vec<_>>()
    };
    let started = of("subagent_started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["call"], "call_delegate");
    assert_eq!(started[0]["task"], "docs");
    assert!(started[0]["session_id"].as_str().unwrap().len() == 36);
    let ended = of("subagent_ended");
    assert_eq!(ended[0]["status"], "completed");
    assert_eq!(ended[0]["rounds"], 1);
    assert!(!of("subagent_progress").is_empty());
    let turn = of("turn_ended");
    assert_eq!(turn[0]["stats"]["subagents"], 1);
    assert_eq!(turn[0]["stats"]["subagent_calls"], 1);
}

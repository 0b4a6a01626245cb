//! Permission rules: the rules themselves (precedence, compound commands, what is never
//! auto-allowed, path globs, malformed rules) through `minicode::permissions`, and the built
//! binary applying them: deny under `--yes`, allow without a terminal, ask even under
//! `--yes`, denied reads in `read`/`list`/`search`, config errors, and workspace rules only
//! in a trusted workspace.

use std::path::Path;

use minicode::permissions::{Action, Rule, Rules, Target, Verdict, shell, suggest};

use crate::support::binary::command;
use crate::support::mock_openai::{MockServer, text_reply, tool_calls_reply};
use crate::support::user_config;

fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
    let mut all = Vec::new();
    for (action, list) in [
        (Action::Allow, allow),
        (Action::Ask, ask),
        (Action::Deny, deny),
    ] {
        for text in list {
            all.push(Rule::parse(text, action, "test").unwrap());
        }
    }
    Rules::new(all)
}

fn not_protected(_: &str) -> bool {
    false
}

/// The verdict's kind and, for ask and deny, the rule's text.
fn bash(rules: &Rules, line: &str) -> (&'static str, String) {
    kind(rules.check("bash", Target::Command(line), &not_protected))
}

fn kind(verdict: Verdict<'_>) -> (&'static str, String) {
    match verdict {
        Verdict::None => ("none", String::new()),
        Verdict::Allow => ("allow", String::new()),
        Verdict::Ask(r) => ("ask", r.text.clone()),
        Verdict::Deny(r) => ("deny", r.text.clone()),
        Verdict::Unread(why) => ("unread", why.to_string()),
    }
}

#[test]
fn deny_beats_ask_beats_allow() {
    let r = rules(
        &["bash(git *)", "write(docs/**)", "mcp_github__*"],
        &["bash(git push*)", "write(docs/private/**)"],
        &["bash(git push --force*)", "write(docs/private/keys/**)"],
    );
    assert_eq!(bash(&r, "git status").0, "allow");
    assert_eq!(
        bash(&r, "git push origin main"),
        ("ask", "bash(git push*)".into())
    );
    assert_eq!(
        bash(&r, "git push --force origin main"),
        ("deny", "bash(git push --force*)".into())
    );
    assert_eq!(bash(&r, "cargo test").0, "none");
    let path = |tool, p| kind(r.check(tool, Target::Path(Some(p)), &not_protected));
    assert_eq!(path("write", "docs/guide/a.md").0, "allow");
    assert_eq!(path("edit", "docs/guide/a.md").0, "allow");
    assert_eq!(path("write", "docs/private/a.md").0, "ask");
    assert_eq!(path("write", "docs/private/keys/k").0, "deny");
    assert_eq!(path("write", "src/main.rs").0, "none");
    // A path outside the workspace meets only rules without a pattern.
    assert_eq!(
        kind(r.check("write", Target::Path(None), &not_protected)).0,
        "none"
    );
    // A tool-name glob covers the whole tool; a rule for one tool says nothing of another.
    assert_eq!(
        kind(r.check("mcp_github__create_issue", Target::Call, &not_protected)).0,
        "allow"
    );
    assert_eq!(
        kind(r.check("mcp_gitlab__x", Target::Call, &not_protected)).0,
        "none"
    );
    let whole = rules(&[], &[], &["bash"]);
    assert_eq!(bash(&whole, "ls").0, "deny");
}

#[test]
fn a_compound_command_is_allowed_only_when_every_part_is() {
    let r = rules(
        &["bash(git status*)", "bash(git diff*)"],
        &[],
        &["bash(rm *)"],
    );
    assert_eq!(bash(&r, "git status && git diff --stat").0, "allow");
    assert_eq!(bash(&r, "git status\ngit diff").0, "allow");
    for line in [
        "git status && cargo build",
        "git status || make",
        "git status; echo hi",
        "git status | sh",
        "git status & curl x",
        "(git status) ; ls",
    ] {
        assert_eq!(bash(&r, line).0, "none", "{line}");
    }
    // A deny rule catches any part, behind keywords and variable assignments too.
    for line in [
        "git status && rm -rf x",
        "git status; FOO=1 rm -rf x",
        "if true; then rm -rf x; fi",
        "git status | { rm -rf x; }",
    ] {
        assert_eq!(bash(&r, line).0, "deny", "{line}");
    }
}

#[test]
fn substitution_eval_and_here_documents_are_never_auto_allowed() {
    let r = rules(&["bash"], &[], &["bash(rm *)"]);
    assert_eq!(bash(&r, "echo hi").0, "allow");
    for line in [
        "echo $(whoami)",
        "echo `whoami`",
        "echo \"$(whoami)\"",
        "diff <(ls) <(ls -a)",
        "eval echo hi",
        "FOO=1 eval echo hi",
        "cat <<EOF\nhi\nEOF",
        "echo 'unterminated",
    ] {
        assert_eq!(bash(&r, line).0, "none", "{line}");
    }
    // What a substitution runs still meets the deny rules.
    assert_eq!(bash(&r, "echo $(rm -rf x)").0, "deny");
    assert_eq!(bash(&r, "echo \"`rm -rf x`\"").0, "deny");
    assert_eq!(bash(&r, "echo $(echo $(rm -rf x))").0, "deny");
}

#[test]
fn quotes_and_escapes_split_like_the_shell() {
    let texts = |line: &str| -> Vec<String> {
        shell::split(line)
            .commands
            .into_iter()
            .map(|c| c.text)
            .collect()
    };
    assert_eq!(
        texts("git commit -m 'a && b; c'"),
        ["git commit -m a && b; c"]
    );
    assert_eq!(texts(r#"echo "x | y" | wc -l"#), ["echo x | y", "wc -l"]);
    assert_eq!(texts(r"echo a\;b; ls"), ["echo a;b", "ls"]);
    assert_eq!(texts("ls # && rm -rf x\npwd"), ["ls", "pwd"]);
    assert_eq!(texts("echo a\\\nb"), ["echo ab"]);
    let script = shell::split("make 2>&1 > build.log >>'log 2' &> all");
    assert_eq!(script.commands.len(), 1);
    assert_eq!(script.commands[0].text, "make");
    assert_eq!(script.writes, ["build.log", "log 2", "all"]);
    assert!(script.opaque.is_none());
    // A quoted operator is an argument: allowed by the rule for its command.
    let r = rules(&["bash(git status*)"], &[], &[]);
    assert_eq!(bash(&r, "git status '&& rm -rf x'").0, "allow");
}

#[test]
fn a_redirection_into_a_protected_path_is_never_auto_allowed() {
    let r = rules(&["bash(echo *)"], &[], &[]);
    let protected = |w: &str| w.starts_with(".git/");
    let check = |line| kind(r.check("bash", Target::Command(line), &protected)).0;
    assert_eq!(check("echo x > notes.txt"), "allow");
    assert_eq!(check("echo x > .git/hooks/pre-commit"), "none");
    assert_eq!(check("echo x >> .git/config"), "none");
}

#[test]
fn path_patterns_are_globs_relative_to_the_workspace() {
    let r = rules(
        &[],
        &[],
        &["read(.env*)", "read(secrets)", "write(src/*.rs)"],
    );
    for denied in [".env", ".env.local", "config/.env", "secrets/key.pem"] {
        assert!(r.read_denied(denied).is_some(), "{denied}");
    }
    for shown in ["env", "a.env", "src/secrets.rs", "docs/secrets.md"] {
        assert!(r.read_denied(shown).is_none(), "{shown}");
    }
    let write = |p| kind(r.check("write", Target::Path(Some(p)), &not_protected)).0;
    assert_eq!(write("src/main.rs"), "deny");
    // `*` stays inside one folder name.
    assert_eq!(write("src/bin/x.rs"), "none");
    let tests = rules(&[], &[], &["write(src/**/test_*.rs)"]);
    let write = |p| kind(tests.check("edit", Target::Path(Some(p)), &not_protected)).0;
    assert_eq!(write("src/test_a.rs"), "deny");
    assert_eq!(write("src/a/b/test_c.rs"), "deny");
    assert_eq!(write("src/a/b/c.rs"), "none");
    assert_eq!(write("test_a.rs"), "none");
}

#[test]
fn malformed_rules_are_refused_with_the_reason() {
    for (text, reason) in [
        ("bash(git status", "must end with `)`"),
        ("bash()", "empty"),
        ("(ls)", "names no tool"),
        ("my tool", "a tool name may hold only"),
        (
            "mcp_github__x(foo)",
            "only bash, read, write, edit and fetch rules take a pattern",
        ),
    ] {
        let error = Rule::parse(text, Action::Allow, "f").unwrap_err();
        assert!(error.to_string().contains(reason), "{text}: {error}");
        assert!(error.to_string().contains(text), "{text}: {error}");
    }
}

#[test]
fn always_suggests_a_rule_from_the_first_simple_command() {
    assert_eq!(
        suggest("bash", Some("cargo test --lib && cargo clippy")).as_deref(),
        Some("bash(cargo test*)")
    );
    assert_eq!(
        suggest("bash", Some("ls -la")).as_deref(),
        Some("bash(ls*)")
    );
    assert_eq!(suggest("write", None).as_deref(), Some("write"));
    assert_eq!(suggest("bash", Some("  ")), None);
}

/// The user config under `<ws>/home`: the mock server, the workspace trusted, and `rest`.
fn user_config(ws: &Path, server: &MockServer, rest: &str) {
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n{rest}",
        server.base_url()
    );
    user_config::write_trusting(&ws.join("home"), ws, &model);
}

/// The content of every tool result the model was sent, in order.
fn tool_results(server: &MockServer) -> Vec<String> {
    let requests = server.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn bash_call(id: &'static str, command: &str) -> (&'static str, &'static str, String) {
    (
        id,
        "bash",
        serde_json::json!({ "command": command }).to_string(),
    )
}

fn write_call(id: &'static str, path: &str) -> (&'static str, &'static str, String) {
    let args = serde_json::json!({ "path": path, "content": "x\n" });
    (id, "write", args.to_string())
}

/// A one-shot run in a new trusted workspace whose model makes `calls` (one reply), with
/// `permissions` in the user config. Returns the guard, the workspace, the exit code, stderr
/// and the tool results the model read.
fn run(
    calls: &[(&'static str, &'static str, String)],
    permissions: &str,
    args: &[&str],
    setup: impl FnOnce(&Path),
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Option<i32>,
    String,
    Vec<String>,
) {
    let calls: Vec<(&str, &str, &str)> =
        calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
    let server =
        MockServer::start_in_thread(vec![tool_calls_reply(&calls, 16), text_reply("done", 4)]);
    let (tmp, ws) = crate::support::workspace();
    user_config(&ws, &server, &format!("[permissions]\n{permissions}"));
    setup(&ws);
    let out = command(&ws).args(args).arg("go").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = tool_results(&server);
    (tmp, ws, out.status.code(), err, results)
}

#[test]
fn a_deny_rule_refuses_the_call_under_yes_and_names_the_rule_to_the_model() {
    let (_tmp, ws, code, err, results) = run(
        &[
            bash_call("c1", "touch made"),
            bash_call("c2", "touch ok && ls"),
        ],
        "deny = [\"bash(touch made*)\"]\n",
        &["--yes"],
        |_| {},
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!ws.join("made").exists(), "a denied command ran");
    assert!(
        ws.join("ok").exists(),
        "--yes still runs what no rule denies: {results:?}"
    );
    assert!(
        results[0].contains("denied by the permission rule `bash(touch made*)`"),
        "{results:?}"
    );
    assert!(
        results[0].contains("config.toml"),
        "the rule's file is named: {results:?}"
    );
}

#[test]
fn an_allow_rule_runs_without_asking_and_only_when_every_part_is_allowed() {
    // No --yes and no terminal: anything asked is refused, so what runs was allowed by rules.
    let (_tmp, ws, code, err, results) = run(
        &[
            bash_call("c1", "touch allowed"),
            bash_call("c2", "touch allowed2 && touch sneaky"),
            bash_call("c3", "touch $(echo subst)"),
        ],
        "allow = [\"bash(touch allowed*)\"]\n",
        &[],
        |_| {},
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(ws.join("allowed").exists(), "{results:?}");
    assert!(
        !ws.join("allowed2").exists() && !ws.join("sneaky").exists(),
        "{results:?}"
    );
    assert!(!ws.join("subst").exists(), "{results:?}");
    assert!(results[1].contains("no terminal"), "{results:?}");
    assert!(results[2].contains("no terminal"), "{results:?}");
}

#[test]
fn an_ask_rule_asks_even_under_yes_and_without_a_terminal_refuses() {
    let (_tmp, ws, code, err, results) = run(
        &[
            bash_call("c1", "touch asked"),
            bash_call("c2", "touch free"),
        ],
        "ask = [\"bash(touch asked*)\"]\nallow = [\"bash(touch*)\"]\n",
        &["--yes"],
        |_| {},
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!ws.join("asked").exists(), "{results:?}");
    assert!(ws.join("free").exists(), "{results:?}");
    assert!(
        err.contains("the permission rule `bash(touch asked*)`"),
        "{err}"
    );
    assert!(results[0].contains("no terminal"), "{results:?}");
}

#[test]
fn denied_reads_are_withheld_from_read_list_and_search() {
    let read = serde_json::json!({ "path": "config/.env.local" }).to_string();
    let search = serde_json::json!({ "pattern": "TOKEN" }).to_string();
    let (_tmp, _ws, code, err, results) = run(
        &[
            ("c1", "read", read),
            ("c2", "list", "{}".to_string()),
            ("c3", "search", search),
        ],
        "deny = [\"read(.env*)\"]\n",
        &[],
        |ws| {
            std::fs::write(ws.join(".env"), "TOKEN=hunter2\n").unwrap();
            std::fs::create_dir_all(ws.join("config")).unwrap();
            std::fs::write(ws.join("config/.env.local"), "TOKEN=swordfish\n").unwrap();
            std::fs::write(ws.join("notes.txt"), "TOKEN is read from .env\n").unwrap();
        },
    );
    assert_eq!(code, Some(0), "{err}");
    let all = results.join("\n");
    assert!(
        !all.contains("hunter2") && !all.contains("swordfish"),
        "{all}"
    );
    assert!(
        results[0].contains("denied by the permission rule `read(.env*)`"),
        "{all}"
    );
    assert!(results[1].contains("notes.txt"), "{all}");
    assert!(!results[1].contains(".env"), "{all}");
    assert!(
        results[1].contains("[2 files withheld: denied by a permission rule]"),
        "{all}"
    );
    assert!(results[2].contains("notes.txt:1: TOKEN is read"), "{all}");
    assert!(results[2].contains("[2 files withheld"), "{all}");
}

#[test]
fn a_malformed_rule_is_a_config_error_naming_it() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = crate::support::workspace();
    user_config(
        &ws,
        &server,
        "[permissions]\nallow = [\"bash(git status\"]\n",
    );
    let out = command(&ws).arg("go").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("[permissions] allow: rule `bash(git status`"),
        "{err}"
    );
    assert!(err.contains("config.toml"), "{err}");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn workspace_rules_apply_only_in_a_trusted_workspace() {
    for trusted in [false, true] {
        let server = MockServer::start_in_thread(vec![
            tool_calls_reply(&[("c1", "bash", r#"{"command":"touch made"}"#)], 16),
            text_reply("done", 4),
        ]);
        let (_tmp, ws) = crate::support::workspace();
        let model = format!(
            "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
            server.base_url()
        );
        if trusted {
            user_config::write_trusting(&ws.join("home"), &ws, &model);
        } else {
            let file = user_config::path(&ws.join("home"));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, model).unwrap();
        }
        std::fs::create_dir_all(ws.join(".minicode")).unwrap();
        std::fs::write(
            ws.join(".minicode/config.toml"),
            "[permissions]\ndeny = [\"bash(touch*)\"]\n",
        )
        .unwrap();
        let out = command(&ws).args(["--yes", "go"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(
            ws.join("made").exists(),
            !trusted,
            "trusted: {trusted}: {err}"
        );
        assert_eq!(
            err.contains("[permissions] rules are ignored because this workspace is not trusted"),
            !trusted,
            "{err}"
        );
    }
}

/// The full-screen session's rows, as text.
fn screen_text(s: &minicode::tui::state::State) -> String {
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 40)).unwrap();
    term.draw(|f| minicode::tui::view::render(s, f)).unwrap();
    term.backend().to_string()
}

#[test]
fn always_offers_a_rule_that_permissions_save_writes_and_permissions_lists() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use minicode::chat::ApprovalRequest;
    use minicode::protocol::{Decision, Event, Op};
    use minicode::tui::permissions::{Permissions, Rulebook};
    use minicode::tui::state::{Effect, Msg, State};
    use std::sync::{Arc, Mutex};

    let saved: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = saved.clone();
    let mut s = State::new("m", 100_000);
    s.approval_guard = std::time::Duration::ZERO;
    s.update(Msg::Resize(100, 40));
    s.permissions = Permissions::new(Rulebook {
        listing: vec!["deny bash(rm *) (from /u/config.toml)".into()],
        save: Arc::new(move |rule| {
            sink.lock().unwrap().push(rule.to_string());
            Ok("/u/config.toml".to_string())
        }),
    });
    let key = |s: &mut State, code| s.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    let command = |s: &mut State, text: &str| {
        for c in text.chars() {
            key(s, KeyCode::Char(c));
        }
        key(s, KeyCode::Enter)
    };
    // Without an "always" first there is nothing to save.
    command(&mut s, "/permissions save");
    assert!(screen_text(&s).contains("nothing to save"));
    s.update(Msg::Agent(Event::ToolCallBegan {
        kind: minicode::chat::ToolKind::Other,
        paths: Vec::new(),
        call: "c1".into(),
        tool: "bash".into(),
        summary: "cargo test --lib".into(),
        arguments: serde_json::json!({}),
        change: None,
    }));
    s.update(Msg::Agent(Event::ApprovalRequested {
        call: "c1".into(),
        tool: "bash".into(),
        request: ApprovalRequest::Command {
            command: "cargo test --lib && cargo build".into(),
        },
        always: Some("bash(cargo test*)".into()),
    }));
    assert_eq!(
        key(&mut s, KeyCode::Char('a')),
        vec![Effect::Op(Op::Decide {
            call: "c1".into(),
            decision: Decision::ApproveTool
        })]
    );
    // "Always" alone writes nothing: the user confirms by typing the command.
    assert!(saved.lock().unwrap().is_empty());
    assert!(screen_text(&s).contains("/permissions save keeps `bash(cargo test*)`"));
    command(&mut s, "/permissions save");
    assert_eq!(*saved.lock().unwrap(), ["bash(cargo test*)"]);
    command(&mut s, "/permissions");
    let text = screen_text(&s);
    assert!(
        text.contains("deny bash(rm *) (from /u/config.toml)"),
        "{text}"
    );
    assert!(
        text.contains("allow bash(cargo test*) (from /u/config.toml)"),
        "{text}"
    );
}

#[test]
fn a_saved_rule_lands_in_the_user_config_once_and_the_next_run_obeys_it() {
    let server = MockServer::start_in_thread(vec![
        tool_calls_reply(&[("c1", "bash", r#"{"command":"touch saved"}"#)], 16),
        text_reply("done", 4),
    ]);
    let (_tmp, ws) = crate::support::workspace();
    let home = ws.join("home");
    user_config(&ws, &server, "# my own comment\n");
    let env = |name: &str| (name == "HOME").then(|| home.display().to_string());
    let rule = suggest("bash", Some("touch saved")).unwrap();
    let written = minicode::config::save_allow_rule(&env, &rule).unwrap();
    minicode::config::save_allow_rule(&env, &rule).unwrap();
    assert_eq!(written, user_config::path(&home));
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("# my own comment"), "{text}");
    assert_eq!(text.matches("bash(touch saved*)").count(), 1, "{text}");
    assert!(minicode::config::save_allow_rule(&env, "bash(").is_err());
    // No --yes and no terminal: the call runs only because the saved rule allows it.
    let out = command(&ws).arg("go").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(ws.join("saved").exists(), "{err}");
}

#[test]
fn a_saved_rule_goes_after_the_commented_settings_of_the_table_above() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = crate::support::workspace();
    let home = ws.join("home");
    user_config(
        &ws,
        &server,
        "\n# Raise it for long answers:\n# max_tokens = 8192\n",
    );
    let env = |name: &str| (name == "HOME").then(|| home.display().to_string());
    let written = minicode::config::save_allow_rule(&env, "bash(cargo test*)").unwrap();
    let text = std::fs::read_to_string(&written).unwrap();
    let comment = text.find("# max_tokens").unwrap();
    let table = text.find("[permissions]").unwrap();
    assert!(comment < table, "{text}");
    // Uncommenting the setting later still gives a config minicode reads.
    std::fs::write(&written, text.replace("# max_tokens", "max_tokens")).unwrap();
    let out = command(&ws).args(["mcp", "list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn allow_rules_added_to_a_trusted_workspace_after_trust_are_asked_about_again() {
    let server = MockServer::start_in_thread(vec![]);
    let (_tmp, ws) = crate::support::workspace();
    let home = ws.join("home");
    let file = user_config::path(&home);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let model = format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
        server.base_url()
    );
    std::fs::write(&file, model).unwrap();
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    std::fs::write(
        ws.join(".minicode/config.toml"),
        "[permissions]\ndeny = [\"bash(rm *)\"]\n",
    )
    .unwrap();
    let trust = command(&ws).arg("trust").output().unwrap();
    assert_eq!(trust.status.code(), Some(0), "{trust:?}");
    // A deny rule was there when trusted; an allow rule arrives later (a `git pull`).
    std::fs::write(
        ws.join(".minicode/config.toml"),
        "[permissions]\ndeny = [\"bash(rm *)\"]\nallow = [\"bash\"]\n",
    )
    .unwrap();
    let out = command(&ws).arg("go").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("config `permissions.allow` added"), "{err}");
    assert!(err.contains("minicode trust"), "{err}");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn an_allow_rule_never_covers_a_protected_path() {
    let (_tmp, ws, code, err, results) = run(
        &[
            write_call("c1", "docs/a.md"),
            write_call("c2", ".git/hooks/pre-commit"),
        ],
        "allow = [\"write\"]\n",
        &[],
        |ws| std::fs::create_dir_all(ws.join(".git/hooks")).unwrap(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(ws.join("docs/a.md").exists(), "{results:?}");
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "{results:?}");
    assert!(results[1].contains("no terminal"), "{results:?}");
}

#[test]
fn an_ansi_c_quote_cannot_smuggle_a_denied_command_past_an_allow_rule() {
    // The line of issue 32: bash runs `echo` and then `touch x`; the `#'` is a comment.
    let exploit = "echo $'\\'' ; touch x #'";
    let r = rules(&["bash(echo *)"], &[], &["bash(touch *)"]);
    assert_eq!(bash(&r, exploit), ("deny", "bash(touch *)".into()));
    let (_tmp, ws, code, err, results) = run(
        &[
            bash_call("c1", exploit),
            bash_call("c2", "echo $'\\x27' ; touch y"),
        ],
        "allow = [\"bash(echo *)\"]\ndeny = [\"bash(touch *)\"]\n",
        &[],
        |_| {},
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !ws.join("x").exists() && !ws.join("y").exists(),
        "{results:?}"
    );
    assert!(results[0].contains("bash(touch *)"), "{results:?}");
    assert!(results[1].contains("bash(touch *)"), "{results:?}");
}

#[test]
fn a_line_the_splitter_cannot_read_is_asked_even_under_yes_when_deny_rules_exist() {
    let r = rules(&["bash"], &[], &["bash(touch *)"]);
    for line in ["$CMD x", "t{ouch,} x", "source ./s.sh", "echo ${x:-'}'}"] {
        assert_eq!(bash(&r, line).0, "unread", "{line}");
    }
    // Without deny or ask rules it is only never allowed.
    let allow_only = rules(&["bash(echo *)"], &[], &[]);
    assert_eq!(bash(&allow_only, "$CMD x").0, "none");
    let (_tmp, ws, code, err, results) = run(
        &[bash_call("c1", "CMD=touch; $CMD hidden")],
        "deny = [\"bash(touch *)\"]\n",
        &["--yes"],
        |_| {},
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!ws.join("hidden").exists(), "{results:?}");
    assert!(err.contains("cannot read"), "{err}");
    assert!(results[0].contains("no terminal"), "{results:?}");
}

#[test]
fn a_hard_link_to_a_denied_file_is_withheld_from_read_list_search_and_find() {
    let call = |id, name, args: serde_json::Value| (id, name, args.to_string());
    let (_tmp, _ws, code, err, results) = run(
        &[
            call(
                "c1",
                "read",
                serde_json::json!({ "path": "docs/notes.txt" }),
            ),
            call(
                "c2",
                "search",
                serde_json::json!({ "pattern": "swordfish" }),
            ),
            call(
                "c3",
                "find",
                serde_json::json!({ "query": "swordfish token" }),
            ),
            call("c4", "list", serde_json::json!({})),
            call("c5", "read", serde_json::json!({ "path": "plain.txt" })),
        ],
        "deny = [\"read(.env*)\"]\n",
        &[],
        |ws| {
            std::fs::write(ws.join(".env"), "TOKEN=swordfish\n").unwrap();
            std::fs::create_dir_all(ws.join("docs")).unwrap();
            std::fs::hard_link(ws.join(".env"), ws.join("docs/notes.txt")).unwrap();
            std::fs::write(ws.join("plain.txt"), "nothing to hide\n").unwrap();
        },
    );
    assert_eq!(code, Some(0), "{err}");
    let all = results.join("\n");
    assert!(!all.contains("TOKEN=swordfish"), "{all}");
    assert!(
        results[0].contains("hard link to a file denied by the rule `read(.env*)`"),
        "{all}"
    );
    assert!(results[1].contains("withheld"), "{all}");
    assert!(!results[3].contains("notes.txt"), "{all}");
    assert!(results[4].contains("nothing to hide"), "{all}");
}

/// The calls asked about in `events`, with the rule "always" offered for each.
fn asked(events: &[minicode::protocol::Event]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            minicode::protocol::Event::ApprovalRequested { call, always, .. } => {
                Some((call.clone(), always.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn always_on_a_bash_call_covers_only_what_its_rule_covers() {
    use crate::support::events::run_turn;
    use crate::support::fake::{Fake, bash, text_reply};
    use minicode::protocol::Decision;
    let dir = tempfile::tempdir().unwrap();
    let model = Fake::new(vec![
        bash("c1", "ls"),
        bash("c2", "ls -la"),
        bash("c3", "echo DANGER > danger.txt"),
        bash("c4", "ls && touch compound.txt"),
        bash("c5", "ls; echo again"),
        text_reply("ok"),
    ]);
    let options = minicode::agent::Options::default();
    let mut handle = crate::support::agent::spawn(dir.path(), model, options);
    let mut answers = 0;
    let (events, _, _) = run_turn(&mut handle, "go", |_| {
        answers += 1;
        Some(if answers == 1 {
            Decision::ApproveTool
        } else {
            Decision::Deny { reason: None }
        })
    })
    .await;
    let asked = asked(&events);
    let ids: Vec<&str> = asked.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(ids, ["c1", "c3", "c4", "c5"], "{asked:?}");
    assert_eq!(asked[0].1.as_deref(), Some("bash(ls*)"));
    assert_eq!(asked[1].1.as_deref(), Some("bash(echo DANGER*)"));
    assert!(!dir.path().join("danger.txt").exists());
    assert!(!dir.path().join("compound.txt").exists());
}

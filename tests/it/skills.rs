//! Skills: discovery across the roots (workspace before user, duplicates, an untrusted
//! workspace's skills ignored), the limits and the frontmatter rules (each broken skill
//! reported once and skipped), confinement of every read to the skill's folder, progressive
//! loading (names and descriptions in the first request, bodies only through the `skill` tool
//! or a trigger word, once per session), the ledger after compaction, `/skills` and
//! `minicode skills`.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use minicode::agent::Options;
use minicode::agent::context::Context;
use minicode::chat::{Message, Role, ToolCall, ToolStatus};
use minicode::protocol::{AgentHandle, Event, Op, SkillState, TurnEnd};
use minicode::session::{Checkpoint, Session};
use minicode::tools::skills::{self, Root, Skills};
use minicode::tools::{ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::binary;
use crate::support::events::{run_turn, until};
use crate::support::fake::{Answer, Fake, text_reply, tool_reply};
use crate::support::mock_openai::{MockServer, text_reply as sse_text};

/// A line only a skill's body holds: it must never appear before the skill is loaded.
const BODY: &str = "BODY-MARKER: run cargo xtask before committing";

/// Writes `<root>/<folder>/SKILL.md` with this frontmatter (between the fences) and body.
fn write_skill(root: &Path, folder: &str, frontmatter: &str, body: &str) -> PathBuf {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\n{frontmatter}\n---\n{body}\n"),
    )
    .unwrap();
    dir
}

/// A valid skill named like its folder.
fn skill(root: &Path, name: &str, description: &str, triggers: &str) -> PathBuf {
    let triggers = if triggers.is_empty() {
        String::new()
    } else {
        format!("\ntriggers: {triggers}")
    };
    write_skill(
        root,
        name,
        &format!("name: {name}\ndescription: {description}{triggers}"),
        &format!("# {name}\n{BODY} ({name})"),
    )
}

/// A canonical workspace and a separate canonical user skills folder, in one temp dir.
fn roots() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (tmp, root) = crate::support::workspace();
    let ws = root.join("ws");
    let user = root.join("config/minicode/skills");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&user).unwrap();
    (tmp, ws, user)
}

fn discover(ws: &Path, user: &Path) -> Skills {
    let mut roots: Vec<Root> = skills::workspace_roots(ws);
    roots.push(skills::user_root(user.to_path_buf(), "~/user-skills"));
    skills::discover(&roots)
}

fn names(found: &Skills) -> Vec<&str> {
    found.all().iter().map(|s| s.name.as_str()).collect()
}

fn start(ws: &Path, fake: &Fake, found: Skills) -> AgentHandle {
    let options = Options {
        skills: Arc::new(found),
        ..Options::default()
    };
    crate::support::agent::spawn(ws, fake.clone(), options)
}

fn tool_ctx(ws: &Path) -> ToolCtx {
    ToolCtx::new(ws.to_path_buf(), Duration::from_secs(30), Vec::new())
}

/// Calls the `skill` tool as the agent does: prepare (an `Err` is a rejection), then run.
async fn call_skill(
    found: Skills,
    ctx: &ToolCtx,
    args: serde_json::Value,
) -> Result<ToolOutput, String> {
    let tool = Arc::new(found).tool();
    tool.prepare(&args, ctx)?;
    Ok(tool.run(args, ctx, CancellationToken::new()).await)
}

fn skill_loads(events: &[Event]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::SkillLoaded { name, trigger, .. } => Some((name.clone(), trigger.clone())),
            _ => None,
        })
        .collect()
}

fn warnings(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn mentions_body(messages: &[Message]) -> usize {
    messages.iter().filter(|m| m.text().contains(BODY)).count()
}

// ---- discovery and roots ----

#[test]
fn workspace_roots_come_before_the_user_root_and_each_is_sorted() {
    let (_tmp, ws, user) = roots();
    skill(
        &ws.join(".minicode/skills"),
        "zeta",
        "Workspace skill z.",
        "",
    );
    skill(
        &ws.join(".minicode/skills"),
        "alpha",
        "Workspace skill a.",
        "",
    );
    skill(
        &ws.join(".agents/skills"),
        "beta",
        "Shared with other agents.",
        "",
    );
    skill(&user, "aardvark", "The user's own.", "");
    let found = discover(&ws, &user);
    assert_eq!(names(&found), ["alpha", "zeta", "beta", "aardvark"]);
    let sources: Vec<(&str, skills::Source)> = found
        .all()
        .iter()
        .map(|s| (s.root.as_str(), s.source))
        .collect();
    assert_eq!(
        sources,
        [
            (".minicode/skills", skills::Source::Workspace),
            (".minicode/skills", skills::Source::Workspace),
            (".agents/skills", skills::Source::Workspace),
            ("~/user-skills", skills::Source::User),
        ]
    );
    assert!(found.warnings().is_empty(), "{:?}", found.warnings());
}

#[test]
fn a_duplicate_name_keeps_the_first_root_and_is_reported_once() {
    let (_tmp, ws, user) = roots();
    skill(
        &ws.join(".minicode/skills"),
        "review",
        "The project's review rules.",
        "",
    );
    skill(&user, "review", "My own review habits.", "");
    skill(
        &ws.join(".agents/skills"),
        "review",
        "Another agent's review.",
        "",
    );
    let found = discover(&ws, &user);
    assert_eq!(names(&found), ["review"]);
    assert_eq!(found.all()[0].description, "The project's review rules.");
    let warnings = found.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains(".agents/skills/review") && warnings[0].contains(".minicode/skills"),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("~/user-skills/review"), "{warnings:?}");
}

#[test]
fn folders_without_a_valid_skill_are_reported_once_each_and_skipped() {
    let (_tmp, ws, user) = roots();
    let root = ws.join(".minicode/skills");
    skill(&root, "good", "Fine.", "");
    write_skill(
        &root,
        "Upper",
        "name: Upper\ndescription: capital letters",
        "x",
    );
    write_skill(
        &root,
        "mismatch",
        "name: other\ndescription: wrong folder",
        "x",
    );
    write_skill(&root, "no-description", "name: no-description", "x");
    let long = "d".repeat(skills::MAX_DESCRIPTION_CHARS + 1);
    write_skill(
        &root,
        "long",
        &format!("name: long\ndescription: {long}"),
        "x",
    );
    write_skill(
        &root,
        "bad-yaml",
        "name: bad-yaml\ndescription: \"never closed",
        "x",
    );
    write_skill(
        &root,
        "twice",
        "name: twice\nname: twice\ndescription: x",
        "x",
    );
    std::fs::create_dir_all(root.join("unclosed")).unwrap();
    std::fs::write(root.join("unclosed/SKILL.md"), "---\nname: unclosed\n").unwrap();
    std::fs::create_dir_all(root.join("bare")).unwrap();
    std::fs::write(root.join("bare/SKILL.md"), "# no frontmatter\n").unwrap();
    std::fs::create_dir_all(root.join("empty-folder")).unwrap();
    std::fs::write(root.join("README.md"), "not a skill").unwrap();
    let found = discover(&ws, &user);
    assert_eq!(names(&found), ["good"]);
    let warnings = found.warnings();
    for folder in [
        "Upper",
        "mismatch",
        "no-description",
        "long",
        "bad-yaml",
        "twice",
        "unclosed",
        "bare",
        "empty-folder",
    ] {
        let about: Vec<&String> = warnings
            .iter()
            .filter(|w| w.contains(&format!(".minicode/skills/{folder}:")))
            .collect();
        assert_eq!(about.len(), 1, "{folder}: {warnings:?}");
        assert!(about[0].ends_with("; skipped"), "{about:?}");
    }
    assert_eq!(warnings.len(), 9, "{warnings:?}");
    assert!(
        !warnings.iter().any(|w| w.contains("README")),
        "{warnings:?}"
    );
}

#[test]
fn a_skill_file_over_64_kib_is_refused() {
    let (_tmp, ws, user) = roots();
    let root = ws.join(".minicode/skills");
    let body = "x".repeat(skills::MAX_FILE_BYTES as usize);
    write_skill(&root, "huge", "name: huge\ndescription: too big", &body);
    let found = discover(&ws, &user);
    assert!(found.is_empty());
    assert_eq!(found.warnings().len(), 1);
    assert!(found.warnings()[0].contains("larger than the limit of 65536 bytes"));
}

#[test]
fn the_usual_frontmatter_shapes_parse_and_unknown_keys_are_ignored() {
    let (_tmp, ws, user) = roots();
    let root = ws.join(".minicode/skills");
    write_skill(
        &root,
        "folded",
        "name: folded\n\
         description: >\n  Writes release notes\n  from the changelog.\n\
         triggers: [release notes, \"changelog\"]\n\
         license: MIT\n\
         metadata:\n  author: someone\n  version: \"1.0\"\n\
         allowed-tools: [bash, read]",
        "body",
    );
    write_skill(
        &root,
        "quoted",
        "# a comment\nname: 'quoted'\ndescription: \"Tabs\\tand \\\"quotes\\\"\" # trailing\n\
         triggers:\n  - Deploy\n  - roll back",
        "body",
    );
    write_skill(
        &root,
        "literal",
        "name: literal\ndescription: |\n  line one\n  line two\ntriggers: pytest, Coverage, 测试",
        "body",
    );
    let found = discover(&ws, &user);
    assert!(found.warnings().is_empty(), "{:?}", found.warnings());
    let by = |n: &str| found.get(n).unwrap().clone();
    assert_eq!(
        by("folded").description,
        "Writes release notes from the changelog."
    );
    assert_eq!(by("folded").triggers, ["release notes", "changelog"]);
    assert_eq!(by("quoted").description, "Tabs and \"quotes\"");
    assert_eq!(by("quoted").triggers, ["deploy", "roll back"]);
    assert_eq!(by("literal").description, "line one line two");
    assert_eq!(by("literal").triggers, ["pytest", "coverage", "测试"]);
}

#[test]
fn trigger_words_match_whole_words_ignoring_case() {
    let (_tmp, ws, user) = roots();
    let root = ws.join(".minicode/skills");
    skill(&root, "testing", "Tests.", "pytest, unit test, 测试");
    let found = discover(&ws, &user);
    let hit = |text: &str| {
        found
            .triggered_by(text)
            .first()
            .map(|(s, t)| (s.name.clone(), t.to_string()))
    };
    assert_eq!(
        hit("Run PYTEST now"),
        Some(("testing".into(), "pytest".into()))
    );
    assert_eq!(
        hit("add a Unit Test, please"),
        Some(("testing".into(), "unit test".into()))
    );
    assert_eq!(hit("请运行测试"), Some(("testing".into(), "测试".into())));
    assert_eq!(hit("pytesting is not it"), None);
    assert_eq!(hit("my-pytest-plugin"), None);
    assert_eq!(hit("unit tests"), None);
}

// ---- confinement ----

#[test]
fn links_out_of_a_skill_or_the_workspace_are_refused() {
    let (tmp, ws, user) = roots();
    let outside = tmp.path().canonicalize().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("secret.md"),
        "---\nname: leak\ndescription: x\n---\nsecret",
    )
    .unwrap();
    let root = ws.join(".minicode/skills");
    // SKILL.md itself a link out of its folder (still inside the workspace).
    std::fs::create_dir_all(root.join("leak")).unwrap();
    symlink(outside.join("secret.md"), root.join("leak/SKILL.md")).unwrap();
    // A skill folder that links out of the workspace.
    skill(&outside, "elsewhere", "Lives outside.", "");
    symlink(outside.join("elsewhere"), root.join("elsewhere")).unwrap();
    // A FIFO where SKILL.md should be: refused at once, never blocks.
    std::fs::create_dir_all(root.join("fifo")).unwrap();
    let fifo = std::ffi::CString::new(root.join("fifo/SKILL.md").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let found = discover(&ws, &user);
    assert!(found.is_empty(), "{:?}", names(&found));
    let warnings = found.warnings().join("\n");
    assert!(
        warnings.contains("leak: SKILL.md resolves outside the skill's folder"),
        "{warnings}"
    );
    assert!(
        warnings.contains("elsewhere: it links outside the workspace"),
        "{warnings}"
    );
    assert!(
        warnings.contains("fifo: SKILL.md is not a regular file"),
        "{warnings}"
    );
}

#[test]
fn a_skills_folder_that_links_out_of_the_workspace_is_ignored() {
    let (tmp, ws, user) = roots();
    let outside = tmp.path().canonicalize().unwrap().join("planted");
    skill(&outside, "planted", "From elsewhere.", "");
    std::fs::create_dir_all(ws.join(".agents")).unwrap();
    symlink(&outside, ws.join(".agents/skills")).unwrap();
    let found = discover(&ws, &user);
    assert!(found.is_empty());
    assert_eq!(
        found.warnings(),
        ["skills folder .agents/skills leads outside the workspace; it was ignored"]
    );
}

#[test]
fn the_users_skills_may_link_to_their_own_folders() {
    let (tmp, ws, user) = roots();
    let dotfiles = tmp.path().canonicalize().unwrap().join("dotfiles");
    skill(&dotfiles, "mine", "Kept in my dotfiles.", "");
    symlink(dotfiles.join("mine"), user.join("mine")).unwrap();
    let found = discover(&ws, &user);
    assert_eq!(names(&found), ["mine"]);
}

#[tokio::test]
async fn the_skill_tool_reads_only_inside_the_skills_folder() {
    let (tmp, ws, user) = roots();
    let dir = skill(&user, "docs", "Writing docs.", "");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("templates/page.md"), "TEMPLATE TEXT").unwrap();
    let outside = tmp.path().canonicalize().unwrap().join("private.txt");
    std::fs::write(&outside, "PRIVATE").unwrap();
    symlink(&outside, dir.join("link.md")).unwrap();
    let ctx = tool_ctx(&ws);

    let out = call_skill(discover(&ws, &user), &ctx, json!({"name": "docs"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert!(
        out.content.starts_with("<skill name=\"docs\""),
        "{}",
        out.content
    );
    assert!(out.content.contains(BODY), "{}", out.content);
    assert!(
        !out.content.contains("description:"),
        "frontmatter is not repeated"
    );
    assert!(out.content.contains("templates/page.md"), "{}", out.content);

    let args = json!({"name": "docs", "file": "templates/page.md"});
    let out = call_skill(discover(&ws, &user), &ctx, args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded);
    assert!(out.content.contains("TEMPLATE TEXT"));

    let args = json!({"name": "docs", "file": "link.md"});
    let out = call_skill(discover(&ws, &user), &ctx, args).await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content.contains("links out are refused"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("PRIVATE"));

    for file in ["../../private.txt", "/etc/passwd"] {
        let args = json!({"name": "docs", "file": file});
        let err = call_skill(discover(&ws, &user), &ctx, args)
            .await
            .unwrap_err();
        assert!(err.contains("relative to the skill's folder"), "{err}");
    }
    let err = call_skill(discover(&ws, &user), &ctx, json!({"name": "nope"}))
        .await
        .unwrap_err();
    assert!(
        err.contains("unknown skill \"nope\"") && err.contains("docs"),
        "{err}"
    );
}

// ---- progressive loading in the agent ----

#[tokio::test]
async fn the_model_loads_a_body_with_the_skill_tool() {
    let (_tmp, ws, user) = roots();
    skill(
        &ws.join(".minicode/skills"),
        "alpha",
        "Does alpha things.",
        "",
    );
    let fake = Fake::new(vec![
        tool_reply(&[("c1", "skill", r#"{"name":"alpha"}"#)]),
        text_reply("done"),
    ]);
    let mut handle = start(&ws, &fake, discover(&ws, &user));
    let (events, end, _) =
        run_turn(&mut handle, "do the alpha task", |_| panic!("no approval")).await;
    assert_eq!(end, TurnEnd::Completed, "{events:?}");
    assert_eq!(skill_loads(&events), [("alpha".to_string(), None)]);
    let requests = fake.main_requests();
    // The first request lists the skill and declares the tool, without the body.
    let system = requests[0].messages[0].text();
    assert!(system.contains("- alpha: Does alpha things."), "{system}");
    assert!(system.contains("with the `skill` tool"), "{system}");
    assert_eq!(
        requests[0].tools,
        crate::support::agent::builtin_tools() + 1,
        "the built-in tools and `skill`"
    );
    assert_eq!(mentions_body(&requests[0].messages), 0);
    // The second carries it as the tool's result.
    let result = requests[1].messages.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    assert!(result.text().contains(BODY));
}

#[tokio::test]
async fn a_trigger_word_loads_the_skill_before_the_request_once_per_session() {
    let (_tmp, ws, user) = roots();
    skill(
        &ws.join(".minicode/skills"),
        "release",
        "Cutting a release.",
        "release notes, tag",
    );
    skill(&ws.join(".minicode/skills"), "other", "Unrelated.", "zebra");
    let fake = Fake::new(vec![
        text_reply("one"),
        text_reply("two"),
        text_reply("three"),
    ]);
    let mut handle = start(&ws, &fake, discover(&ws, &user));

    let (events, end, _) = run_turn(&mut handle, "Write the Release Notes", |_| None).await;
    assert_eq!(end, TurnEnd::Completed);
    assert_eq!(
        skill_loads(&events),
        [("release".to_string(), Some("release notes".to_string()))]
    );
    let first = &fake.main_requests()[0].messages;
    let roles: Vec<Role> = first.iter().map(|m| m.role).collect();
    // system, the prompt, then the load as a call and its result: valid and alternating.
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::Tool]
    );
    let call = &first[2].tool_calls[0];
    assert_eq!(call.name, "skill");
    assert_eq!(call.arguments, r#"{"name":"release"}"#);
    assert!(call.id.len() == 9 && call.id.chars().all(|c| c.is_ascii_alphanumeric()));
    assert!(first[3].text().contains(BODY) && first[3].text().contains("(release)"));

    // Named again (and another skill's trigger absent): nothing is loaded twice.
    let (events, _, _) = run_turn(&mut handle, "now tag it and add release notes", |_| None).await;
    assert!(skill_loads(&events).is_empty(), "{events:?}");
    assert_eq!(mentions_body(&fake.main_requests()[1].messages), 1);

    // `/skills` shows it loaded, the other one listed.
    handle.send(Op::ListSkills);
    let listed = until(&mut handle, |e| matches!(e, Event::SkillsListed { .. })).await;
    let Some(Event::SkillsListed { skills }) = listed.last() else {
        panic!("no listing");
    };
    let states: Vec<(&str, SkillState)> =
        skills.iter().map(|s| (s.name.as_str(), s.state)).collect();
    assert_eq!(
        states,
        [
            ("other", SkillState::Listed),
            ("release", SkillState::Loaded)
        ]
    );
}

#[tokio::test]
async fn a_resumed_session_remembers_which_skills_it_loaded() {
    let (_tmp, ws, user) = roots();
    skill(
        &ws.join(".minicode/skills"),
        "release",
        "Cutting a release.",
        "release",
    );
    let fake = Fake::new(vec![text_reply("one")]);
    let mut handle = start(&ws, &fake, discover(&ws, &user));
    let (events, _, _) = run_turn(&mut handle, "release it", |_| None).await;
    assert_eq!(skill_loads(&events).len(), 1);
    let events = crate::support::events::shutdown(&mut handle).await;
    assert!(events.iter().any(|e| matches!(e, Event::ShutdownComplete)));

    let session = Session::open_latest(&ws).unwrap();
    let fake = Fake::new(vec![text_reply("two")]);
    let options = Options {
        skills: Arc::new(discover(&ws, &user)),
        ..Options::default()
    };
    let mut handle = crate::support::agent::spawn_session(session, fake.clone(), options);
    let (events, _, _) = run_turn(&mut handle, "release again", |_| None).await;
    assert!(skill_loads(&events).is_empty(), "{events:?}");
    assert_eq!(mentions_body(&fake.main_requests()[0].messages), 1);
}

#[tokio::test]
async fn invalid_skills_are_reported_once_per_start_not_per_turn() {
    let (_tmp, ws, user) = roots();
    skill(&user, "fine", "Works.", "");
    write_skill(&user, "broken", "name: broken", "x");
    let fake = Fake::new(vec![text_reply("one"), text_reply("two")]);
    let mut handle = start(&ws, &fake, discover(&ws, &user));
    let (first, _, _) = run_turn(&mut handle, "hello", |_| None).await;
    let (second, _, _) = run_turn(&mut handle, "again", |_| None).await;
    let all: Vec<String> = warnings(&first)
        .into_iter()
        .chain(warnings(&second))
        .filter(|w| w.contains("broken"))
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(all[0].contains("has no `description`"), "{all:?}");
}

#[tokio::test]
async fn without_skills_nothing_is_declared_or_listed() {
    let (_tmp, ws, _user) = roots();
    let fake = Fake::new(vec![text_reply("one")]);
    let mut handle = start(&ws, &fake, Skills::default());
    run_turn(&mut handle, "hello", |_| None).await;
    let request = &fake.main_requests()[0];
    assert_eq!(request.tools, crate::support::agent::builtin_tools());
    assert!(!request.messages[0].text().contains("Skills"));
}

#[tokio::test]
async fn descriptions_past_the_metadata_budget_are_listed_by_name_only() {
    let (_tmp, ws, user) = roots();
    let root = ws.join(".minicode/skills");
    for i in 0..20 {
        let description = format!("Skill number {i}. {}", "Long explanation. ".repeat(50));
        skill(&root, &format!("s{i:02}"), &description, "");
    }
    let found = discover(&ws, &user);
    let described = found.all().iter().filter(|s| s.described).count();
    assert!((1..20).contains(&described), "{described}");
    assert!(found.all()[..described].iter().all(|s| s.described));
    let fake = Fake::new(vec![text_reply("ok")]);
    let mut handle = start(&ws, &fake, found);
    run_turn(&mut handle, "hello", |_| None).await;
    let system = fake.main_requests()[0].messages[0].text().to_string();
    let list = &system[system.find("Skills:").unwrap()..];
    assert!(
        minicode::chat::estimate_text(list) <= skills::METADATA_TOKENS + 200,
        "{list}"
    );
    assert!(list.contains("More skills (by name only): "), "{list}");
    assert!(list.contains("s19"));
    assert!(!list.contains("Skill number 19."));
}

#[test]
fn compaction_keeps_the_names_of_loaded_skills_in_the_ledger() {
    let call = |id: &str, name: &str| {
        Message::assistant(
            None,
            vec![ToolCall {
                id: id.into(),
                name: "skill".into(),
                arguments: format!(r#"{{"name":"{name}"}}"#),
            }],
        )
    };
    let messages = vec![
        Message::user("first"),
        call("c1", "alpha"),
        Message::tool_result("c1", "<skill name=\"alpha\" folder=\"/x\">\nbody\n</skill>"),
        call("c2", "missing"),
        Message::tool_result("c2", "unknown skill \"missing\""),
        Message::assistant(Some("ok".into()), Vec::new()),
        Message::user("second"),
        Message::assistant(Some("fine".into()), Vec::new()),
    ];
    assert_eq!(skills::loaded_in(&messages), ["alpha"]);
    let mut context = Context::new("system", &[]);
    let checkpoint = Checkpoint {
        summary: "notes".into(),
        first_kept_index: 6,
    };
    context.set_checkpoint(Some(checkpoint), &messages).unwrap();
    let request = context.build(&messages);
    let ledger = request[1].text();
    assert!(ledger.contains("<loaded-skills>"), "{ledger}");
    assert!(ledger.contains("): alpha\n"), "{ledger}");
    assert!(!ledger.contains("missing"), "{ledger}");
}

#[tokio::test]
async fn a_loaded_skill_is_named_in_the_ledger_after_compact() {
    let (_tmp, ws, user) = roots();
    skill(
        &ws.join(".minicode/skills"),
        "release",
        "Cutting a release.",
        "release",
    );
    let fake = Fake::new(vec![text_reply("one"), text_reply("two")])
        .with_summaries(vec![Answer::Reply(text_reply("summary notes"))]);
    let options = Options {
        skills: Arc::new(discover(&ws, &user)),
        keep_recent_tokens: Some(1),
        ..Options::default()
    };
    let mut handle = crate::support::agent::spawn(&ws, fake.clone(), options);
    run_turn(&mut handle, "release it", |_| None).await;
    handle.send(Op::Compact(None));
    let events = until(&mut handle, |e| matches!(e, Event::TurnEnded { .. })).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{events:?}"
    );
    run_turn(&mut handle, "and then?", |_| None).await;
    let request = &fake.main_requests()[1].messages;
    assert_eq!(mentions_body(request), 0, "the body was compacted away");
    let ledger = request
        .iter()
        .map(Message::text)
        .find(|t| t.contains("<task-ledger>"))
        .unwrap();
    assert!(
        ledger.contains("<loaded-skills>") && ledger.contains("release"),
        "{ledger}"
    );
}

// ---- the binary: first request, trust, `minicode skills` ----

/// Three realistic skills: this repository's own and two more of typical size.
fn realistic_skills(root: &Path) {
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join(".minicode/skills/add-a-tool/SKILL.md");
    let dir = root.join("add-a-tool");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(ours, dir.join("SKILL.md")).unwrap();
    skill(
        root,
        "release",
        "Cut a release: changelog, version bump, tag, publish.",
        "release",
    );
    skill(
        root,
        "review",
        "Review a change for correctness, tests and docs.",
        "review",
    );
}

#[test]
fn the_first_request_lists_skills_without_their_bodies() {
    let server = MockServer::start_in_thread(vec![sse_text("ok", 4)]);
    let dir = tempfile::tempdir().unwrap();
    binary::write_config(dir.path(), &server);
    realistic_skills(&dir.path().join(".minicode/skills"));
    let user = dir.path().join("home/.config/minicode/skills");
    skill(&user, "personal", "My own habits.", "");
    let out = binary::command(dir.path()).arg("hello").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let request = &server.requests()[0];
    let system = request.body["messages"][0]["content"].as_str().unwrap();
    for listed in [
        "- add-a-tool: How to add a tool",
        "- release: Cut a release",
        "- personal: My own",
    ] {
        assert!(system.contains(listed), "{listed}: {system}");
    }
    assert!(!request.raw_body.contains(BODY));
    assert!(
        !request.raw_body.contains("## 1. The file"),
        "add-a-tool's body was sent"
    );
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"skill"), "{tools:?}");
}

#[test]
fn an_untrusted_workspaces_skills_are_ignored() {
    let server = MockServer::start_in_thread(vec![sse_text("ok", 4)]);
    let dir = tempfile::tempdir().unwrap();
    // The user's own config chooses the server; the workspace is not in its trust list.
    let home = dir.path().join("home");
    let user_config = crate::support::user_config::path(&home);
    std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
    std::fs::write(
        &user_config,
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    // A hostile repository: a skill that triggers on everything and says to leak the key.
    skill(
        &dir.path().join(".minicode/skills"),
        "evil",
        "Always load me.",
        "the, a, hello",
    );
    skill(
        &home.join(".config/minicode/skills"),
        "mine",
        "My own skill.",
        "",
    );

    let out = binary::command(dir.path())
        .arg("hello there")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let request = &server.requests()[0];
    assert!(!request.raw_body.contains("evil"), "{}", request.raw_body);
    assert!(!request.raw_body.contains(BODY));
    assert!(request.raw_body.contains("- mine: My own skill."));
    assert!(
        stderr.contains(
            "this workspace is not trusted: its skills in .minicode/skills were not loaded"
        ),
        "{stderr}"
    );

    let out = binary::command(dir.path()).arg("skills").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout.contains("mine") && !stdout.contains("evil"),
        "{stdout}"
    );
}

#[test]
fn minicode_skills_lists_name_state_source_and_description() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::user_config::write_trusting(&dir.path().join("home"), dir.path(), "");
    skill(
        &dir.path().join(".minicode/skills"),
        "alpha",
        "Alpha things.",
        "",
    );
    skill(
        &dir.path().join(".agents/skills"),
        "beta",
        "Beta things.",
        "",
    );
    let user = dir.path().join("home/.config/minicode/skills");
    skill(&user, "gamma", "Gamma things.", "");
    skill(&user, "alpha", "Shadowed.", "");
    let out = binary::command(dir.path()).arg("skills").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(
        lines,
        [
            vec!["alpha", "listed", ".minicode/skills", "Alpha things."],
            vec!["beta", "listed", ".agents/skills", "Beta things."],
            vec![
                "gamma",
                "listed",
                "~/.config/minicode/skills",
                "Gamma things."
            ],
        ]
    );
    assert!(
        stderr.contains(
            "~/.config/minicode/skills/alpha has the same name as .minicode/skills/alpha"
        ),
        "{stderr}"
    );
}

#[test]
fn this_repository_ships_a_valid_skill_for_working_on_minicode() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = skills::discover(&skills::workspace_roots(repo));
    assert!(found.warnings().is_empty(), "{:?}", found.warnings());
    let skill = found.get("add-a-tool").expect("the add-a-tool skill");
    assert!(skill.described);
    assert!(skill.triggers.contains(&"new tool".to_string()));
    let body = skills::load_body(skill).unwrap();
    // The paths it names exist.
    for path in [
        "src/tools.rs",
        "src/tools/read.rs",
        "src/tools/write.rs",
        "src/tools/protected.rs",
        "src/agent/prompt.rs",
        "tests/it/tools_files.rs",
        "tests/it/secrets.rs",
        "tests/it/agent_loop.rs",
        "tests/it/tools_registry.rs",
        "tests/it/main.rs",
        "tests/it/support/",
        "docs/architecture.md",
        "docs/security.md",
        "docs/configuration.md",
        "config/config.example.toml",
    ] {
        assert!(body.contains(path), "{path} is not in the skill");
        assert!(
            repo.join(path).exists(),
            "the skill names {path}, which does not exist"
        );
    }
}

#[test]
fn a_trigger_in_a_one_shot_prompt_is_reported_on_stderr_and_sent() {
    let server = MockServer::start_in_thread(vec![sse_text("ok", 4)]);
    let dir = tempfile::tempdir().unwrap();
    binary::write_config(dir.path(), &server);
    realistic_skills(&dir.path().join(".minicode/skills"));
    let out = binary::command(dir.path())
        .arg("please review this")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("skill review loaded from .minicode/skills (trigger: review)"),
        "{stderr}"
    );
    let messages = server.requests()[0].body["messages"].clone();
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "skill");
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap()
            .contains("(review)")
    );
}

#[test]
fn slash_skills_asks_the_core_and_shows_the_answer() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use minicode::protocol::SkillEntry;
    use minicode::tui::state::{Effect, Msg, State};

    let mut s = State::new("m", 100_000);
    s.update(Msg::Resize(100, 20));
    for c in "/skills".chars() {
        s.update(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )));
    }
    let effects = s.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Op(Op::ListSkills))),
        "{effects:?}"
    );
    s.update(Msg::Agent(Event::SkillsListed {
        skills: vec![SkillEntry {
            name: "release".into(),
            description: "Cut a release.".into(),
            source: ".minicode/skills".into(),
            state: SkillState::Loaded,
        }],
    }));
    s.update(Msg::Agent(Event::SkillLoaded {
        name: "review".into(),
        source: "~/.config/minicode/skills".into(),
        trigger: Some("review".into()),
    }));
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 20)).unwrap();
    term.draw(|f| minicode::tui::view::render(&s, f)).unwrap();
    let screen = term.backend().to_string();
    assert!(
        screen.contains("release · loaded · .minicode/skills — Cut a release."),
        "{screen}"
    );
    assert!(
        screen.contains("skill review loaded from ~/.config/minicode/skills (trigger: review)"),
        "{screen}"
    );
}

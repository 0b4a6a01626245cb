//! Black-box tests of the `fetch` tool against a real HTTP server on 127.0.0.1 (the mock
//! server's routes): HTML becomes Markdown, text passes, binary is refused; loopback,
//! link-local and private addresses are refused unless a rule names the host, also after a
//! redirect; redirects are limited and never leave the host unasked; size and time are
//! capped; and the built binary asks, allows and denies fetches by `fetch(domain:…)` rules.

use std::time::{Duration, Instant};

use minicode::chat::{ApprovalRequest, ToolStatus};
use minicode::permissions::{Action, Rule, Rules, Target, Verdict, suggest_domain};
use minicode::tools::{Registry, ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::binary::command;
use crate::support::mock_openai::{MockReply, MockServer, text_reply, tool_calls_reply};
use crate::support::{tool_workspace, user_config};

const PAGE: &str = "<!DOCTYPE html><html><head><title>Doc</title>\
    <style>body { color: red }</style><script>steal(document.cookie)</script></head>\
    <body><h1>The Title</h1><p>See <a href=\"https://docs.rs/htmd\">the docs</a>.</p>\
    <h2>Example</h2><pre><code>fn main() {\n    println!(\"hi\");\n}\n</code></pre>\
    <script>document.write('INJECTED')</script></body></html>";

fn html(body: &str) -> MockReply {
    MockReply::status(200, body.to_string()).with_header("content-type", "text/html; charset=utf-8")
}

fn redirect(to: &str) -> MockReply {
    MockReply::status(302, "").with_header("location", to)
}

fn rules(allow: &[&str], deny: &[&str]) -> std::sync::Arc<Rules> {
    let mut all = Vec::new();
    for (action, list) in [(Action::Allow, allow), (Action::Deny, deny)] {
        for text in list {
            all.push(Rule::parse(text, action, "test").unwrap());
        }
    }
    std::sync::Arc::new(Rules::new(all))
}

/// A tool context whose rules allow `allow` (e.g. `fetch(domain:127.0.0.1)`).
fn ctx_allowing(allow: &[&str]) -> (tempfile::TempDir, ToolCtx) {
    let (tmp, _ws, mut ctx) = tool_workspace();
    if !allow.is_empty() {
        ctx.permissions = Some(rules(allow, &[]));
    }
    (tmp, ctx)
}

/// The page server's root, `http://127.0.0.1:PORT`.
fn root(server: &MockServer) -> String {
    server.base_url().trim_end_matches("/v1").to_string()
}

/// prepare, then run, as the agent calls a tool; a prepare error comes back as `Err`.
async fn fetch(ctx: &ToolCtx, url: &str) -> Result<ToolOutput, String> {
    let registry = Registry::builtin();
    let (tool, value) = registry.resolve("fetch", &json!({ "url": url }).to_string())?;
    tool.prepare(&value, ctx)?;
    Ok(tool.run(value, ctx, CancellationToken::new()).await)
}

fn paths(server: &MockServer) -> Vec<String> {
    server
        .other_requests()
        .into_iter()
        .map(|r| r.path)
        .collect()
}

#[tokio::test]
async fn an_html_page_comes_back_as_markdown_without_its_scripts() {
    let server = MockServer::start(vec![]).await;
    server.route("/doc", html(PAGE));
    let (_tmp, ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)"]);
    let out = fetch(&ctx, &format!("{}/doc", root(&server)))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    let md = &out.content;
    assert!(md.contains("# The Title"), "{md}");
    assert!(md.contains("## Example"), "{md}");
    assert!(md.contains("[the docs](https://docs.rs/htmd)"), "{md}");
    assert!(
        md.contains("```\nfn main() {\n    println!(\"hi\");\n}"),
        "{md}"
    );
    assert!(
        !md.contains("steal") && !md.contains("INJECTED") && !md.contains("color"),
        "{md}"
    );
    assert!(
        md.starts_with(&format!("{}/doc (200, text/html", root(&server))),
        "{md}"
    );
    let request = &server.other_requests()[0];
    assert_eq!(request.method, "GET");
    assert!(
        request
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("minicode/")),
        "{:?}",
        request.header("user-agent")
    );
    assert!(request.header("authorization").is_none() && request.header("cookie").is_none());
}

#[tokio::test]
async fn text_and_json_pass_through_and_binary_is_refused() {
    let server = MockServer::start(vec![]).await;
    server.route(
        "/notes.txt",
        MockReply::status(200, "<b>not html</b> just text")
            .with_header("content-type", "text/plain"),
    );
    server.route("/api", MockReply::json(200, &json!({"answer": 42})));
    server.route(
        "/logo.png",
        MockReply::status(200, b"\x89PNG\r\n\x1a\n\0\0".to_vec())
            .with_header("content-type", "image/png"),
    );
    let (_tmp, ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)"]);
    let base = root(&server);
    let text = fetch(&ctx, &format!("{base}/notes.txt")).await.unwrap();
    assert!(
        text.content.ends_with("<b>not html</b> just text"),
        "{}",
        text.content
    );
    let api = fetch(&ctx, &format!("{base}/api")).await.unwrap();
    assert!(api.content.contains("{\"answer\":42}"), "{}", api.content);
    let png = fetch(&ctx, &format!("{base}/logo.png")).await.unwrap();
    assert_eq!(png.status, ToolStatus::Failed);
    assert!(
        png.content.contains("image/png content, not text"),
        "{}",
        png.content
    );
}

#[tokio::test]
async fn loopback_without_a_rule_is_refused_naming_the_rule_to_add() {
    let server = MockServer::start(vec![]).await;
    server.route("/doc", html(PAGE));
    let (_tmp, ctx) = ctx_allowing(&[]);
    let out = fetch(&ctx, &format!("{}/doc", root(&server)))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(
        out.content.contains("a loopback address"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("`fetch(domain:127.0.0.1)`"),
        "{}",
        out.content
    );
    assert!(
        paths(&server).is_empty(),
        "nothing may be sent: {:?}",
        paths(&server)
    );
    // A blanket allow (every host without asking) does not name a private host either.
    let (_tmp, ctx) = ctx_allowing(&["fetch", "fetch(domain:*)"]);
    let out = fetch(&ctx, &format!("{}/doc", root(&server)))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(paths(&server).is_empty());
}

#[tokio::test]
async fn metadata_private_and_disguised_addresses_are_refused_before_connecting() {
    let (_tmp, ctx) = ctx_allowing(&["fetch(domain:docs.rs)"]);
    for (url, why) in [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.1/", "private"),
        ("http://192.168.1.1/admin", "private"),
        ("http://100.64.0.1/", "carrier-grade"),
        ("http://[::1]:9/", "loopback"),
        ("http://[::ffff:127.0.0.1]:9/", "loopback"),
        ("http://[fe80::1]/", "link-local"),
        ("http://0.0.0.0:9/", "unspecified"),
        ("http://2130706433/", "loopback"),
    ] {
        let started = Instant::now();
        let out = fetch(&ctx, url).await.unwrap();
        assert_eq!(out.status, ToolStatus::Failed, "{url}: {}", out.content);
        assert!(out.content.contains(why), "{url}: {}", out.content);
        assert!(
            out.content.contains("fetch(domain:"),
            "{url}: {}",
            out.content
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{url} tried to connect"
        );
    }
}

#[tokio::test]
async fn localhost_is_checked_after_resolution() {
    let server = MockServer::start(vec![]).await;
    server.route("/doc", html(PAGE));
    let port = server
        .base_url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let (_tmp, ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)"]);
    let out = fetch(&ctx, &format!("http://localhost:{port}/doc"))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(
        out.content.contains("localhost resolves to"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("`fetch(domain:localhost)`"),
        "{}",
        out.content
    );
    assert!(paths(&server).is_empty());
}

#[tokio::test]
async fn redirects_are_followed_up_to_the_limit_and_no_further() {
    let server = MockServer::start(vec![]).await;
    for i in 0..7 {
        server.route(&format!("/r{i}"), redirect(&format!("/r{}", i + 1)));
    }
    server.route("/r7", html("<h1>End</h1>"));
    let (_tmp, ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)"]);
    let base = root(&server);
    // Five redirects (r2 → … → r7) are followed.
    let out = fetch(&ctx, &format!("{base}/r2")).await.unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    assert!(
        out.content.starts_with(&format!("{base}/r7 (200")),
        "{}",
        out.content
    );
    assert!(out.content.contains("# End"), "{}", out.content);
    // Six are not.
    let out = fetch(&ctx, &format!("{base}/r1")).await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(
        out.content.contains("more than 5 redirects"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_redirect_to_a_refused_address_or_scheme_is_refused() {
    let server = MockServer::start(vec![]).await;
    let base = root(&server);
    let port = base.rsplit(':').next().unwrap().to_string();
    server.route(
        "/to-localhost",
        redirect(&format!("http://localhost:{port}/secret")),
    );
    server.route(
        "/to-metadata",
        redirect("http://169.254.169.254/latest/meta-data/"),
    );
    server.route("/to-file", redirect("file:///etc/passwd"));
    server.route("/secret", html("<p>SECRET</p>"));
    // Every host may be fetched without asking, and 127.0.0.1 is named: a redirect to
    // another name for a loopback address is still refused after resolution.
    let (_tmp, ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)", "fetch(domain:*)"]);
    let out = fetch(&ctx, &format!("{base}/to-localhost")).await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(
        out.content.contains("localhost resolves to"),
        "{}",
        out.content
    );
    let out = fetch(&ctx, &format!("{base}/to-metadata")).await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(out.content.contains("link-local"), "{}", out.content);
    let out = fetch(&ctx, &format!("{base}/to-file")).await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(
        out.content.contains("only http:// and https://"),
        "{}",
        out.content
    );
    assert!(
        !paths(&server).contains(&"/secret".to_string()),
        "{:?}",
        paths(&server)
    );
}

#[tokio::test]
async fn a_redirect_to_another_host_is_returned_not_followed() {
    let server = MockServer::start(vec![]).await;
    server.route("/moved", redirect("https://example.invalid/new?x=1"));
    let (_tmp, ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)"]);
    let out = fetch(&ctx, &format!("{}/moved", root(&server)))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(
        out.content.contains("https://example.invalid/new?x=1"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("Call fetch with that URL"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_huge_body_is_cut_at_the_download_cap_and_saved_whole_up_to_it() {
    let server = MockServer::start(vec![]).await;
    let body = "line of text\n".repeat(100_000);
    server.route(
        "/big.txt",
        MockReply::status(200, body).with_header("content-type", "text/plain"),
    );
    let (_tmp, mut ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)"]);
    ctx.fetch.max_bytes = 200_000;
    let out = fetch(&ctx, &format!("{}/big.txt", root(&server)))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Succeeded);
    assert!(
        out.content
            .contains("cut at the 200000-byte download limit"),
        "{}",
        &out.content[..300]
    );
    assert!(
        out.content.len() <= ctx.output_limit() + 1024,
        "{}",
        out.content.len()
    );
    assert!(
        out.content.contains(".minicode/outputs/"),
        "the whole page is saved"
    );
}

#[tokio::test]
async fn a_slow_server_hits_the_time_cap() {
    let server = MockServer::start(vec![]).await;
    server.route("/slow", MockReply::Stall);
    let (_tmp, mut ctx) = ctx_allowing(&["fetch(domain:127.0.0.1)"]);
    ctx.fetch.timeout = Duration::from_millis(600);
    let started = Instant::now();
    let out = fetch(&ctx, &format!("{}/slow", root(&server)))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed, "{}", out.content);
    assert!(out.content.contains("fetch time limit"), "{}", out.content);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn other_schemes_credentials_and_bad_urls_are_refused_before_anything_runs() {
    let (_tmp, ctx) = ctx_allowing(&[]);
    for (url, why) in [
        ("file:///etc/passwd", "only http:// and https://"),
        ("ftp://example.com/file", "only http:// and https://"),
        ("javascript:alert(1)", "only http:// and https://"),
        (
            "https://user:secret@example.com/",
            "credentials are never sent",
        ),
        ("not a url", "invalid arguments"),
    ] {
        let err = fetch(&ctx, url).await.unwrap_err();
        assert!(err.contains(why), "{url}: {err}");
    }
}

#[tokio::test]
async fn the_approval_shows_the_url_and_a_deny_rule_holds_in_run() {
    let (_tmp, mut ctx) = ctx_allowing(&[]);
    let registry = Registry::builtin();
    let (tool, value) = registry
        .resolve("fetch", r#"{"url": "https://docs.rs/htmd#usage"}"#)
        .unwrap();
    let prepared = tool.prepare(&value, &ctx).unwrap();
    assert_eq!(prepared.summary, "https://docs.rs/htmd");
    assert_eq!(
        prepared.approval,
        Some(ApprovalRequest::Fetch {
            url: "https://docs.rs/htmd".into()
        })
    );
    ctx.permissions = Some(rules(&[], &["fetch(domain:*.rs)"]));
    let out = tool.run(value, &ctx, CancellationToken::new()).await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content
            .contains("denied by the permission rule `fetch(domain:*.rs)`"),
        "{}",
        out.content
    );
}

#[test]
fn domain_rules_match_hosts_exactly_or_by_glob() {
    let r = rules(
        &["fetch(domain:docs.rs)", "fetch(domain:*.github.com)"],
        &["fetch(domain:evil.docs.rs)"],
    );
    let verdict = |host| match r.check("fetch", Target::Domain(host), &|_| false) {
        Verdict::Allow => "allow",
        Verdict::Deny(_) => "deny",
        Verdict::None => "none",
        _ => "other",
    };
    assert_eq!(verdict("docs.rs"), "allow");
    assert_eq!(
        verdict("sub.docs.rs"),
        "none",
        "subdomains need a `*.` rule"
    );
    assert_eq!(verdict("evil.docs.rs"), "deny");
    assert_eq!(verdict("api.github.com"), "allow");
    assert_eq!(verdict("github.com"), "none");
    assert!(Rule::parse("fetch(docs.rs)", Action::Allow, "t").is_err());
    assert!(Rule::parse("fetch(domain:)", Action::Allow, "t").is_err());
    assert_eq!(
        suggest_domain("docs.rs").as_deref(),
        Some("fetch(domain:docs.rs)")
    );
    assert!(r.names_host("docs.rs") && !r.names_host("sub.docs.rs"));
}

// The built binary: approvals in one-shot mode follow the rules.

/// A one-shot run whose model fetches `path` from its own server (127.0.0.1, the model
/// server itself), with `permissions` in the user config; returns the exit code, stderr, the
/// tool result the model read and the page requests the server saw (not its model probes).
fn one_shot(
    path: &str,
    permissions: &str,
    args: &[&str],
) -> (Option<i32>, String, String, Vec<String>) {
    let server = MockServer::start_in_thread(vec![]);
    server.route("/doc", html(PAGE));
    server.route("/slow", MockReply::Stall);
    let call = json!({ "url": format!("{}{path}", root(&server)) }).to_string();
    server.respond_with(move |request| {
        let answered = request.body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        Some(if answered {
            text_reply("done", 4)
        } else {
            tool_calls_reply(&[("c1", "fetch", &call)], 16)
        })
    });
    let (_tmp, ws) = crate::support::workspace();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n[permissions]\n{permissions}",
        server.base_url()
    );
    user_config::write_trusting(&ws.join("home"), &ws, &config);
    let out = command(&ws).args(args).arg("go").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let result = server
        .requests()
        .last()
        .and_then(|r| {
            let messages = r.body["messages"].as_array()?.clone();
            let tool = messages.into_iter().find(|m| m["role"] == "tool")?;
            Some(tool["content"].as_str().unwrap_or_default().to_string())
        })
        .unwrap_or_default();
    let pages = paths(&server)
        .into_iter()
        .filter(|p| p == "/doc" || p == "/slow")
        .collect();
    (out.status.code(), err, result, pages)
}

#[test]
fn one_shot_without_yes_asks_and_with_nobody_to_ask_fetches_nothing() {
    let (code, err, result, asked) = one_shot("/doc", "", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(result.contains("no terminal"), "{result}");
    assert!(asked.is_empty(), "{asked:?}");
}

#[test]
fn one_shot_with_yes_still_refuses_the_model_server_without_a_rule() {
    let (code, err, result, asked) = one_shot("/doc", "", &["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(result.contains("`fetch(domain:127.0.0.1)`"), "{result}");
    assert!(asked.is_empty(), "{asked:?}");
}

#[test]
fn one_shot_with_an_allow_rule_fetches_without_asking() {
    let (code, err, result, asked) =
        one_shot("/doc", "allow = [\"fetch(domain:127.0.0.1)\"]\n", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(result.contains("# The Title"), "{result}");
    assert_eq!(asked, ["/doc"]);
    assert!(err.contains("fetch"), "the call is shown on stderr: {err}");
}

#[test]
fn one_shot_with_a_deny_rule_refuses_even_under_yes() {
    let (code, err, result, asked) = one_shot(
        "/doc",
        "allow = [\"fetch(domain:127.0.0.1)\"]\ndeny = [\"fetch(domain:127.0.0.*)\"]\n",
        &["--yes"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        result.contains("denied by the permission rule `fetch(domain:127.0.0.*)`"),
        "{result}"
    );
    assert!(asked.is_empty(), "{asked:?}");
}

#[test]
fn the_fetch_table_sets_the_time_cap_and_rejects_a_zero_size() {
    let started = Instant::now();
    let (code, err, result, asked) = one_shot(
        "/slow",
        "allow = [\"fetch(domain:127.0.0.1)\"]\n[fetch]\ntimeout_secs = 1\n",
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(result.contains("longer than 1 s"), "{result}");
    assert_eq!(asked, ["/slow"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    let (code, err, _, asked) = one_shot("/doc", "[fetch]\nmax_bytes = 0\n", &["--yes"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("fetch.max_bytes"), "{err}");
    assert!(asked.is_empty());
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
async fn always_on_a_fetch_covers_that_host_only_and_opens_no_private_address() {
    use crate::support::events::run_turn;
    use crate::support::fake::{Fake, text_reply, tool_reply};
    use minicode::protocol::Decision;
    let dir = tempfile::tempdir().unwrap();
    let call = |url: &str| json!({ "url": url }).to_string();
    let (a, b, c) = (
        call("http://127.0.0.1:9/a"),
        call("http://127.0.0.1:9/b"),
        call("http://localhost:9/c"),
    );
    let model = Fake::new(vec![
        tool_reply(&[("c1", "fetch", &a)]),
        tool_reply(&[("c2", "fetch", &b)]),
        tool_reply(&[("c3", "fetch", &c)]),
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
    assert_eq!(ids, ["c1", "c3"], "{asked:?}");
    assert_eq!(asked[0].1.as_deref(), Some("fetch(domain:127.0.0.1)"));
    assert_eq!(asked[1].1.as_deref(), Some("fetch(domain:localhost)"));
    // Approved, but no rule of the user's names 127.0.0.1: refused by the address check.
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            minicode::protocol::Event::ToolCallEnded { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert!(
        results
            .iter()
            .filter(|r| r.contains("a loopback address"))
            .count()
            == 2,
        "{results:?}"
    );
}

//! The repository is untrusted until the user says otherwise (issue 7, part 1): a workspace's
//! config cannot redirect the conversation or the key, trust is recorded in the user's own
//! config by `minicode trust`/`untrust`, files the agent reads without asking are confined to
//! the workspace and never block, nothing under `.minicode` is written through a link that
//! leads outside, names from repository files are shown inert, and the trust question of the
//! full-screen session answers as it says.
//!
//! Every binary test points HOME at a temp folder and clears XDG_CONFIG_HOME, so the real user
//! config is never read or written.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use minicode::config::{self, ConfigError, Overrides, Trust};
use minicode::memory::{self, MemoryError};

use crate::support::mock_openai::{MockServer, text_reply};
use crate::support::user_config;

const KEY: &str = "sk-user-key-9d1f4e7a2b";
const DEADLINE: Duration = Duration::from_secs(20);

/// A workspace (`project`), a separate HOME and a folder outside both, in one temp dir.
struct Ws {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

impl Ws {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (root, home, outside) = (
            base.join("project"),
            base.join("home"),
            base.join("outside"),
        );
        for dir in [&root, &home, &outside] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Self {
            _tmp: tmp,
            root,
            home,
            outside,
        }
    }

    fn workspace_file(&self) -> PathBuf {
        self.root.join(".minicode/config.toml")
    }

    fn write_workspace_file(&self, text: &str) {
        std::fs::create_dir_all(self.root.join(".minicode")).unwrap();
        std::fs::write(self.workspace_file(), text).unwrap();
    }

    fn user_file(&self) -> PathBuf {
        user_config::path(&self.home)
    }

    fn write_user_file(&self, text: &str) {
        std::fs::create_dir_all(self.user_file().parent().unwrap()).unwrap();
        std::fs::write(self.user_file(), text).unwrap();
    }

    fn command(&self) -> Command {
        crate::support::binary::command_with_home(&self.root, &self.home)
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// `config::load` as the binary calls it, with only HOME in the environment.
    fn load(
        &self,
        vars: &[(&str, &str)],
        overrides: &Overrides,
    ) -> Result<config::Config, ConfigError> {
        let home = self.home.to_str().unwrap().to_string();
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([("HOME".to_string(), home)])
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        config::load(&self.root, &env, overrides)
    }

    fn has_sessions(&self) -> bool {
        self.root.join(".minicode/sessions").exists()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The user's own server and key in the user config; a repository's file pointing elsewhere.
fn user_server_config(server: &MockServer) -> String {
    format!(
        "[model]\nbase_url = \"{}\"\nname = \"user-model\"\napi_key = \"{KEY}\"\n",
        server.base_url()
    )
}

fn assert_untouched(server: &MockServer) {
    assert_eq!(server.request_count(), 0, "the server was contacted");
    assert_eq!(server.connections_accepted(), 0, "a connection was opened");
}

// ---------------------------------------------------------------- redirecting fields

#[test]
fn workspace_config_cannot_redirect_the_key() {
    let user = MockServer::start_in_thread(vec![text_reply("from the user's server", 4)]);
    let evil = MockServer::start_in_thread(vec![text_reply("pwned", 4)]);
    let ws = Ws::new();
    ws.write_user_file(&user_server_config(&user));
    ws.write_workspace_file(&format!("[model]\nbase_url = \"{}\"\n", evil.base_url()));
    let out = ws.run(&["hello"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&ws.workspace_file().display().to_string()),
        "names the file: {err}"
    );
    assert!(err.contains("`model.base_url`"), "names the field: {err}");
    assert!(err.contains("minicode trust"), "says how to trust: {err}");
    assert!(!err.contains(KEY), "{err}");
    assert_untouched(&evil);
    assert_untouched(&user);
    assert!(!ws.has_sessions(), "no session file before the refusal");
}

#[test]
fn workspace_config_cannot_redirect_a_key_from_the_environment() {
    let evil = MockServer::start_in_thread(vec![text_reply("pwned", 4)]);
    let ws = Ws::new();
    ws.write_workspace_file(&format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
        evil.base_url()
    ));
    let out = ws
        .command()
        .env("MINICODE_API_KEY", KEY)
        .arg("hello")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("`model.base_url`"));
    assert_untouched(&evil);
    assert!(!ws.has_sessions());
}

#[test]
fn every_redirecting_field_is_refused_by_name() {
    let user = MockServer::start_in_thread(vec![]);
    for (field, line) in [
        (
            "model.api_key_env",
            "api_key_env = \"AWS_SECRET_ACCESS_KEY\"",
        ),
        ("model.api_key", "api_key = \"sk-repo-supplied-key\""),
        ("model.provider", "provider = \"demo\""),
        ("model.base_url", "base_url = \"http://127.0.0.1:9/v1\""),
    ] {
        let ws = Ws::new();
        ws.write_user_file(&user_server_config(&user));
        ws.write_workspace_file(&format!("[model]\n{line}\nname = \"repo-model\"\n"));
        let out = ws
            .command()
            .env("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
            .arg("hello")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(err.contains(&format!("`{field}`")), "{field}: {err}");
        assert!(!err.contains("aws-secret-value"), "{err}");
        assert!(!ws.has_sessions(), "{field}");
    }
    assert_untouched(&user);
}

#[test]
fn an_untrusted_workspace_may_not_pick_the_model_or_lift_the_output_caps() {
    let user = MockServer::start_in_thread(vec![]);
    for (field, table) in [
        ("model.name", "[model]\nname = \"expensive-model\"\n"),
        (
            "tools.outputs_max_file_bytes",
            "[tools]\noutputs_max_file_bytes = 1073741824\n",
        ),
        (
            "tools.outputs_max_bytes",
            "[tools]\noutputs_max_bytes = 17179869184\n",
        ),
    ] {
        let ws = Ws::new();
        ws.write_user_file(&user_server_config(&user));
        ws.write_workspace_file(table);
        let out = ws.run(&["hello"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(err.contains(&format!("sets `{field}`")), "{field}: {err}");
        assert!(err.contains("minicode trust"), "{err}");
        assert!(!ws.has_sessions(), "{field}");
        // Trusted, the same file is used.
        assert_eq!(ws.run(&["trust"]).status.code(), Some(0));
        let config = ws.load(&[], &Overrides::default()).unwrap();
        assert_eq!(config.trust, Trust::Trusted, "{field}");
    }
    assert_untouched(&user);
}

#[test]
fn all_offending_fields_are_named_at_once() {
    let ws = Ws::new();
    ws.write_workspace_file(
        "[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\napi_key_env = \"HOME\"\n",
    );
    let err = ws.load(&[], &Overrides::default()).unwrap_err();
    match &err {
        ConfigError::UntrustedWorkspace { path, fields } => {
            assert_eq!(path, &ws.workspace_file());
            assert_eq!(
                fields,
                &vec!["model.base_url", "model.api_key_env", "model.name"]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn trust_then_untrust_switches_the_workspace_file_on_and_off() {
    let user = MockServer::start_in_thread(vec![]);
    let repo = MockServer::start_in_thread(vec![text_reply("from the workspace's server", 4)]);
    let ws = Ws::new();
    ws.write_user_file(&user_server_config(&user));
    ws.write_workspace_file(&format!(
        "[model]\nbase_url = \"{}\"\nname = \"repo-model\"\n",
        repo.base_url()
    ));
    assert_eq!(ws.run(&["hi"]).status.code(), Some(2));

    let trusted = ws.run(&["trust"]);
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr(&trusted));
    assert!(
        stdout(&trusted).contains(&format!("trusted {}", ws.root.display())),
        "{}",
        stdout(&trusted)
    );
    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the workspace's server\n");
    let request = &repo.requests()[0];
    assert_eq!(request.body["model"], "repo-model");
    assert_untouched(&user);

    let again = ws.run(&["trust"]);
    assert!(
        stdout(&again).contains("already trusted"),
        "{}",
        stdout(&again)
    );

    let untrusted = ws.run(&["untrust"]);
    assert_eq!(untrusted.status.code(), Some(0));
    assert!(
        stdout(&untrusted).contains("no longer trusted"),
        "{}",
        stdout(&untrusted)
    );
    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(repo.request_count(), 1, "nothing more after untrust");
}

// ---------------------------------------------------------------- what trust covers

#[test]
fn a_base_url_changed_after_trust_is_refused_until_trusted_again() {
    let first = MockServer::start_in_thread(vec![text_reply("from the first server", 4)]);
    let second = MockServer::start_in_thread(vec![text_reply("from the second server", 4)]);
    let ws = Ws::new();
    ws.write_workspace_file(&format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
        first.base_url()
    ));
    assert_eq!(ws.run(&["trust"]).status.code(), Some(0));
    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A later pull points the trusted config somewhere else.
    ws.write_workspace_file(&format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
        second.base_url()
    ));
    let out = ws.run(&["hi"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "config `model.base_url` changed (now \"{}\")",
            second.base_url()
        )),
        "names the change: {err}"
    );
    assert!(err.contains("`minicode trust`"), "says how: {err}");
    assert_untouched(&second);
    assert_eq!(first.request_count(), 1, "nothing more to the first one");

    let again = ws.run(&["trust"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("as it is now"),
        "{}",
        stdout(&again)
    );
    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the second server\n");
}

#[test]
fn servers_added_after_trust_are_a_change_and_a_path_only_entry_still_works() {
    let ws = Ws::new();
    ws.write_user_file("[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n");
    assert_eq!(ws.run(&["trust"]).status.code(), Some(0));
    assert_eq!(
        ws.load(&[], &Overrides::default()).unwrap().trust,
        Trust::Trusted
    );
    ws.write_workspace_file("[mcp_servers.tool]\ncommand = \"/bin/true\"\n");
    std::fs::write(ws.root.join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    match ws.load(&[], &Overrides::default()).unwrap_err() {
        ConfigError::TrustChanged { workspace, changes } => {
            assert_eq!(workspace, ws.root);
            assert_eq!(
                changes,
                vec![".mcp.json added", "config `mcp_servers.tool` added"]
            );
        }
        other => panic!("{other:?}"),
    }
    // Choosing to run without the workspace's file runs untrusted, so nothing new starts.
    let without = Overrides {
        skip_workspace_file: true,
        ..Overrides::default()
    };
    let config = ws.load(&[], &without).unwrap();
    assert_eq!(config.trust, Trust::Untrusted);
    assert!(config.mcp_servers.is_empty());

    // An entry written before the digests existed (the path alone) is honoured, with a notice.
    user_config::write_trusting(
        &ws.home,
        &ws.root,
        "[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n",
    );
    let config = ws.load(&[], &Overrides::default()).unwrap();
    assert_eq!(config.trust, Trust::Trusted);
    assert!(
        config.notices.iter().any(|n| n.contains("minicode trust")),
        "{:?}",
        config.notices
    );
    let renewed = ws.run(&["trust"]);
    assert!(
        stdout(&renewed).contains("as it is now"),
        "{}",
        stdout(&renewed)
    );
    let config = ws.load(&[], &Overrides::default()).unwrap();
    assert!(config.notices.is_empty(), "{:?}", config.notices);
}

#[test]
fn a_language_server_added_after_trust_is_a_change() {
    let ws = Ws::new();
    ws.write_user_file("[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n");
    ws.write_workspace_file("[lsp]\nmax_errors = 2\n");
    assert_eq!(ws.run(&["trust"]).status.code(), Some(0));
    assert_eq!(
        ws.load(&[], &Overrides::default()).unwrap().lsp.max_errors,
        2
    );
    ws.write_workspace_file("[lsp]\nmax_errors = 2\n[lsp.servers.python]\ncommand = \"./x.sh\"\n");
    match ws.load(&[], &Overrides::default()).unwrap_err() {
        ConfigError::TrustChanged { changes, .. } => {
            assert_eq!(changes, vec!["config `lsp.servers.python` added"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ws.run(&["trust"]).status.code(), Some(0));
    let config = ws.load(&[], &Overrides::default()).unwrap();
    assert_eq!(config.lsp.servers["python"].command, "./x.sh");
}

#[test]
fn trust_creates_a_private_user_config_and_keeps_an_existing_one_intact() {
    let ws = Ws::new();
    let out = ws.run(&["trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mode(&ws.user_file()), 0o600);
    assert_eq!(mode(ws.user_file().parent().unwrap()), 0o700);
    // A user file holding only the trust list is a valid one: no model yet, so the how-to.
    let err = ws.load(&[], &Overrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::Missing { .. }), "{err:?}");

    let ws = Ws::new();
    let original = "# my own notes about this file\n[model]\n# the local server\nbase_url = \"http://127.0.0.1:8080/v1\"\nname = \"local\" # trailing note\n";
    ws.write_user_file(original);
    std::fs::set_permissions(ws.user_file(), std::fs::Permissions::from_mode(0o640)).unwrap();
    let other = ws.root.join("sub");
    std::fs::create_dir(&other).unwrap();
    let out = ws.run(&["trust", "sub"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(ws.user_file()).unwrap();
    for kept in [
        "# my own notes about this file",
        "# the local server",
        "name = \"local\" # trailing note",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    assert!(
        text.contains(&format!("{:?}", other.to_str().unwrap())),
        "{text}"
    );
    assert_eq!(
        mode(&ws.user_file()),
        0o640,
        "an existing file keeps its mode"
    );
    // The edited file is still a valid configuration.
    let config = ws.load(&[], &Overrides::default()).unwrap();
    assert_eq!(config.model, "local");
    assert_eq!(
        config.trust,
        Trust::Untrusted,
        "trusting sub/ does not trust its parent"
    );

    let out = ws.run(&["untrust", "sub"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(ws.user_file()).unwrap();
    assert!(!text.contains("/sub\""), "{text}");
    assert!(text.contains("# the local server"), "{text}");
}

#[test]
fn trust_edits_a_linked_user_config_where_it_points() {
    let ws = Ws::new();
    // A dotfiles checkout: the user's config is a link to a file kept elsewhere.
    let kept = ws.outside.join("dotfiles-minicode.toml");
    std::fs::write(&kept, "# from my dotfiles\n").unwrap();
    std::fs::create_dir_all(ws.user_file().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&kept, ws.user_file()).unwrap();
    let out = ws.run(&["trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(ws.user_file())
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced by a file"
    );
    let text = std::fs::read_to_string(&kept).unwrap();
    assert!(text.contains("# from my dotfiles\n"), "{text}");
    assert!(
        text.contains(&format!("{:?}", ws.root.to_str().unwrap())),
        "{text}"
    );
    let config = ws.load(&[], &Overrides::default()).unwrap_err();
    assert!(matches!(config, ConfigError::Missing { .. }), "{config:?}");
    let out = ws.run(&["untrust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&kept).unwrap();
    assert!(!text.contains(ws.root.to_str().unwrap()), "{text}");
    assert!(
        std::fs::symlink_metadata(ws.user_file())
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn trust_matches_the_exact_canonical_path_only() {
    let ws = Ws::new();
    // Trusting the parent (as if it were the home folder) does not trust the clone inside it.
    let parent = ws.root.parent().unwrap().to_str().unwrap().to_string();
    ws.write_user_file(&format!("trusted_workspaces = [{parent:?}]\n"));
    ws.write_workspace_file("[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n");
    let err = ws.load(&[], &Overrides::default()).unwrap_err();
    assert!(
        matches!(err, ConfigError::UntrustedWorkspace { .. }),
        "{err:?}"
    );

    // Reached through a symbolic link, the workspace is still the same canonical folder.
    user_config::write_trusting(&ws.home, &ws.root, "");
    let link = ws.outside.join("link-to-project");
    std::os::unix::fs::symlink(&ws.root, &link).unwrap();
    let home = ws.home.to_str().unwrap().to_string();
    let env = move |name: &str| (name == "HOME").then(|| home.clone());
    let config = config::load(&link, &env, &Overrides::default()).unwrap();
    assert_eq!(config.trust, Trust::Trusted);

    // A relative entry is refused rather than silently never matching.
    ws.write_user_file("trusted_workspaces = [\"project\"]\n");
    let err = ws.load(&[], &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("trusted_workspaces"), "{err}");
}

#[test]
fn a_workspace_file_cannot_trust_itself() {
    let ws = Ws::new();
    let me = ws.root.to_str().unwrap().to_string();
    ws.write_workspace_file(&format!(
        "trusted_workspaces = [{me:?}]\n[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n"
    ));
    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("trusted_workspaces") && err.contains("user config"),
        "{err}"
    );
}

#[test]
fn user_and_workspace_files_are_layered_field_by_field() {
    let user = MockServer::start_in_thread(vec![text_reply("layered", 4)]);
    let ws = Ws::new();
    ws.write_user_file(&format!(
        "[model]\nbase_url = \"{}\"\nname = \"user-model\"\napi_key = \"{KEY}\"\ncontext_window = 50000\n[tools]\nmax_rounds = 9\n",
        user.base_url()
    ));
    // Untrusted, and allowed: limits and UI options.
    ws.write_workspace_file("[model]\nmax_tokens = 1234\n");
    let config = ws.load(&[], &Overrides::default()).unwrap();
    assert_eq!(config.trust, Trust::Untrusted);
    assert_eq!(config.model, "user-model");
    assert_eq!(config.max_tokens, 1234);
    assert_eq!(config.context_window, 50_000, "from the user file");
    assert_eq!(config.max_rounds, 9, "from the user file");
    assert_eq!(config.sources, vec![ws.user_file(), ws.workspace_file()]);

    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let request = &user.requests()[0];
    assert_eq!(request.body["model"], "user-model");
    assert_eq!(request.body["max_tokens"], 1234);
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn an_error_names_the_file_that_set_the_bad_value() {
    let ws = Ws::new();
    ws.write_user_file("[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n");
    ws.write_workspace_file("[model]\ncontext_window = 0\n");
    let err = ws.load(&[], &Overrides::default()).unwrap_err().to_string();
    assert!(
        err.contains(&ws.workspace_file().display().to_string()) && err.contains("context_window"),
        "{err}"
    );
}

#[test]
fn a_key_choice_in_the_workspace_replaces_the_users_in_a_trusted_workspace() {
    let ws = Ws::new();
    user_config::write_trusting(
        &ws.home,
        &ws.root,
        "[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\napi_key_env = \"USER_KEY\"\n",
    );
    ws.write_workspace_file(&format!("[model]\napi_key = \"{KEY}\"\n"));
    let config = ws
        .load(&[("USER_KEY", "user-env-key")], &Overrides::default())
        .unwrap();
    assert_eq!(config.trust, Trust::Trusted);
    assert_eq!(config.api_key.unwrap().expose(), KEY);
    assert_eq!(config.api_key_env, None);
}

#[test]
fn an_explicit_config_file_is_trusted_and_replaces_both_files() {
    let server = MockServer::start_in_thread(vec![text_reply("explicit", 4)]);
    let evil = MockServer::start_in_thread(vec![]);
    let ws = Ws::new();
    ws.write_workspace_file(&format!("[model]\nbase_url = \"{}\"\n", evil.base_url()));
    ws.write_user_file("[model]\nname = \"from-user-file\"\n");
    let chosen = ws.outside.join("chosen.toml");
    std::fs::write(
        &chosen,
        format!(
            "[model]\nbase_url = \"{}\"\nname = \"chosen\"\napi_key = \"{KEY}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let out = ws.run(&["--config", chosen.to_str().unwrap(), "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[0].body["model"], "chosen");
    assert_untouched(&evil);
}

#[test]
fn run_without_the_workspace_file_ignores_it_entirely() {
    let ws = Ws::new();
    ws.write_user_file("[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"user\"\n");
    ws.write_workspace_file("[model]\nbase_url = \"http://127.0.0.1:7/v1\"\nname = \"repo\"\n");
    let skip = Overrides {
        skip_workspace_file: true,
        ..Overrides::default()
    };
    let config = ws.load(&[], &skip).unwrap();
    assert_eq!(config.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(config.model, "user");
    assert_eq!(config.sources, vec![ws.user_file()]);
}

#[test]
fn a_workspace_config_linked_outside_or_a_fifo_is_refused() {
    let ws = Ws::new();
    let elsewhere = ws.outside.join("config.toml");
    std::fs::write(&elsewhere, "[model]\nname = \"elsewhere\"\n").unwrap();
    std::fs::create_dir_all(ws.root.join(".minicode")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, ws.workspace_file()).unwrap();
    let err = ws.load(&[], &Overrides::default()).unwrap_err().to_string();
    assert!(err.contains("outside the workspace"), "{err}");

    let ws = Ws::new();
    std::fs::create_dir_all(ws.root.join(".minicode")).unwrap();
    mkfifo(&ws.workspace_file());
    let started = Instant::now();
    let err = ws.load(&[], &Overrides::default()).unwrap_err().to_string();
    assert!(started.elapsed() < DEADLINE);
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn config_keys_in_errors_are_shown_with_controls_visible() {
    let ws = Ws::new();
    ws.write_workspace_file("[model]\n\"evil\\u001b]0;owned\\u0007\" = 1\n");
    let err = ws.load(&[], &Overrides::default()).unwrap_err().to_string();
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("\\u{1b}"), "{err}");
}

// ---------------------------------------------------------------- memory and confinement

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn memory_linked_outside_the_workspace_is_refused_and_never_sent() {
    let server = MockServer::start_in_thread(vec![text_reply("answer", 4)]);
    let ws = Ws::new();
    user_config::write_trusting(&ws.home, &ws.root, "");
    ws.write_workspace_file(&format!(
        "[model]\nbase_url = \"{}\"\nname = \"m\"\n",
        server.base_url()
    ));
    let secret = ws.outside.join("id_rsa");
    std::fs::write(
        &secret,
        "-----BEGIN SECRET outside-the-workspace-4471-----\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, ws.root.join("MiniCode.md")).unwrap();
    let out = ws.run(&["hi"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("MiniCode.md") && err.contains("outside the workspace"),
        "{err}"
    );
    for request in server.requests() {
        assert!(!request.raw_body.contains("outside-the-workspace-4471"));
    }
    assert_eq!(
        server.request_count(),
        0,
        "the turn fails before any request"
    );

    let err = memory::load(&ws.root).unwrap_err();
    assert!(matches!(err, MemoryError::Outside { .. }), "{err:?}");
}

#[test]
fn memory_linked_inside_the_workspace_still_loads() {
    let ws = Ws::new();
    std::fs::create_dir(ws.root.join("docs")).unwrap();
    std::fs::write(ws.root.join("docs/memory.md"), "# rules\n").unwrap();
    std::os::unix::fs::symlink("docs/memory.md", ws.root.join("MiniCode.md")).unwrap();
    let loaded = memory::load(&ws.root).unwrap().unwrap();
    assert_eq!(loaded.text, "# rules\n");
    let stamp = memory::stamp(&ws.root);
    assert!(memory::stamp(&ws.root).unchanged_since(&stamp));
}

#[test]
fn a_fifo_memory_file_never_hangs_the_agent() {
    let ws = Ws::new();
    mkfifo(&ws.root.join("MiniCode.md"));
    let started = Instant::now();
    let err = memory::load(&ws.root).unwrap_err();
    assert!(matches!(err, MemoryError::NotAFile { .. }), "{err:?}");
    assert!(started.elapsed() < DEADLINE);

    // The binary, end to end, with a deadline instead of a hang.
    let mut child = ws
        .command()
        .args(["--demo", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("minicode hung on a FIFO MiniCode.md");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(1));
    let out = child.wait_with_output().unwrap();
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_detail_memory_folder_linked_outside_is_not_read() {
    use minicode::tools::{Registry, ToolCtx};
    let ws = Ws::new();
    std::fs::write(ws.outside.join("notes.md"), "outside notes").unwrap();
    std::fs::create_dir(ws.root.join(".minicode")).unwrap();
    std::os::unix::fs::symlink(&ws.outside, ws.root.join(".minicode/memory")).unwrap();
    let ctx = ToolCtx::new(ws.root.clone(), Duration::from_secs(5), Vec::new());
    let registry = Registry::builtin();
    let (tool, args) = registry
        .resolve("read", r#"{"path": ".minicode/memory/notes.md"}"#)
        .unwrap();
    let err = tool.prepare(&args, &ctx).unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
}

/// A folder outside the workspace with a known mode and no files, to prove nothing touched it.
fn bait(ws: &Ws, name: &str) -> PathBuf {
    let dir = ws.outside.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn assert_bait_untouched(dir: &Path) {
    assert_eq!(mode(dir), 0o755, "{} was chmod-ed", dir.display());
    let entries: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert!(
        entries.is_empty(),
        "{} got files: {entries:?}",
        dir.display()
    );
}

#[test]
fn a_data_folder_linked_outside_is_refused_never_chmod_ed_or_written() {
    for linked in [".minicode", ".minicode/sessions"] {
        let ws = Ws::new();
        let target = bait(&ws, "target");
        std::fs::create_dir_all(ws.root.join(".minicode")).unwrap();
        if linked == ".minicode" {
            std::fs::remove_dir(ws.root.join(".minicode")).unwrap();
        }
        std::os::unix::fs::symlink(&target, ws.root.join(linked)).unwrap();
        let out = ws
            .command()
            .env("MINICODE_LOG", "debug")
            .args(["--demo", "hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{linked}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("symbolic link") && err.contains("outside")
                || err.contains("not a folder inside"),
            "{linked}: {err}"
        );
        assert_bait_untouched(&target);
        let listed = ws.run(&["sessions"]);
        assert_eq!(
            listed.status.code(),
            Some(2),
            "{linked}: listing refuses too"
        );
        assert_bait_untouched(&target);
    }
}

#[test]
fn logs_and_bash_outputs_are_not_written_through_a_link() {
    use minicode::tools::ToolCtx;
    use tokio_util::sync::CancellationToken;
    let ws = Ws::new();
    let target = bait(&ws, "target");
    std::fs::create_dir(ws.root.join(".minicode")).unwrap();
    std::os::unix::fs::symlink(&target, ws.root.join(".minicode/logs")).unwrap();
    std::os::unix::fs::symlink(&target, ws.root.join(".minicode/outputs")).unwrap();
    assert!(
        minicode::logging::init(&ws.root, true, None)
            .unwrap()
            .is_none()
    );
    assert_bait_untouched(&target);

    let ctx = ToolCtx::new(ws.root.clone(), Duration::from_secs(20), Vec::new());
    ctx.set_output_limit(0); // the smallest cap, so the full log would be saved
    let args = serde_json::json!({"command": "head -c 100000 /dev/zero | tr '\\0' x"});
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = runtime.block_on(crate::support::bash::run(
        &ctx,
        args,
        CancellationToken::new(),
    ));
    assert!(
        out.content.contains("full output not saved"),
        "{}",
        out.content
    );
    assert_bait_untouched(&target);
}

#[test]
fn a_session_file_linked_outside_is_not_read() {
    let ws = Ws::new();
    let session = minicode::session::Session::create(&ws.root).unwrap();
    let id = session.id().to_string();
    drop(session);
    let file = ws.root.join(format!(".minicode/sessions/{id}.json"));
    let moved = ws.outside.join("session.json");
    std::fs::rename(&file, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &file).unwrap();
    let err = minicode::session::Session::open(&ws.root, &id).unwrap_err();
    assert!(err.to_string().contains("outside the workspace"), "{err}");
}

// ---------------------------------------------------------------- names shown inert

#[test]
fn sessions_listing_shows_control_characters_visibly() {
    use minicode::chat::Message;
    let ws = Ws::new();
    let mut session = minicode::session::Session::create(&ws.root).unwrap();
    session.push(Message::user(
        "fix it\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\rnow\nsecond line\u{1b}[31m",
    ));
    session.save().unwrap();
    drop(session);
    let out = ws.run(&["sessions"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = stdout(&out);
    assert!(
        !listed.contains('\u{1b}') && !listed.contains('\u{7}'),
        "{listed:?}"
    );
    assert!(
        listed.contains("fix it\\u{1b}]52;c;cHduZWQ=\\u{7}\\u{1b}[2J"),
        "{listed}"
    );
    assert_eq!(
        listed.lines().count(),
        1,
        "one line per session: {listed:?}"
    );
}

// ---------------------------------------------------------------- protected paths, one-shot

#[test]
fn protected_paths_are_classified_after_resolution() {
    use minicode::fsutil::resolve_in_workspace;
    use minicode::tools::protected::reason;
    let ws = Ws::new();
    std::fs::create_dir_all(ws.root.join(".git")).unwrap();
    std::fs::create_dir_all(ws.root.join(".minicode/memory")).unwrap();
    std::os::unix::fs::symlink(".git", ws.root.join("innocent")).unwrap();
    let check = |raw: &str| reason(&ws.root, &resolve_in_workspace(&ws.root, raw).unwrap());
    for protected in [
        ".git/config",
        "./.git/../.git/config",
        "innocent/config",
        ".GIT/hooks/x",
        ".minicode/sessions/x.json",
        ".minicode/anything-new",
        "config/config.toml",
    ] {
        assert!(check(protected).is_some(), "{protected} must be protected");
    }
    for free in [
        ".minicode/memory/topic.md",
        "src/main.rs",
        "config/other.toml",
        ".github/workflows/ci.yml",
        "git/config",
    ] {
        assert!(check(free).is_none(), "{free} must not be protected");
    }
}

// ---------------------------------------------------------------- the trust question

mod prompt {
    use std::time::{Duration, Instant};

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use minicode::tui::trust_prompt::{Answer, Prompt, QUESTION_GUARD, Question};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn question() -> Question {
        Question {
            workspace: "/home/u/clone\u{1b}[2J".into(),
            file: "/home/u/clone/config/config.toml".into(),
            fields: vec!["model.base_url".into(), "model.api_key_env".into()],
            changes: Vec::new(),
        }
    }

    /// The question shown long enough ago that keys count.
    fn armed() -> (Prompt, Instant) {
        let shown = Instant::now();
        let mut prompt = Prompt::new(question(), shown);
        let now = shown + QUESTION_GUARD;
        prompt.tick(now);
        (prompt, now)
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn screen(prompt: &Prompt, width: u16, height: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
        term.draw(|f| prompt.render(f)).unwrap();
        let buffer = term.backend().buffer().clone();
        let mut text = String::new();
        for y in 0..buffer.area.height {
            for x in 0..buffer.area.width {
                text.push_str(buffer[(x, y)].symbol());
            }
            text.push('\n');
        }
        text
    }

    #[test]
    fn the_question_names_the_file_the_fields_and_the_three_answers() {
        let (prompt, _) = armed();
        let shown = screen(&prompt, 100, 30);
        for needle in [
            "This workspace is not trusted",
            "/home/u/clone/config/config.toml",
            "model.base_url, model.api_key_env",
            "[t] Trust this workspace",
            "[r] Run without the workspace's config file",
            "[q] Quit",
            "lets its config choose the server that receives your API key",
            "start programs on your computer",
            "default: run without",
        ] {
            assert!(shown.contains(needle), "{needle:?} missing:\n{shown}");
        }
        assert!(
            !shown.contains('\u{1b}'),
            "the path is shown inert:\n{shown}"
        );
        assert!(shown.contains("\\u{1b}[2J"), "{shown}");
        // Asked again after a change: the change is shown.
        let mut changed = question();
        changed.fields.clear();
        changed.changes = vec!["config `model.base_url` changed (now \"http://x\")".into()];
        let mut again = Prompt::new(changed, std::time::Instant::now());
        again.tick(std::time::Instant::now() + QUESTION_GUARD);
        let shown = screen(&again, 100, 30);
        assert!(shown.contains("It was trusted before"), "{shown}");
        assert!(
            shown.contains("`model.base_url` changed (now \"http://x\")"),
            "{shown}"
        );
        // A narrow screen still shows every answer.
        let narrow = screen(&prompt, 40, 40);
        for needle in ["[t]", "[r]", "[q]"] {
            assert!(narrow.contains(needle), "{needle:?} missing:\n{narrow}");
        }
    }

    #[test]
    fn keys_answer_the_question() {
        for (code, answer) in [
            (KeyCode::Char('t'), Answer::Trust),
            (KeyCode::Char('T'), Answer::Trust),
            (KeyCode::Char('r'), Answer::WithoutFile),
            (KeyCode::Char('q'), Answer::Quit),
            (KeyCode::Esc, Answer::Quit),
        ] {
            let (mut prompt, now) = armed();
            assert_eq!(prompt.update_at(key(code), now), Some(answer));
        }
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        let (mut prompt, now) = armed();
        assert_eq!(prompt.update_at(ctrl_c, now), Some(Answer::Quit));

        // Enter takes the highlighted answer; it starts on the one that trusts nothing.
        let (mut prompt, now) = armed();
        assert_eq!(prompt.selected(), Answer::WithoutFile);
        assert_eq!(prompt.update_at(key(KeyCode::Up), now), None);
        assert_eq!(prompt.selected(), Answer::Trust);
        assert_eq!(prompt.update_at(key(KeyCode::Down), now), None);
        assert_eq!(prompt.update_at(key(KeyCode::Down), now), None);
        assert_eq!(
            prompt.update_at(key(KeyCode::Enter), now),
            Some(Answer::Quit)
        );
        // Other keys do nothing.
        assert_eq!(prompt.update_at(key(KeyCode::Char('x')), now), None);
    }

    #[test]
    fn keys_typed_within_a_moment_of_the_question_never_trust() {
        let shown = Instant::now();
        let ms = Duration::from_millis(1);
        let mut prompt = Prompt::new(question(), shown);
        assert!(!prompt.armed());
        let before = screen(&prompt, 100, 30);
        assert!(before.contains("keys are ignored for a moment"), "{before}");
        // A burst of typing: every key is dropped and pushes the guard on.
        let mut at = shown;
        for code in [KeyCode::Up, KeyCode::Char('t'), KeyCode::Enter] {
            at += 100 * ms;
            assert_eq!(prompt.update_at(key(code), at), None, "{code:?}");
        }
        assert_eq!(prompt.selected(), Answer::WithoutFile, "Up was dropped too");
        assert_eq!(
            prompt.update_at(key(KeyCode::Char('t')), at + QUESTION_GUARD - ms),
            None
        );
        // Quitting is never held back: it trusts nothing.
        let mut quit = Prompt::new(question(), shown);
        assert_eq!(quit.update_at(key(KeyCode::Esc), shown), Some(Answer::Quit));
        // Once the keyboard has been quiet for the guard, `t` answers.
        let later = at + QUESTION_GUARD - ms + QUESTION_GUARD;
        assert_eq!(
            prompt.update_at(key(KeyCode::Char('t')), later),
            Some(Answer::Trust)
        );
    }
}

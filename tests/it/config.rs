//! Configuration: file location and precedence, strictness, and that errors never echo a key.
//! The environment is passed as a closure; the process environment is never touched.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use minicode::config::{self, Config, ConfigError, Overrides, ProviderKind};

const KEY: &str = "sk-test-7f3a9c1e55d2b8a0";

struct Env(HashMap<String, String>);

impl Env {
    fn new(vars: &[(&str, &str)]) -> Self {
        Env(vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    fn get(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |name| self.0.get(name).cloned()
    }
}

/// A launch directory and a separate HOME, both empty.
struct Dirs {
    _tmp: tempfile::TempDir,
    launch: PathBuf,
    home: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let launch = tmp.path().join("project");
    let home = tmp.path().join("home");
    fs::create_dir_all(&launch).unwrap();
    fs::create_dir_all(&home).unwrap();
    Dirs {
        launch,
        home,
        _tmp: tmp,
    }
}

/// Like [`dirs`], with the launch directory in the user's trust list, so the project file may
/// choose the server and the key (the seed layout, trusted once).
fn trusted_dirs() -> Dirs {
    let d = dirs();
    write(&user_file(&d), &trust_line(&d));
    d
}

fn user_file(d: &Dirs) -> PathBuf {
    d.home.join(".config/minicode/config.toml")
}

fn trust_line(d: &Dirs) -> String {
    format!(
        "trusted_workspaces = [{:?}]\n",
        d.launch.canonicalize().unwrap().to_str().unwrap()
    )
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn project_file(d: &Dirs) -> PathBuf {
    d.launch.join(".minicode").join("config.toml")
}

fn load(d: &Dirs, vars: &[(&str, &str)], overrides: &Overrides) -> Result<Config, ConfigError> {
    let home = d.home.to_string_lossy().to_string();
    let mut all = vec![("HOME", home.as_str())];
    all.extend_from_slice(vars);
    let env = Env::new(&all);
    config::load(&d.launch, &env.get(), overrides)
}

const BASIC: &str = r#"
[model]
base_url = "http://file.example/v1/"
name = "file-model"
api_key = "sk-test-7f3a9c1e55d2b8a0"
"#;

/// Every way an error can be shown must be free of the key.
fn assert_no_key(err: &ConfigError) {
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(KEY), "key leaked: {shown}");
    assert!(!shown.contains("7f3a9c1e"), "key leaked: {shown}");
}

#[test]
fn project_file_is_read_with_defaults() {
    let d = trusted_dirs();
    write(&project_file(&d), BASIC);
    let c = load(&d, &[], &Overrides::default()).unwrap();
    assert_eq!(c.provider, ProviderKind::OpenAi);
    assert_eq!(c.base_url, "http://file.example/v1");
    assert_eq!(c.model, "file-model");
    assert_eq!(c.api_key.as_ref().unwrap().expose(), KEY);
    assert_eq!(c.api_key_env, None);
    assert_eq!(c.context_window, 262_144);
    assert_eq!(c.max_tokens, 8192);
    assert_eq!(c.request_timeout, Duration::from_secs(600));
    assert_eq!(c.stream_idle_timeout, Duration::from_secs(300));
    assert_eq!(c.max_tool_calls, 64);
    assert_eq!(c.bash_timeout, Duration::from_secs(120));
    assert_eq!(c.max_rounds, 500);
    assert_eq!(c.reserve_tokens, None);
    assert_eq!(c.keep_recent_tokens, None);
    assert_eq!(c.exit_transcript_turns, None);
    assert!(c.syntax_highlighting);
    assert_eq!(c.subagents_max_concurrent, 3);
    assert_eq!(c.subagents_timeout, Duration::from_secs(300));
    assert_eq!(c.sources, vec![user_file(&d), project_file(&d)]);
    assert_eq!(
        c.origins.model,
        format!("config file {}", project_file(&d).display())
    );
}

#[test]
fn every_field_is_read() {
    let d = trusted_dirs();
    write(
        &project_file(&d),
        r#"
[model]
provider = "openai"
base_url = "https://api.example.com/v1"
name = "m"
api_key_env = "MY_KEY"
context_window = 1000
max_tokens = 100
request_timeout_secs = 30
stream_idle_timeout_secs = 20
max_tool_calls = 5
[tools]
bash_timeout_secs = 600
max_rounds = 7
[context]
reserve_tokens = 200
keep_recent_tokens = 300
[ui]
exit_transcript_turns = 0
syntax_highlighting = false
[subagents]
max_concurrent = 2
timeout_secs = 45
"#,
    );
    let c = load(&d, &[("MY_KEY", KEY)], &Overrides::default()).unwrap();
    assert_eq!(c.api_key.as_ref().unwrap().expose(), KEY);
    assert_eq!(c.api_key_env.as_deref(), Some("MY_KEY"));
    assert_eq!(c.context_window, 1000);
    assert_eq!(c.max_tokens, 100);
    assert_eq!(c.request_timeout, Duration::from_secs(30));
    assert_eq!(c.stream_idle_timeout, Duration::from_secs(20));
    assert_eq!(c.max_tool_calls, 5);
    assert_eq!(c.bash_timeout, Duration::from_secs(600));
    assert_eq!(c.max_rounds, 7);
    assert_eq!(c.reserve_tokens, Some(200));
    assert_eq!(c.keep_recent_tokens, Some(300));
    assert_eq!(c.exit_transcript_turns, Some(0));
    assert!(!c.syntax_highlighting);
    assert_eq!(c.subagents_max_concurrent, 2);
    assert_eq!(c.subagents_timeout, Duration::from_secs(45));
}

#[test]
fn env_overrides_file_and_flags_override_env() {
    let d = trusted_dirs();
    write(&project_file(&d), BASIC);
    let env = [
        ("MINICODE_BASE_URL", "http://env.example"),
        ("MINICODE_MODEL", "env-model"),
        ("MINICODE_API_KEY", "sk-env"),
    ];
    let c = load(&d, &env, &Overrides::default()).unwrap();
    assert_eq!(c.base_url, "http://env.example");
    assert_eq!(c.model, "env-model");
    assert_eq!(c.api_key.as_ref().unwrap().expose(), "sk-env");
    assert_eq!(c.api_key_env.as_deref(), Some("MINICODE_API_KEY"));

    let flags = Overrides {
        model: Some("flag-model".into()),
        base_url: Some("http://flag.example".into()),
        ..Overrides::default()
    };
    let c = load(&d, &env, &flags).unwrap();
    assert_eq!(c.base_url, "http://flag.example");
    assert_eq!(c.model, "flag-model");
}

#[test]
fn empty_env_values_count_as_unset() {
    let d = trusted_dirs();
    write(&project_file(&d), BASIC);
    let c = load(&d, &[("MINICODE_MODEL", "")], &Overrides::default()).unwrap();
    assert_eq!(c.model, "file-model");
}

#[test]
fn explicit_config_path_wins_and_must_exist() {
    let d = dirs();
    write(&project_file(&d), BASIC);
    let other = d.home.join("other.toml");
    write(
        &other,
        "[model]\nbase_url = \"http://other\"\nname = \"other\"\n",
    );
    let flags = Overrides {
        config_path: Some(other.clone()),
        ..Overrides::default()
    };
    let c = load(&d, &[], &flags).unwrap();
    assert_eq!(c.model, "other");
    assert_eq!(c.sources, vec![other.clone()]);

    let missing = Overrides {
        config_path: Some(d.home.join("nope.toml")),
        ..Overrides::default()
    };
    let err = load(&d, &[], &missing).unwrap_err();
    assert!(matches!(err, ConfigError::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("nope.toml"));
}

#[test]
fn xdg_config_home_is_used_then_home_dot_config() {
    let d = dirs();
    let xdg = d.home.join("xdg");
    write(
        &xdg.join("minicode/config.toml"),
        "[model]\nbase_url = \"http://x\"\nname = \"xdg\"\n",
    );
    write(
        &d.home.join(".config/minicode/config.toml"),
        "[model]\nbase_url = \"http://h\"\nname = \"home\"\n",
    );
    let xdg_s = xdg.to_string_lossy().to_string();
    let c = load(&d, &[("XDG_CONFIG_HOME", &xdg_s)], &Overrides::default()).unwrap();
    assert_eq!(c.model, "xdg");
    let c = load(&d, &[("XDG_CONFIG_HOME", "")], &Overrides::default()).unwrap();
    assert_eq!(c.model, "home");
    let c = load(&d, &[], &Overrides::default()).unwrap();
    assert_eq!(c.model, "home");
}

#[test]
fn project_file_wins_over_user_file() {
    let d = dirs();
    write(&project_file(&d), BASIC);
    write(
        &user_file(&d),
        &format!(
            "{}[model]\nbase_url = \"http://h\"\nname = \"home\"\n",
            trust_line(&d)
        ),
    );
    assert_eq!(
        load(&d, &[], &Overrides::default()).unwrap().model,
        "file-model"
    );
}

#[test]
fn unknown_field_is_refused_naming_file_and_field() {
    let d = dirs();
    write(
        &project_file(&d),
        "[model]\nbase_url = \"http://x\"\nname = \"m\"\ntemperature = 1\n",
    );
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ConfigError::Field { line: 4, .. }), "{err:?}");
    assert!(text.contains("config.toml"), "{text}");
    assert!(text.contains("model.temperature"), "{text}");
}

#[test]
fn unknown_table_is_refused() {
    let d = dirs();
    write(&project_file(&d), "[modle]\nname = \"m\"\n");
    let text = load(&d, &[], &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("`modle`"), "{text}");
}

#[test]
fn wrong_type_is_refused_naming_the_field_without_the_value() {
    let d = dirs();
    write(
        &project_file(&d),
        "[model]\nbase_url = \"http://x\"\nname = \"m\"\ncontext_window = \"sk-test-7f3a9c1e55d2b8a0\"\n",
    );
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("model.context_window"), "{text}");
    assert!(text.contains("line 4"), "{text}");
    assert_no_key(&err);

    let d = dirs();
    write(
        &project_file(&d),
        "[model]\nbase_url = \"http://x\"\nname = \"m\"\napi_key = 12345\n",
    );
    let text = load(&d, &[], &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("model.api_key"), "{text}");
    assert!(!text.contains("12345"), "{text}");
}

#[test]
fn missing_required_field_names_file_and_field() {
    let d = trusted_dirs();
    write(&project_file(&d), "[model]\nbase_url = \"http://x\"\n");
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            ConfigError::Required {
                field: "model.name",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(text.contains("config.toml"), "{text}");
    // The environment can supply what the file lacks.
    let c = load(&d, &[("MINICODE_MODEL", "m")], &Overrides::default()).unwrap();
    assert_eq!(c.model, "m");
}

#[test]
fn key_is_optional_for_local_servers() {
    let d = trusted_dirs();
    write(
        &project_file(&d),
        "[model]\nbase_url = \"http://127.0.0.1:8080/v1\"\nname = \"m\"\n",
    );
    let c = load(&d, &[], &Overrides::default()).unwrap();
    assert!(c.api_key.is_none());
    assert!(c.api_key_env.is_none());
}

#[test]
fn parse_error_never_echoes_the_line() {
    let d = dirs();
    // Unquoted key: the classic mistake, and exactly the line that must not be printed.
    write(
        &project_file(&d),
        "[model]\nbase_url = \"http://x\"\nname = \"m\"\napi_key = sk-test-7f3a9c1e55d2b8a0\n",
    );
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(
        matches!(err, ConfigError::Syntax { line: 4, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("config.toml"), "{err}");
    assert_no_key(&err);

    let d = dirs();
    write(
        &project_file(&d),
        "[model]\napi_key = \"sk-test-7f3a9c1e55d2b8a0\n",
    );
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err:?}");
    assert_no_key(&err);
}

#[test]
fn debug_output_hides_the_key() {
    let d = trusted_dirs();
    write(&project_file(&d), BASIC);
    let c = load(&d, &[], &Overrides::default()).unwrap();
    let shown = format!("{c:?} {}", c.api_key.as_ref().unwrap());
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("***"));
}

#[test]
fn directory_in_place_of_file_is_an_error_not_a_fall_through() {
    let d = dirs();
    fs::create_dir_all(project_file(&d)).unwrap();
    write(&d.home.join(".config/minicode/config.toml"), BASIC);
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::Unreadable { .. }), "{err:?}");
    assert!(err.to_string().contains("directory"), "{err}");
}

#[test]
fn broken_symlink_is_an_error_not_a_fall_through() {
    let d = dirs();
    fs::create_dir_all(d.launch.join(".minicode")).unwrap();
    std::os::unix::fs::symlink(d.home.join("gone.toml"), project_file(&d)).unwrap();
    write(&d.home.join(".config/minicode/config.toml"), BASIC);
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::Unreadable { .. }), "{err:?}");
    assert!(err.to_string().contains("broken symbolic link"), "{err}");
}

#[test]
fn unreadable_file_is_an_error_not_a_fall_through() {
    use std::os::unix::fs::PermissionsExt;
    let d = dirs();
    write(&project_file(&d), BASIC);
    fs::set_permissions(project_file(&d), fs::Permissions::from_mode(0o000)).unwrap();
    if fs::read(project_file(&d)).is_ok() {
        return; // running as root: permissions cannot make the file unreadable
    }
    write(&d.home.join(".config/minicode/config.toml"), BASIC);
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::Unreadable { .. }), "{err:?}");
    assert_no_key(&err);
}

#[test]
fn api_key_and_api_key_env_together_are_refused() {
    let d = trusted_dirs();
    write(
        &project_file(&d),
        &format!("{BASIC}api_key_env = \"MY_KEY\"\n"),
    );
    let err = load(&d, &[("MY_KEY", "x")], &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("model.api_key_env"), "{err}");
    assert_no_key(&err);
}

#[test]
fn api_key_env_naming_an_unset_variable_means_no_key() {
    let d = trusted_dirs();
    write(
        &project_file(&d),
        "[model]\nbase_url = \"http://x\"\nname = \"m\"\napi_key_env = \"MY_KEY\"\n",
    );
    let c = load(&d, &[], &Overrides::default()).unwrap();
    assert!(c.api_key.is_none());
    assert_eq!(c.api_key_env.as_deref(), Some("MY_KEY"));
}

/// A workspace with the mock server configured (trusted) and `api_key_env` naming a variable
/// nobody sets.
fn unset_key_workspace(server: &crate::support::mock_openai::MockServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), server);
    let file = dir.path().join(".minicode/config.toml");
    let text = fs::read_to_string(&file).unwrap();
    write(
        &file,
        &format!(
            "{}\napi_key_env = \"MINICODE_IT_UNSET_KEY_31\"\n",
            text.trim_end()
        ),
    );
    dir
}

#[test]
fn an_unset_key_variable_works_with_a_server_that_needs_no_key() {
    use crate::support::mock_openai::{MockServer, text_reply};
    let server = MockServer::start_in_thread(vec![text_reply("no key needed", 4)]);
    let dir = unset_key_workspace(&server);
    let out = crate::support::binary::command(dir.path())
        .arg("hi")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no key needed\n");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[test]
fn a_server_asking_for_a_key_gets_a_hint_naming_the_unset_variable() {
    use crate::support::mock_openai::{MockServer, error_reply};
    let server = MockServer::start_in_thread(vec![error_reply(401, "missing api key")]);
    let dir = unset_key_workspace(&server);
    let out = crate::support::binary::command(dir.path())
        .arg("hi")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed run, as documented: {err}"
    );
    assert!(err.contains("authentication failed (401)"), "{err}");
    assert!(
        err.contains("MINICODE_IT_UNSET_KEY_31") && err.contains("is not set"),
        "names the variable to set: {err}"
    );
}

#[test]
fn invalid_values_are_refused() {
    for (extra, field) in [
        ("[model]\ncontext_window = 0\n", "model.context_window"),
        ("[model]\nmax_tokens = 0\n", "model.max_tokens"),
        ("[model]\nmax_tool_calls = 0\n", "model.max_tool_calls"),
        (
            "[model]\nrequest_timeout_secs = 0\n",
            "model.request_timeout_secs",
        ),
        (
            "[tools]\nbash_timeout_secs = 601\n",
            "tools.bash_timeout_secs",
        ),
        ("[tools]\nmax_rounds = 0\n", "tools.max_rounds"),
        (
            "[subagents]\nmax_concurrent = 0\n",
            "subagents.max_concurrent",
        ),
        (
            "[subagents]\nmax_concurrent = 17\n",
            "subagents.max_concurrent",
        ),
        ("[subagents]\ntimeout_secs = 0\n", "subagents.timeout_secs"),
        ("[model]\nname = \"\"\n", "model.name"),
        ("[model]\nbase_url = \"\"\n", "model.base_url"),
        ("[model]\nbase_url = \"ftp://x\"\n", "model.base_url"),
        ("[model]\napi_key = \"\"\n", "model.api_key"),
        ("[model]\ncontext_window = -5\n", "model.context_window"),
        (
            "[model]\nstream_idle_timeout_secs = 86401\n",
            "model.stream_idle_timeout_secs",
        ),
        (
            "[model]\ncontext_window = 16777217\n",
            "model.context_window",
        ),
        ("[model]\nmax_tokens = 1048577\n", "model.max_tokens"),
        ("[model]\nmax_tool_calls = 1025\n", "model.max_tool_calls"),
        ("[tools]\nmax_rounds = 100001\n", "tools.max_rounds"),
        (
            "[tools]\noutputs_max_file_bytes = 1073741825\n",
            "tools.outputs_max_file_bytes",
        ),
        (
            "[tools]\noutputs_max_bytes = 17179869185\n",
            "tools.outputs_max_bytes",
        ),
        (
            "[tools]\noutputs_max_age_days = 366\n",
            "tools.outputs_max_age_days",
        ),
        (
            "[subagents]\ntimeout_secs = 86401\n",
            "subagents.timeout_secs",
        ),
        ("[goal]\nmax_rounds = 100001\n", "goal.max_rounds"),
        (
            "[ui]\nexit_transcript_turns = 1000001\n",
            "ui.exit_transcript_turns",
        ),
        (
            "[mcp_servers.s]\ncommand = \"x\"\ncall_timeout_secs = 86401\n",
            "mcp_servers.call_timeout_secs",
        ),
    ] {
        let d = trusted_dirs();
        // Fill in whatever the case leaves out through the environment.
        write(&project_file(&d), extra);
        let mut vars = Vec::new();
        if !extra.contains("base_url =") {
            vars.push(("MINICODE_BASE_URL", "http://x"));
        }
        if !extra.contains("name =") {
            vars.push(("MINICODE_MODEL", "m"));
        }
        let err = load(&d, &vars, &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains(field), "{extra}: {err}");
    }
}

#[test]
fn a_huge_timeout_is_a_config_error_naming_the_field_and_the_limit_not_an_abort() {
    let server = crate::support::mock_openai::MockServer::start_in_thread(vec![]);
    let dir = tempfile::tempdir().unwrap();
    crate::support::binary::write_config(dir.path(), &server);
    let file = dir.path().join(".minicode/config.toml");
    let text = fs::read_to_string(&file).unwrap();
    for field in ["request_timeout_secs", "stream_idle_timeout_secs"] {
        write(
            &file,
            &format!("{}\n{field} = 9223372036854775807\n", text.trim_end()),
        );
        let out = crate::support::binary::command(dir.path())
            .arg("hi")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(
            err.contains(&format!("`model.{field}`: must be between 1 and 86400")),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert_eq!(server.request_count(), 0);
}

#[test]
fn env_alone_is_a_usable_configuration() {
    let d = dirs();
    let vars = [("MINICODE_BASE_URL", "http://x"), ("MINICODE_MODEL", "m")];
    let c = load(&d, &vars, &Overrides::default()).unwrap();
    assert_eq!(c.model, "m");
    assert!(c.sources.is_empty());
    let err = load(&d, &vars[..1], &Overrides::default()).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Required {
                field: "model.name",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn demo_needs_nothing() {
    let d = trusted_dirs();
    let c = load(
        &d,
        &[],
        &Overrides {
            demo: true,
            ..Overrides::default()
        },
    )
    .unwrap();
    assert_eq!(c.provider, ProviderKind::Demo);
    assert_eq!(c.model, "demo");
    assert!(c.api_key.is_none());

    let d = trusted_dirs();
    write(
        &project_file(&d),
        "[model]\nprovider = \"demo\"\n[tools]\nmax_rounds = 3\n",
    );
    let c = load(&d, &[], &Overrides::default()).unwrap();
    assert_eq!(c.provider, ProviderKind::Demo);
    assert_eq!(c.max_rounds, 3);
}

#[test]
fn unknown_provider_is_refused() {
    let d = dirs();
    write(&project_file(&d), "[model]\nprovider = \"anthropic\"\n");
    let text = load(&d, &[], &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("model.provider"), "{text}");
}

#[test]
fn nothing_configured_gives_a_how_to_naming_the_user_file_minicode_reads() {
    let d = dirs();
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::Missing { .. }), "{err:?}");
    let text = err.to_string();
    let user_file = d.home.join(".config/minicode/config.toml");
    for needle in [
        "config/config.example.toml",
        "MINICODE_BASE_URL",
        "--demo",
        "minicode init",
        user_file.to_str().unwrap(),
    ] {
        assert!(text.contains(needle), "{needle} missing from: {text}");
    }
}

#[test]
fn shipped_example_file_parses() {
    let d = dirs();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/config.example.toml");
    let flags = Overrides {
        config_path: Some(example),
        ..Overrides::default()
    };
    let c = load(&d, &[("OPENAI_API_KEY", "sk-x")], &flags).unwrap();
    assert_eq!(c.provider, ProviderKind::OpenAi);
}

#[test]
fn log_level_comes_from_minicode_log_else_the_mode_default() {
    use minicode::logging::filter_directive;
    assert_eq!(filter_directive(None, false), None);
    assert_eq!(filter_directive(None, true).as_deref(), Some("info"));
    assert_eq!(filter_directive(Some(""), true).as_deref(), Some("info"));
    assert_eq!(filter_directive(Some("off"), true), None);
    assert_eq!(filter_directive(Some("OFF"), true), None);
    assert_eq!(
        filter_directive(Some("minicode=trace"), false).as_deref(),
        Some("minicode=trace")
    );
}

#[test]
fn logging_writes_to_the_data_dir_and_flushes_on_drop() {
    // Installing the global subscriber changes the whole process: do it in a child of its own,
    // without MINICODE_LOG, so default_on gives `info`.
    let name = "config::logging_writes_to_the_data_dir_and_flushes_on_drop";
    if !crate::support::isolated::in_child(name, &[], &[minicode::logging::ENV_LOG]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let guard = minicode::logging::init(tmp.path(), true, None)
        .expect("no export to start")
        .expect("logging starts");
    tracing::info!(target: "minicode", marker = "c0ffee", "hello from the test");
    drop(guard);
    let logs = tmp.path().join(".minicode/logs");
    let mut text = String::new();
    for entry in fs::read_dir(&logs).unwrap() {
        text.push_str(&fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    assert!(text.contains("c0ffee"), "log was: {text:?}");
    let name = fs::read_dir(&logs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    assert!(
        name.to_string_lossy().starts_with("minicode.log."),
        "{name:?}"
    );
}

#[test]
fn openai_s_own_service_reads_openai_api_key_when_nothing_names_a_key() {
    let d = dirs();
    write(
        &user_file(&d),
        "[model]\nbase_url = \"https://api.openai.com/v1\"\nname = \"gpt-test\"\n",
    );
    let c = load(&d, &[("OPENAI_API_KEY", KEY)], &Overrides::default()).unwrap();
    assert_eq!(c.api_key.as_ref().map(|k| k.expose()), Some(KEY));
    assert_eq!(c.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    // Another server does not get it.
    write(
        &user_file(&d),
        "[model]\nbase_url = \"http://127.0.0.1:8080/v1\"\nname = \"local\"\n",
    );
    let c = load(&d, &[("OPENAI_API_KEY", KEY)], &Overrides::default()).unwrap();
    assert!(c.api_key.is_none());
    // A configured variable wins.
    write(
        &user_file(&d),
        "[model]\nbase_url = \"https://api.openai.com/v1\"\nname = \"g\"\napi_key_env = \"MY_KEY\"\n",
    );
    let c = load(
        &d,
        &[("OPENAI_API_KEY", KEY), ("MY_KEY", "sk-mine")],
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.api_key.as_ref().map(|k| k.expose()), Some("sk-mine"));
}

#[test]
fn lsp_table_is_laid_key_by_key_and_checked() {
    let d = trusted_dirs();
    write(
        &user_file(&d),
        &format!(
            "{}[lsp]\ntimeout_ms = 1500\nwarnings = true\n[lsp.servers.python]\ncommand = \"basedpyright-langserver\"\nargs = [\"--stdio\"]\n",
            trust_line(&d)
        ),
    );
    write(
        &project_file(&d),
        &format!("{BASIC}[lsp]\nmax_errors = 2\n[lsp.servers.go]\ncommand = \"gopls\"\n"),
    );
    let config = load(&d, &[], &Overrides::default()).unwrap();
    let lsp = &config.lsp;
    assert!(lsp.enabled);
    assert_eq!(lsp.timeout, std::time::Duration::from_millis(1500));
    assert_eq!(lsp.start_timeout, std::time::Duration::from_secs(10));
    assert_eq!(lsp.max_errors, 2);
    assert!(lsp.warnings);
    assert_eq!(lsp.servers["python"].command, "basedpyright-langserver");
    assert_eq!(lsp.servers["python"].args, vec!["--stdio"]);
    assert_eq!(lsp.servers["go"].command, "gopls");

    write(
        &project_file(&d),
        &format!("{BASIC}[lsp]\ntimeout_ms = 0\n"),
    );
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("lsp.timeout_ms"), "{err}");
    write(
        &project_file(&d),
        &format!("{BASIC}[lsp.servers.cobol]\ncommand = \"cobol-ls\"\n"),
    );
    let err = load(&d, &[], &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("lsp.servers"), "{err}");
}

#[test]
fn an_untrusted_workspace_may_not_name_a_language_server() {
    let d = dirs();
    write(
        &project_file(&d),
        "[lsp]\nmax_errors = 1\n[lsp.servers.python]\ncommand = \"./evil.sh\"\n",
    );
    match load(&d, &[], &Overrides::default()).unwrap_err() {
        ConfigError::UntrustedWorkspace { fields, .. } => {
            assert!(fields.contains(&"lsp.servers"), "{fields:?}")
        }
        other => panic!("{other}"),
    }
    // Without servers the table is the workspace's to set.
    write(
        &project_file(&d),
        "[lsp]\nmax_errors = 1\nenabled = false\n",
    );
    let config = load(
        &d,
        &[],
        &Overrides {
            demo: true,
            ..Overrides::default()
        },
    )
    .unwrap();
    assert_eq!(config.lsp.max_errors, 1);
    assert!(!config.lsp.enabled);
}

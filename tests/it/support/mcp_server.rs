//! A real MCP server for the tests, built with rmcp's server side and run as a child process:
//! this test binary started again to run only [`serve`], which speaks MCP on stdin and on file
//! descriptor 3 (the shell in [`command`] points fd 3 at the real stdout and stdout at stderr,
//! so the test harness's own lines never mix into the protocol).
//!
//! What it does is chosen through its environment, which the tests set in the server's config
//! (`env`), as a user would:
//! - `IT_MCP_MODE`: `paged` (default: 8 tools over 3 pages of `tools/list`), `twenty` (20 tools
//!   on one page), `slow` (answers nothing until the file `IT_MCP_GATE` exists).
//! - `IT_MCP_RECORD`: a file each call is appended to (`<tool> <arguments>`), so a test can
//!   prove what reached the server.
//! - `IT_MCP_PID`: a file the server writes `<its pid> <a grandchild's pid>` to at start (it
//!   starts `sleep 600` as that grandchild), for the no-orphan tests.
//! - `IT_MCP_IGNORE_TERM=1`: ignore SIGTERM (the client must then SIGKILL it).
//! - `IT_MCP_START_DELAY_MS`: sleep this long before serving (a slow start-up).
//! - `IT_MCP_ENV_DUMP`: a path prefix; at start the server writes its own environment to
//!   `<prefix>.env` and its parent's (minicode's `/proc/<ppid>/environ`) to `<prefix>.parent`.
//!
//! Tools: `echo {text, times?}`, `sleep {secs}`, `fail` (isError), `crash` (the server exits
//! with code 3 mid-call), `env` (its environment), `change` (adds the tool `added` and sends
//! `tools/list_changed`), `picture` (text, an image and an embedded resource), `odd.name/with spaces` (echoes).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

const MODE: &str = "IT_MCP_MODE";

/// The command and arguments that start this server (for `[mcp_servers.<id>]` or
/// `tools::mcp::ServerConfig`).
pub fn command() -> (String, Vec<String>) {
    let exe = std::env::current_exe().unwrap();
    (
        "sh".to_string(),
        vec![
            "-c".to_string(),
            "exec \"$0\" support::mcp_server::serve --exact --ignored --nocapture --test-threads=1 3>&1 1>&2"
                .to_string(),
            exe.to_str().unwrap().to_string(),
        ],
    )
}

/// How many MCP servers a `minicode` run in `ws` (with `MINICODE_LOG=info`) has logged as
/// ready so far.
pub fn ready_servers(ws: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(ws.join(".minicode/logs")) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("minicode.log"))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .matches("mcp server ready")
                .count()
        })
        .sum()
}

/// A `[mcp_servers.<id>]` table starting this server with `env` (TOML inline values).
pub fn toml_table(id: &str, env: &[(&str, &str)], extra: &str) -> String {
    let (command, args) = command();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
    format!(
        "[mcp_servers.{id}]\ncommand = {command:?}\nargs = [{}]\nenv = {{ {} }}\n{extra}\n",
        args.join(", "),
        env.join(", ")
    )
}

/// The server itself, not a test: ignored in a normal run (where it would prove nothing) and
/// started only through [`command`], which passes `--ignored`.
#[test]
#[ignore = "not a test: the MCP server that support::mcp_server::command starts"]
fn serve() {
    assert!(
        std::env::var(MODE).is_ok(),
        "support::mcp_server::serve is the MCP test server: start it through command() with {MODE} set"
    );
    // SAFETY: fd 3 is the protocol's stdout, opened by the shell that started us; the test
    // harness owns fd 1.
    let out = unsafe { std::os::fd::FromRawFd::from_raw_fd(3) };
    // The protocol's pipe must not leak into the grandchild `serve_on` may start.
    unsafe {
        libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    serve_on(out);
}

/// Serves MCP on stdin and `out` as the environment says (see the module doc), then exits
/// the process. Also what the `mcp` benchmark's binary runs as its own test server.
pub fn serve_on(out: std::fs::File) -> ! {
    let mode = std::env::var(MODE).unwrap_or_else(|_| "paged".to_string());
    if let Ok(ms) = std::env::var("IT_MCP_START_DELAY_MS") {
        std::thread::sleep(std::time::Duration::from_millis(ms.parse().unwrap()));
    }
    if std::env::var("IT_MCP_IGNORE_TERM").is_ok() {
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    if let Ok(prefix) = std::env::var("IT_MCP_ENV_DUMP") {
        let own: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
        std::fs::write(format!("{prefix}.env"), own.join("\n")).unwrap();
        // SAFETY: getppid only reads this process's parent id.
        let parent = unsafe { libc::getppid() };
        let environ = std::fs::read(format!("/proc/{parent}/environ")).unwrap_or_default();
        std::fs::write(format!("{prefix}.parent"), environ).unwrap();
    }
    if let Ok(path) = std::env::var("IT_MCP_PID") {
        // Never waited for on purpose: it must die with the server's process group.
        #[allow(clippy::zombie_processes)]
        let grandchild = std::process::Command::new("sleep")
            .arg("600")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::fs::write(path, format!("{} {}", std::process::id(), grandchild.id())).unwrap();
    }
    if mode == "slow" {
        let gate = std::env::var("IT_MCP_GATE").unwrap();
        while !std::path::Path::new(&gate).exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    eprintln!("test MCP server starting in mode {mode}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let out = tokio::fs::File::from_std(out);
        let server = TestServer {
            mode,
            added: Arc::new(AtomicBool::new(false)),
        };
        let running = server.serve((tokio::io::stdin(), out)).await.unwrap();
        let _ = running.waiting().await;
    });
    std::process::exit(0);
}

struct TestServer {
    mode: String,
    added: Arc<AtomicBool>,
}

fn schema(value: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(value.as_object().unwrap().clone())
}

fn tool(name: &str, description: &str, input: Value) -> Tool {
    Tool::new(name.to_string(), description.to_string(), schema(input))
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

impl TestServer {
    fn all_tools(&self) -> Vec<Tool> {
        if self.mode == "twenty" {
            return (1..=20)
                .map(|i| {
                    tool(
                        &format!("tool_{i:02}"),
                        "Looks something up in the test catalogue and returns what it found.",
                        json!({
                            "type": "object",
                            "properties": {"query": {"type": "string", "description": "What to look up"}},
                            "required": ["query"]
                        }),
                    )
                })
                .collect();
        }
        let mut tools = vec![
            tool(
                "echo",
                "Echoes the text back.",
                json!({
                    "$schema": "http://json-schema.org/draft-07/schema#",
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "The text"},
                        "times": {"type": "integer"}
                    },
                    "required": ["text"],
                    "additionalProperties": false
                }),
            ),
            tool(
                "sleep",
                "Sleeps for a while.",
                json!({"type": "object", "properties": {"secs": {"type": "number"}}}),
            ),
            tool("fail", "Always fails.", no_args()),
            tool("crash", "Makes the server exit.", no_args()),
            tool("env", "Lists the server's environment.", no_args()),
            tool("change", "Adds a tool.", no_args()),
            tool("picture", "Returns a picture.", no_args()),
            tool(
                "odd.name/with spaces",
                "A tool with a name to clean.",
                no_args(),
            ),
        ];
        if self.added.load(Ordering::SeqCst) {
            tools.push(tool("added", "Added by change.", no_args()));
        }
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.all_tools();
        if self.mode == "twenty" {
            return Ok(ListToolsResult::with_all_items(tools));
        }
        // Three pages: [0..3], [3..6], [6..].
        let page: usize = request
            .and_then(|r| r.cursor)
            .map(|c| c.strip_prefix("page-").unwrap().parse().unwrap())
            .unwrap_or(0);
        let start = page * 3;
        let end = (start + 3).min(tools.len());
        let mut result = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            result.next_cursor = Some(format!("page-{}", page + 1));
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        if let Ok(path) = std::env::var("IT_MCP_RECORD") {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            writeln!(file, "{} {}", request.name, Value::Object(args.clone())).unwrap();
        }
        let text = |t: String| Ok(CallToolResult::success(vec![ContentBlock::text(t)]).into());
        match request.name.as_ref() {
            "echo" | "odd.name/with spaces" | "added" => {
                let said = args.get("text").and_then(Value::as_str).unwrap_or("");
                let times = args.get("times").and_then(Value::as_u64).unwrap_or(1);
                text(said.repeat(times as usize))
            }
            name if name.starts_with("tool_") => text(format!("{name} found it")),
            "sleep" => {
                let secs = args.get("secs").and_then(Value::as_f64).unwrap_or(600.0);
                tokio::time::sleep(std::time::Duration::from_secs_f64(secs)).await;
                text("slept".to_string())
            }
            "fail" => {
                Ok(CallToolResult::error(vec![ContentBlock::text("it failed on purpose")]).into())
            }
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "env" => {
                let mut vars: Vec<String> =
                    std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                vars.sort();
                text(vars.join("\n"))
            }
            "change" => {
                self.added.store(true, Ordering::SeqCst);
                let peer = context.peer.clone();
                tokio::spawn(async move {
                    let _ = peer.notify_tool_list_changed().await;
                });
                text("changed".to_string())
            }
            "picture" => Ok(CallToolResult::success(vec![
                ContentBlock::text("a picture follows"),
                ContentBlock::image("AAECAwQF", "image/png"),
                ContentBlock::resource(ResourceContents::text("hello world", "file:///notes.txt")),
            ])
            .into()),
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

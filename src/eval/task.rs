//! Task files: one TOML file per task, read strictly (an unknown key or a wrong type is an
//! error naming the file and the field), with paths made absolute against the file's folder.
//! A suite is a folder of them (or one file named on the command line).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The largest task file read; a task is a few lines.
const MAX_TASK_BYTES: u64 = 256 * 1024;

/// How a run is expected to end (`expect_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    Completed,
    Failed,
    Interrupted,
    RoundLimit,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
            Status::RoundLimit => "round_limit",
        }
    }
}

/// The scripted answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    Approve,
    Deny,
}

impl Answer {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Answer::Approve => "approve",
            Answer::Deny => "deny",
        }
    }
}

/// `[[expect_approval]]`: the run must ask about `tool`, and the script answers `answer`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExpectApproval {
    pub(crate) tool: String,
    pub(crate) answer: Answer,
}

/// A string or a list of strings, for fields where one value is the common case.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    prompt: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    workspace: Option<PathBuf>,
    #[serde(default)]
    setup: Vec<String>,
    #[serde(default)]
    checks: Vec<String>,
    #[serde(default)]
    tools_in_order: Vec<String>,
    #[serde(default)]
    forbidden_tools: Vec<String>,
    #[serde(default)]
    max_tool_calls: Option<u32>,
    #[serde(default)]
    max_rounds: Option<u32>,
    #[serde(default)]
    expect_approval: Vec<ExpectApproval>,
    /// Answer of every approval `expect_approval` does not name (default `approve`).
    #[serde(default)]
    other_approvals: Option<Answer>,
    #[serde(default)]
    final_contains: Option<OneOrMany>,
    #[serde(default)]
    final_matches: Option<String>,
    #[serde(default)]
    expect_status: Option<Status>,
    /// Seconds.
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    min_pass_rate: Option<f64>,
}

/// One task, checked and with absolute paths.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    /// `suite/stem`: unique in a report.
    pub(crate) name: String,
    pub(crate) file: PathBuf,
    pub(crate) description: Option<String>,
    pub(crate) prompt: String,
    pub(crate) workspace: Option<PathBuf>,
    pub(crate) setup: Vec<String>,
    pub(crate) checks: Vec<String>,
    pub(crate) tools_in_order: Vec<String>,
    pub(crate) forbidden_tools: Vec<String>,
    pub(crate) max_tool_calls: Option<u32>,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) expect_approval: Vec<ExpectApproval>,
    pub(crate) other_approvals: Answer,
    pub(crate) final_contains: Vec<String>,
    pub(crate) final_matches: Option<String>,
    pub(crate) expect_status: Status,
    pub(crate) timeout: std::time::Duration,
    pub(crate) min_pass_rate: f64,
}

/// Default per-run limit when a task sets none.
const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// Every task of the suites named, in order (a folder's `*.toml` files sorted by name).
pub(crate) fn load_suites(paths: &[PathBuf]) -> Result<Vec<Task>, String> {
    let mut tasks: Vec<Task> = Vec::new();
    for path in paths {
        let (suite, files) = if path.is_dir() {
            (path.as_path(), task_files(path)?)
        } else if path.is_file() {
            (path.parent().unwrap_or(Path::new(".")), vec![path.clone()])
        } else {
            return Err(format!(
                "{}: no such suite folder or task file",
                path.display()
            ));
        };
        let suite_name = suite
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "suite".to_string());
        for file in files {
            let task = load(&file, &suite_name)?;
            if tasks.iter().any(|t| t.name == task.name) {
                return Err(format!(
                    "{}: a task named {} is already in the run",
                    file.display(),
                    task.name
                ));
            }
            tasks.push(task);
        }
    }
    if tasks.is_empty() {
        return Err("no task files (*.toml) in the suites named".to_string());
    }
    Ok(tasks)
}

fn task_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Reads and checks one task file.
pub(crate) fn load(file: &Path, suite: &str) -> Result<Task, String> {
    use std::io::Read;
    let named = |message: String| format!("{}: {message}", file.display());
    let mut text = String::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_TASK_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| named(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_TASK_BYTES {
        return Err(named("larger than 256 KiB".to_string()));
    }
    let raw: Raw = toml::from_str(&text).map_err(|e| named(toml_error(&text, &e)))?;
    let folder = file.parent().unwrap_or(Path::new("."));
    let stem = file
        .file_stem()
        .map_or_else(|| "task".to_string(), |s| s.to_string_lossy().into_owned());
    check(&raw).map_err(named)?;
    let workspace = match raw.workspace {
        Some(w) => {
            let path = folder.join(w);
            if !path.is_dir() {
                return Err(named(format!(
                    "workspace: {} is not a folder",
                    path.display()
                )));
            }
            Some(path)
        }
        None => None,
    };
    Ok(Task {
        name: format!("{suite}/{stem}"),
        file: file.to_path_buf(),
        description: raw.description,
        prompt: raw.prompt,
        workspace,
        setup: raw.setup,
        checks: raw.checks,
        tools_in_order: raw.tools_in_order,
        forbidden_tools: raw.forbidden_tools,
        max_tool_calls: raw.max_tool_calls,
        max_rounds: raw.max_rounds,
        expect_approval: raw.expect_approval,
        other_approvals: raw.other_approvals.unwrap_or(Answer::Approve),
        final_contains: match raw.final_contains {
            None => Vec::new(),
            Some(OneOrMany::One(s)) => vec![s],
            Some(OneOrMany::Many(v)) => v,
        },
        final_matches: raw.final_matches,
        expect_status: raw.expect_status.unwrap_or(Status::Completed),
        timeout: std::time::Duration::from_secs(raw.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS)),
        min_pass_rate: raw.min_pass_rate.unwrap_or(1.0),
    })
}

/// One line naming where the file is wrong: its line and the field written there.
fn toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim();
    let Some(span) = error.span() else {
        return message.to_string();
    };
    let start = span.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    let line = text[..start].rsplit('\n').next().unwrap_or("").to_string()
        + text[start..].split('\n').next().unwrap_or("");
    let field = line
        .split_once('=')
        .map(|(key, _)| key.trim().trim_matches('"'))
        .filter(|key| !key.is_empty() && !key.starts_with('['));
    match field {
        Some(field)
            if !message.contains(&format!("`{field}`")) && !message.starts_with("missing") =>
        {
            format!("line {line_no}, field `{field}`: {message}")
        }
        _ => format!("line {line_no}: {message}"),
    }
}

/// What serde cannot check: ranges and the pattern.
fn check(raw: &Raw) -> Result<(), String> {
    if raw.prompt.trim().is_empty() {
        return Err("prompt: is empty".to_string());
    }
    if let Some(rate) = raw.min_pass_rate
        && !(0.0..=1.0).contains(&rate)
    {
        return Err(format!("min_pass_rate: {rate} is not between 0 and 1"));
    }
    if raw.timeout == Some(0) {
        return Err("timeout: must be at least 1 second".to_string());
    }
    if let Some(pattern) = &raw.final_matches {
        super::expect::pattern(pattern).map_err(|e| format!("final_matches: {e}"))?;
    }
    Ok(())
}

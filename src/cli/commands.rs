//! Custom slash commands on the command line: finding them (a trusted workspace's
//! `.minicode/commands/`, then `commands/` beside the user config file), reading each Markdown
//! file (front matter, size cap, confinement), refusing names of built-in commands, and
//! `minicode commands`. What a command is and how it is filled in is `protocol::commands`'s.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::Failure;
use crate::protocol::CustomCommand;
use crate::sanitize::text::truncate;
use crate::sanitize::visible;

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The workspace's commands folder.
pub(crate) const WORKSPACE_DIR: &str = ".minicode/commands";
/// A command file larger than this is refused.
const MAX_BYTES: u64 = 64 * 1024;
/// At most this many files are read from one folder.
const MAX_FILES: usize = 200;

/// The commands found, and what was wrong on the way (shown as warnings).
#[derive(Debug, Clone, Default)]
pub(crate) struct Found {
    pub(crate) commands: Vec<CustomCommand>,
    pub(crate) warnings: Vec<String>,
}

/// One folder commands are read from.
struct Root {
    dir: PathBuf,
    label: String,
}

/// The names no custom command may take: every built-in of the full-screen session and ACP.
fn built_in(name: &str) -> bool {
    let slash = format!("/{name}");
    crate::tui::commands::COMMANDS
        .iter()
        .any(|(c, _)| *c == slash)
        || crate::acp::COMMANDS.iter().any(|(c, _, _)| *c == name)
}

fn roots(env: Env<'_>, workspace: &Path, trusted: bool) -> Vec<Root> {
    let mut roots = Vec::new();
    if trusted {
        roots.push(Root {
            dir: workspace.join(WORKSPACE_DIR),
            label: WORKSPACE_DIR.to_string(),
        });
    }
    if let Some(dir) =
        crate::config::user_config_path(env).and_then(|c| Some(c.parent()?.join("commands")))
    {
        let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let label = match home.as_deref().and_then(|h| dir.strip_prefix(h).ok()) {
            Some(rest) => format!("~/{}", rest.display()),
            None => dir.display().to_string(),
        };
        roots.push(Root { dir, label });
    }
    roots
}

/// The commands a session in `workspace` offers: the workspace's own only when `trusted` (an
/// untrusted workspace's folder is only noted), then the user's; the first of a name wins.
pub(crate) fn discover(env: Env<'_>, workspace: &Path, trusted: bool) -> Found {
    let mut found = Found::default();
    for root in roots(env, workspace, trusted) {
        read_root(&root, &mut found);
    }
    if !trusted && workspace.join(WORKSPACE_DIR).is_dir() {
        found.warnings.push(format!(
            "this workspace's commands ({WORKSPACE_DIR}/) are not offered: the workspace is not \
             trusted (`minicode trust`)"
        ));
    }
    found
}

fn read_root(root: &Root, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(&root.dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .take(MAX_FILES)
        .collect();
    paths.sort();
    for path in paths {
        let Some(name) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        let source = format!("{}/{}.md", root.label, name);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            found.warnings.push(format!(
                "custom command file {source} ignored: a command name is letters, digits, - and _"
            ));
            continue;
        }
        if built_in(&name) {
            found.warnings.push(format!(
                "custom command /{name} ({source}) ignored: it clashes with a built-in command"
            ));
            continue;
        }
        if let Some(first) = found.commands.iter().find(|c| c.name == name) {
            found.warnings.push(format!(
                "custom command /{name} ({source}) ignored: {} has the same name",
                first.source
            ));
            continue;
        }
        match read_command(&root.dir, &path) {
            Ok(text) => found.commands.push(parse(name, source, &text)),
            Err(why) => found
                .warnings
                .push(format!("custom command file {source} ignored: {why}")),
        }
    }
}

/// Reads one file confined to its folder (a link out of it is refused), as UTF-8 under the cap.
fn read_command(dir: &Path, path: &Path) -> Result<String, String> {
    use crate::fsutil::OpenError;
    let dir = dir.canonicalize().map_err(|e| e.to_string())?;
    let (file, _) = crate::fsutil::open_confined(&dir, path).map_err(|e| match e {
        OpenError::Outside => "it leads outside its folder".to_string(),
        other => other.to_string(),
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!("it is larger than {MAX_BYTES} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "it is not valid UTF-8".to_string())
}

/// The front matter (`---` lines around `key: value` pairs) and the body.
fn parse(name: String, source: String, text: &str) -> CustomCommand {
    let mut description = String::new();
    let mut argument_hint = None;
    let mut body = text;
    let opened = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"));
    if let Some(rest) = opened
        && let Some(end) = rest.find("\n---")
    {
        for line in rest[..end].lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value
                .trim()
                .trim_matches(|c| c == '"' || c == '\'')
                .to_string();
            match key.trim() {
                "description" => description = value,
                "argument-hint" => argument_hint = Some(value).filter(|v| !v.is_empty()),
                _ => {}
            }
        }
        let after = &rest[end + 4..];
        body = after.split_once('\n').map_or("", |(_, b)| b);
    }
    CustomCommand {
        name,
        description,
        argument_hint,
        source,
        body: body.trim().to_string(),
    }
}

/// `minicode commands`: one line per command (name, source, description) on stdout, what
/// discovery reported on stderr.
pub(super) fn list(env: Env<'_>, launch: &Path) -> Result<ExitCode, Failure> {
    let trusted = crate::config::workspace_trust(env, launch).is_trusted();
    let found = discover(env, launch, trusted);
    let mut err = std::io::stderr().lock();
    for warning in &found.warnings {
        let _ = writeln!(err, "minicode: warning: {}", visible(warning));
    }
    if found.commands.is_empty() {
        let places: Vec<String> = roots(env, launch, trusted)
            .into_iter()
            .map(|r| r.label)
            .collect();
        let _ = writeln!(
            err,
            "no custom commands found (looked in {}); a command is a Markdown file <name>.md",
            places.join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    let width = found
        .commands
        .iter()
        .map(|c| c.name.len() + 1)
        .max()
        .unwrap_or(0);
    let mut out = std::io::stdout().lock();
    for c in &found.commands {
        let _ = writeln!(
            out,
            "{:width$}  {}  {}",
            c.slash(),
            visible(&c.source),
            visible(&truncate(&c.description, 100)),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A one-shot prompt with its custom command filled in (`minicode /name args`). A prompt whose
/// first word is `/name` (no further `/`, so a path such as `/etc/hosts` is still a prompt)
/// that names no custom command is a usage error listing the commands there are: sending a
/// mistyped command to the model would cost a request and answer something else.
pub(super) fn expand_one_shot(found: &Found, prompt: String) -> Result<String, Failure> {
    if let Some((command, args)) = crate::protocol::find_custom(&found.commands, &prompt) {
        return Ok(command.expand(args));
    }
    let Some(name) = looks_like_command(&prompt) else {
        return Ok(prompt);
    };
    let names: Vec<String> = found.commands.iter().map(CustomCommand::slash).collect();
    let available = if names.is_empty() {
        "there are no custom commands here (`minicode commands` says where they are looked for)"
            .to_string()
    } else {
        format!("the custom commands here are: {}", names.join(", "))
    };
    Err(super::usage(format!(
        "unknown command `/{name}`: {available}. The built-in commands work in the full-screen \
         session; to send the text to the model as it is, put a word before it"
    )))
}

/// The name after the leading `/` when the first word looks like a command, not a path.
fn looks_like_command(prompt: &str) -> Option<&str> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let name = rest.split(char::is_whitespace).next().unwrap_or("");
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    plain.then_some(name)
}

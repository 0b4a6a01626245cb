//! Skills: folders of instructions (`<root>/<name>/SKILL.md` plus any files beside it) that the
//! model loads only when a task needs them. At start only each skill's name and description
//! are known ([`Skills`], found by `discover`); the body is read when the model calls the
//! `skill` tool ([`SkillTool`]) or when the agent injects it after a trigger word.
//!
//! This module owns discovery, the limits, confinement of every read to the skill's folder,
//! and what a loaded skill looks like to the model. It must not decide trust (the CLI passes
//! only the roots the user allows) and knows nothing of the agent, prompts or events: the agent
//! builds the system prompt's list and reports loads from the plain data here.

mod discover;
mod frontmatter;
mod load;
mod triggers;

pub use discover::{Root, WORKSPACE_DIRS, discover, untrusted_note, user_root, workspace_roots};

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Prepared, Tool, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{Message, Role, ToolKind, ToolSpec};
use crate::sanitize::text::floor_boundary;

/// The tool's name, as declared to the model and recorded in history.
pub(crate) const TOOL_NAME: &str = "skill";
/// The registry group the tool lives in.
pub(crate) const GROUP: &str = "skills";
/// The file every skill folder must have.
pub(crate) const SKILL_FILE: &str = "SKILL.md";
/// Size limit of `SKILL.md` and of any other file a skill loads.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Longest skill name, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Estimated tokens the system prompt's list of names and descriptions may take; skills past
/// it are listed by name only (see [`Skill::described`]).
pub const METADATA_TOKENS: u64 = 2000;
/// Estimated tokens of the names-only line for skills past [`METADATA_TOKENS`]; beyond it they
/// are only counted.
pub(crate) const NAMES_ONLY_TOKENS: u64 = 500;
/// Skill folders looked at per root; more are reported and ignored.
pub(crate) const MAX_SKILLS_PER_ROOT: usize = 256;
/// Trigger words per skill, and characters per trigger.
pub(crate) const MAX_TRIGGERS: usize = 32;
pub(crate) const MAX_TRIGGER_CHARS: usize = 64;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `.minicode/skills/` or `.agents/skills/` of a trusted workspace.
    Workspace,
    /// The user's own `$XDG_CONFIG_HOME/minicode/skills/`.
    User,
}

/// One valid skill, as discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// One paragraph, whitespace collapsed.
    pub description: String,
    /// Lower-cased trigger words or phrases.
    pub triggers: Vec<String>,
    /// The canonical folder; every file the skill loads must resolve inside it.
    pub(crate) dir: PathBuf,
    /// The root it came from, as shown to the user (`.minicode/skills`, `~/.config/…`).
    pub root: String,
    pub source: Source,
    /// Whether its description is in the system prompt; false past [`METADATA_TOKENS`], where
    /// it is listed by name only.
    pub described: bool,
}

/// Every skill found, in root order (first root first, names sorted within a root), and what
/// discovery had to report: invalid skills, names hidden by an earlier root, refused roots.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Vec<Skill>,
    warnings: Vec<String>,
}

impl Skills {
    /// Skills from a list (tests and library callers); marks which fit the metadata budget.
    pub(crate) fn new(mut skills: Vec<Skill>, warnings: Vec<String>) -> Self {
        discover::mark_described(&mut skills);
        Self { skills, warnings }
    }

    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Adds a line to report with discovery's (e.g. that an untrusted workspace's skills
    /// were ignored).
    pub(crate) fn push_warning(&mut self, message: String) {
        self.warnings.push(message);
    }

    /// What discovery reported, one line each; to be shown once.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skills one of whose triggers `text` mentions as a word (ignoring case), with the
    /// trigger that matched, in discovery order.
    pub fn triggered_by<'a>(&'a self, text: &str) -> Vec<(&'a Skill, &'a str)> {
        let lower = text.to_lowercase();
        self.skills
            .iter()
            .filter_map(|s| {
                let hit = s.triggers.iter().find(|t| triggers::mentions(&lower, t))?;
                Some((s, hit.as_str()))
            })
            .collect()
    }

    /// The tool the model loads skills with, sharing this catalog.
    pub fn tool(self: &Arc<Self>) -> Arc<dyn Tool> {
        Arc::new(SkillTool {
            skills: self.clone(),
        })
    }
}

/// What the model (or the agent, for a trigger) reads when a skill is loaded: its body, the
/// folder it lives in and the other files it may load. Starts with [`loaded_marker`].
pub fn load_body(skill: &Skill) -> Result<String, String> {
    load::body(skill)
}

/// How a successful load of `name`'s `SKILL.md` begins: history is searched for it to know
/// which skills a session has loaded (see [`loaded_in`]).
pub(crate) fn loaded_marker(name: &str) -> String {
    format!("<skill name=\"{name}\"")
}

/// The skills whose `SKILL.md` a `skill` call loaded successfully in `messages`, in the order
/// they were first loaded. A pure function of history, so a resumed session knows what the
/// live one had loaded, and compaction can name what it summarised away.
pub fn loaded_in(messages: &[Message]) -> Vec<String> {
    let mut pending: Vec<(&str, String)> = Vec::new();
    let mut loaded: Vec<String> = Vec::new();
    for message in messages {
        match message.role {
            Role::Assistant => {
                for call in message.tool_calls.iter().filter(|c| c.name == TOOL_NAME) {
                    if let Ok(args) = serde_json::from_str::<Args>(&call.arguments) {
                        pending.push((call.id.as_str(), args.name));
                    }
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or("");
                if let Some(at) = pending.iter().position(|(call, _)| *call == id) {
                    let (_, name) = pending.swap_remove(at);
                    if message.text().starts_with(&loaded_marker(&name)) && !loaded.contains(&name)
                    {
                        loaded.push(name);
                    }
                }
            }
            Role::System | Role::User => {}
        }
    }
    loaded
}

/// The arguments of a `skill` call, also as the agent writes them for a trigger load.
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) file: Option<String>,
}

const DESCRIPTION: &str = "Load a listed skill's instructions, or another `file` of its \
folder.";

/// The `skill` tool: reads a skill's `SKILL.md` or another file of its folder. It only reads,
/// inside the skill's folder, so it needs no approval.
pub(crate) struct SkillTool {
    skills: Arc<Skills>,
}

/// A checked call: the skill and the file of it to load (`None`: its `SKILL.md`).
pub(crate) struct Call {
    skill: Skill,
    file: Option<String>,
}

impl SkillTool {
    fn find(&self, args: &Args) -> Result<Call, String> {
        let Some(skill) = self.skills.get(&args.name) else {
            let names: Vec<&str> = self.skills.all().iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "unknown skill {:?}; available skills: {}",
                args.name,
                names.join(", ")
            ));
        };
        let file = match &args.file {
            Some(f) if f.trim().is_empty() || f == SKILL_FILE => None,
            Some(f) => Some(load::relative(f)?),
            None => None,
        };
        Ok(Call {
            skill: skill.clone(),
            file,
        })
    }
}

impl Typed for SkillTool {
    type Args = Args;
    type Checked = Call;

    fn check(&self, args: &Args, _ctx: &ToolCtx) -> Result<Call, String> {
        self.find(args)
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_NAME.into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "file": {"type": "string", "description": "default: SKILL.md"}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: Call, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let Call { skill, file } = call;
        let summary = match file {
            Some(file) => format!("{} · {file}", skill.name),
            None => skill.name.clone(),
        };
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        call: Call,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let Call { skill, file } = call;
            let job = tokio::task::spawn_blocking(move || match file {
                None => load::body(&skill),
                Some(file) => load::file(&skill, &file),
            });
            let loaded = tokio::select! {
                biased;
                _ = cancel.cancelled() => return ToolOutput::interrupted("interrupted by the user"),
                loaded = job => loaded,
            };
            match loaded {
                Ok(Ok(text)) => ToolOutput::ok(fit(ctx.secrets.redact(text), ctx.output_limit())),
                Ok(Err(e)) => ToolOutput::failed(e),
                Err(e) => ToolOutput::failed(format!("the skill could not be read: {e}")),
            }
        })
    }
}

/// Cuts a loaded text to what one tool result may hand the model (a small window), saying so.
pub(crate) fn fit(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let cut = floor_boundary(&text, limit);
    format!(
        "{}\n[cut after {cut} of {} bytes: the model's window allows no more in one result]",
        &text[..cut],
        text.len()
    )
}

#[cfg(test)]
mod schema_tests {
    use std::sync::Arc;

    use crate::tools::typed::schema_check::agrees;

    #[test]
    fn the_skill_schema_matches_its_argument_struct() {
        let skills = Arc::new(super::Skills::new(Vec::new(), Vec::new()));
        agrees(skills.tool().as_ref());
    }
}

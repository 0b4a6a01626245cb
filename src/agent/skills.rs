//! Skills in the core: which skills the session has loaded, loading the ones a user message
//! triggers, noticing the model's own `skill` calls, and the answer to `/skills`.
//!
//! A trigger load is written to history as what it is equivalent to, a `skill` call and its
//! result right after the user's message: history stays valid (every call answered), the
//! request still alternates for strict chat templates (user, assistant, tool), the session
//! keeps it, a resume shows it as a call, and the loaded set stays a function of history
//! (`tools::skills::loaded_in`), so it survives a resume and compaction can name it. Discovery,
//! limits and file access are `tools::skills`'s; this file only applies them to a session.

use std::sync::{Arc, Mutex};

use super::Emitter;
use crate::chat::{Message, ToolCall, ToolStatus};
use crate::protocol::{Event, SkillEntry, SkillState};
use crate::session::Session;
use crate::sync::lock;
use crate::tools::skills::{self, Skills};
use crate::tools::{ToolCtx, ToolOutput};

/// The names of the skills loaded in this session, shared with the op loop so `/skills` is
/// answered while a turn runs. Locked only for a copy or an insert, never across an await.
#[derive(Debug, Clone, Default)]
pub(crate) struct Loaded(Arc<Mutex<Vec<String>>>);

impl Loaded {
    fn with<T>(&self, f: impl FnOnce(&mut Vec<String>) -> T) -> T {
        f(&mut lock(&self.0))
    }

    pub(crate) fn set(&self, names: Vec<String>) {
        self.with(|loaded| *loaded = names);
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.with(|loaded| loaded.iter().any(|n| n == name))
    }

    fn insert(&self, name: &str) {
        self.with(|loaded| {
            if !loaded.iter().any(|n| n == name) {
                loaded.push(name.to_string());
            }
        });
    }
}

/// Skills as a part of the core: the catalog and the session's loaded set, which also answers
/// `Op::ListSkills` while a turn runs (a clone shares the set). Its invariant: the loaded set
/// is what the history says was loaded, so it is restored from the history, never kept apart.
#[derive(Debug, Clone)]
pub(crate) struct View {
    skills: Arc<Skills>,
    loaded: Loaded,
    events: Emitter,
}

impl View {
    pub(crate) fn new(skills: Arc<Skills>, events: Emitter) -> Self {
        Self {
            skills,
            loaded: Loaded::default(),
            events,
        }
    }

    /// The loaded set as the history `messages` has it (a resume, a fork, a new session).
    pub(crate) fn restore(&self, messages: &[Message]) {
        self.loaded.set(skills::loaded_in(messages));
    }

    /// What discovery found wrong with the catalog, for the start-up warnings.
    pub(crate) fn warnings(&self) -> &[String] {
        self.skills.warnings()
    }

    pub(crate) fn listed(&self) -> Event {
        let skills = self
            .skills
            .all()
            .iter()
            .map(|s| SkillEntry {
                name: s.name.clone(),
                description: s.description.clone(),
                source: s.root.clone(),
                state: if self.loaded.contains(&s.name) {
                    SkillState::Loaded
                } else if s.described {
                    SkillState::Listed
                } else {
                    SkillState::NameOnly
                },
            })
            .collect();
        Event::SkillsListed { skills }
    }
}

/// A call id for a load the core makes itself: nine alphanumeric characters, a shape the
/// strictest templates accept too (some Mistral ones insist on exactly that).
fn call_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..9].to_string()
}

impl View {
    /// The skills not yet loaded in this session that `input` names a trigger of, with the
    /// trigger.
    pub(crate) fn triggered(&self, input: &str) -> Vec<(skills::Skill, String)> {
        self.skills
            .triggered_by(input)
            .into_iter()
            .filter(|(s, _)| !self.loaded.contains(&s.name))
            .map(|(s, t)| (s.clone(), t.to_string()))
            .collect()
    }

    /// Loads the skills the user's message triggered (it is already in history): one `skill`
    /// call for them all and a result per skill, each reported with `SkillLoaded`. A skill
    /// that can no longer be read is reported and left out.
    pub(crate) async fn load_triggered(
        &self,
        hits: Vec<(skills::Skill, String)>,
        session: &mut Session,
        tool_ctx: &ToolCtx,
    ) {
        if hits.is_empty() {
            return;
        }
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for (skill, trigger) in hits {
            let name = skill.name.clone();
            let source = skill.root.clone();
            let loaded = tokio::task::spawn_blocking(move || skills::load_body(&skill))
                .await
                .map_err(|e| e.to_string())
                .and_then(|loaded| loaded);
            let text = match loaded {
                Ok(text) => text,
                Err(e) => {
                    self.events.emit(Event::Warning {
                        message: format!("skill {name} (trigger {trigger:?}) was not loaded: {e}"),
                    });
                    continue;
                }
            };
            let text = tool_ctx.secrets.redact(text);
            let text = skills::fit(text, tool_ctx.output_limit());
            let args = skills::Args {
                name: name.clone(),
                file: None,
            };
            let call = ToolCall {
                id: call_id(),
                name: skills::TOOL_NAME.to_string(),
                arguments: serde_json::to_string(&args).unwrap_or_default(),
            };
            results.push((call.id.clone(), text, name.clone()));
            calls.push(call);
            self.loaded.insert(&name);
            self.events.emit(Event::SkillLoaded {
                name,
                source,
                trigger: Some(trigger),
            });
        }
        if calls.is_empty() {
            return;
        }
        session.push(Message::assistant(None, calls));
        for (id, text, name) in results {
            session.push_result(id, text, ToolStatus::Succeeded, Some(name));
        }
    }

    /// After a tool call ran: a `skill` call that loaded a skill's instructions marks it
    /// loaded and is reported.
    pub(crate) fn note_call(&self, call: &ToolCall, output: &ToolOutput) {
        if call.name != skills::TOOL_NAME || output.status != ToolStatus::Succeeded {
            return;
        }
        let Ok(args) = serde_json::from_str::<skills::Args>(&call.arguments) else {
            return;
        };
        if !output
            .content
            .starts_with(&skills::loaded_marker(&args.name))
        {
            return;
        }
        self.loaded.insert(&args.name);
        let source = self
            .skills
            .get(&args.name)
            .map(|s| s.root.clone())
            .unwrap_or_default();
        self.events.emit(Event::SkillLoaded {
            name: args.name,
            source,
            trigger: None,
        });
    }
}

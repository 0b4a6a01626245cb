//! Slash commands of the full-screen session: the list shown by `/help` and the completion
//! hint, Tab completion (longest common prefix first, then cycling through the matches on
//! repeated Tab), and what each command does to the state.
//!
//! Part of `update`; no I/O and no agent logic (commands become `Op`s or local notices).

use super::state::{Effect, Hint, State};
use super::transcript::{Kind, Level, Scroll};
use crate::protocol::Op;

/// The slash commands and what they do (shown by `/help` and the completion hint).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "keys and commands"),
    ("/exit", "leave the session"),
    ("/quit", "leave the session"),
    ("/clear", "start a fresh session"),
    ("/session", "show the session id and file"),
    (
        "/model",
        "the model and server, the models offered; /model NAME switches",
    ),
    (
        "/copy",
        "copy the last reply; /copy N: Nth from last; /copy code: last code block",
    ),
    (
        "/find",
        "find text in the transcript (also Ctrl+F); /find alone ends it",
    ),
    ("/compact", "compact the context now (optional focus text)"),
    (
        "/mcp",
        "MCP servers and their tools; /mcp restart <id> restarts one",
    ),
    ("/skills", "list the skills and which are loaded"),
    (
        "/ps",
        "background processes: id, state, runtime; /ps kill <id> ends one",
    ),
    (
        "/hooks",
        "configured hooks: event, matcher, command, file, runs or not",
    ),
    (
        "/memory",
        "the instruction files in use (MiniCode.md, AGENTS.md) and their size",
    ),
    (
        "/permissions",
        "the rules and their files; /permissions save keeps the last \"always\"",
    ),
    (
        "/goal",
        "/goal <objective> sets one; alone shows it; pause, resume, clear, edit",
    ),
    (
        "/fork",
        "continue in a copy of this session (the original stays)",
    ),
    (
        "/rewind",
        "undo: /rewind lists turns, /rewind <n> [code|conversation]",
    ),
    (
        "/plan",
        "read and plan only; /plan off leaves it, /plan approve carries it out",
    ),
    ("/status", "the session, the model and the sandbox profile"),
    (
        "/resume",
        "pick a session of this workspace to continue; /resume ID opens one",
    ),
    (
        "/init",
        "the model writes an AGENTS.md for this project (you approve the diff)",
    ),
];

/// What `/init` asks the model: its write goes through the usual approval, as a diff.
pub(crate) const INIT_PROMPT: &str = "Write an AGENTS.md at the root of this workspace for \
coding agents that will work on this project. First read what tells you how the project works: \
the README, the build and package files, the CI configuration, and the main source folders. \
Then write short sections: what the project is; how to build, run, test and lint it (the exact \
commands); how the code is laid out; the conventions to follow. State only what you found in \
the files, keep it under about 100 lines, and if an AGENTS.md already exists, improve it rather \
than start over.";

impl State {
    /// `/copy`, `/copy N` (the Nth reply from the end, 1 is the last), `/copy code` (the last
    /// fenced code block of the replies).
    fn copy(&mut self, arg: &str) -> Vec<Effect> {
        let replies: Vec<&str> = self
            .transcript
            .entries()
            .iter()
            .rev()
            .filter_map(|e| match e.kind() {
                Kind::Assistant(r) if !r.text.trim().is_empty() => Some(r.text.as_str()),
                _ => None,
            })
            .collect();
        let (text, what) = match arg {
            "" => (
                replies.first().map(|t| t.to_string()),
                "the last reply".to_string(),
            ),
            "code" => (
                replies
                    .iter()
                    .find_map(|r| super::markdown::code_blocks(r).pop()),
                "the last code block".to_string(),
            ),
            n => match n.parse::<usize>() {
                Ok(n) if n >= 1 => (
                    replies.get(n - 1).map(|t| t.to_string()),
                    format!("reply {n} from the end"),
                ),
                _ => {
                    self.notice(
                        Level::Warning,
                        "usage: /copy, /copy N (1 = the last reply), /copy code",
                    );
                    return Vec::new();
                }
            },
        };
        match text {
            Some(text) => {
                self.hint = Some(Hint::Text(format!("copied {what} ({} bytes)", text.len())));
                vec![Effect::Copy(text)]
            }
            None => {
                self.notice(Level::Info, format!("nothing to copy: no {what}"));
                Vec::new()
            }
        }
    }
}

/// A Tab completion in progress: repeated Tab cycles through the commands matching `prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TabCycle {
    /// What the user had typed (after completing the longest common prefix).
    pub(crate) prefix: String,
    /// The draft this completion put there; any edit that changes it ends the cycle.
    pub(crate) shown: String,
    /// Index of the next match to show.
    pub(crate) next: usize,
}

impl State {
    /// Every command with its description: the built-ins, then the user's custom commands.
    pub(crate) fn command_list(&self) -> Vec<(String, String)> {
        let builtin = COMMANDS.iter().map(|(c, d)| (c.to_string(), d.to_string()));
        let custom = self.custom.iter().map(|c| {
            let hint = c
                .argument_hint
                .as_deref()
                .map_or(String::new(), |h| format!(" {h}"));
            let what = if c.description.is_empty() {
                format!("custom command ({})", c.source)
            } else {
                c.description.clone()
            };
            (c.slash(), format!("{what}{hint}"))
        });
        builtin.chain(custom).collect()
    }

    /// Commands whose name starts with `prefix`, in list order.
    fn matching(&self, prefix: &str) -> Vec<String> {
        self.command_list()
            .into_iter()
            .map(|(c, _)| c)
            .filter(|c| c.starts_with(prefix))
            .collect()
    }
}

pub(super) fn common_prefix(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let mut len = first.len();
    for w in &words[1..] {
        len = first
            .char_indices()
            .zip(w.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(len);
    }
    first[..len].to_string()
}

impl State {
    /// The cycle, if the draft is still what the last Tab left there.
    fn active_cycle(&self) -> Option<&TabCycle> {
        self.tab_cycle
            .as_ref()
            .filter(|c| c.shown == self.draft.text())
    }

    /// Slash commands matching the draft, for the completion hint (while Tab cycles, every
    /// match of what was typed, so the hint keeps showing the choices).
    pub fn completions(&self) -> Vec<String> {
        if let Some(c) = self.active_cycle() {
            return self.matching(&c.prefix);
        }
        let text = self.draft.text();
        if !text.starts_with('/') || text.contains([' ', '\n']) {
            return Vec::new();
        }
        self.matching(&text)
    }

    /// The command Tab has put in the draft, to highlight it in the hint.
    pub(crate) fn completion_selected(&self) -> Option<&str> {
        self.active_cycle()
            .filter(|c| c.next > 0)
            .map(|c| c.shown.as_str())
    }

    /// Tab: one match completes (with a space for arguments); several complete their longest
    /// common prefix, and each further Tab puts the next match in the draft.
    pub(crate) fn tab(&mut self) {
        if let Some(c) = self.active_cycle().cloned() {
            let matches = self.matching(&c.prefix);
            if matches.is_empty() {
                return;
            }
            let pick = &matches[c.next % matches.len()];
            self.draft.set_text(pick);
            self.tab_cycle = Some(TabCycle {
                prefix: c.prefix,
                shown: pick.to_string(),
                next: c.next + 1,
            });
            return;
        }
        let matches = self.completions();
        match matches.as_slice() {
            [] => {}
            [one] => {
                self.draft.set_text(&format!("{one} "));
                self.tab_cycle = None;
            }
            many => {
                let prefix = common_prefix(many);
                self.draft.set_text(&prefix);
                self.tab_cycle = Some(TabCycle {
                    shown: prefix.clone(),
                    prefix,
                    next: 0,
                });
            }
        }
    }

    /// One slash command typed in the draft: the dispatcher names each command and hands it
    /// to its own method (or to a custom command of the same name); an unknown one is a
    /// warning, never sent to the model.
    pub(crate) fn command(&mut self, line: &str) -> Vec<Effect> {
        let (cmd, arg) = line
            .split_once(' ')
            .map_or((line, ""), |(c, a)| (c, a.trim()));
        self.scroll = Scroll::Tail;
        self.tab_cycle = None;
        match cmd {
            "/exit" | "/quit" => return vec![Effect::Exit],
            "/help" => {
                let panel = super::help::help(&self.custom);
                self.transcript.push(Kind::Panel(panel));
            }
            "/model" if arg.is_empty() => {
                self.transcript.push(Kind::Panel(super::help::model(self)));
                return vec![Effect::Op(Op::Model { name: None })];
            }
            "/model" => {
                return vec![Effect::Op(Op::Model {
                    name: Some(arg.to_string()),
                })];
            }
            "/clear" => return self.clear(),
            "/session" => self.session_command(),
            "/plan" => return self.plan(arg),
            "/status" => self.status(),
            "/copy" => return self.copy(arg),
            "/find" => self.find(arg),
            "/compact" => return self.compact_command(arg),
            "/mcp" => return self.mcp_command(arg),
            "/skills" => return vec![Effect::Op(Op::ListSkills)],
            "/ps" => return self.ps_command(arg),
            "/memory" => self.memory_command(),
            "/permissions" => self.permissions_command(arg),
            "/hooks" => self.hooks_command(),
            "/goal" => return self.goal_command(arg),
            "/resume" => return self.resume_command(arg),
            "/init" => return self.init_command(),
            "/rewind" => return self.rewind_command(arg),
            "/fork" => return self.fork_command(),
            other => return self.custom_command(other, line),
        }
        Vec::new()
    }

    /// `/session`: the session's id and file, once the core has said them.
    fn session_command(&mut self) {
        let text = match (&self.session_id, &self.session_path) {
            (Some(id), Some(path)) => format!("session {id}\nfile {path}"),
            _ => "no session yet".to_string(),
        };
        self.notice(Level::Info, text);
    }

    /// `/compact [focus]`: a summary of the conversation so far, once idle.
    fn compact_command(&mut self, arg: &str) -> Vec<Effect> {
        if self.busy {
            self.notice(Level::Warning, "/compact waits for an idle session");
            return Vec::new();
        }
        self.notice(Level::Info, "compacting the context…");
        vec![Effect::Op(Op::Compact(
            (!arg.is_empty()).then(|| arg.to_string()),
        ))]
    }

    /// `/mcp` (the servers and their state) or `/mcp restart <id>`.
    fn mcp_command(&mut self, arg: &str) -> Vec<Effect> {
        match arg
            .split_once(' ')
            .map_or((arg, ""), |(a, b)| (a, b.trim()))
        {
            ("", _) => vec![Effect::Op(Op::McpServers)],
            ("restart", id) if !id.is_empty() => {
                self.notice(Level::Info, format!("restarting MCP server {id}…"));
                vec![Effect::Op(Op::McpRestart {
                    server: id.to_string(),
                })]
            }
            _ => {
                self.notice(Level::Warning, "usage: /mcp, or /mcp restart <id>");
                Vec::new()
            }
        }
    }

    /// `/memory`: the instruction files in use, one a line.
    fn memory_command(&mut self) {
        let none = "no instruction file in use (MiniCode.md or AGENTS.md at the \
                    workspace root, AGENTS.md up to the git root or in your config folder)";
        let text = super::help::memory_text(self, none).replace(", ", "\n");
        self.notice(Level::Info, text);
    }

    /// `/hooks`: the hooks configured, or where to configure them.
    fn hooks_command(&mut self) {
        let text = if self.hooks.is_empty() {
            "no hooks configured ([[hooks.<Event>]] in the config; see docs/hooks.md)".to_string()
        } else {
            format!("hooks:\n{}", self.hooks.join("\n"))
        };
        self.notice(Level::Info, text);
    }

    /// `/init`: asks the model to write the project's memory file, once idle.
    fn init_command(&mut self) -> Vec<Effect> {
        if self.busy {
            self.notice(Level::Warning, "/init waits for an idle session");
            return Vec::new();
        }
        self.submit(INIT_PROMPT.to_string())
    }

    /// `/fork`: a copy of the session to go on in, once idle.
    fn fork_command(&mut self) -> Vec<Effect> {
        if self.busy {
            self.notice(Level::Warning, "/fork waits for an idle session");
            return Vec::new();
        }
        vec![Effect::Op(Op::Fork)]
    }

    /// A custom command (its expanded prompt is submitted), or a warning for an unknown one.
    fn custom_command(&mut self, name: &str, line: &str) -> Vec<Effect> {
        if let Some((custom, args)) = crate::protocol::find_custom(&self.custom, line) {
            let prompt = custom.expand(args);
            return self.submit(prompt);
        }
        self.notice(
            Level::Warning,
            format!("unknown command {name} (try /help)"),
        );
        Vec::new()
    }

    /// `/clear`: a fresh session and an empty transcript, once idle.
    fn clear(&mut self) -> Vec<Effect> {
        if self.busy {
            self.notice(
                Level::Warning,
                "/clear waits for an idle session (Esc interrupts the turn)",
            );
            return Vec::new();
        }
        self.reset_view();
        vec![Effect::Op(Op::NewSession)]
    }

    /// Empties the transcript and what belongs to the session shown (before another one).
    pub(crate) fn reset_view(&mut self) {
        self.transcript.clear();
        self.header_live = false;
        self.selected = None;
        self.selection = None;
        self.search = None;
        self.queue.clear();
        // The window stays as SessionConfigured reported it; usage comes with the
        // next ContextUsage of the fresh session.
        self.context_tokens = None;
        self.goal = None;
        self.goal_error = None;
    }

    /// `/plan`, `/plan on`, `/plan off` and `/plan approve`.
    fn plan(&mut self, arg: &str) -> Vec<Effect> {
        let plan_file = self.sandbox.as_ref().and_then(|p| p.plan_file.clone());
        let on = match arg {
            "" => plan_file.is_none(),
            "on" => true,
            "off" => false,
            // Approving the plan: back to the normal profile, then the model carries
            // it out (the core takes the two ops in this order).
            "approve" => match plan_file {
                Some(_) if self.busy => {
                    self.notice(Level::Warning, "/plan approve waits for an idle session");
                    return Vec::new();
                }
                Some(file) => {
                    let mut effects = vec![Effect::Op(Op::SetPlan { on: false })];
                    effects.extend(
                        self.submit(format!("The plan in {file} is approved: carry it out.")),
                    );
                    return effects;
                }
                None => {
                    self.notice(Level::Warning, "plan mode is off: nothing to approve");
                    return Vec::new();
                }
            },
            _ => {
                self.notice(
                    Level::Warning,
                    "usage: /plan, /plan on, /plan off, /plan approve",
                );
                return Vec::new();
            }
        };
        vec![Effect::Op(Op::SetPlan { on })]
    }

    /// `/status`: the session, the model, the sandbox profile and plan mode.
    fn status(&mut self) {
        let session = self.session_id.as_deref().unwrap_or("none yet");
        let sandbox = self
            .sandbox
            .as_ref()
            .map_or("unknown".to_string(), |p| p.describe());
        let plan = match self.sandbox.as_ref().and_then(|p| p.plan_file.as_deref()) {
            Some(file) => format!("on (plan file {file})"),
            None => "off".to_string(),
        };
        let text = format!(
            "session {session}\nmodel {}\nsandbox {sandbox}\nplan mode {plan}",
            self.model
        );
        self.notice(Level::Info, text);
    }
}

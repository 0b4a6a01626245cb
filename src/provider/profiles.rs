//! The one table of model profiles: what a model family or a server kind needs that others do
//! not (the size of prompt that suits it, `tool_choice`, `parallel_tool_calls`), matched on
//! the model name and on the server kind the probe found. Every model-specific knob lives
//! here, not in `if` tests on model names elsewhere (the windows of hosted models that state
//! none are facts the probe reports, in `probe/parse.rs`). The configuration
//! (`[model] profile`) overrides what the table says.
//!
//! Pure: it matches names and merges rows. It never probes, and it never decides what a
//! refused parameter becomes (that is `compat`, learned from the server's answer).

use serde::{Deserialize, Serialize};

use crate::chat::Builtin;

/// How much prompt the model gets: the full system prompt and every tool, or a lean one for
/// small windows and small models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// The core tools (`bash`, `read`, `write`, `edit`, `list`, `search`), short descriptions
    /// and a short system prompt.
    Small,
    /// Every tool and the full system prompt.
    Full,
}

/// Tools of minicode's own the small profile leaves out unless `[model] tools` names them:
/// the one list of the small profile's tools (it offers every other tool of minicode's own,
/// see [`core_tools`]).
pub const OPTIONAL_TOOLS: [&str; 5] = crate::defaults::SMALL_PROFILE_OPTIONAL_TOOLS;

/// The tools of minicode's own the small profile always offers: all but [`OPTIONAL_TOOLS`].
pub fn core_tools() -> impl Iterator<Item = Builtin> {
    Builtin::ALL
        .into_iter()
        .filter(|b| !OPTIONAL_TOOLS.contains(&b.name()))
}

/// `[model] profile` and `[model] tools`, as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The profile the user chose; `None` lets the table and the window decide.
    pub profile: Option<Profile>,
    /// Of [`OPTIONAL_TOOLS`], those to offer in the small profile too.
    pub tools: Vec<String>,
}

impl Settings {
    /// The profile for `model` on `server` with `window`: the configured one, else the
    /// table's, else the window's.
    pub fn decide(&self, model: &str, server: Option<ServerKind>, window: u64) -> Profile {
        self.profile
            .or(knobs(model, server).profile)
            .unwrap_or_else(|| Profile::for_window(window))
    }

    /// The tools the small profile hides: the optional ones not asked for.
    pub fn hidden(&self) -> Vec<String> {
        OPTIONAL_TOOLS
            .iter()
            .filter(|name| !self.tools.iter().any(|t| t == *name))
            .map(|name| name.to_string())
            .collect()
    }
}

/// The largest window (in tokens) that gets the small profile when nothing else decides.
pub const SMALL_WINDOW: u64 = 32 * 1024;

/// The least a model name must state (in billions of parameters) to keep the full profile
/// whatever its window: below it the model gets the small profile.
const SMALL_MODEL_BILLIONS: f64 = 4.0;

impl Profile {
    /// The profile for a model with this window, when neither the configuration nor the table
    /// decides: small up to [`SMALL_WINDOW`].
    pub fn for_window(window: u64) -> Profile {
        if window <= SMALL_WINDOW {
            Profile::Small
        } else {
            Profile::Full
        }
    }

    /// Its name, as in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Small => "small",
            Profile::Full => "full",
        }
    }
}

/// The kind of server, as the probe recognised it by the endpoints that answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// llama.cpp's `llama-server` (answered `/props`).
    LlamaCpp,
    /// Ollama (answered `/api/show`).
    Ollama,
    /// LM Studio (answered `/api/v0/models`).
    LmStudio,
}

/// The `tool_choice` sent with requests that declare tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    Auto,
}

impl ToolChoice {
    /// Its value on the wire.
    pub fn wire(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
        }
    }
}

/// What a row of the table says; `None` leaves the knob to a later row or the default (the
/// parameter is not sent, the profile follows the window).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Knobs {
    pub profile: Option<Profile>,
    pub tool_choice: Option<ToolChoice>,
    pub parallel_tool_calls: Option<bool>,
}

/// What a row matches.
enum Match {
    /// Every model on this kind of server.
    Server(ServerKind),
    /// Model names stating fewer parameters than [`SMALL_MODEL_BILLIONS`] ("…-1.5b-…").
    SmallModel,
}

/// One row: a family, what it matches, what it needs and why.
struct Row {
    /// What the row is about, for `docs/servers.md` and logs.
    family: &'static str,
    matches: Match,
    knobs: Knobs,
}

/// The table. Rows are applied in order; a later row's knob replaces an earlier one's.
const TABLE: &[Row] = &[
    // llama.cpp: one call per reply keeps a small model on one step at a time (its templates
    // parse a single call best), and `tool_choice` is stated rather than left to the build's
    // default.
    Row {
        family: "llama.cpp server",
        matches: Match::Server(ServerKind::LlamaCpp),
        knobs: Knobs {
            profile: None,
            tool_choice: Some(ToolChoice::Auto),
            parallel_tool_calls: Some(false),
        },
    },
    // Models of a few billion parameters lose their way in a long prompt with many tools,
    // whatever window they are served with.
    Row {
        family: "models under 4B parameters",
        matches: Match::SmallModel,
        knobs: Knobs {
            profile: Some(Profile::Small),
            tool_choice: None,
            parallel_tool_calls: None,
        },
    },
];

/// The knobs for `model` on a server of kind `server` (`None`: not probed, or not known).
pub fn knobs(model: &str, server: Option<ServerKind>) -> Knobs {
    let mut out = Knobs::default();
    for row in TABLE {
        let hit = match row.matches {
            Match::Server(kind) => server == Some(kind),
            Match::SmallModel => billions(model).is_some_and(|b| b < SMALL_MODEL_BILLIONS),
        };
        if !hit {
            continue;
        }
        tracing::debug!(family = row.family, model, "model profile row applies");
        out.profile = row.knobs.profile.or(out.profile);
        out.tool_choice = row.knobs.tool_choice.or(out.tool_choice);
        out.parallel_tool_calls = row.knobs.parallel_tool_calls.or(out.parallel_tool_calls);
    }
    out
}

/// The parameter count a model name states, in billions: a part of the name between
/// separators that is a number followed by `b` ("qwen2.5-coder-1.5b-instruct", "llama3.2:3b",
/// "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"). Mixture-of-experts names ("8x7b") and names
/// without a size state none.
fn billions(model: &str) -> Option<f64> {
    model
        .to_ascii_lowercase()
        .split(['-', '_', ':', '/', ' '])
        .find_map(|part| {
            let number = part.strip_suffix('b')?;
            let first = number.chars().next()?;
            if !first.is_ascii_digit() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return None;
            }
            number.parse::<f64>().ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_small_profile_splits_minicodes_own_tools_by_one_list() {
        assert!(
            OPTIONAL_TOOLS
                .iter()
                .all(|name| Builtin::of(name).is_some())
        );
        let core: Vec<&str> = core_tools().map(Builtin::name).collect();
        assert_eq!(core, ["bash", "read", "write", "edit", "list", "search"]);
    }

    #[test]
    fn sizes_are_read_from_common_model_names() {
        assert_eq!(billions("qwen2.5-coder-1.5b-instruct"), Some(1.5));
        assert_eq!(
            billions("Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"),
            Some(0.5)
        );
        assert_eq!(billions("llama3.2:3b"), Some(3.0));
        assert_eq!(billions("qwen2.5-coder:32b-instruct"), Some(32.0));
        assert_eq!(billions("mixtral-8x7b"), None);
        assert_eq!(billions("gpt-4o-mini"), None);
        assert_eq!(billions("mock-model"), None);
    }

    #[test]
    fn small_models_get_the_small_profile_and_large_ones_nothing() {
        assert_eq!(
            knobs("qwen2.5-coder-1.5b", None).profile,
            Some(Profile::Small)
        );
        assert_eq!(knobs("qwen2.5-coder-7b", None).profile, None);
        assert_eq!(knobs("gpt-4o", None), Knobs::default());
    }

    #[test]
    fn llama_cpp_gets_its_tool_parameters() {
        let k = knobs("whatever", Some(ServerKind::LlamaCpp));
        assert_eq!(k.tool_choice, Some(ToolChoice::Auto));
        assert_eq!(k.parallel_tool_calls, Some(false));
        assert_eq!(
            knobs("whatever", Some(ServerKind::Ollama)),
            Knobs::default()
        );
    }

    #[test]
    fn windows_up_to_32k_are_small() {
        assert_eq!(Profile::for_window(32 * 1024), Profile::Small);
        assert_eq!(Profile::for_window(32 * 1024 + 1), Profile::Full);
    }
}

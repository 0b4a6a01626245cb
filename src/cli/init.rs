//! `minicode init`: sets up a model. It writes the `[model]` table of the user's config at the
//! path minicode reads, from flags (`--base-url`, `--model`, `--api-key-env`: no questions) or
//! from a few questions asked on stderr and answered on stdin (a terminal or a pipe), then runs
//! `doctor` against it. Writing and checking the values is `config::write_model`'s.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use super::{Failure, usage};
use crate::config::{self, ModelChoice};
use crate::print::OutputFormat;

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `minicode init`.
#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// The server's base URL, e.g. http://127.0.0.1:8080/v1 (with --model: no questions).
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// The model name the server knows.
    #[arg(long, value_name = "NAME")]
    pub(crate) model: Option<String>,
    /// The environment variable holding the API key (leave it out for a server without keys).
    #[arg(long, value_name = "VAR")]
    pub(crate) api_key_env: Option<String>,
    /// Replace the [model] table of an existing user config (the rest of it is kept).
    #[arg(long)]
    pub(crate) force: bool,
}

/// The servers offered by number: what to call them, their usual base URL, and the variable
/// their key is usually kept in.
const KINDS: &[(&str, &str, Option<&str>)] = &[
    ("llama.cpp (llama-server)", "http://127.0.0.1:8080/v1", None),
    ("Ollama", "http://127.0.0.1:11434/v1", None),
    ("vLLM", "http://127.0.0.1:8000/v1", None),
    ("LM Studio", "http://127.0.0.1:1234/v1", None),
    (
        "OpenAI",
        "https://api.openai.com/v1",
        Some("OPENAI_API_KEY"),
    ),
    (
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        Some("OPENROUTER_API_KEY"),
    ),
];

/// `minicode init`: write, then check with `doctor` (its exit status is init's).
pub(super) fn run(args: &InitArgs, env: Env<'_>, launch: &Path) -> Result<ExitCode, Failure> {
    let path = config::user_config_path(env).ok_or_else(|| {
        usage("cannot tell where your user config lives: set HOME (or an absolute XDG_CONFIG_HOME)")
    })?;
    // Refused before any question, so nobody answers them for nothing.
    if !args.force && std::fs::symlink_metadata(&path).is_ok() {
        return Err(usage(config::SetupError::Exists(path)));
    }
    let choice = match (&args.base_url, &args.model) {
        (Some(base_url), Some(model)) => ModelChoice {
            base_url: base_url.clone(),
            model: model.clone(),
            api_key_env: args.api_key_env.clone(),
        },
        _ => ask(args)?,
    };
    let written = config::write_model(env, &choice, args.force).map_err(usage)?;
    let _ = writeln!(
        std::io::stderr(),
        "minicode: wrote {}; checking the server (minicode doctor):",
        written.display()
    );
    super::doctor::run(
        env,
        launch,
        &super::ServerFlags::default(),
        OutputFormat::Text,
    )
}

/// Asks for what the flags left out.
fn ask(args: &InitArgs) -> Result<ModelChoice, Failure> {
    if !std::io::stdin().is_terminal() && !super::stdin::is_pipe_or_file() {
        return Err(usage(
            "there is no terminal to ask on: give --base-url and --model (and --api-key-env \
             when the server needs a key)",
        ));
    }
    let mut input = std::io::stdin().lock();
    let mut answer = |question: &str| -> Result<String, Failure> {
        let mut err = std::io::stderr();
        let _ = write!(err, "{question}");
        let _ = err.flush();
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) => Err(usage("no answer (end of input): nothing was written")),
            Ok(_) => Ok(line.trim().to_string()),
            Err(e) => Err(usage(format!("cannot read the answer: {e}"))),
        }
    };
    let (base_url, usual_key) = match &args.base_url {
        Some(url) => (url.clone(), None),
        None => server(&mut answer)?,
    };
    let model = match &args.model {
        Some(model) => model.clone(),
        None => loop {
            let name = answer("Model name (as the server knows it): ")?;
            if !name.is_empty() {
                break name;
            }
        },
    };
    let api_key_env = match &args.api_key_env {
        Some(name) => Some(name.clone()),
        None => key_env(&mut answer, usual_key)?,
    };
    Ok(ModelChoice {
        base_url,
        model,
        api_key_env,
    })
}

type Answer<'a> = dyn FnMut(&str) -> Result<String, Failure> + 'a;

/// The server: a number from the list, or a URL. Returns its URL and its usual key variable.
fn server(answer: &mut Answer<'_>) -> Result<(String, Option<&'static str>), Failure> {
    let mut question = String::from("Which model server?\n");
    for (i, (name, url, _)) in KINDS.iter().enumerate() {
        question.push_str(&format!("  {}) {name}  {url}\n", i + 1));
    }
    question.push_str("Number, or the server's base URL: ");
    loop {
        let given = answer(&question)?;
        if let Some((_, url, key)) = given
            .parse::<usize>()
            .ok()
            .and_then(|n| KINDS.get(n.wrapping_sub(1)))
        {
            return Ok((url.to_string(), *key));
        }
        if given.starts_with("http://") || given.starts_with("https://") {
            return Ok((given, None));
        }
    }
}

/// The key's variable: Enter takes the usual one (or none), `none` means no key.
fn key_env(answer: &mut Answer<'_>, usual: Option<&str>) -> Result<Option<String>, Failure> {
    let shown = usual.map_or("Enter: no key".to_string(), |v| {
        format!("Enter: {v}; `none`: no key")
    });
    let given = answer(&format!(
        "Environment variable that holds the API key ({shown}): "
    ))?;
    Ok(match given.as_str() {
        "" => usual.map(str::to_string),
        "none" => None,
        _ => Some(given),
    })
}

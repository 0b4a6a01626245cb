//! Keeps the layering honest: every arrow of docs/architecture.md is checked on the source.
//! Each file of `src/` is read with comments and string literals blanked out, and every path
//! it names of ours is found: `use crate::…` trees (groups included), `crate::x::…` written in
//! code, and `super::…` chains that climb out of their top-level module. Each top-level module
//! may name only what its rule in [`RULES`] lists; only the full-screen UI names the terminal
//! crates; only the frontends write to stdout or stderr. A failure names the file, the line,
//! the path as written and the rule it breaks. docs/architecture.md's lists of `Op` and
//! `Event` variants and of the modules that write to stdout are checked against the code too.

use std::path::{Path, PathBuf};

/// What one top-level module of the crate may name of ours (besides itself), and why.
struct Rule {
    module: &'static str,
    /// `None`: anything (the wiring).
    may_use: Option<&'static [&'static str]>,
    why: &'static str,
}

/// The arrows, one row per top-level module of `src/`. A new module needs a row here (a test
/// fails until it has one), so where it sits is a decision, not an accident.
///
/// `chat` (the conversation data model), `sanitize` (text made safe to show) and `fsutil`
/// (confinement, atomic writes) import nothing of ours; `chat` and `sanitize` are plain
/// functions of data, so every layer may use them.
const RULES: &[Rule] = &[
    Rule {
        module: "chat",
        may_use: Some(&[]),
        why: "the conversation data model is a leaf",
    },
    Rule {
        module: "sanitize",
        may_use: Some(&[]),
        why: "the sanitizer is a leaf",
    },
    Rule {
        module: "defaults",
        may_use: Some(&[]),
        why: "shared defaults are plain constants",
    },
    Rule {
        module: "fsutil",
        may_use: Some(&[]),
        why: "file-system helpers are a leaf",
    },
    Rule {
        module: "sync",
        may_use: Some(&[]),
        why: "the one lock policy is a leaf",
    },
    Rule {
        module: "permissions",
        may_use: Some(&["sanitize", "chat"]),
        why: "permission rules are pure functions of text (tools named by `chat::Builtin`): \
              config reads them, the agent and the file tools apply them",
    },
    Rule {
        module: "hooks",
        may_use: Some(&["sanitize"]),
        why: "hooks as data (events, a checked hook, its digest): config builds them, the \
              agent runs them",
    },
    Rule {
        module: "sandbox",
        may_use: Some(&["defaults", "fsutil"]),
        why: "the sandbox policy and its enforcement in the helper sit below the tools, the \
              supervisor, the agent and the CLI; it makes .minicode through fsutil",
    },
    Rule {
        module: "memory",
        may_use: Some(&["chat", "fsutil", "sanitize"]),
        why: "memory rules sit below tools and the agent",
    },
    Rule {
        module: "session",
        may_use: Some(&["chat", "fsutil", "sanitize", "sandbox"]),
        why: "the session store keeps data; it knows no provider, tool, protocol or frontend",
    },
    Rule {
        module: "checkpoints",
        may_use: Some(&["defaults", "fsutil"]),
        why: "the checkpoint store keeps data under .minicode; it knows no tool, provider, \
              protocol or frontend",
    },
    Rule {
        module: "protocol",
        may_use: Some(&["chat", "hooks", "sanitize", "sandbox"]),
        why: "the contract between frontends and core depends only on the data model",
    },
    Rule {
        module: "provider",
        may_use: Some(&["chat", "defaults", "fsutil", "sanitize"]),
        why: "a provider turns the data model into wire requests; it caches what it learns \
              about a server with fsutil's atomic writes",
    },
    Rule {
        module: "tools",
        may_use: Some(&[
            "chat",
            "defaults",
            "fsutil",
            "memory",
            "permissions",
            "process",
            "sandbox",
            "sanitize",
        ]),
        why: "tools never reach the agent, the protocol, providers or sessions; they start \
              children only through process::child",
    },
    Rule {
        module: "lsp",
        may_use: Some(&[
            "defaults", "fsutil", "process", "sandbox", "sanitize", "tools",
        ]),
        why: "the language servers asked after an edit sit between the tools and the agent: \
              they start through the same sandboxed supervisor as `bash`, under the policy the \
              core's sandbox part hands over, and know nothing of the agent, the protocol or a \
              frontend",
    },
    Rule {
        module: "config",
        may_use: Some(&[
            "agent",
            "checkpoints",
            "defaults",
            "fsutil",
            "hooks",
            "lsp",
            "permissions",
            "provider",
            "sanitize",
            "sandbox",
            "tools",
        ]),
        why: "configuration is read once by the CLI and handed down as plain values; a \
              part's table deserialises straight into the part's own settings struct",
    },
    Rule {
        module: "logging",
        may_use: Some(&["fsutil"]),
        why: "logging only needs its private folder",
    },
    Rule {
        module: "process",
        may_use: Some(&["defaults", "sandbox"]),
        why: "hardening of the process itself, and how every child is started: a leaf the \
              CLI and the tools call; the bash supervisor confines itself with the sandbox",
    },
    Rule {
        module: "agent",
        may_use: Some(&[
            "chat",
            "checkpoints",
            "defaults",
            "protocol",
            "provider",
            "tools",
            "session",
            "memory",
            "fsutil",
            "hooks",
            "lsp",
            "permissions",
            "sandbox",
            "process",
            "sanitize",
        ]),
        why: "the core is wired by the CLI: it never reads config and never names a frontend; \
              it kills a command group a crash left running through process",
    },
    Rule {
        module: "print",
        may_use: Some(&["protocol", "chat", "sanitize"]),
        why: "frontends talk to the core only through the protocol",
    },
    Rule {
        module: "tui",
        may_use: Some(&["protocol", "chat", "sanitize"]),
        why: "frontends talk to the core only through the protocol",
    },
    Rule {
        module: "acp",
        may_use: Some(&["protocol", "chat", "sanitize"]),
        why: "the ACP transport is a frontend: it talks to the core only through the protocol \
              and gets its cores from the CLI",
    },
    Rule {
        module: "daemon",
        may_use: Some(&["protocol", "chat", "defaults", "fsutil", "sanitize"]),
        why: "the daemon is a transport over the protocol: the CLI builds its cores; it keeps \
              its event log under .minicode with fsutil",
    },
    Rule {
        module: "attach",
        may_use: Some(&["protocol", "chat", "sanitize"]),
        why: "a client of the daemon hands the full-screen UI a protocol handle, nothing more",
    },
    Rule {
        module: "eval",
        may_use: Some(&["process", "protocol", "chat", "session"]),
        why: "the evaluator runs this binary as a process, as users run it, and reads its \
              stream-json output as the protocol's events (and export reads sessions through \
              the session module's types): one vocabulary end to end, nothing of the core's \
              logic; its children start with the environment process::child scrubs",
    },
    Rule {
        module: "cli",
        may_use: None,
        why: "the CLI wires everything",
    },
];

/// Leaves every module may use besides its rule: the one policy for a poisoned lock.
const EVERY_LAYER: &[&str] = &["sync"];
/// The module that alone takes a `std::sync` lock itself (see `every_lock_goes_through_sync`).
const LOCK_POLICY: &str = "src/sync.rs";

/// External crates only the full-screen UI may name.
const TERMINAL_CRATES: &[&str] = &["ratatui", "crossterm"];
/// Modules that may name the terminal crates.
const TERMINAL_USERS: &[&str] = &["tui"];
/// Modules that may write to stdout or stderr: the frontends and the wiring.
const PRINTERS: &[&str] = &["print", "tui", "acp", "cli"];
/// The agent core: what must stay terminal-agnostic (checked on the raw text as well).
const CORE: &[&str] = &[
    "protocol", "agent", "provider", "tools", "session", "fsutil", "config", "chat", "memory",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The crate's Rust files under `dir`. Cargo's build script (`src/build.rs`, `package.build`)
/// sits among them but is a program of its own, not a module of the library.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path == src().join("build.rs") {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every library file with its top-level module and its module depth (`src/agent.rs` is 1,
/// `src/agent/turn.rs` is 2). `lib.rs` and `main.rs` are the roots, not modules.
fn module_files() -> Vec<(PathBuf, String, usize)> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(&root).unwrap().to_path_buf();
            let parts: Vec<String> = rel
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
                return None;
            }
            let depth = parts.len();
            Some((path, parts[0].clone(), depth))
        })
        .collect()
}

fn core_files() -> Vec<PathBuf> {
    module_files()
        .into_iter()
        .filter(|(_, module, _)| CORE.contains(&module.as_str()))
        .map(|(path, _, _)| path)
        .collect()
}

// ---------------------------------------------------------------------------------------
// Reading a source file: comments and literals out, then tokens.

/// The source with comments, string and char literals replaced by spaces (newlines kept, so
/// line numbers stay right). Lifetimes are left alone.
fn code_only(source: &str) -> String {
    let c: Vec<char> = source.chars().collect();
    let mut out: Vec<char> = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in out.iter_mut().take(to.min(c.len())).skip(from) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            let end = (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (c[i] == 'r' || (c[i] == 'b' && next == Some('r')))
            && (i == 0 || !ident(c[i - 1]))
            && {
                let start = if c[i] == 'b' { i + 2 } else { i + 1 };
                let hashes = c[start..].iter().take_while(|&&h| h == '#').count();
                c.get(start + hashes) == Some(&'"')
            }
        {
            // A raw string: r"…", r#"…"#, br"…".
            let start = if c[i] == 'b' { i + 2 } else { i + 1 };
            let hashes = c[start..].iter().take_while(|&&h| h == '#').count();
            let mut j = start + hashes + 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"'
                    && c[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes
                {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            blank(&mut out, i, j);
            i = j;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c[i] == '\'' {
            if next == Some('\\') {
                let end = (i + 3..c.len()).find(|&j| c[j] == '\'').unwrap_or(c.len());
                blank(&mut out, i, end + 1);
                i = end + 1;
            } else if c.get(i + 2) == Some(&'\'') {
                blank(&mut out, i, i + 3);
                i += 3;
            } else {
                i += 1; // a lifetime or a label
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Tokens with their 1-based line numbers.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            // r#ident is the identifier itself.
            if word == "r" && c.get(i) == Some(&'#') {
                i += 1;
                continue;
            }
            out.push((Tok::Ident(word), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                i += 1;
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// What a file names that a rule is about.
#[derive(Debug, Clone, PartialEq)]
enum Named {
    /// A top-level module of ours (`*` for a glob of the crate root).
    Ours(String),
    /// A terminal crate.
    Terminal(String),
    /// A way of writing to stdout or stderr.
    Print(String),
    /// A `super::` chain longer than the module is deep.
    AboveTheCrate,
}

/// One finding: the line, the path as written (roughly), and what it names.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    line: usize,
    written: String,
    named: Named,
}

/// The first segments after a path prefix ends at `toks[at]`: one identifier, a `*`, or each
/// item's first identifier in a `{…}` group.
fn first_segments(toks: &[(Tok, usize)], at: usize) -> Vec<String> {
    match toks.get(at).map(|(t, _)| t) {
        Some(Tok::Ident(name)) => vec![name.clone()],
        Some(Tok::Punct('*')) => vec!["*".into()],
        Some(Tok::Punct('{')) => {
            let mut names = Vec::new();
            let mut depth = 0;
            let mut expect = true;
            for (tok, _) in &toks[at..] {
                match tok {
                    Tok::Punct('{') => {
                        depth += 1;
                        expect = depth == 1;
                    }
                    Tok::Punct('}') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Punct(',') if depth == 1 => expect = true,
                    Tok::Ident(name) if expect && depth == 1 => {
                        names.push(name.clone());
                        expect = false;
                    }
                    Tok::Punct('*') if expect && depth == 1 => {
                        names.push("*".into());
                        expect = false;
                    }
                    _ => expect = false,
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

/// Everything a file at module `depth` names that the rules care about.
fn scan(source: &str, depth: usize) -> Vec<Found> {
    let code = code_only(source);
    let toks = tokens(&code);
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, t: &Tok| toks.get(i).is_some_and(|(x, _)| x == t);
    let mut found = Vec::new();
    // One entry per open brace: whether it opened an inline `mod`.
    let mut braces: Vec<bool> = Vec::new();
    for (i, (tok, line)) in toks.iter().enumerate() {
        let line = *line;
        let after_sep = i > 0 && is(i - 1, &Tok::PathSep);
        match tok {
            Tok::Punct('{') => {
                let opens_mod = i >= 2 && ident(i - 2) == Some("mod") && ident(i - 1).is_some();
                braces.push(opens_mod);
            }
            Tok::Punct('}') => {
                braces.pop();
            }
            Tok::Ident(word) if word == "crate" && !after_sep && is(i + 1, &Tok::PathSep) => {
                for name in first_segments(&toks, i + 2) {
                    found.push(Found {
                        line,
                        written: format!("crate::{name}"),
                        named: Named::Ours(name),
                    });
                }
            }
            Tok::Ident(word) if word == "super" && !after_sep && is(i + 1, &Tok::PathSep) => {
                let mut climbs = 0;
                let mut j = i;
                while ident(j) == Some("super") && is(j + 1, &Tok::PathSep) {
                    climbs += 1;
                    j += 2;
                }
                let here = depth + braces.iter().filter(|m| **m).count();
                let written = "super::".repeat(climbs);
                if climbs > here {
                    found.push(Found {
                        line,
                        written,
                        named: Named::AboveTheCrate,
                    });
                } else if climbs == here {
                    for name in first_segments(&toks, j) {
                        found.push(Found {
                            line,
                            written: format!("{written}{name}"),
                            named: Named::Ours(name),
                        });
                    }
                }
            }
            Tok::Ident(word) if TERMINAL_CRATES.contains(&word.as_str()) && !after_sep => {
                found.push(Found {
                    line,
                    written: word.clone(),
                    named: Named::Terminal(word.clone()),
                });
            }
            Tok::Ident(word)
                if ["print", "println", "eprint", "eprintln", "dbg"].contains(&word.as_str())
                    && is(i + 1, &Tok::Punct('!')) =>
            {
                found.push(Found {
                    line,
                    written: format!("{word}!"),
                    named: Named::Print(format!("{word}!")),
                });
            }
            // `io::stdout()` or an imported `stdout()`, not the method `.stdout(…)`.
            Tok::Ident(word)
                if (word == "stdout" || word == "stderr")
                    && is(i + 1, &Tok::Punct('('))
                    && !(i > 0 && is(i - 1, &Tok::Punct('.'))) =>
            {
                found.push(Found {
                    line,
                    written: format!("{word}()"),
                    named: Named::Print(format!("{word}()")),
                });
            }
            _ => {}
        }
    }
    found
}

/// The rule breaks in one file of top-level `module`, as messages.
fn violations(file: &str, module: &str, found: &[Found]) -> Vec<String> {
    let rule = RULES.iter().find(|r| r.module == module);
    let mut out = Vec::new();
    for f in found {
        let broken = match &f.named {
            Named::Ours(name)
                if name == module || name == "self" || EVERY_LAYER.contains(&name.as_str()) =>
            {
                None
            }
            Named::Ours(name) => match rule.and_then(|r| r.may_use) {
                None if rule.is_some() => None,
                Some(allowed) if allowed.contains(&name.as_str()) => None,
                Some(allowed) => Some(format!(
                    "{module} may use only [{}] of ours ({})",
                    allowed.join(", "),
                    rule.map_or("", |r| r.why)
                )),
                None => Some(format!("{module} has no rule in RULES")),
            },
            Named::Terminal(_) if TERMINAL_USERS.contains(&module) => None,
            Named::Terminal(_) => Some(format!(
                "only {} may name the terminal crates (the core and the one-shot frontend \
                 stay terminal-agnostic)",
                TERMINAL_USERS.join(", ")
            )),
            Named::Print(_) if PRINTERS.contains(&module) => None,
            Named::Print(_) => Some(format!(
                "only {} may write to stdout or stderr (the library never prints)",
                PRINTERS.join(", ")
            )),
            Named::AboveTheCrate => Some("a super:: chain above the crate root".into()),
        };
        if let Some(rule) = broken {
            out.push(format!("{file}:{}: `{}`: {rule}", f.line, f.written));
        }
    }
    out
}

#[test]
fn every_import_follows_the_arrows() {
    let files = module_files();
    assert!(files.len() >= 30, "expected the sources, found {files:?}");
    let mut problems = Vec::new();
    for (path, module, depth) in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let rel = path.strip_prefix(src().parent().unwrap()).unwrap();
        problems.extend(violations(
            &rel.display().to_string(),
            module,
            &scan(&source, *depth),
        ));
    }
    assert!(
        problems.is_empty(),
        "imports that break docs/architecture.md:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_rule() {
    let mut missing: Vec<String> = module_files()
        .into_iter()
        .map(|(_, module, _)| module)
        .filter(|m| !RULES.iter().any(|r| r.module == m))
        .collect();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "give these modules a row in RULES (tests/it/architecture.rs) and \
         docs/architecture.md: {missing:?}"
    );
}

#[test]
fn the_binary_reaches_the_library_only_through_cli() {
    let source = std::fs::read_to_string(src().join("main.rs")).unwrap();
    let toks = tokens(&code_only(&source));
    for (i, (tok, line)) in toks.iter().enumerate() {
        if *tok == Tok::Ident("minicode".into())
            && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep)
        {
            let next = &toks[i + 2].0;
            assert_eq!(
                next,
                &Tok::Ident("cli".into()),
                "src/main.rs:{line}: main only parses arguments and calls cli::run"
            );
        }
    }
}

/// The checker itself: each kind of path it must see, and what it must not be fooled by.
#[test]
fn the_checker_finds_every_way_of_naming_a_module() {
    let source = r##"
//! docs may say crate::tui freely, and so may strings
use crate::{chat::{Message, Role}, protocol};
use crate::provider::Provider as _;
use super::session;
use super::super::escape;
fn f() -> crate::tools::Registry {
    let _ = "crate::agent and println!";
    let _ = r#"crate::agent"#;
    let _c = '"';
    let _ = crossterm::terminal::size();
    std::io::stdout().flush();
    command.stdout(Stdio::piped());
    eprintln!("x");
    pub(crate) fn g<'a>(x: &'a str) {}
}
mod inner {
    use super::super::config;
    use super::local;
}
"##;
    let found = scan(source, 1);
    let ours: Vec<&str> = found
        .iter()
        .filter_map(|f| match &f.named {
            Named::Ours(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        ours,
        ["chat", "protocol", "provider", "session", "tools", "config"]
    );
    assert!(found.iter().any(|f| f.named == Named::AboveTheCrate));
    assert!(
        found
            .iter()
            .any(|f| f.named == Named::Terminal("crossterm".into()))
    );
    let prints: Vec<&str> = found
        .iter()
        .filter_map(|f| match &f.named {
            Named::Print(p) => Some(p.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prints, ["stdout()", "eprintln!"]);
    // And the messages name the file, the line, the path and the rule.
    let problems = violations("src/print.rs", "print", &found);
    assert!(
        problems.iter().any(|p| p.starts_with(
            "src/print.rs:4: `crate::provider`: print may use only [protocol, chat, sanitize]"
        )),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`crossterm`") && p.contains("terminal"))
    );
    assert!(violations("src/tui/view.rs", "tui", &scan("use ratatui::Frame;", 2)).is_empty());
    assert!(
        violations("src/cli.rs", "cli", &found)
            .iter()
            .all(|p| !p.contains("may use only"))
    );
}

#[test]
fn docs_architecture_lists_every_source_file() {
    let doc =
        std::fs::read_to_string(src().parent().unwrap().join("docs/architecture.md")).unwrap();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let missing: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
        .filter(|rel| {
            !doc.lines()
                .any(|l| l.trim_start().starts_with(rel.as_str()))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "give these files a line in docs/architecture.md: {missing:?}"
    );
}

#[test]
fn core_modules_never_name_the_terminal_stack() {
    let files = core_files();
    assert!(
        files.len() >= 10,
        "expected the core sources, found {files:?}"
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for word in ["ratatui", "crossterm", "crate::tui", "tui::"] {
            assert!(!text.contains(word), "{} names {word}", file.display());
        }
    }
}

#[test]
fn library_denies_printing() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    assert!(lib.contains("#![deny(clippy::print_stdout, clippy::print_stderr)]"));
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.trim_start().starts_with("//!"),
            "{} lacks a //! header",
            file.display()
        );
    }
}

// ---------------------------------------------------------------------------------------
// docs/architecture.md's lists against the code.

fn architecture_doc() -> String {
    std::fs::read_to_string(src().parent().unwrap().join("docs/architecture.md")).unwrap()
}

/// The variant names of `enum name { … }` in `source`: at the enum's own brace depth, the
/// first identifier of each item, attributes skipped.
fn enum_variants(source: &str, name: &str) -> Vec<String> {
    let toks = tokens(&code_only(source));
    let Some(start) = toks.windows(3).position(|w| {
        w[0].0 == Tok::Ident("enum".into())
            && w[1].0 == Tok::Ident(name.into())
            && w[2].0 == Tok::Punct('{')
    }) else {
        return Vec::new();
    };
    let mut variants = Vec::new();
    let (mut depth, mut expect) = (0usize, false);
    // Inside a variant's attribute: whether a variant name was expected before it.
    let mut attribute: Option<bool> = None;
    for (tok, _) in &toks[start + 2..] {
        match tok {
            Tok::Punct('{' | '(' | '[') => {
                depth += 1;
                expect = depth == 1;
            }
            Tok::Punct('}' | ')' | ']') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
                if depth == 1 {
                    expect = attribute.take().unwrap_or(false);
                }
            }
            Tok::Punct(',') if depth == 1 => expect = true,
            Tok::Punct('#') if depth == 1 => attribute = Some(expect),
            Tok::Ident(word) if depth == 1 && expect => {
                variants.push(word.clone());
                expect = false;
            }
            _ => {}
        }
    }
    variants
}

/// The variants of the protocol's enum `name`, wherever under `src/protocol` it is defined.
fn protocol_variants(name: &str) -> Vec<String> {
    let mut files = vec![src().join("protocol.rs")];
    rust_files(&src().join("protocol"), &mut files);
    let found: Vec<Vec<String>> = files
        .iter()
        .map(|f| enum_variants(&std::fs::read_to_string(f).unwrap(), name))
        .filter(|v| !v.is_empty())
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one `enum {name}` in src/protocol*"
    );
    found.into_iter().next().unwrap()
}

/// The names in backticks of `text`: each span's leading identifier when it starts with a
/// capital letter and is not a path (`Op::Fork` names another list's entry).
fn backticked_names(text: &str, capitalised: bool) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| {
            let name: String = span
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let path = span[name.len()..].starts_with("::");
            let first_ok = name
                .chars()
                .next()
                .is_some_and(|c| !capitalised || c.is_uppercase());
            (first_ok && !path).then_some(name)
        })
        .collect()
}

/// The bullet of the doc that starts with `head`, through its indented continuation lines.
fn doc_bullet(doc: &str, head: &str) -> String {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(head));
    let first = lines.next().unwrap_or_else(|| panic!("no `{head}` bullet"));
    let rest: Vec<&str> = lines.take_while(|l| l.starts_with("  ")).collect();
    format!("{}\n{}", &first[head.len()..], rest.join("\n"))
}

/// What the code has and the doc lacks, and what the doc names that the code lacks.
fn list_differences(what: &str, code: &[String], doc: &[String]) -> Option<String> {
    let missing: Vec<&String> = code.iter().filter(|v| !doc.contains(v)).collect();
    let extra: Vec<&String> = doc.iter().filter(|v| !code.contains(v)).collect();
    (!missing.is_empty() || !extra.is_empty()).then(|| {
        format!(
            "docs/architecture.md's {what}: missing {missing:?}, no longer in the code {extra:?}"
        )
    })
}

#[test]
fn docs_architecture_lists_every_op_and_event_variant() {
    let doc = architecture_doc();
    let ops = backticked_names(&doc_bullet(&doc, "- `Op`s in:"), true);
    let events = backticked_names(&doc_bullet(&doc, "- `Event`s out:"), true);
    let problems: Vec<String> = [
        list_differences("`Op`s", &protocol_variants("Op"), &ops),
        list_differences("`Event`s", &protocol_variants("Event"), &events),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn docs_architecture_names_every_module_that_writes_to_stdout() {
    let mut writers: Vec<String> = module_files()
        .into_iter()
        .filter(|(path, _, depth)| {
            let source = std::fs::read_to_string(path).unwrap();
            scan(&source, *depth)
                .iter()
                .any(|f| matches!(f.named, Named::Print(_)))
        })
        .map(|(_, module, _)| module)
        .collect();
    writers.dedup();
    writers.sort();
    let doc = architecture_doc()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let sentence = doc
        .split("Also checked:")
        .nth(1)
        .and_then(|rest| rest.split(" write to stdout or stderr").next())
        .and_then(|rest| rest.rsplit("; only ").next())
        .expect("the sentence naming who writes to stdout");
    let mut listed = backticked_names(sentence, false);
    listed.sort();
    let mut allowed: Vec<String> = PRINTERS.iter().map(|p| p.to_string()).collect();
    allowed.sort();
    let problems: Vec<String> = [
        list_differences("modules writing to stdout", &writers, &listed),
        list_differences("PRINTERS", &allowed, &listed),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The parsers behind the two tests above, on a sample.
#[test]
fn the_list_checker_reads_variants_and_backticked_names() {
    let source = r#"
/// `Fake` in a comment
pub enum Op {
    /// doc
    Submit(String),
    #[serde(rename = "x")]
    Decide { call: Vec<(u8, u8)>, decision: Decision },
    Shutdown,
}
enum Other { Not }
"#;
    assert_eq!(
        enum_variants(source, "Op"),
        ["Submit", "Decide", "Shutdown"]
    );
    assert_eq!(
        backticked_names("`Submit`, `Decide { call }` after `Op::Fork`, `type`", true),
        ["Submit", "Decide"]
    );
    let problems = list_differences(
        "`Op`s",
        &["Submit".into(), "Fork".into()],
        &["Submit".into(), "Gone".into()],
    )
    .unwrap();
    assert!(problems.contains(r#"missing ["Fork"]"#), "{problems}");
    assert!(
        problems.contains(r#"no longer in the code ["Gone"]"#),
        "{problems}"
    );
}

/// Every `Mutex` is locked through `crate::sync`, so a poisoned lock is recovered the same way
/// everywhere: a `.lock()` outside src/sync.rs is only tokio's (awaited) or a standard stream's.
#[test]
fn every_lock_goes_through_sync() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let root = src().parent().unwrap().to_path_buf();
    let mut problems = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        if rel == LOCK_POLICY {
            continue;
        }
        problems.extend(own_locks(&std::fs::read_to_string(&file).unwrap(), &rel));
    }
    assert!(
        problems.is_empty(),
        "take these locks with crate::sync::lock (docs/architecture.md, \"Locks\"):\n{}",
        problems.join("\n")
    );
}

/// The `.lock()` calls of `source` that are neither awaited nor on stdin/stdout/stderr, and
/// any `PoisonError` (a lock's own poisoning policy).
fn own_locks(source: &str, file: &str) -> Vec<String> {
    let toks = tokens(&code_only(source));
    let at = |i: usize| toks.get(i).map(|(t, _)| t);
    let ident = |i: usize, words: &[&str]| matches!(at(i), Some(Tok::Ident(w)) if words.contains(&w.as_str()));
    let call = |i: usize| at(i) == Some(&Tok::Punct('(')) && at(i + 1) == Some(&Tok::Punct(')'));
    let mut found = Vec::new();
    for (i, (_, line)) in toks.iter().enumerate().skip(1) {
        let lock = at(i - 1) == Some(&Tok::Punct('.')) && ident(i, &["lock"]) && call(i + 1);
        let stream = i >= 4 && ident(i - 4, &["stdin", "stdout", "stderr"]) && call(i - 3);
        let awaited = at(i + 3) == Some(&Tok::Punct('.')) && ident(i + 4, &["await"]);
        if (lock && !stream && !awaited) || ident(i, &["PoisonError"]) {
            found.push(format!("{file}:{line}"));
        }
    }
    found
}

#[test]
fn the_lock_checker_tells_our_locks_from_streams_and_tokio() {
    let source = r#"
fn f() {
    let a = state.lock().unwrap_or_else(PoisonError::into_inner);
    if let Ok(b) = other
        .lock() {}
    let c = std::io::stdout().lock();
    let d = io::stdin()
        .lock();
    let e = opening.lock().await;
    let g = catalog.read().unwrap_or_else(PoisonError::into_inner);
    let h = self.read()?;
    // comment: x.lock()
}
"#;
    assert_eq!(
        own_locks(source, "src/x.rs"),
        ["src/x.rs:3", "src/x.rs:3", "src/x.rs:5", "src/x.rs:10"]
    );
}

/// The backticked names of a table cell, in order.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The arrows table of docs/architecture.md: for each row, its modules and the middle cell.
fn arrows_table(doc: &str) -> Vec<(Vec<String>, String)> {
    let section = doc
        .split("## The arrows")
        .nth(1)
        .expect("docs/architecture.md has a section `## The arrows`");
    section
        .lines()
        .skip_while(|l| !l.starts_with("| module |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (backticked(cells[1]), cells[2].to_string())
        })
        .collect()
}

#[test]
fn the_arrows_table_in_the_docs_is_the_enforced_rules_cell_by_cell() {
    let rows = arrows_table(&architecture_doc());
    let mut problems = Vec::new();
    for rule in RULES {
        let found: Vec<&(Vec<String>, String)> = rows
            .iter()
            .filter(|(modules, _)| modules.iter().any(|m| m == rule.module))
            .collect();
        let [(_, cell)] = found.as_slice() else {
            problems.push(format!(
                "`{}` is in {} rows of the table, not one",
                rule.module,
                found.len()
            ));
            continue;
        };
        let ok = match rule.may_use {
            None => cell == "anything",
            Some([]) => cell == "nothing",
            Some(list) => {
                let mut doc = backticked(cell);
                let mut code: Vec<String> = list.iter().map(|s| s.to_string()).collect();
                doc.sort();
                code.sort();
                doc == code && cell.split(", ").count() == code.len()
            }
        };
        if !ok {
            problems.push(format!(
                "`{}`: the table says `{cell}`, RULES say {:?}",
                rule.module, rule.may_use
            ));
        }
    }
    for (modules, _) in &rows {
        for m in modules {
            if !RULES.iter().any(|r| r.module == m) {
                problems.push(format!("the table names `{m}`, which has no rule"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

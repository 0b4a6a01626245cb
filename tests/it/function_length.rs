//! Keeps the event loops and dispatchers short (docs/architecture.md: no function over ~80
//! lines; an event loop dispatches to one handler per event group). Every function of the
//! frontends, the daemon and the core's op loops is measured on the source, from its `fn`
//! line to its closing brace, and none may pass [`MAX_LINES`]. The source is rustfmt's, so a
//! function ends at the first `}` at its own indentation.

use std::path::{Path, PathBuf};

/// The longest a function in the checked places may be, its signature and braces included
/// (its doc comment not).
const MAX_LINES: usize = 80;

/// Where the event loops and dispatchers live: whole folders of the frontends and the daemon,
/// and the single files of the core and the tools that run a loop over ops or messages.
const CHECKED: &[&str] = &[
    "tui.rs",
    "tui",
    "acp.rs",
    "acp",
    "daemon.rs",
    "daemon",
    "print.rs",
    "print",
    "attach.rs",
    "eval/trajectory.rs",
    "agent.rs",
    "agent/busy.rs",
    "tools/mcp/server.rs",
];

/// Long functions in those places that are neither a loop nor a dispatcher, with the reason
/// they stay whole: (file under `src/`, function name, why).
const NOT_LOOPS: &[(&str, &str, &str)] = &[
    (
        "tui/transcript.rs",
        "tool_lines",
        "renders one tool entry: a straight sequence of its parts",
    ),
    (
        "daemon/hub.rs",
        "open",
        "opens a session once: a straight sequence of set-up steps",
    ),
    (
        "daemon/log.rs",
        "open",
        "opens the event log once: a straight sequence of set-up steps",
    ),
];

/// A function found in a source: its name, the line of its `fn` (1-based) and its length.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// Every function of a rustfmt-formatted source with its length in lines.
fn functions(source: &str) -> Vec<Function> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some((indent, name)) = fn_head(line) else {
            continue;
        };
        let close = format!("{indent}}}");
        let end = if line.trim_end().ends_with('}') || line.trim_end().ends_with(';') {
            i
        } else {
            (i + 1..lines.len())
                .find(|&j| lines[j].starts_with(&close))
                .unwrap_or(lines.len() - 1)
        };
        found.push(Function {
            name,
            line: i + 1,
            lines: end - i + 1,
        });
    }
    found
}

/// The indentation and name of a line that starts a function (`pub(crate) async fn name`…).
fn fn_head(line: &str) -> Option<(&str, String)> {
    let rest = line.trim_start();
    let indent = &line[..line.len() - rest.len()];
    let mut words = rest.split_whitespace().peekable();
    while let Some(word) = words.next() {
        match word {
            "fn" => {
                let name: String = words
                    .next()?
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                return (!name.is_empty()).then_some((indent, name));
            }
            w if w == "pub" || w.starts_with("pub(") => {}
            "async" | "const" | "unsafe" | "extern" | "\"C\"" => {}
            _ => return None,
        }
    }
    None
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The source without its `#[cfg(test)]` module (tests may be long).
fn without_tests(source: &str) -> &str {
    source
        .find("\n#[cfg(test)]\nmod tests")
        .map_or(source, |at| &source[..at])
}

#[test]
fn event_loops_and_dispatchers_stay_within_80_lines() {
    let root = src();
    let mut files = Vec::new();
    for place in CHECKED {
        let path = root.join(place);
        assert!(path.exists(), "{place} is listed but does not exist");
        rust_files(&path, &mut files);
    }
    let mut long = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        let name = file.strip_prefix(&root).unwrap().to_string_lossy();
        for f in functions(without_tests(&source)) {
            let excused = NOT_LOOPS
                .iter()
                .any(|(path, func, _)| *path == name && *func == f.name);
            if f.lines > MAX_LINES && !excused {
                long.push(format!(
                    "src/{name}:{} fn {} has {} lines (at most {MAX_LINES}): split it into named steps",
                    f.line, f.name, f.lines
                ));
            }
        }
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
}

#[test]
fn every_excused_function_exists_and_is_still_long() {
    let root = src();
    for (path, func, why) in NOT_LOOPS {
        assert!(!why.is_empty());
        let source = std::fs::read_to_string(root.join(path)).unwrap();
        let found = functions(without_tests(&source));
        let f = found
            .iter()
            .find(|f| f.name == *func)
            .unwrap_or_else(|| panic!("src/{path} has no fn {func}: drop it from NOT_LOOPS"));
        assert!(
            f.lines > MAX_LINES,
            "src/{path} fn {func} is short now: drop it from NOT_LOOPS"
        );
    }
}

#[test]
fn the_length_counter_reads_rustfmt_functions() {
    let source = "\
impl A {
    pub(crate) async fn long(
        x: u8,
    ) -> u8 {
        if x > 0 {
            x
        } else {
            0
        }
    }

    fn one(&self) {}
}

fn declared();

pub fn free() {
    let s = \"}\";
}
";
    let found = functions(source);
    let summary: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|f| (f.name.as_str(), f.line, f.lines))
        .collect();
    assert_eq!(
        summary,
        [
            ("long", 2, 9),
            ("one", 12, 1),
            ("declared", 15, 1),
            ("free", 17, 3)
        ]
    );
}

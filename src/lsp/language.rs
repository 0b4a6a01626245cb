//! Which language a file is in (by its extension) and which server serves it: the configured
//! one (`[lsp.servers.<language>]`) or the first well-known server found on `PATH`. Pure
//! apart from the `PATH` lookup; it starts nothing.

use std::path::{Path, PathBuf};

use super::ServerCommand;

/// A language minicode knows a server for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Language {
    Python,
    Rust,
    TypeScript,
    Go,
    C,
}

impl Language {
    /// Every language, in the order `doctor` lists them.
    pub(crate) const ALL: [Language; 5] = [
        Language::Python,
        Language::Rust,
        Language::TypeScript,
        Language::Go,
        Language::C,
    ];

    /// How to get a server for it, for a user who has none (`doctor`).
    pub(crate) fn install_hint(self) -> &'static str {
        match self {
            Language::Python => {
                "install pyright (`npm install -g pyright`) or basedpyright (`pip install \
                 basedpyright`), or set [lsp.servers.python]"
            }
            Language::Rust => "`rustup component add rust-analyzer`, or set [lsp.servers.rust]",
            Language::TypeScript => {
                "`npm install -g typescript-language-server typescript`, or set \
                 [lsp.servers.typescript]"
            }
            Language::Go => "`go install golang.org/x/tools/gopls@latest`, or set [lsp.servers.go]",
            Language::C => "install clangd (your system's package), or set [lsp.servers.c]",
        }
    }

    /// The language of `path`, by its extension; `None`: no server is asked about it.
    pub(crate) fn of(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?;
        Some(match ext {
            "py" | "pyi" => Language::Python,
            "rs" => Language::Rust,
            "ts" | "tsx" | "js" | "jsx" | "mts" | "cts" | "mjs" | "cjs" => Language::TypeScript,
            "go" => Language::Go,
            "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Language::C,
            _ => return None,
        })
    }

    /// The key of its `[lsp.servers.<key>]` table, also its name in notes.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Rust => "rust",
            Language::TypeScript => "typescript",
            Language::Go => "go",
            Language::C => "c",
        }
    }

    /// The `languageId` of `path` in `textDocument/didOpen`.
    pub(crate) fn id_of(self, path: &Path) -> &'static str {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        match (self, ext) {
            (Language::Python, _) => "python",
            (Language::Rust, _) => "rust",
            (Language::TypeScript, "tsx") => "typescriptreact",
            (Language::TypeScript, "jsx") => "javascriptreact",
            (Language::TypeScript, "js" | "mjs" | "cjs") => "javascript",
            (Language::TypeScript, _) => "typescript",
            (Language::Go, _) => "go",
            (Language::C, "c" | "h") => "c",
            (Language::C, _) => "cpp",
        }
    }

    /// The well-known servers, best first: the program and its arguments.
    fn candidates(self) -> &'static [(&'static str, &'static [&'static str])] {
        match self {
            Language::Python => &[
                ("basedpyright-langserver", &["--stdio"]),
                ("pyright-langserver", &["--stdio"]),
            ],
            Language::Rust => &[("rust-analyzer", &[])],
            Language::TypeScript => &[("typescript-language-server", &["--stdio"])],
            Language::Go => &[("gopls", &[])],
            Language::C => &[("clangd", &[])],
        }
    }
}

/// Where a server for a language comes from: the user configured it (a failure to start is
/// worth a note), or it was found on `PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) command: ServerCommand,
    pub(crate) configured: bool,
}

/// The server for `language` in `workspace`: the configured one, else a detected one. A
/// well-known server that is not installed is no server (nothing is said); rust-analyzer is
/// only asked in a Cargo workspace.
pub(crate) fn choose(
    language: Language,
    configured: Option<&ServerCommand>,
    workspace: &Path,
    path_var: Option<&std::ffi::OsStr>,
) -> Option<Choice> {
    if let Some(command) = configured {
        return Some(Choice {
            command: command.clone(),
            configured: true,
        });
    }
    if language == Language::Rust && !workspace.join("Cargo.toml").is_file() {
        return None;
    }
    language.candidates().iter().find_map(|(program, args)| {
        let found = on_path(program, path_var)?;
        Some(Choice {
            command: ServerCommand {
                command: found.display().to_string(),
                args: args.iter().map(|a| a.to_string()).collect(),
            },
            configured: false,
        })
    })
}

/// Where `program` is: itself when it names a path (relative ones against `workspace`), else
/// the first executable file of that name in one of `path_var`'s folders.
pub(crate) fn find_program(
    program: &str,
    workspace: &Path,
    path_var: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        let path = workspace.join(program);
        let runs = std::fs::metadata(&path)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        return runs.then_some(path);
    }
    on_path(program, path_var)
}

/// `program`'s path in one of `path_var`'s folders, when it is an executable file there.
fn on_path(program: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn extensions_map_to_languages() {
        assert_eq!(Language::of(Path::new("a/b.py")), Some(Language::Python));
        assert_eq!(Language::of(Path::new("x.tsx")), Some(Language::TypeScript));
        assert_eq!(Language::of(Path::new("x.hpp")), Some(Language::C));
        assert_eq!(Language::of(Path::new("README.md")), None);
        assert_eq!(Language::of(Path::new("Makefile")), None);
        assert_eq!(Language::C.id_of(Path::new("a.cc")), "cpp");
        assert_eq!(Language::TypeScript.id_of(Path::new("a.js")), "javascript");
    }

    #[test]
    fn a_configured_server_wins_and_a_missing_one_is_no_server() {
        let dir = tempfile::tempdir().unwrap();
        let configured = ServerCommand {
            command: "my-pyright".into(),
            args: vec![],
        };
        let chosen = choose(Language::Python, Some(&configured), dir.path(), None).unwrap();
        assert!(chosen.configured);
        let empty = std::ffi::OsString::from(dir.path());
        assert_eq!(
            choose(Language::Python, None, dir.path(), Some(&empty)),
            None
        );
    }

    #[test]
    fn a_detected_server_is_found_on_path_and_rust_needs_cargo() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for name in ["pyright-langserver", "rust-analyzer"] {
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::ffi::OsString::from(dir.path());
        let chosen = choose(Language::Python, None, dir.path(), Some(&path)).unwrap();
        assert!(chosen.command.command.ends_with("pyright-langserver"));
        assert_eq!(chosen.command.args, vec!["--stdio"]);
        assert_eq!(choose(Language::Rust, None, dir.path(), Some(&path)), None);
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert!(choose(Language::Rust, None, dir.path(), Some(&path)).is_some());
    }
}

//! Keeps the layering honest: the agent core never names the terminal stack, and the library
//! never prints. A failure here means a module reached across the boundary described in
//! docs/architecture.md.

use std::path::{Path, PathBuf};

/// Modules that must stay terminal-agnostic (files and their sub-folders).
const CORE: &[&str] = &[
    "protocol", "agent", "provider", "tools", "session", "fsutil", "config",
];
const FORBIDDEN: &[&str] = &["ratatui", "crossterm", "crate::tui", "tui::"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn core_files() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for name in CORE {
        let file = src.join(format!("{name}.rs"));
        if file.exists() {
            files.push(file);
        }
        let dir = src.join(name);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    files
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
        for word in FORBIDDEN {
            assert!(!text.contains(word), "{} names {word}", file.display());
        }
    }
}

#[test]
fn library_denies_printing() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    assert!(lib.contains("#![deny(clippy::print_stdout, clippy::print_stderr)]"));
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.trim_start().starts_with("//!"),
            "{} lacks a //! header",
            file.display()
        );
    }
}

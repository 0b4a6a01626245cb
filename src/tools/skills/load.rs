//! Reading a skill's files: `SKILL.md` at discovery and when it is loaded, and any other file
//! of its folder on request. Every read goes through `fsutil::open_confined` with the skill's
//! canonical folder as the boundary, so a link that leads out of the folder is refused, and a
//! FIFO or device never blocks the open; every file is at most [`MAX_FILE_BYTES`] of UTF-8.
//!
//! It formats what the model reads of a loaded skill; it decides nothing about which skills
//! exist or when they load.

use std::io::Read;
use std::path::{Component, Path};

use super::frontmatter;
use super::{MAX_FILE_BYTES, SKILL_FILE, Skill, loaded_marker};
use crate::fsutil::{self, OpenError};

/// Files of the folder listed beside a loaded body, and how deep the listing looks.
const MAX_LISTED_FILES: usize = 50;
const MAX_LISTING_DEPTH: usize = 3;

/// The text of `dir/rel`, confined to `dir` (canonical), at most [`MAX_FILE_BYTES`], UTF-8
/// without NUL bytes. The error is a phrase naming `rel`.
pub(super) fn read_text(dir: &Path, rel: &str) -> Result<String, String> {
    let (file, meta) = fsutil::open_confined(dir, &dir.join(rel)).map_err(|e| match e {
        OpenError::Missing => format!("{rel} does not exist"),
        OpenError::Outside => {
            format!("{rel} resolves outside the skill's folder (links out are refused)")
        }
        OpenError::Directory => format!("{rel} is a folder"),
        OpenError::NotRegular => format!("{rel} is not a regular file"),
        OpenError::Io(e) => format!("cannot read {rel}: {e}"),
    })?;
    let too_large = || format!("{rel} is larger than the limit of {MAX_FILE_BYTES} bytes");
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {rel}: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    if bytes.contains(&0) {
        return Err(format!("{rel} is not a text file"));
    }
    String::from_utf8(bytes).map_err(|_| format!("{rel} is not valid UTF-8"))
}

/// A `file` argument checked to be a plain relative path (no `..`, not absolute).
pub(super) fn relative(raw: &str) -> Result<String, String> {
    let path = Path::new(raw);
    let plain = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if raw.contains('\0') || !plain {
        return Err(format!(
            "file {raw:?} must be a path relative to the skill's folder, without `..`"
        ));
    }
    Ok(raw.to_string())
}

/// What a load of the skill's `SKILL.md` returns: the body (frontmatter removed) in a
/// `<skill>` element naming the folder, then the other files the folder holds.
pub(super) fn body(skill: &Skill) -> Result<String, String> {
    let text = read_text(&skill.dir, SKILL_FILE)?;
    let doc = frontmatter::parse(&text).map_err(|e| format!("{SKILL_FILE}: {e}"))?;
    let mut out = format!(
        "{} folder=\"{}\">\n{}\n",
        loaded_marker(&skill.name),
        skill.dir.display(),
        doc.body.trim()
    );
    let files = listing(&skill.dir);
    if !files.is_empty() {
        out.push_str(&format!(
            "\nOther files of this skill (load one with the `skill` tool: name {:?} and file \
             set to its path): {}\n",
            skill.name,
            files.join(", ")
        ));
    }
    out.push_str("</skill>");
    Ok(out)
}

/// What a load of another file of the skill returns.
pub(super) fn file(skill: &Skill, rel: &str) -> Result<String, String> {
    let text = read_text(&skill.dir, rel).map_err(|e| format!("skill {}: {e}", skill.name))?;
    Ok(format!(
        "<skill-file name=\"{}\" path=\"{rel}\">\n{}\n</skill-file>",
        skill.name,
        text.trim_end()
    ))
}

/// The folder's files other than `SKILL.md`, as relative paths, sorted; hidden entries and
/// symbolic links are left out (a link could only be loaded if it stayed inside anyway).
fn listing(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    walk(dir, dir, 1, &mut files);
    files.sort();
    if files.len() > MAX_LISTED_FILES {
        let more = files.len() - MAX_LISTED_FILES;
        files.truncate(MAX_LISTED_FILES);
        files.push(format!("… and {more} more"));
    }
    files
}

fn walk(base: &Path, dir: &Path, depth: usize, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        // Stop early in a huge folder: one more than the cap is enough to say "and more".
        if files.len() > MAX_LISTED_FILES * 4 {
            return;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() && depth < MAX_LISTING_DEPTH {
            walk(base, &path, depth + 1, files);
        } else if kind.is_file()
            && let Ok(rel) = path.strip_prefix(base)
            && rel != Path::new(SKILL_FILE)
        {
            files.push(rel.display().to_string());
        }
    }
}

//! A pasted path to an image file becomes an attached image: terminals and file managers paste
//! a dragged file as its path (quoted, with backslash-escaped spaces, or as a `file://` URL),
//! and the user means the picture, not its name. The parsing is pure; [`classify`] looks at the
//! file and is called by the run loop, so `update` stays free of I/O. The image is checked
//! exactly as `--image` checks one (`Image::read`: format by its first bytes, size limit).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::state::Msg;
use crate::chat::{Image, ImageFormat};

/// File name endings that say the user meant a picture: a file named so that fails the checks
/// keeps its text, with a notice saying why it was not attached.
const IMAGE_ENDINGS: [&str; 6] = ["png", "jpg", "jpeg", "gif", "webp", "jfif"];

/// The message a paste becomes: an attached image when `text` is the path of one, text with a
/// notice when it names a file that looks like an image but fails the checks, plain text
/// otherwise. Relative paths are taken from `workspace`, `~/` from `$HOME`.
pub fn classify(text: String, workspace: &Path) -> Msg {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Some(path) = path_of(&text, home.as_deref(), workspace) else {
        return Msg::Paste(text);
    };
    if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
        return Msg::Paste(text);
    }
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    let named_image = looks_like_image(&path);
    // A cheap look at the first bytes first, so pasting the path of a large text file does
    // not read it whole.
    if !named_image && !starts_like_image(&path) {
        return Msg::Paste(text);
    }
    match Image::read(&path) {
        Ok(image) => Msg::PasteImage { name, image },
        Err(e) if named_image => Msg::PasteRefused {
            text,
            why: format!("{name} not attached as an image: {e}"),
        },
        Err(_) => Msg::Paste(text),
    }
}

/// Whether the file's first bytes are an image signature.
fn starts_like_image(path: &Path) -> bool {
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path)
        .and_then(|f| f.take(16).read_to_end(&mut head))
        .is_ok()
        && ImageFormat::sniff(&head).is_some()
}

fn looks_like_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_ENDINGS.iter().any(|i| i.eq_ignore_ascii_case(e)))
}

/// The one path `text` is, as a terminal pastes a dragged file, or `None` when it is anything
/// else (several words, several lines, empty). Unquoted spaces end a path unless escaped with
/// a backslash; quotes must wrap the whole paste.
pub(crate) fn path_of(text: &str, home: Option<&Path>, workspace: &Path) -> Option<PathBuf> {
    let text = text.trim();
    if text.is_empty() || text.contains(['\n', '\r']) {
        return None;
    }
    let raw = if let Some(url) = text.strip_prefix("file://") {
        // `file:///x` or `file://localhost/x`; another host is not this machine.
        let local = url.strip_prefix("localhost").unwrap_or(url);
        if !local.starts_with('/') {
            return None;
        }
        percent_decoded(local)?
    } else if let Some(inner) = unquoted(text) {
        inner.to_string()
    } else {
        unescaped(text)?
    };
    if raw.is_empty() {
        return None;
    }
    let path = match raw.strip_prefix("~/") {
        Some(rest) => home?.join(rest),
        None => PathBuf::from(&raw),
    };
    Some(if path.is_absolute() {
        path
    } else {
        workspace.join(path)
    })
}

/// The inside of a paste wrapped whole in one kind of quotes.
fn unquoted(text: &str) -> Option<&str> {
    ['\'', '"'].into_iter().find_map(|q| {
        let inner = text.strip_prefix(q)?.strip_suffix(q)?;
        (!inner.contains(q)).then_some(inner)
    })
}

/// `text` with backslash escapes undone (`my\ shot.png`), or `None` when it holds an
/// unescaped space, a quote or a trailing lone backslash: then it is not one bare path.
fn unescaped(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            c if c.is_whitespace() || c == '\'' || c == '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// `%20` and the like decoded; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Option<PathBuf> {
        path_of(text, Some(Path::new("/home/u")), Path::new("/ws"))
    }

    #[test]
    fn bare_absolute_and_relative_paths() {
        assert_eq!(path("/tmp/a.png"), Some("/tmp/a.png".into()));
        assert_eq!(path("  shots/a.png \n"), Some("/ws/shots/a.png".into()));
        assert_eq!(
            path("~/Pictures/a.png"),
            Some("/home/u/Pictures/a.png".into())
        );
        assert_eq!(
            path_of("~/a.png", None, Path::new("/ws")),
            None,
            "no home, no ~/"
        );
    }

    #[test]
    fn quoted_paths_keep_their_spaces() {
        assert_eq!(path("'/tmp/my shot.png'"), Some("/tmp/my shot.png".into()));
        assert_eq!(
            path("\"~/my shot.png\""),
            Some("/home/u/my shot.png".into())
        );
        assert_eq!(path("'a.png"), None);
        assert_eq!(path("'a'b.png'"), None);
    }

    #[test]
    fn backslash_escaped_spaces_are_one_path() {
        assert_eq!(
            path("/tmp/my\\ shot\\ (1).png"),
            Some("/tmp/my shot (1).png".into())
        );
        assert_eq!(
            path("/tmp/my shot.png"),
            None,
            "an unescaped space is two words"
        );
        assert_eq!(path("/tmp/a.png\\"), None);
    }

    #[test]
    fn file_urls_are_decoded() {
        assert_eq!(
            path("file:///tmp/my%20shot.png"),
            Some("/tmp/my shot.png".into())
        );
        assert_eq!(
            path("file://localhost/tmp/a.png"),
            Some("/tmp/a.png".into())
        );
        assert_eq!(path("file://elsewhere/tmp/a.png"), None);
        assert_eq!(path("file:///tmp/%zz.png"), None);
    }

    #[test]
    fn text_that_is_not_one_path_stays_text() {
        assert_eq!(path(""), None);
        assert_eq!(path("   "), None);
        assert_eq!(path("look at a.png"), None);
        assert_eq!(path("/tmp/a.png\n/tmp/b.png"), None);
    }
}

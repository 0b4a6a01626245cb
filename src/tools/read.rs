//! The `read` tool: shows a text file in the workspace as numbered lines, a window at a time.
//!
//! It streams the file through a `BufReader`, so a huge file (or one huge line) is never held
//! in memory whole, and refuses binary files instead of feeding the model garbage. It must not
//! change anything on disk; it only records what the model has seen so `edit` can check it.

use std::io::{BufRead, BufReader, Read as _};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Aim, Fingerprint, Prepared, Secrets, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{Image, ImageFormat, MAX_IMAGE_BYTES, ToolKind, ToolSpec};
use crate::fsutil;
use crate::memory;

/// Most lines shown by one call.
pub(crate) const MAX_LINES: u64 = 2000;
/// Most bytes of output produced by one call.
pub(crate) const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Longer lines are cut to this many characters, with a marker.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// Files up to this size are read whole and fingerprinted (content hash), so they can be
/// edited afterwards; larger ones are streamed and not remembered (`edit` refuses them anyway).
pub(crate) const MAX_FINGERPRINT_BYTES: u64 = super::edit::MAX_EDIT_BYTES;

/// The description in the small profile (see `tools::lean`).
const BRIEF: &str = "Read a text file, with line numbers.";

const DESCRIPTION: &str = "Read a text file as numbered lines, at most 2000 lines or 50 KB a \
call (the end says where to go on). Read before you edit.";

pub(crate) struct Read;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// Relative to the workspace root (absolute paths inside the workspace also work).
    path: String,
    /// First line to show, 1-based.
    offset: Option<u64>,
    /// How many lines to show at most.
    limit: Option<u64>,
}

impl Args {
    /// The whole file at `path` (up to the usual cap).
    pub(crate) fn whole(path: String) -> Self {
        Self {
            path,
            offset: None,
            limit: None,
        }
    }
}

/// A validated call.
pub(crate) struct Call {
    path: PathBuf,
    display: String,
    offset: u64,
    limit: u64,
}

fn check(args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
    // Models often count from 0; treat it as the first line rather than failing the call.
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = match args.limit {
        Some(0) => return Err("limit must be at least 1".to_string()),
        Some(n) => n.min(MAX_LINES),
        None => MAX_LINES,
    };
    let path = fsutil::resolve_in_workspace(&ctx.workspace, &args.path)
        .map_err(|e| format!("cannot read: {e}"))?;
    let display = fsutil::display_path(&ctx.workspace, &path);
    Ok(Call {
        path,
        display,
        offset,
        limit,
    })
}

impl Typed for Read {
    type Args = Args;
    type Checked = Call;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn aim(args: &Args) -> Aim {
        Aim::Paths(vec![args.path.clone()])
    }

    fn check(&self, args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
        check(args, ctx)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::Read.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path in the workspace"},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)"},
                    "limit": {"type": "integer", "minimum": 1, "description": "Lines to show"}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn brief(&self) -> Option<&'static str> {
        Some(BRIEF)
    }

    fn describe(&self, call: Call, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let summary = match (call.offset, call.limit) {
            (1, MAX_LINES) => call.display,
            (o, MAX_LINES) => format!("{} (from line {o})", call.display),
            (o, l) => format!("{}:{o}-{}", call.display, o.saturating_add(l - 1)),
        };
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        call: Call,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            tracing::debug!(path = %call.display, offset = call.offset, limit = call.limit, "read");
            if cancel.is_cancelled() {
                return ToolOutput::interrupted("interrupted by the user");
            }
            let Call {
                path,
                display,
                offset,
                limit,
            } = call;
            if let Some(rule) = ctx.read_denied(&path) {
                return ToolOutput::denied(format!("not shown: {display} is {rule}"));
            }
            let remembered = path.clone();
            let detail = memory::is_detail_file(&ctx.workspace, &path);
            let max_bytes = MAX_OUTPUT_BYTES.min(ctx.output_limit());
            let secrets = ctx.secrets.clone();
            if let Some(files) = &ctx.files {
                let text = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return ToolOutput::interrupted("interrupted by the user"),
                    text = files.read_text(&path) => text,
                };
                let text = match text {
                    Ok(text) => text,
                    Err(e) => return ToolOutput::failed(format!("cannot read {display}: {e}")),
                };
                let window = Window {
                    offset,
                    limit,
                    max_bytes,
                    secrets: &secrets,
                };
                return match render_text(&text, &display, &window, detail) {
                    Ok(shown) => {
                        ctx.remember(&remembered, Fingerprint::of_text(text.as_bytes()));
                        ctx.remember_text(&remembered, &text);
                        ToolOutput::ok(shown)
                    }
                    Err(message) => ToolOutput::failed(message),
                };
            }
            let job = tokio::task::spawn_blocking(move || {
                if let Some(image) = read_image(&path, &display) {
                    return image.map(|(text, image)| (text, None, Some(image)));
                }
                let window = Window {
                    offset,
                    limit,
                    max_bytes,
                    secrets: &secrets,
                };
                read_file(&path, &display, &window, detail).map(|(t, f)| (t, f, None))
            });
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => return ToolOutput::interrupted("interrupted by the user"),
                r = job => r,
            };
            match result {
                Ok(Ok((text, _, Some(image)))) => ToolOutput::ok(text).with_image(image),
                Ok(Ok((text, fingerprint, None))) => {
                    // Any successful read counts, even a window: `edit` matches exact
                    // text and re-checks the whole file's hash, so a stale or partial view
                    // cannot silently clobber changes.
                    if let Some(fp) = fingerprint {
                        ctx.remember(&remembered, fp);
                    }
                    ToolOutput::ok(text)
                }
                Ok(Err(message)) => ToolOutput::failed(message),
                Err(e) => ToolOutput::failed(format!("read failed: {e}")),
            }
        })
    }
}

/// An image file (by its first bytes): the note the model reads as the result and the
/// image, which follows in a user message; `None` for any other file.
fn read_image(path: &Path, display: &str) -> Option<Result<(String, Image), String>> {
    let (mut file, _) = fsutil::open_regular(path).ok()?;
    let mut head = [0u8; 12];
    let got = file.read(&mut head).ok()?;
    ImageFormat::sniff(&head[..got])?;
    // The rest from the same descriptor: the confined path is not looked up again.
    let mut data = head[..got].to_vec();
    let rest = file
        .take(MAX_IMAGE_BYTES as u64 + 1 - got as u64)
        .read_to_end(&mut data);
    Some(
        rest.map_err(|e| e.to_string())
            .and_then(|_| Image::new(data).map_err(|e| e.to_string()))
            .map(|image| {
                let note = format!(
                    "{display} is an image ({}, {} KB): it is attached in the next message",
                    image.format.media_type(),
                    image.bytes.div_ceil(1024)
                );
                (note, image)
            })
            .map_err(|e| format!("cannot show the image {display}: {e}")),
    )
}

/// Which lines to show, within which caps, with which values blanked out.
struct Window<'a> {
    offset: u64,
    limit: u64,
    max_bytes: usize,
    /// Redacted from each line before it is cut, so no part of a key survives the cut.
    secrets: &'a Secrets,
}

/// Reads and renders one window of the file; also returns the whole file's fingerprint when
/// it was small enough to hash.
fn read_file(
    path: &Path,
    display: &str,
    window: &Window,
    memory_detail: bool,
) -> Result<(String, Option<Fingerprint>), String> {
    let fail = |e: std::io::Error| format!("cannot read {display}: {e}");
    // Look before opening: opening a FIFO for reading would block until a writer appears.
    let meta = std::fs::metadata(path).map_err(fail)?;
    if meta.is_dir() {
        return Err(format!(
            "cannot read {display}: it is a directory; list it with bash (e.g. `ls {display}`)"
        ));
    }
    if !meta.is_file() {
        return Err(format!("cannot read {display}: it is not a regular file"));
    }
    // Opened without blocking and checked again on the descriptor: the file may have been
    // swapped for a FIFO since the look above.
    let (file, meta) =
        fsutil::open_regular(path).map_err(|e| format!("cannot read {display}: {e}"))?;
    let binary = || {
        format!(
            "cannot read {display}: it looks like a binary file, not text; inspect it with bash if needed"
        )
    };
    // A memory detail file (`.minicode/memory/*.md`) over its limits is refused, not shown in
    // part: the model must not act on half a memory topic.
    if memory_detail && meta.len() > memory::MAX_BYTES {
        return Err(format!(
            "cannot read {display}: memory file {display} is larger than the limit of {} bytes",
            memory::MAX_BYTES
        ));
    }
    if meta.len() <= MAX_FINGERPRINT_BYTES {
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_FINGERPRINT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(fail)?;
        if memory_detail {
            memory::validate_detail(Path::new(display), &bytes)
                .map_err(|e| format!("cannot read {display}: {e}"))?;
        }
        if fsutil::looks_binary(&bytes) {
            return Err(binary());
        }
        let total = count_lines(&bytes);
        let fingerprint = Fingerprint::of(&bytes, &meta);
        let text = render(&bytes[..], display, window, Some(total)).map_err(|e| match e {
            RenderError::Binary => binary(),
            RenderError::Io(e) => fail(e),
            RenderError::PastEnd(m) => m,
        })?;
        return Ok((text, Some(fingerprint)));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(fail)?;
    if fsutil::looks_binary(head) {
        return Err(binary());
    }
    let text = render(reader, display, window, None).map_err(|e| match e {
        RenderError::Binary => binary(),
        RenderError::Io(e) => fail(e),
        RenderError::PastEnd(m) => m,
    })?;
    Ok((text, None))
}

/// Renders one window of a file's text that came through [`super::FileAccess`] (an editor's
/// buffer), with the same checks as a file on disk.
fn render_text(
    text: &str,
    display: &str,
    window: &Window,
    memory_detail: bool,
) -> Result<String, String> {
    let bytes = text.as_bytes();
    if memory_detail {
        if bytes.len() as u64 > memory::MAX_BYTES {
            return Err(format!(
                "cannot read {display}: memory file {display} is larger than the limit of {} bytes",
                memory::MAX_BYTES
            ));
        }
        memory::validate_detail(Path::new(display), bytes)
            .map_err(|e| format!("cannot read {display}: {e}"))?;
    }
    let binary = || {
        format!(
            "cannot read {display}: it looks like a binary file, not text; inspect it with bash if needed"
        )
    };
    if fsutil::looks_binary(bytes) {
        return Err(binary());
    }
    render(bytes, display, window, Some(count_lines(bytes))).map_err(|e| match e {
        RenderError::Binary => binary(),
        RenderError::Io(e) => format!("cannot read {display}: {e}"),
        RenderError::PastEnd(m) => m,
    })
}

/// The first lines of a text file's `bytes` numbered as `read` shows them, at most `max_lines`
/// lines and `max_bytes` bytes, secrets blanked: for `edit`, whose refusal of a file not yet
/// read shows the file, so a model that skipped the read can still copy the text it needs.
/// `None` when `read` would refuse the text (binary).
pub(crate) fn numbered(
    bytes: &[u8],
    display: &str,
    max_lines: u64,
    max_bytes: usize,
    secrets: &Secrets,
) -> Option<String> {
    if fsutil::looks_binary(bytes) {
        return None;
    }
    let window = Window {
        offset: 1,
        limit: max_lines,
        max_bytes,
        secrets,
    };
    render(bytes, display, &window, Some(count_lines(bytes))).ok()
}

fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    if bytes.last().is_some_and(|&b| b != b'\n') {
        newlines + 1
    } else {
        newlines
    }
}

enum RenderError {
    Binary,
    Io(std::io::Error),
    PastEnd(String),
}

/// One line as read: its first bytes (enough for [`MAX_LINE_CHARS`]) and how many characters
/// were beyond them.
struct Line {
    kept: Vec<u8>,
    /// Whether bytes were dropped after `kept` (which may then end inside a character).
    cut: bool,
    skipped_chars: u64,
}

/// Bytes kept per line: enough for `MAX_LINE_CHARS` characters of up to 4 bytes each.
const KEEP_BYTES: usize = MAX_LINE_CHARS * 4;

/// Reads one line without ever holding more than `keep` bytes of it.
fn next_line(reader: &mut impl BufRead, keep: usize) -> std::io::Result<Option<Line>> {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut skipped_chars = 0u64;
    let mut any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(any.then_some(Line {
                kept,
                cut,
                skipped_chars,
            }));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        let room = keep.saturating_sub(kept.len()).min(chunk.len());
        kept.extend_from_slice(&chunk[..room]);
        cut |= room < chunk.len();
        // Count characters (not bytes) in what is dropped: every byte that is not a UTF-8
        // continuation byte starts a character.
        skipped_chars += chunk[room..].iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
        let ended = done > chunk.len();
        reader.consume(done);
        if ended {
            return Ok(Some(Line {
                kept,
                cut,
                skipped_chars,
            }));
        }
    }
}

/// Formats lines `offset..offset+limit` (within the output caps) as `{n:>6}\t{line}`, with a
/// continuation hint when more follows.
fn render(
    mut reader: impl BufRead,
    display: &str,
    window: &Window,
    total: Option<u64>,
) -> Result<String, RenderError> {
    let Window {
        offset,
        limit,
        max_bytes,
        secrets,
    } = *window;
    // A secret that starts within the shown characters is kept whole, so it is redacted
    // before the line is cut rather than shown in part.
    let keep = KEEP_BYTES + secrets.longest();
    let mut out = String::new();
    let mut number = 0u64;
    let mut shown = 0u64;
    let mut next = None;
    let mut lossy = false;
    while let Some(line) = next_line(&mut reader, keep).map_err(RenderError::Io)? {
        number += 1;
        if number < offset {
            continue;
        }
        if shown == limit {
            next = Some(number);
            break;
        }
        let (formatted, replaced) = format_line(number, &line, secrets)?;
        lossy |= replaced;
        if shown > 0 && out.len() + formatted.len() > max_bytes {
            next = Some(number);
            break;
        }
        out.push_str(&formatted);
        shown += 1;
    }
    if shown == 0 {
        if number == 0 {
            return Ok(format!("({display} is empty)"));
        }
        return Err(RenderError::PastEnd(format!(
            "offset {offset} is past the end of {display}, which has {number} lines"
        )));
    }
    if let Some(next) = next {
        let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
        out.push_str(&format!(
            "... showing lines {offset}-{}{of}; use offset={next} to continue\n",
            offset + shown - 1
        ));
    }
    if lossy {
        out.push_str(&format!(
            "(note: {display} is not UTF-8 text, perhaps Latin-1: bytes that are not UTF-8 are \
             shown as \u{FFFD}. `edit` refuses such a file; convert it first, e.g. with \
             `iconv -f latin1 -t utf-8`)\n"
        ));
    }
    Ok(out)
}

/// One numbered line, and whether bytes that are not UTF-8 were replaced in it.
fn format_line(number: u64, line: &Line, secrets: &Secrets) -> Result<(String, bool), RenderError> {
    let decoded;
    let (text, lossy) = match std::str::from_utf8(&line.kept) {
        Ok(t) => (t, false),
        // The keep limit may have split a character: that is a cut, not invalid text.
        Err(e) if e.error_len().is_none() && line.cut => {
            // Invariant: `valid_up_to` is a char boundary, so this slice is valid UTF-8.
            let valid = std::str::from_utf8(&line.kept[..e.valid_up_to()])
                .map_err(|_| RenderError::Binary)?;
            (valid, false)
        }
        // Text in another encoding (Latin-1, say): shown with replacement characters.
        Err(_) => {
            decoded = String::from_utf8_lossy(&line.kept);
            (decoded.as_ref(), true)
        }
    };
    let text = text.strip_suffix('\r').unwrap_or(text);
    let redacted;
    let text = if secrets.is_empty() {
        text
    } else {
        redacted = secrets.redact(text.to_string());
        redacted.as_str()
    };
    let chars = text.chars().count() as u64 + line.skipped_chars;
    if chars as usize <= MAX_LINE_CHARS {
        return Ok((format!("{number:>6}\t{text}\n"), lossy));
    }
    let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
    let shown = format!(
        "{number:>6}\t{cut} [... line cut: {chars} characters, first {MAX_LINE_CHARS} shown ...]\n"
    );
    Ok((shown, lossy))
}

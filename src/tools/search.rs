//! The `search` tool: a regular-expression search over the workspace's files with ripgrep's
//! own libraries (`ignore` for the walk, `grep-regex` + `grep-searcher` for the matching), so
//! it is as fast as `rg` on a large tree and sees the same files as `list`. Results are
//! `path:line: text`, sorted by path; binary files are skipped; long lines are cut around the
//! match; the key is redacted before any cut; the result is capped by the call's limit and the
//! output size the window allows. Read-only: no approval, and it opens only regular files the
//! walk found inside the workspace, never through a link.
//!
//! The walk and the matching run on blocking threads (the walker's own pool) and stop at the
//! next file once the call is cancelled; the call itself returns at once.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkState;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::walk::{self, Start};
use super::{Aim, Prepared, Secrets, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{ToolKind, ToolSpec};
use crate::fsutil;
use crate::sync::lock;

/// Matching lines shown when the call names no limit.
pub(crate) const DEFAULT_LIMIT: usize = 100;
/// The most matching lines one call shows.
pub(crate) const MAX_LIMIT: usize = 1000;
/// A shown line is cut to this many characters, around its first match.
pub(crate) const MAX_LINE_CHARS: usize = 240;
/// Characters kept before the match when a long line is cut.
const CONTEXT_BEFORE: usize = 60;
/// The longest pattern accepted.
const MAX_PATTERN_BYTES: usize = 4096;
/// A line longer than this (a minified bundle, a data file) stops the search of its file; the
/// file is counted as unreadable instead of holding its line in memory.
const HEAP_LIMIT: usize = 64 * 1024 * 1024;

/// The description in the small profile (see `tools::lean`).
const BRIEF: &str = "Search files for a regex; returns `path:line: text`.";

const DESCRIPTION: &str = "Search files for a regex (ripgrep syntax); returns `path:line: \
text`, sorted. Honours .gitignore, skips binary files. No approval needed: prefer it to bash.";

pub(crate) struct Search;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    case_sensitive: Option<bool>,
    limit: Option<usize>,
}

/// A checked call.
pub(crate) struct Call {
    pattern: String,
    matcher: RegexMatcher,
    start: Start,
    glob: Option<String>,
    limit: usize,
}

fn check(args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
    if args.pattern.is_empty() {
        return Err("pattern must not be empty".to_string());
    }
    if args.pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!("pattern is longer than {MAX_PATTERN_BYTES} bytes"));
    }
    let limit = match args.limit {
        Some(0) => return Err("limit must be at least 1".to_string()),
        Some(n) => n.min(MAX_LIMIT),
        None => DEFAULT_LIMIT,
    };
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_sensitive == Some(false))
        // Matches never span lines, which lets the searcher scan whole buffers at once.
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| {
            format!(
                "invalid regular expression: {e}\n(escape special characters such as ( [ . * \
                 + ? with a backslash to search for them literally)"
            )
        })?;
    let start = walk::start_or_workspace(&ctx.workspace, args.path.as_deref())
        .map_err(|e| format!("cannot search: {e}"))?;
    let glob = args.glob.clone().filter(|g| !g.trim().is_empty());
    if let Some(g) = &glob {
        ignore::overrides::OverrideBuilder::new(&start.root)
            .add(g)
            .map_err(|e| format!("invalid glob {g:?}: {e}"))?;
    }
    Ok(Call {
        pattern: args.pattern.clone(),
        matcher,
        start,
        glob,
        limit,
    })
}

impl Typed for Search {
    type Args = Args;
    type Checked = Call;

    fn check(&self, args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
        check(args, ctx)
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn aim(args: &Args) -> Aim {
        Aim::Paths(args.path.iter().cloned().collect())
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: crate::chat::Builtin::Search.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regex"},
                    "path": {"type": "string", "description": "Folder or file (default: the workspace)"},
                    "glob": {"type": "string", "description": "File glob, e.g. *.rs"},
                    "case_sensitive": {"type": "boolean", "description": "false ignores case"},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most lines (default 100)"}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn brief(&self) -> Option<&'static str> {
        Some(BRIEF)
    }

    fn describe(&self, call: Call, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let mut summary = format!("/{}/ in {}", call.pattern, call.start.display);
        if let Some(g) = &call.glob {
            summary.push_str(&format!(" ({g})"));
        }
        Ok(Prepared::unasked(summary))
    }

    fn run<'a>(
        &'a self,
        call: Call,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let workspace = ctx.workspace.clone();
            let max_bytes = ctx.output_limit();
            let secrets = ctx.secrets.clone();
            let rules = ctx.permissions.clone();
            let stop = cancel.clone();
            let job = move || {
                let mut call = call;
                let run = |call: &Call| {
                    search(
                        &workspace,
                        call,
                        &secrets,
                        rules.as_deref(),
                        max_bytes,
                        &stop,
                    )
                };
                let (mut text, searched) = run(&call)?;
                // A glob that matched no file is a wrong guess of the files' kind (a small
                // model searched `**/*.md` for a Rust function): it costs a note, not the call.
                if searched == 0
                    && let Some(glob) = call.glob.take()
                {
                    let (all, _) = run(&call)?;
                    text = format!(
                        "[the glob {glob:?} matched no file here; searched every file instead]\n{all}"
                    );
                }
                Ok(walk::noted(&call.start, text))
            };
            crate::tools::off_runtime(&cancel, "search", job)
                .await
                .map_or_else(|refused| refused, ToolOutput::ok)
        })
    }
}

/// Matching lines kept for the answer: the first `limit` in path order, whatever order the
/// parallel walk finds files in, so the same tree always gives the same answer.
struct Kept {
    limit: usize,
    lines: usize,
    by_path: BTreeMap<String, Vec<(u64, String)>>,
    /// Every matching line and file, shown or not.
    total_lines: usize,
    total_files: usize,
}

impl Kept {
    fn add(&mut self, path: String, lines: Vec<(u64, String)>, matched: usize) {
        self.total_lines += matched;
        self.total_files += 1;
        if self.lines >= self.limit
            && self
                .by_path
                .last_key_value()
                .is_some_and(|(last, _)| *last < path)
        {
            return;
        }
        self.lines += lines.len();
        self.by_path.insert(path, lines);
        // Drop from the end (the greatest paths, their last lines) back down to the limit.
        while self.lines > self.limit {
            let Some(mut last) = self.by_path.last_entry() else {
                break;
            };
            let excess = self.lines - self.limit;
            let v = last.get_mut();
            if v.len() <= excess {
                self.lines -= v.len();
                last.remove();
            } else {
                v.truncate(v.len() - excess);
                self.lines -= excess;
            }
        }
    }
}

/// What the workers share.
struct Shared<'a> {
    workspace: &'a Path,
    matcher: &'a RegexMatcher,
    secrets: &'a Secrets,
    cancel: &'a CancellationToken,
    /// The rules whose `read(…)` denials keep files out, and how many they kept out.
    guard: Option<crate::tools::read_guard::ReadGuard<'a>>,
    withheld: AtomicUsize,
    kept: Mutex<Kept>,
    searched: AtomicUsize,
    binary: AtomicUsize,
    errors: AtomicUsize,
}

fn search(
    workspace: &Path,
    call: &Call,
    secrets: &Secrets,
    rules: Option<&crate::permissions::Rules>,
    max_bytes: usize,
    cancel: &CancellationToken,
) -> Result<(String, usize), String> {
    let walk = walk::build(workspace, &call.start, call.glob.as_deref())
        .map_err(|e| format!("cannot search: {e}"))?;
    let shared = Shared {
        workspace,
        matcher: &call.matcher,
        secrets,
        cancel,
        guard: crate::tools::read_guard::ReadGuard::new(rules, workspace),
        withheld: AtomicUsize::new(0),
        kept: Mutex::new(Kept {
            limit: call.limit,
            lines: 0,
            by_path: BTreeMap::new(),
            total_lines: 0,
            total_files: 0,
        }),
        searched: AtomicUsize::new(0),
        binary: AtomicUsize::new(0),
        errors: AtomicUsize::new(0),
    };
    let mut builder = SearcherBuilder::new();
    builder
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(HEAP_LIMIT));
    walk.builder.build_parallel().run(|| {
        let shared = &shared;
        let mut searcher = builder.build();
        let limit = call.limit;
        Box::new(move |entry| {
            if shared.cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(_) => {
                    shared.errors.fetch_add(1, Ordering::Relaxed);
                    return WalkState::Continue;
                }
            };
            // Only regular files: links are never followed, FIFOs and devices never opened.
            if entry.file_type().is_some_and(|t| t.is_file()) {
                if shared
                    .guard
                    .as_ref()
                    .is_some_and(|g| g.withholds(entry.path()))
                {
                    shared.withheld.fetch_add(1, Ordering::Relaxed);
                } else {
                    search_file(shared, &mut searcher, entry.path(), limit);
                }
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err("interrupted by the user".to_string());
    }
    let kept = crate::sync::into_inner(shared.kept);
    let mut out = String::new();
    let mut shown = 0;
    'files: for (path, lines) in &kept.by_path {
        for (number, text) in lines {
            let line = format!("{path}:{number}: {text}\n");
            // Room is kept for the closing notes.
            if out.len() + line.len() + 512 > max_bytes {
                break 'files;
            }
            out.push_str(&line);
            shown += 1;
        }
    }
    let searched = shared.searched.load(Ordering::Relaxed);
    if kept.total_lines == 0 {
        out.push_str(&format!(
            "no matches for {:?} in {} ({searched} files searched)\n",
            call.pattern, call.start.display
        ));
    } else if shown < kept.total_lines {
        let raise = if call.limit < MAX_LIMIT && shown == kept.lines {
            ", or raise limit (at most 1000)"
        } else {
            ""
        };
        out.push_str(&format!(
            "[showing {shown} of {} matching lines in {} files (sorted by path); narrow the \
             search with path or glob{raise}]\n",
            kept.total_lines, kept.total_files
        ));
    }
    if let Some(note) = crate::tools::withheld_note(shared.withheld.load(Ordering::Relaxed)) {
        out.push_str(&note);
        out.push('\n');
    }
    let binary = shared.binary.load(Ordering::Relaxed);
    if binary > 0 {
        out.push_str(&format!("[{binary} binary files skipped]\n"));
    }
    let errors = shared.errors.load(Ordering::Relaxed);
    if errors > 0 {
        out.push_str(&format!("[{errors} files or folders could not be read]\n"));
    }
    for note in lock(&walk.skipped).notes() {
        out.push_str(&note);
        out.push('\n');
    }
    Ok((out, searched))
}

fn search_file(shared: &Shared, searcher: &mut Searcher, path: &Path, limit: usize) {
    // Opened without following a link or blocking, and checked to be a regular file: the
    // entry may have been replaced since the walk saw it.
    let Ok(file) = fsutil::open_walked(path) else {
        shared.errors.fetch_add(1, Ordering::Relaxed);
        return;
    };
    shared.searched.fetch_add(1, Ordering::Relaxed);
    let mut sink = FileSink {
        shared,
        limit,
        lines: Vec::new(),
        matched: 0,
        binary: false,
    };
    if searcher
        .search_file(shared.matcher, &file, &mut sink)
        .is_err()
    {
        shared.errors.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if sink.binary {
        shared.binary.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if sink.matched > 0 {
        let shown = walk::shown(shared.workspace, path);
        lock(&shared.kept).add(shown, sink.lines, sink.matched);
    }
}

/// Collects one file's matching lines; a file found to be binary keeps none.
struct FileSink<'s, 'a> {
    shared: &'s Shared<'a>,
    limit: usize,
    lines: Vec<(u64, String)>,
    matched: usize,
    binary: bool,
}

impl Sink for FileSink<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.matched += 1;
        if self.lines.len() < self.limit {
            let text = shown_line(self.shared.matcher, self.shared.secrets, mat.bytes());
            self.lines.push((mat.line_number().unwrap_or(0), text));
        }
        Ok(!self.shared.cancel.is_cancelled())
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A matching line as shown: without its line ending, redacted, and when long cut to
/// [`MAX_LINE_CHARS`] around its first match (redaction first, so no piece of a key survives
/// the cut).
fn shown_line(matcher: &RegexMatcher, secrets: &Secrets, bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = secrets.redact(String::from_utf8_lossy(bytes).into_owned());
    if text.chars().count() <= MAX_LINE_CHARS {
        return text;
    }
    let at = matcher
        .find(text.as_bytes())
        .ok()
        .flatten()
        .map_or(0, |m| m.start());
    let before = text.get(..at).map_or(0, |s| s.chars().count());
    let from = before.saturating_sub(CONTEXT_BEFORE);
    let total = text.chars().count();
    let piece: String = text.chars().skip(from).take(MAX_LINE_CHARS).collect();
    let head = if from > 0 { "…" } else { "" };
    let tail = if from + MAX_LINE_CHARS < total {
        " … [line cut]"
    } else {
        ""
    };
    format!("{head}{piece}{tail}")
}

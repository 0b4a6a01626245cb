//! The `find` tool: code retrieval by meaning. A question in words ("where are retries
//! decided") is matched against chunks of the workspace's code (a function, a type, an impl
//! block, or a window of lines) ranked by BM25 over symbol names, path segments, comments and
//! code, plus a hashed trigram vector for near-synonyms (see `find/rank.rs`). Each result gives
//! the place, the enclosing symbol, the score with its parts and a short preview.
//!
//! Read-only: no approval. It sees exactly the files `search` sees (same walk, same
//! confinement), never a file a `read(…)` rule denies, and writes nothing but its own index
//! under `.minicode/index/`.

mod build;
mod chunk;
mod codec;
mod index;
mod inverted;
mod rank;
mod related;
mod symbols;
mod vocab;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::walk;
use super::{Aim, Prepared, Secrets, ToolCtx, ToolFuture, ToolOutput, Typed};
use crate::chat::{ToolKind, ToolSpec};
use crate::fsutil;
use symbols::Kind;

/// Results shown when the call names no limit.
pub(crate) const DEFAULT_LIMIT: usize = 8;
/// The most results one call shows.
pub(crate) const MAX_LIMIT: usize = 20;
/// Preview lines per result, and the characters kept of each.
const PREVIEW_LINES: usize = 4;
const PREVIEW_CHARS: usize = 160;
const MAX_QUERY_BYTES: usize = 1000;

const DESCRIPTION: &str = "Find code by meaning: ranks functions, types and other chunks of the \
workspace against a description in words (e.g. \"where the config file is parsed\"). Use it \
when you know the concept but not the identifier; use `search` for an exact string or regex. \
No approval needed.";

/// The tool, holding the index shared by its calls (and its background build), so a query on
/// an unchanged tree neither parses the index file nor recounts the corpus.
#[derive(Default)]
pub(crate) struct Find {
    index: std::sync::Arc<build::Index>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    query: String,
    path: Option<String>,
    limit: Option<usize>,
    kind: Option<String>,
}

/// A checked call.
pub(crate) struct Call {
    query: String,
    start: walk::Start,
    limit: usize,
    kind: Option<Kind>,
}

fn check(args: &Args, ctx: &ToolCtx) -> Result<Call, String> {
    let query = args.query.trim().to_string();
    if query.is_empty() {
        return Err("query must not be empty".to_string());
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(format!("query is longer than {MAX_QUERY_BYTES} bytes"));
    }
    let limit = match args.limit {
        Some(0) => return Err("limit must be at least 1".to_string()),
        Some(n) => n.min(MAX_LIMIT),
        None => DEFAULT_LIMIT,
    };
    let kind = match args
        .kind
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        None => None,
        Some(k) => Some(
            Kind::ALL
                .into_iter()
                .find(|c| c.name() == k)
                .ok_or_else(|| {
                    let names: Vec<&str> = Kind::ALL.iter().map(|c| c.name()).collect();
                    format!("unknown kind {k:?}: use one of {}", names.join(", "))
                })?,
        ),
    };
    let start = walk::start_or_workspace(&ctx.workspace, args.path.as_deref())
        .map_err(|e| format!("cannot find: {e}"))?;
    Ok(Call {
        query,
        start,
        limit,
        kind,
    })
}

impl Typed for Find {
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
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        ToolSpec {
            name: crate::chat::Builtin::Find.name().into(),
            description: DESCRIPTION.into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the code does, in words"},
                    "path": {"type": "string", "description": "Folder or file (default: the workspace)"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most results (default 8)"},
                    "kind": {"type": "string", "enum": kinds, "description": "Only chunks of this kind"}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    fn describe(&self, call: Call, _ctx: &ToolCtx) -> Result<Prepared, String> {
        let mut summary = format!("{:?} in {}", call.query, call.start.display);
        if let Some(k) = call.kind {
            summary.push_str(&format!(" ({})", k.name()));
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
            let index = self.index.clone();
            let job = move || {
                let report = index.refresh(&workspace, rules.as_deref(), &stop)?;
                let text = index
                    .with(|stored| answer(&workspace, &call, stored, &report, &secrets, max_bytes));
                Ok::<_, String>(walk::noted(&call.start, text))
            };
            match crate::tools::off_runtime(&cancel, "find", job).await {
                Ok(text) => ToolOutput::ok(text),
                Err(refused) => refused,
            }
        })
    }
}

/// One ranked chunk.
struct Hit<'s> {
    path: &'s str,
    chunk: &'s index::Chunk,
    score: rank::Score,
    /// Its place in index order, the last tie-break (as a stable sort would keep it).
    seq: usize,
}

/// Best first: score, then path, then line, then index order.
fn better(a: &Hit<'_>, b: &Hit<'_>) -> std::cmp::Ordering {
    b.score
        .total()
        .total_cmp(&a.score.total())
        .then_with(|| a.path.cmp(b.path))
        .then_with(|| a.chunk.start.cmp(&b.chunk.start))
        .then_with(|| a.seq.cmp(&b.seq))
}

/// The chunks in the call's scope, best first, at most `limit`; and how many matched at all.
/// BM25 sums come from the inverted lists of the query's terms; the walk over the files only
/// reads them back and adds the per-file path part. A first pass finds the `limit`-th best
/// score without the vector part; the second keeps only the chunks the vector part (at most
/// [`rank::W_VECTOR`] times the factor) could lift to it, so few are ever sorted.
fn ranked<'s>(call: &Call, stored: &'s index::Stored) -> (Vec<Hit<'s>>, usize) {
    let query = rank::expand(&call.query, stored);
    let own = rank::counts(rank::terms(&call.query));
    let query_vector = rank::vector(own.iter().map(|(t, n)| (t.as_str(), *n)));
    let sums = rank::field_sums(stored, &query);
    // Both passes need every file's path part: computed once.
    let path_parts: Vec<f64> = stored
        .files
        .values()
        .map(|file| rank::path_part(stored, &query, &file.path_terms))
        .collect();
    let mut lower: Vec<f64> = Vec::new();
    scored(call, stored, &path_parts, &sums, |_, _, score| {
        lower.push(score.total());
    });
    let matched = lower.len();
    let threshold = if lower.len() > call.limit {
        let at = call.limit - 1;
        *lower.select_nth_unstable_by(at, |a, b| b.total_cmp(a)).1
    } else {
        0.0
    };
    let mut hits = Vec::new();
    scored(
        call,
        stored,
        &path_parts,
        &sums,
        |path, chunk, mut score| {
            if (score.total() / score.factor + rank::W_VECTOR) * score.factor >= threshold {
                score.vector = rank::vector_part(stored, &query_vector, chunk);
                let seq = hits.len();
                hits.push(Hit {
                    path,
                    chunk,
                    score,
                    seq,
                });
            }
        },
    );
    // Only the best `limit` need ordering.
    if hits.len() > call.limit {
        hits.select_nth_unstable_by(call.limit - 1, better);
        hits.truncate(call.limit);
    }
    hits.sort_unstable_by(better);
    (hits, matched)
}

/// Calls `each` with every chunk in the call's scope that scores above zero (vector part
/// not yet added), in index order. `path_parts` holds each file's path part, in index order.
fn scored<'s>(
    call: &Call,
    stored: &'s index::Stored,
    path_parts: &[f64],
    sums: &[[f64; 3]],
    mut each: impl FnMut(&'s str, &'s index::Chunk, rank::Score),
) {
    let scope = &call.start.display;
    let prefix = format!("{scope}/");
    for ((path, file), &path_part) in stored.files.iter().zip(path_parts) {
        let inside = scope == "." || path == scope || path.starts_with(&prefix);
        if !inside {
            continue;
        }
        let mut test_path = None;
        for (i, chunk) in file.chunks.iter().enumerate() {
            if call.kind.is_some_and(|k| k != chunk.kind) {
                continue;
            }
            let id = file.first as usize + i;
            let field = sums.get(id).copied().unwrap_or_default();
            let mut score = rank::score(field, path_part);
            if score.total() <= 0.0 {
                continue;
            }
            let marks = stored.inverted.marks(id);
            let test = marks & inverted::TEST_SYMBOL != 0
                || *test_path.get_or_insert_with(|| rank::is_test_path(path));
            if test {
                score.factor *= rank::TEST_FACTOR;
            }
            if marks & inverted::NOUN != 0 {
                score.factor *= rank::NOUN_FACTOR;
            }
            each(path, chunk, score);
        }
    }
}

fn answer(
    workspace: &Path,
    call: &Call,
    stored: &index::Stored,
    report: &build::Report,
    secrets: &Secrets,
    max_bytes: usize,
) -> String {
    let (hits, matched) = ranked(call, stored);
    let mut out = String::new();
    let mut shown = 0;
    let mut texts: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (i, hit) in hits.iter().enumerate() {
        let lines = texts
            .entry(hit.path)
            .or_insert_with(|| file_lines(&workspace.join(hit.path)));
        let entry = format_hit(i + 1, hit, lines, secrets);
        // Room is kept for the closing notes.
        if out.len() + entry.len() + 512 > max_bytes {
            break;
        }
        out.push_str(&entry);
        shown += 1;
    }
    if matched == 0 {
        let _ = writeln!(
            out,
            "no code matches {:?} in {} (try other words, or `search` for an exact string)",
            call.query, call.start.display
        );
    } else if shown < hits.len() {
        let _ = writeln!(
            out,
            "[showing {shown} of {} results: output cap; lower limit or narrow path]",
            hits.len()
        );
    }
    notes(&mut out, stored, report);
    out
}

fn notes(out: &mut String, stored: &index::Stored, report: &build::Report) {
    let _ = writeln!(
        out,
        "[index: {} files, {} chunks]",
        stored.files.len(),
        stored.chunk_count()
    );
    if let Some((done, total)) = report.building {
        let _ = writeln!(
            out,
            "[index incomplete: building in the background, {done} of {total} files read; these \
             results come from what is indexed so far]"
        );
    }
    if report.rebuilt {
        out.push_str("[the stored index was unreadable or of another version: rebuilt]\n");
    }
    if let Some(why) = &report.unsaved {
        let _ = writeln!(out, "[index not saved: {why}]");
    }
    if report.too_big > 0 {
        let _ = writeln!(
            out,
            "[{} files over {} KiB not indexed]",
            report.too_big,
            index::MAX_FILE_BYTES / 1024
        );
    }
    if let Some(note) = crate::tools::withheld_note(report.withheld) {
        out.push_str(&note);
        out.push('\n');
    }
    for note in &report.skipped_notes {
        out.push_str(note);
        out.push('\n');
    }
}

fn format_hit(rank: usize, hit: &Hit<'_>, lines: &[String], secrets: &Secrets) -> String {
    let c = hit.chunk;
    let s = &hit.score;
    let mut out = format!("{rank}. {}:{}-{}", hit.path, c.start, c.end);
    if c.symbol.is_empty() {
        out.push_str(" (file)");
    } else {
        let _ = write!(out, " {} ({}", c.symbol, c.kind.name());
        if let Some(p) = &c.parent {
            let _ = write!(out, " in {p}");
        }
        out.push(')');
    }
    let _ = write!(
        out,
        " score {:.2} = symbol {:.2} + path {:.2} + doc {:.2} + text {:.2} + vector {:.2}",
        s.total(),
        s.symbol,
        s.path,
        s.doc,
        s.text,
        s.vector
    );
    if s.factor < 1.0 {
        let _ = write!(out, " × {:.2}", s.factor);
    }
    out.push('\n');
    // The preview starts at the definition's head, past the comments above it.
    let first = (c.start as usize).saturating_sub(1);
    let last = (c.end as usize).min(lines.len());
    let head = (first..last)
        .find(|&i| {
            let t = lines[i].trim();
            !c.symbol.is_empty() && t.contains(c.symbol.as_str())
        })
        .unwrap_or(first);
    let shown = lines
        .iter()
        .enumerate()
        .take(last)
        .skip(head)
        .take(PREVIEW_LINES);
    for (i, line) in shown {
        let line = secrets.redact(line.clone());
        let cut: String = line.chars().take(PREVIEW_CHARS).collect();
        let more = if cut.len() < line.len() { " …" } else { "" };
        let _ = writeln!(out, "  {:>5} | {cut}{more}", i + 1);
    }
    out
}

/// The lines of an indexed file for previews (empty when it cannot be read now).
fn file_lines(path: &Path) -> Vec<String> {
    let Ok(file) = fsutil::open_walked(path) else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    if file
        .take(index::MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Vec::new();
    }
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_string)
        .collect()
}

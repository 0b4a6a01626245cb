//! The baselines `find` is measured against, all judged on the file alone (which favours
//! them): a regex of the question's words through `search`, and `search` + `list` as a model
//! without `find` would use them. Also `find`'s own ranks, read from its output.

use serde_json::json;

use crate::{Bench, Case, LIMIT};

/// The 1-based rank of the wanted file and one of the wanted symbols among the results.
pub(crate) fn rank_of(out: &str, case: &Case) -> Option<usize> {
    let heads = out.lines().filter(|l| {
        l.split_once(". ")
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    });
    heads.enumerate().find_map(|(i, l)| {
        let rest = l.split_once(". ").unwrap().1;
        let (place, after) = rest.split_once(' ')?;
        let found_path = place.rsplit_once(':')?.0;
        let found_symbol = after.split(' ').next()?;
        (found_path == case.path && case.symbols.iter().any(|s| s == found_symbol)).then_some(i + 1)
    })
}

/// The regex baseline a script derives from the words: the query's words of four letters or
/// more as one case-insensitive alternation for `search`, files ranked by how many lines
/// match. Judged on the file alone (no symbol), which favours the baseline.
pub(crate) fn baseline_rank(bench: &Bench, case: &Case) -> Option<usize> {
    let words = long_words(&case.text);
    if words.is_empty() {
        return None;
    }
    let args = json!({"pattern": words.join("|"), "case_sensitive": false, "limit": 1000});
    let (out, _) = bench.tool("search", args);
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for line in out.lines() {
        if let Some((file, _)) = line.split_once(':') {
            *counts.entry(file).or_insert(0) += 1;
        }
    }
    let mut files: Vec<(&str, usize)> = counts.into_iter().collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    files
        .iter()
        .take(LIMIT)
        .position(|(f, _)| *f == case.path)
        .map(|i| i + 1)
}

/// The query's words of four letters or more, lowercased: what a script (or a model in a
/// hurry) turns a question into.
fn long_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 4)
        .map(str::to_lowercase)
        .collect();
    words.dedup();
    words
}

/// The `search` + `list` baseline: what a model without `find` does with the two tools. It
/// lists every file, then searches each word of four letters or more on its own
/// (case-insensitive); a file ranks by how many of the words it holds (in its path or its
/// lines), then by how many are in its path, then by matching lines. Judged on the file alone.
pub(crate) fn search_list_rank(bench: &Bench, case: &Case) -> Option<usize> {
    use std::collections::{BTreeMap, BTreeSet};
    let words = long_words(&case.text);
    if words.is_empty() {
        return None;
    }
    let (listing, _) = bench.tool("list", json!({"limit": 2000}));
    // (words found, words in the path, matching lines) per file.
    let mut score: BTreeMap<String, (BTreeSet<usize>, usize, usize)> = BTreeMap::new();
    for file in listing
        .lines()
        .filter(|l| !l.starts_with('[') && !l.ends_with('/'))
    {
        let file = file.trim();
        let lower = file.to_lowercase();
        let entry = score.entry(file.to_string()).or_default();
        for (i, w) in words.iter().enumerate() {
            if lower.contains(w.as_str()) {
                entry.0.insert(i);
                entry.1 += 1;
            }
        }
    }
    for (i, w) in words.iter().enumerate() {
        let args = json!({"pattern": w, "case_sensitive": false, "limit": 1000});
        let (out, _) = bench.tool("search", args);
        for line in out.lines() {
            if let Some((file, _)) = line.split_once(':') {
                let entry = score.entry(file.to_string()).or_default();
                entry.0.insert(i);
                entry.2 += 1;
            }
        }
    }
    let mut files: Vec<(String, (usize, usize, usize))> = score
        .into_iter()
        .map(|(f, (found, path, lines))| (f, (found.len(), path, lines)))
        .collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    files
        .iter()
        .take(LIMIT)
        .position(|(f, _)| *f == case.path)
        .map(|i| i + 1)
}

/// The rank of the first result in the wanted file, whatever its symbol: `find` judged as the
/// baselines are.
pub(crate) fn file_rank_of(out: &str, case: &Case) -> Option<usize> {
    let mut files: Vec<&str> = Vec::new();
    for l in out.lines() {
        let Some((n, rest)) = l.split_once(". ") else {
            continue;
        };
        if n.parse::<u32>().is_err() {
            continue;
        }
        let place = rest.split(' ').next().unwrap_or("");
        let file = place.rsplit_once(':').map_or(place, |(f, _)| f);
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files.iter().position(|f| *f == case.path).map(|i| i + 1)
}

/// Recall@1, Recall@5 and MRR@5 over ranks.
pub(crate) fn figures(ranks: &[Option<usize>]) -> String {
    let n = ranks.len() as f64;
    let at1 = ranks.iter().filter(|r| **r == Some(1)).count() as f64;
    let at5 = ranks.iter().filter(|r| r.is_some()).count() as f64;
    let rr: f64 = ranks.iter().flatten().map(|r| 1.0 / *r as f64).sum();
    format!(
        "Recall@1 {:.3} ({at1}/{n}), Recall@5 {:.3} ({at5}/{n}), MRR@5 {:.3}",
        at1 / n,
        at5 / n,
        rr / n
    )
}

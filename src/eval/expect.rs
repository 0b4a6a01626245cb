//! The trajectory expectations of a task checked against one run: each broken one becomes a
//! sentence for the report, naming the expectation and what the run did instead.

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;

use super::task::Task;
use super::trajectory::Trajectory;

/// `final_matches` compiled (multi-line: `^`/`$` at line ends, `.` not across lines).
pub(crate) fn pattern(text: &str) -> Result<RegexMatcher, String> {
    grep_regex::RegexMatcherBuilder::new()
        .multi_line(true)
        .build(text)
        .map_err(|e| {
            e.to_string()
                .lines()
                .last()
                .unwrap_or("invalid pattern")
                .to_string()
        })
}

/// Every expectation `run` broke, in the task file's order of fields.
pub(crate) fn failures(task: &Task, run: &Trajectory) -> Vec<String> {
    let mut out = Vec::new();
    let status = run.status.as_deref().unwrap_or("none (no turn ended)");
    if status != task.expect_status.as_str() {
        let why = run
            .error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        out.push(format!(
            "expect_status: expected {}, the run ended {status}{why}",
            task.expect_status.as_str()
        ));
    }
    if let Some(missing) = missing_in_order(&task.tools_in_order, &run.tools) {
        out.push(format!(
            "tools_in_order: expected {} in this order, but `{missing}` did not follow; calls were: {}",
            task.tools_in_order.join(" → "),
            listing(&run.tools)
        ));
    }
    for tool in &task.forbidden_tools {
        let n = run.tools.iter().filter(|t| *t == tool).count();
        if n > 0 {
            out.push(format!("forbidden_tools: `{tool}` was called {n} time(s)"));
        }
    }
    let calls = run.tools.len() as u64;
    if let Some(max) = task.max_tool_calls
        && calls > u64::from(max)
    {
        out.push(format!(
            "max_tool_calls: {calls} tool calls, over the budget of {max}"
        ));
    }
    if let Some(max) = task.max_rounds
        && run.rounds > max
    {
        out.push(format!(
            "max_rounds: {} model rounds, over the budget of {max}",
            run.rounds
        ));
    }
    for expected in &task.expect_approval {
        if !run.approvals.contains(&expected.tool) {
            out.push(format!(
                "expect_approval: no approval was asked for `{}` (asked for: {})",
                expected.tool,
                listing(&run.approvals)
            ));
        }
    }
    for needle in &task.final_contains {
        if !run.final_text.contains(needle.as_str()) {
            out.push(format!(
                "final_contains: the answer does not contain {needle:?} (answer: {})",
                excerpt(&run.final_text)
            ));
        }
    }
    if let Some(text) = &task.final_matches {
        let matched = pattern(text)
            .ok()
            .and_then(|m| m.is_match(run.final_text.as_bytes()).ok())
            .unwrap_or(false);
        if !matched {
            out.push(format!(
                "final_matches: the answer does not match /{text}/ (answer: {})",
                excerpt(&run.final_text)
            ));
        }
    }
    out
}

/// The first expected tool that does not follow the earlier ones as a subsequence.
fn missing_in_order<'a>(expected: &'a [String], calls: &[String]) -> Option<&'a str> {
    let mut rest = calls.iter();
    expected
        .iter()
        .find(|want| !rest.any(|call| call == *want))
        .map(String::as_str)
}

fn listing(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The answer on one line, cut to 120 characters.
fn excerpt(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "empty".to_string();
    }
    let cut: String = flat.chars().take(120).collect();
    if cut.len() < flat.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

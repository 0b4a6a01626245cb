//! The report: per task, passes out of runs with a 95 % Wilson interval and each failing run's
//! reasons; per run, its figures. Text for people, JSON for scripts; both built here as
//! strings, printed by the CLI.

use serde::Serialize;

use super::runner::RunResult;
use super::task::Task;
use super::trajectory::Tokens;

/// The 95 % Wilson score interval of `passes` out of `runs` (0..1 each).
pub(crate) fn wilson(passes: u32, runs: u32) -> (f64, f64) {
    if runs == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n = f64::from(runs);
    let p = f64::from(passes) / n;
    let denominator = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[derive(Serialize)]
pub(crate) struct Report {
    pub(crate) out: String,
    pub(crate) all_met: bool,
    /// The signal that interrupted the evaluator: the report holds the runs so far (those
    /// it stopped fail as interrupted; those never started are not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) interrupted: Option<String>,
    pub(crate) tasks: Vec<TaskReport>,
    /// Why `report.json` could not be written (the report is still printed).
    #[serde(skip)]
    pub(crate) unsaved: Option<String>,
}

#[derive(Serialize)]
pub(crate) struct TaskReport {
    pub(crate) name: String,
    pub(crate) file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    pub(crate) runs: u32,
    pub(crate) passes: u32,
    pub(crate) pass_rate: f64,
    /// The 95 % Wilson interval of the pass rate.
    pub(crate) interval: [f64; 2],
    pub(crate) min_pass_rate: f64,
    pub(crate) met: bool,
    pub(crate) results: Vec<RunReport>,
}

#[derive(Serialize)]
pub(crate) struct RunReport {
    pub(crate) run: u32,
    pub(crate) passed: bool,
    pub(crate) failures: Vec<String>,
    pub(crate) status: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) tokens: Tokens,
    pub(crate) wall_ms: u64,
    pub(crate) agent_wall_ms: u64,
    pub(crate) model_calls: u64,
    pub(crate) tool_calls: u64,
    /// Of `tool_calls`, those the model wrote as text (recovered).
    pub(crate) recovered_calls: u64,
    pub(crate) nudges: u64,
    pub(crate) rounds: u32,
    pub(crate) retries: u32,
    pub(crate) edit_failures: u32,
    pub(crate) compactions: u32,
    pub(crate) tools: Vec<String>,
    /// The run's folder: `events.jsonl` (the transcript), `session.json`, `stderr.txt`.
    pub(crate) dir: String,
}

impl Report {
    pub(crate) fn new(tasks: &[Task], results: &[RunResult], out: &std::path::Path) -> Report {
        let tasks: Vec<TaskReport> = tasks
            .iter()
            .enumerate()
            .map(|(i, task)| task_report(task, results.iter().filter(|r| r.task == i)))
            .collect();
        Report {
            out: out.display().to_string(),
            all_met: tasks.iter().all(|t| t.met),
            interrupted: None,
            tasks,
            unsaved: None,
        }
    }

    /// The text form: one block per task, then the runs' figures.
    pub(crate) fn text(&self) -> String {
        let mut s = String::new();
        let w = self
            .tasks
            .iter()
            .map(|t| t.name.chars().count() + 4)
            .max()
            .unwrap_or(0)
            .max(12);
        s.push_str(&format!(
            "{:<w$} {:>7} {:>6}  {:<13} {:>5}\n",
            "task", "passes", "rate", "95% interval", "min"
        ));
        for t in &self.tasks {
            s.push_str(&format!(
                "{:<w$} {:>3}/{:<3} {:>5.0}%  [{:>3.0}%, {:>3.0}%]  {:>4.0}% {}\n",
                t.name,
                t.passes,
                t.runs,
                t.pass_rate * 100.0,
                t.interval[0] * 100.0,
                t.interval[1] * 100.0,
                t.min_pass_rate * 100.0,
                if t.met { "ok" } else { "FAILED" }
            ));
            for r in t.results.iter().filter(|r| !r.passed) {
                for failure in &r.failures {
                    s.push_str(&format!("    run {}: {failure}\n", r.run));
                }
            }
        }
        s.push_str(&format!(
            "\n{:<w$} {:>3} {:<11} {:>8} {:>7} {:>5} {:>5} {:>5} {:>7} {:>8} {:>7}\n",
            "run",
            "ok",
            "status",
            "tokens",
            "wall s",
            "model",
            "tools",
            "text",
            "retries",
            "edit err",
            "compact"
        ));
        for t in &self.tasks {
            for r in &t.results {
                s.push_str(&format!(
                    "{:<w$} {:>3} {:<11} {:>8} {:>7.1} {:>5} {:>5} {:>5} {:>7} {:>8} {:>7}\n",
                    format!("{}#{}", t.name, r.run),
                    if r.passed { "yes" } else { "no" },
                    r.status.as_deref().unwrap_or("-"),
                    r.tokens.total,
                    r.wall_ms as f64 / 1000.0,
                    r.model_calls,
                    r.tool_calls,
                    r.recovered_calls,
                    r.retries,
                    r.edit_failures,
                    r.compactions
                ));
            }
        }
        let verdict = match &self.interrupted {
            Some(signal) => format!("interrupted by {signal}: the runs so far"),
            None if self.all_met => "every task met its pass rate".to_string(),
            None => "some tasks fell short of their pass rate".to_string(),
        };
        s.push_str(&format!("\n{verdict}; runs kept in {}\n", self.out));
        s
    }
}

fn task_report<'a>(task: &Task, results: impl Iterator<Item = &'a RunResult>) -> TaskReport {
    let mut runs: Vec<&RunResult> = results.collect();
    runs.sort_by_key(|r| r.run);
    let n = runs.len() as u32;
    let passes = runs.iter().filter(|r| r.passed()).count() as u32;
    let rate = if n == 0 {
        0.0
    } else {
        f64::from(passes) / f64::from(n)
    };
    let (lo, hi) = wilson(passes, n);
    TaskReport {
        name: task.name.clone(),
        file: task.file.display().to_string(),
        description: task.description.clone(),
        runs: n,
        passes,
        pass_rate: rate,
        interval: [lo, hi],
        min_pass_rate: task.min_pass_rate,
        // A small tolerance: 2 of 3 meets 0.66.
        met: n > 0 && rate + 1e-9 >= task.min_pass_rate,
        results: runs.iter().map(|r| run_report(r)).collect(),
    }
}

fn run_report(r: &RunResult) -> RunReport {
    let t = &r.trajectory;
    RunReport {
        run: r.run,
        passed: r.passed(),
        failures: r.failures.clone(),
        status: t.status.clone(),
        session_id: t.session_id.clone(),
        tokens: t.tokens.clone(),
        wall_ms: r.wall.as_millis() as u64,
        agent_wall_ms: r.agent_wall.as_millis() as u64,
        model_calls: t.model_calls,
        tool_calls: t.tool_calls,
        recovered_calls: t.recovered_calls,
        nudges: t.nudges,
        rounds: t.rounds,
        retries: t.retries,
        edit_failures: t.edit_failures,
        compactions: t.compactions,
        tools: t.tools.clone(),
        dir: r.dir.display().to_string(),
    }
}

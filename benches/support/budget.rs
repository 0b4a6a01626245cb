//! CPU budgets of the process benches, checked so a regression fails the bench loudly instead
//! of hiding in a table. Built for a shared, noisy 2-core machine: what is compared is the
//! *fastest* of a scenario's runs (other processes only ever add CPU time, through cache and
//! scheduler contention, so the minimum is the figure load moves least), and a scenario fails
//! only above [`MARGIN`] times its budget. A real regression of the kind issue 35 found (a
//! third to a half more CPU on every run) still crosses it; run-to-run noise does not.

use std::time::Duration;

/// How far over its budget a scenario's fastest run may be before the bench fails.
pub const MARGIN: f64 = 1.5;

/// One scenario's budget: its CPU time (user + system) on a quiet machine.
pub struct Budget {
    pub scenario: &'static str,
    pub cpu: Duration,
}

/// The scenarios' verdicts, collected as they run and reported at the end.
#[derive(Default)]
pub struct Verdicts {
    failed: Vec<String>,
}

impl Verdicts {
    /// Compares the fastest of `cpu` (one entry per run) against `budget`, says so, and keeps
    /// a failure for [`Verdicts::finish`].
    pub fn check(&mut self, budget: &Budget, cpu: &[Duration]) {
        let Some(best) = cpu.iter().min() else {
            return;
        };
        let limit = budget.cpu.mul_f64(MARGIN);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let line = format!(
            "budget {:<34} fastest {:>7.2} ms CPU, budget {:>6.2} ms, fails above {:>6.2} ms",
            budget.scenario,
            ms(*best),
            ms(budget.cpu),
            ms(limit)
        );
        if *best > limit {
            println!("{line}   ** OVER BUDGET **");
            self.failed.push(format!(
                "{}: fastest of {} runs took {:.2} ms CPU, over {MARGIN}x its {:.2} ms budget",
                budget.scenario,
                cpu.len(),
                ms(*best),
                ms(budget.cpu)
            ));
        } else {
            println!("{line}   ok");
        }
    }

    /// Exits non-zero, naming every scenario over its budget, when any was.
    pub fn finish(self) {
        if self.failed.is_empty() {
            return;
        }
        eprintln!("\nPERFORMANCE REGRESSION (docs/performance.md, \"Budgets\"):");
        for failure in &self.failed {
            eprintln!("  {failure}");
        }
        std::process::exit(1);
    }
}

//! `doctor`'s findings: how each check ended, the rows of the report, and the verdict. Plain
//! data the checks fill in (`doctor.rs`) and the report prints (`doctor/report.rs`).

use std::time::Duration;

use serde::Serialize;

use super::files;

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    Ok,
    /// Works, with a caveat worth knowing.
    Warn,
    /// The agent cannot work this way; `fix` says what to change.
    Fail,
    /// Not checked (an earlier step failed, or the server has no such endpoint).
    Skip,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Check {
    pub(crate) name: &'static str,
    pub(crate) status: Status,
    pub(crate) detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

/// Everything the report shows.
#[derive(Debug, Default)]
pub(super) struct Findings {
    pub(crate) server: String,
    pub(crate) model: String,
    pub(crate) checks: Vec<Check>,
    pub(crate) window: Option<(u64, &'static str)>,
    pub(crate) first_token: Option<Duration>,
    pub(crate) tokens_per_second: Option<f64>,
    /// The sandbox section (it does not change the verdict, which is about the server).
    pub(crate) sandbox: Vec<Check>,
    /// The language-server section: which server diagnostics would use, per language.
    pub(crate) lsp: Vec<Check>,
    /// What earlier runs counted for this model (see `doctor/tally.rs`).
    pub(crate) tally: Option<crate::provider::tally::Tally>,
    /// Where the configuration was looked for.
    pub(crate) config_files: Vec<files::ConfigFile>,
    /// No model is configured: how to set one up (no server was checked).
    pub(crate) setup: Option<String>,
}

impl Findings {
    pub(super) fn add(&mut self, name: &'static str, status: Status, detail: impl Into<String>) {
        self.checks.push(Check {
            name,
            status,
            detail: detail.into(),
            fix: None,
        });
    }

    pub(super) fn fail(
        &mut self,
        name: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.checks.push(Check {
            name,
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        });
    }

    pub(super) fn warn(
        &mut self,
        name: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.checks.push(Check {
            name,
            status: Status::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        });
    }

    /// Replaces every secret in what the report shows.
    pub(super) fn redact(&mut self, secrets: &crate::tools::Secrets) {
        self.model = secrets.redact(std::mem::take(&mut self.model));
        for c in &mut self.checks {
            c.detail = secrets.redact(std::mem::take(&mut c.detail));
            c.fix = c.fix.take().map(|fix| secrets.redact(fix));
        }
    }

    /// Whether the agent can run against this server: one is configured and nothing
    /// essential failed.
    pub(crate) fn usable(&self) -> bool {
        self.setup.is_none() && !self.checks.iter().any(|c| c.status == Status::Fail)
    }
}

//! What one background process of a session is, as every layer names it: the `bash` tool
//! reports it, the protocol carries it to the frontends (`/ps`, the status bar), the session
//! records which were running when it ended. Plain data: nothing here runs a process.

use serde::{Deserialize, Serialize};

/// One process a `bash` call with `background: true` started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Background {
    /// Short and stable within the session: `bg1`, `bg2`, …
    pub(crate) id: String,
    /// The command as the model wrote it.
    pub(crate) command: String,
    /// When it started, in seconds since the Unix epoch.
    pub(crate) started: u64,
    /// Whether it runs, and how it ended.
    pub(crate) state: BackgroundState,
}

/// Where a background process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BackgroundState {
    Running,
    /// Its shell exited with this code.
    Exited(i32),
    /// It was ended by this signal (a `bash_kill` or `/ps kill` included).
    Killed(i32),
    /// Ended without a status minicode could read.
    Ended,
}

impl Background {
    pub(crate) fn is_running(&self) -> bool {
        self.state == BackgroundState::Running
    }

    /// One line for a listing: `bg1  running  12s  npm run dev`.
    pub(crate) fn line(&self, now: u64) -> String {
        let state = match self.state {
            BackgroundState::Running => "running".to_string(),
            BackgroundState::Exited(code) => format!("exited {code}"),
            BackgroundState::Killed(sig) => format!("killed (signal {sig})"),
            BackgroundState::Ended => "ended".to_string(),
        };
        let secs = now.saturating_sub(self.started);
        let runtime = if secs >= 3600 {
            format!("{}h{:02}m", secs / 3600, secs / 60 % 60)
        } else if secs >= 60 {
            format!("{}m{:02}s", secs / 60, secs % 60)
        } else {
            format!("{secs}s")
        };
        let first = self.command.lines().next().unwrap_or_default();
        format!("{}  {state}  {runtime}  {first}", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_shows_id_state_runtime_and_the_first_line_of_the_command() {
        let bg = Background {
            id: "bg2".into(),
            command: "python3 -m http.server 8000\n# more".into(),
            started: 1_000,
            state: BackgroundState::Running,
        };
        assert_eq!(
            bg.line(1_075),
            "bg2  running  1m15s  python3 -m http.server 8000"
        );
        let done = Background {
            state: BackgroundState::Exited(3),
            ..bg
        };
        assert_eq!(
            done.line(1_005),
            "bg2  exited 3  5s  python3 -m http.server 8000"
        );
    }

    #[test]
    fn the_state_serialises_as_a_name_or_a_name_with_its_number() {
        let json = serde_json::to_string(&BackgroundState::Exited(1)).unwrap_or_default();
        assert_eq!(json, r#"{"exited":1}"#);
        let json = serde_json::to_string(&BackgroundState::Running).unwrap_or_default();
        assert_eq!(json, r#""running""#);
    }
}

//! The payload of `Op::ListSessions` (the `/resume` picker) and `minicode sessions`: one line
//! per session of the workspace, and how long ago a time was, in words. Plain data; listing the
//! files is the core's business.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// One session of the workspace as a picker or a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: String,
    /// The first prompt's first line (a goal session: its objective), markup-free; empty when
    /// the session has no prompt yet.
    pub title: String,
    /// Last save, in seconds since the Unix epoch.
    pub updated: u64,
    /// The user's prompts in it (notices minicode added are not counted).
    pub turns: u32,
    /// For a fork, the session it was copied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// The session running now (a picker marks it; choosing it does nothing).
    #[serde(default)]
    pub current: bool,
}

/// How long before `now` the Unix time `secs` was, in words: "just now", "5 min ago",
/// "3 h ago", "2 days ago"; a time ahead of `now` (another machine's clock) is "in the future".
pub(crate) fn age(secs: u64, now: SystemTime) -> String {
    let then = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    let Ok(ago) = now.duration_since(then) else {
        // A second or two ahead is the rounding of a save made this very moment.
        return match then.duration_since(now) {
            Ok(ahead) if ahead < Duration::from_secs(60) => "just now".to_string(),
            _ => "in the future".to_string(),
        };
    };
    let mins = ago.as_secs() / 60;
    match mins {
        0 => "just now".to_string(),
        1..60 => format!("{mins} min ago"),
        60..1440 => format!("{} h ago", mins / 60),
        1440..2880 => "yesterday".to_string(),
        _ => format!("{} days ago", mins / 1440),
    }
}

/// Seconds since the Unix epoch of `time` (0 before it).
pub(crate) fn unix_secs(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ago(secs: u64) -> String {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        age(1_000_000 - secs, now)
    }

    #[test]
    fn ages_read_as_words() {
        assert_eq!(ago(5), "just now");
        assert_eq!(ago(5 * 60 + 10), "5 min ago");
        assert_eq!(ago(3 * 3600), "3 h ago");
        assert_eq!(ago(30 * 3600), "yesterday");
        assert_eq!(ago(5 * 86_400), "5 days ago");
    }

    #[test]
    fn a_time_ahead_of_the_clock_is_in_the_future() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(age(1_010, now), "just now");
        assert_eq!(age(9_000, now), "in the future");
    }
}

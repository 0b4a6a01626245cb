//! The token budget of the main conversation: how large the window is, how much room a
//! request must leave for the reply, how much recent history compaction keeps, and how the
//! local estimate is calibrated with the server's real counts. Pure arithmetic: it sees no
//! messages (that is `context`'s) and calls no model.

use crate::chat::Usage;

/// Default free space kept for the reply and for estimate error, for large windows.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default size of the recent history kept verbatim by compaction, for large windows.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;
/// The smallest window compaction can work in: below it the system prompt, memory and one
/// exchange leave no room for anything.
pub(crate) const MIN_CONTEXT_WINDOW: u64 = 2048;

/// The smallest reply room a main request is sent with. Less than this left in the window
/// triggers compaction first, whatever the configured reserve.
pub const MIN_REPLY_TOKENS: u64 = 256;

/// Why a budget configuration cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("context_window {window} is below the minimum of {min} tokens")]
    WindowTooSmall { window: u64, min: u64 },
    #[error("reserve_tokens {reserve} must be less than half the context window ({window})")]
    ReserveTooLarge { reserve: u64, window: u64 },
    #[error(
        "keep_recent_tokens {keep} plus reserve_tokens {reserve} must be less than the context window ({window})"
    )]
    KeepTooLarge {
        keep: u64,
        reserve: u64,
        window: u64,
    },
}

/// The token budget of the main conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The model's context window.
    pub window: u64,
    /// Compact when less than this much space would remain.
    pub reserve: u64,
    /// About how much recent history compaction keeps verbatim.
    pub keep_recent: u64,
    explicit_reserve: Option<u64>,
    explicit_keep: Option<u64>,
}

impl Budget {
    /// A budget from configuration. Unset values default to 16,384 reserve and 20,000 kept
    /// tokens, scaled down for small windows (an eighth and a quarter of the window) so that an
    /// 8K or 32K local model still has room to compact. Explicit values are checked, not
    /// silently changed: a configuration that cannot work is an error.
    pub fn new(
        window: u64,
        reserve: Option<u64>,
        keep_recent: Option<u64>,
    ) -> Result<Self, BudgetError> {
        if window < MIN_CONTEXT_WINDOW {
            return Err(BudgetError::WindowTooSmall {
                window,
                min: MIN_CONTEXT_WINDOW,
            });
        }
        if let Some(r) = reserve
            && r.saturating_mul(2) >= window
        {
            return Err(BudgetError::ReserveTooLarge { reserve: r, window });
        }
        let budget = Self::derive(window, reserve, keep_recent);
        if let Some(k) = keep_recent
            && k.saturating_add(budget.reserve) >= window
        {
            return Err(BudgetError::KeepTooLarge {
                keep: k,
                reserve: budget.reserve,
                window,
            });
        }
        Ok(budget)
    }

    /// Default reserve and keep-recent for `window`, with no explicit values (never fails;
    /// a window below the minimum simply leaves little room).
    pub(crate) fn for_window(window: u64) -> Self {
        Self::derive(window, None, None)
    }

    fn derive(window: u64, reserve: Option<u64>, keep_recent: Option<u64>) -> Self {
        let reserve_value = reserve
            .unwrap_or(DEFAULT_RESERVE_TOKENS.min(window / 8))
            .min(window / 2);
        let keep_value = keep_recent
            .unwrap_or(DEFAULT_KEEP_RECENT_TOKENS.min(window / 4))
            .min(window.saturating_sub(reserve_value) / 2);
        Self {
            window,
            reserve: reserve_value,
            keep_recent: keep_value,
            explicit_reserve: reserve,
            explicit_keep: keep_recent,
        }
    }

    /// The same budget for a window the server stated (in a context-length error). Explicit
    /// values that no longer fit are clamped: the server has spoken, and compaction must still
    /// be possible for the rest of the session.
    pub fn with_window(&self, window: u64) -> Self {
        Self::derive(
            window.max(MIN_CONTEXT_WINDOW / 2),
            self.explicit_reserve,
            self.explicit_keep,
        )
    }

    /// Whether a request of `used` tokens leaves less than the reserve free (or less than
    /// [`MIN_REPLY_TOKENS`], when an explicit reserve is smaller than that).
    pub fn should_compact(&self, used: u64) -> bool {
        used.saturating_add(self.reserve.max(MIN_REPLY_TOKENS)) > self.window
    }

    /// `max_tokens` for a request of `used` input tokens: the configured value, cut to the
    /// room left in the window (servers such as vLLM refuse `input + max_tokens > window`),
    /// but never below [`MIN_REPLY_TOKENS`]. A configured 0 ("the server decides") stays 0.
    pub fn reply_tokens(&self, used: u64, configured: u32) -> u32 {
        if configured == 0 {
            return 0;
        }
        let room = self.remaining(used).max(MIN_REPLY_TOKENS);
        // `room` is only above u32::MAX for absurd windows; then the configured value wins.
        u32::try_from(room).map_or(configured, |room| configured.min(room))
    }

    /// Free space left by a request of `used` tokens.
    pub fn remaining(&self, used: u64) -> u64 {
        self.window.saturating_sub(used)
    }

    /// `max_tokens` for a summary call: an eighth of the window, between 512 and 8192.
    pub fn summary_max_tokens(&self) -> u32 {
        (self.window / 8).clamp(512, 8192) as u32
    }

    /// How many input tokens one summary call may carry: the window less the summary's own
    /// output and a sixteenth for estimate error.
    pub fn summary_input_budget(&self) -> u64 {
        self.window
            .saturating_sub(u64::from(self.summary_max_tokens()))
            .saturating_sub(self.window / 16)
    }
}

/// Calibrates the local estimate with the server's real prompt size. Only main requests feed
/// it; summary calls have a different context and would corrupt it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tracker {
    /// (local estimate of the request, tokens the server counted for it)
    last: Option<(u64, u64)>,
}

impl Tracker {
    /// Records that a main request estimated at `sent_estimate` was counted as
    /// `usage.input_tokens` by the server. A reply without usage leaves the tracker as it was.
    pub fn calibrate(&mut self, sent_estimate: u64, usage: Option<Usage>) {
        if let Some(u) = usage.filter(|u| u.input_tokens > 0) {
            self.last = Some((sent_estimate, u.input_tokens));
        }
    }

    /// Forgets the calibration (after compaction the context is a different one).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The best guess for a request now estimated at `estimate`: the last real count plus what
    /// changed since, by estimate. Without a calibration, the estimate itself.
    pub fn current(&self, estimate: u64) -> u64 {
        match self.last {
            Some((sent, real)) if estimate >= sent => real + (estimate - sent),
            Some((sent, real)) => real.saturating_sub(sent - estimate),
            None => estimate,
        }
    }

    pub fn is_calibrated(&self) -> bool {
        self.last.is_some()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test's failure is its panic
mod tests {
    use super::*;

    #[test]
    fn defaults_scale_down_for_a_small_window() {
        let b = Budget::new(8192, None, None).unwrap();
        assert_eq!((b.reserve, b.keep_recent), (1024, 2048));
        let big = Budget::new(200_000, None, None).unwrap();
        assert_eq!(
            (big.reserve, big.keep_recent),
            (DEFAULT_RESERVE_TOKENS, DEFAULT_KEEP_RECENT_TOKENS)
        );
    }

    #[test]
    fn a_configuration_that_cannot_work_is_an_error() {
        assert!(matches!(
            Budget::new(1024, None, None),
            Err(BudgetError::WindowTooSmall { .. })
        ));
        assert!(matches!(
            Budget::new(8192, Some(4096), None),
            Err(BudgetError::ReserveTooLarge { .. })
        ));
        assert!(Budget::new(8192, Some(4095), None).is_ok());
        assert!(matches!(
            Budget::new(8192, Some(1000), Some(7192)),
            Err(BudgetError::KeepTooLarge { .. })
        ));
    }

    #[test]
    fn compaction_starts_when_less_than_the_reserve_would_remain() {
        let b = Budget::new(8192, Some(1000), None).unwrap();
        assert!(!b.should_compact(7192));
        assert!(b.should_compact(7193));
        // An explicit reserve below the reply minimum still leaves that minimum.
        let tiny = Budget::new(8192, Some(10), None).unwrap();
        assert!(tiny.should_compact(8192 - MIN_REPLY_TOKENS + 1));
    }

    #[test]
    fn reply_tokens_fit_the_room_left_but_never_below_the_minimum() {
        let b = Budget::new(8192, None, None).unwrap();
        assert_eq!(b.reply_tokens(0, 4096), 4096);
        assert_eq!(b.reply_tokens(6192, 4096), 2000);
        assert_eq!(b.reply_tokens(8100, 4096), MIN_REPLY_TOKENS as u32);
        assert_eq!(b.reply_tokens(100, 0), 0, "0 leaves it to the server");
    }

    #[test]
    fn a_window_the_server_states_clamps_explicit_values() {
        let b = Budget::new(32_768, Some(8000), Some(8000)).unwrap();
        let smaller = b.with_window(8192);
        assert_eq!(smaller.window, 8192);
        assert!(smaller.reserve <= 4096 && smaller.keep_recent < 8192 - smaller.reserve);
    }
}

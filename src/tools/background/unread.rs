//! The output of a background process the model has not read yet: bounded (the newest
//! bytes are kept, the dropped ones counted), handed out and cleared by each `bash_output`,
//! optionally only the lines a pattern matches. Pure: no process, no file.

use std::collections::VecDeque;

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;

/// Unread output, at most `cap` bytes of it.
#[derive(Debug)]
pub(crate) struct Unread {
    cap: usize,
    bytes: VecDeque<u8>,
    /// Bytes dropped since the last read because the model read too rarely.
    dropped: u64,
}

/// What one read hands out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    pub(crate) text: String,
    /// Bytes of output that were produced but no longer kept (see the saved log).
    pub(crate) dropped: u64,
    /// Lines the filter left out.
    pub(crate) filtered: usize,
}

impl Unread {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            bytes: VecDeque::new(),
            dropped: 0,
        }
    }

    /// Appends output, dropping the oldest unread bytes beyond the cap.
    pub(crate) fn push(&mut self, data: &[u8]) {
        let data = if data.len() > self.cap {
            self.dropped += (data.len() - self.cap) as u64;
            &data[data.len() - self.cap..]
        } else {
            data
        };
        let over = (self.bytes.len() + data.len()).saturating_sub(self.cap);
        self.bytes.drain(..over);
        self.dropped += over as u64;
        self.bytes.extend(data);
    }

    /// Hands out everything unread (only the lines `filter` matches, when given) and clears
    /// it. The text is lossily decoded; a line cut by the cap starts mid-way.
    pub(crate) fn take(&mut self, filter: Option<&RegexMatcher>) -> Taken {
        let bytes: Vec<u8> = self.bytes.drain(..).collect();
        let dropped = std::mem::take(&mut self.dropped);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let Some(filter) = filter else {
            return Taken {
                text,
                dropped,
                filtered: 0,
            };
        };
        let mut kept = String::new();
        let mut filtered = 0;
        for line in text.split_inclusive('\n') {
            let bare = line.trim_end_matches(['\n', '\r']);
            if filter.is_match(bare.as_bytes()).unwrap_or(false) {
                kept.push_str(line);
            } else {
                filtered += 1;
            }
        }
        Taken {
            text: kept,
            dropped,
            filtered,
        }
    }
}

/// `pattern` compiled for [`Unread::take`]; the error is a message for the model.
pub(crate) fn filter(pattern: &str) -> Result<RegexMatcher, String> {
    grep_regex::RegexMatcherBuilder::new()
        .build(pattern)
        .map_err(|e| {
            format!(
                "invalid filter: {}",
                e.to_string().lines().last().unwrap_or("")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_takes_what_came_since_the_last_one() {
        let mut unread = Unread::new(100);
        unread.push(b"one\n");
        assert_eq!(unread.take(None).text, "one\n");
        unread.push(b"two\n");
        assert_eq!(unread.take(None).text, "two\n");
        assert_eq!(unread.take(None).text, "");
    }

    #[test]
    fn beyond_the_cap_the_oldest_bytes_are_dropped_and_counted() {
        let mut unread = Unread::new(4);
        unread.push(b"abc");
        unread.push(b"def");
        unread.push(b"0123456789");
        let taken = unread.take(None);
        assert_eq!(taken.text, "6789");
        assert_eq!(taken.dropped, 12);
        unread.push(b"x");
        assert_eq!(unread.take(None).dropped, 0);
    }

    #[test]
    fn a_filter_keeps_matching_lines_only() {
        let mut unread = Unread::new(100);
        unread.push(b"GET / 200\nwarming up\nGET /x 404\n");
        let matcher = filter("GET");
        assert!(matcher.is_ok());
        let taken = unread.take(matcher.ok().as_ref());
        assert_eq!(taken.text, "GET / 200\nGET /x 404\n");
        assert_eq!(taken.filtered, 1);
        assert!(filter("(").is_err());
    }
}

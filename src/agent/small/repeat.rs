//! A small model that makes the same call again: Qwen2.5-Coder 1.5B, shown a file or a search
//! result, often sends the identical call back (three `search`es for `retry_delay` in a row)
//! until the round limit instead of answering from it. A read-only call identical to one made
//! since the last call that could have changed anything is answered with a pointer to the
//! earlier result instead of being run again. The core sends it only in the small profile.

use crate::chat::{ToolCall, ToolKind};

/// The answer to a repeated call, in place of its result.
pub(crate) const REPEATED: &str = "Not run: you made this exact call a moment ago and nothing \
has changed since; its result is above. Answer the user from it now, or make a different call.";

/// The read-only calls made since the last one that could have changed something.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    seen: Vec<(String, serde_json::Value)>,
}

impl Repeats {
    /// Whether `call` is a read-only call (`kind`) identical to one made since the last change:
    /// same tool, same arguments (compared as JSON, so spacing and key order do not matter).
    pub(crate) fn repeats(&self, call: &ToolCall, kind: Option<ToolKind>) -> bool {
        if !read_only(kind) {
            return false;
        }
        let args = arguments(call);
        self.seen.iter().any(|(n, a)| *n == call.name && *a == args)
    }

    /// Notes a call that ran: a read-only one is remembered, anything else forgets them all
    /// (files may have changed).
    pub(crate) fn ran(&mut self, call: &ToolCall, kind: Option<ToolKind>) {
        if read_only(kind) {
            self.seen.push((call.name.clone(), arguments(call)));
        } else {
            self.seen.clear();
        }
    }
}

fn read_only(kind: Option<ToolKind>) -> bool {
    matches!(kind, Some(ToolKind::Read | ToolKind::Search))
}

fn arguments(call: &ToolCall) -> serde_json::Value {
    serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn an_identical_read_only_call_repeats_until_something_may_have_changed() {
        let mut r = Repeats::default();
        let search = call("search", r#"{"pattern": "x", "path": "a.py"}"#);
        let read = Some(ToolKind::Search);
        assert!(!r.repeats(&search, read));
        r.ran(&search, read);
        let again = call("search", r#"{"path":"a.py","pattern":"x"}"#);
        assert!(r.repeats(&again, read));
        assert!(!r.repeats(&call("search", r#"{"pattern":"y"}"#), read));
        // A change in between: the same call may now show something else.
        r.ran(&call("edit", "{}"), Some(ToolKind::Edit));
        assert!(!r.repeats(&again, read));
        // Calls that act are never held back.
        let bash = call("bash", r#"{"command":"make"}"#);
        r.ran(&bash, Some(ToolKind::Execute));
        assert!(!r.repeats(&bash, Some(ToolKind::Execute)));
    }
}

//! Repairs for the JSON small models write around a call: doubled braces (`{{…}}}}`, as if
//! escaped for a format string), prose after the object, single-quoted strings and Python's
//! `True`/`False`/`None`, a missing closing brace, a backslash JSON does not know (`\$` in a
//! shell command, kept as the backslash the model meant). Each repair is tried only when the text
//! does not parse as it is, so valid JSON is never changed.

use serde_json::Value;

/// The JSON values at the start of `body`, one after another until something that is not
/// JSON (trailing prose); a top-level list gives its elements. Empty when no repair makes
/// the start of `body` parse as an object or a list.
pub(super) fn values(body: &str) -> Vec<Value> {
    let starts: [fn(&str) -> String; 3] = [str::to_string, strip_doubled_open, undouble];
    let quotes: [fn(&str) -> String; 4] =
        [str::to_string, requote, escape, |t| escape(&requote(t))];
    let ends: [fn(&str) -> String; 2] = [str::to_string, close];
    for start in starts {
        for quote in quotes {
            for end in ends {
                let text = end(&quote(&start(body)));
                let found = leading_values(&text);
                if !found.is_empty() {
                    return found;
                }
            }
        }
    }
    Vec::new()
}

/// The objects parsed from the start of `text`, stopping at the first thing that is not one.
fn leading_values(text: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for value in serde_json::Deserializer::from_str(text.trim_start()).into_iter::<Value>() {
        match value {
            Ok(Value::Array(items)) if items.iter().all(Value::is_object) => found.extend(items),
            Ok(object @ Value::Object(_)) => found.push(object),
            _ => break,
        }
    }
    found
}

/// How many bytes of `text` (which starts with `{` or `[`) the JSON value there spans: up to
/// the bracket that balances the first, plus any stray closing braces right after it (the
/// tail of doubled braces). The whole text when it never balances.
pub(super) fn extent(text: &str) -> usize {
    let mut depth = 0usize;
    let mut strings = Strings::default();
    for (i, c) in text.char_indices() {
        if !strings.outside(c, &['"', '\'']) {
            continue;
        }
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let end = i + 1;
                    let stray = text[end..].len() - text[end..].trim_start_matches('}').len();
                    return end + stray;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// `{{…` → `{…`: one opening brace too many.
fn strip_doubled_open(text: &str) -> String {
    let trimmed = text.trim_start();
    match trimmed.strip_prefix("{{") {
        Some(rest) => format!("{{{rest}"),
        None => text.to_string(),
    }
}

/// Every `{{` and `}}` outside strings halved.
fn undouble(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut strings = Strings::default();
    while let Some(c) = chars.next() {
        out.push(c);
        if strings.outside(c, &['"']) && matches!(c, '{' | '}') && chars.peek() == Some(&c) {
            chars.next();
        }
    }
    out
}

/// Single-quoted strings as double-quoted ones, and Python's `True`, `False` and `None` as
/// JSON's literals (outside strings).
fn requote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote = None;
    let mut escaped = false;
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(match word.as_str() {
            "True" => "true",
            "False" => "false",
            "None" => "null",
            other => other,
        });
        word.clear();
    };
    for c in text.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                    // `\'` means a plain quote inside a single-quoted string.
                    if c == '\'' && q == '\'' {
                        out.pop();
                    }
                    out.push(c);
                } else if c == '\\' {
                    escaped = true;
                    out.push(c);
                } else if c == q {
                    quote = None;
                    out.push('"');
                } else if c == '"' && q == '\'' {
                    out.push_str("\\\"");
                } else {
                    out.push(c);
                }
            }
            None if c.is_ascii_alphabetic() => word.push(c),
            None => {
                flush(&mut word, &mut out);
                if c == '\'' || c == '"' {
                    quote = Some(c);
                    out.push('"');
                } else {
                    out.push(c);
                }
            }
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Every backslash inside a string that does not start one of JSON's escapes doubled, so it
/// stands for itself: models copy shell text (`\$`, `\(`) into JSON strings unchanged.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    let mut inside = false;
    while let Some(c) = chars.next() {
        out.push(c);
        match c {
            '"' => inside = !inside,
            '\\' if inside => match chars.peek() {
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | 'u') => {
                    out.extend(chars.next());
                }
                _ => out.push('\\'),
            },
            _ => {}
        }
    }
    out
}

/// The text with what is left open at its end closed: a string, then brackets innermost
/// first. Text that closes more than it opens is left alone.
fn close(text: &str) -> String {
    let mut stack = Vec::new();
    let mut strings = Strings::default();
    for c in text.chars() {
        if !strings.outside(c, &['"']) {
            continue;
        }
        match c {
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' if stack.pop() != Some(c) => return text.to_string(),
            _ => {}
        }
    }
    let mut out = text.trim_end().to_string();
    if strings.open.is_some() {
        out.push('"');
    }
    out.extend(stack.iter().rev());
    out
}

/// Where a scan of JSON-like text stands against its strings, so the repairs that act only
/// outside strings share one reading of quotes and backslashes.
#[derive(Default)]
struct Strings {
    /// The quote that opened the string the scan is in.
    open: Option<char>,
    escaped: bool,
}

impl Strings {
    /// Feeds `c`; whether it stands outside every string (a quote opening one is inside).
    fn outside(&mut self, c: char, quotes: &[char]) -> bool {
        if let Some(q) = self.open {
            match c {
                _ if self.escaped => self.escaped = false,
                '\\' => self.escaped = true,
                c if c == q => self.open = None,
                _ => {}
            }
            return false;
        }
        if quotes.contains(&c) {
            self.open = Some(c);
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_json_is_taken_as_it_is() {
        let v = values(r#"{"a": {"b": 1}}"#);
        assert_eq!(v, vec![serde_json::json!({"a": {"b": 1}})]);
    }

    #[test]
    fn doubled_braces_are_halved() {
        let v = values(r#"{{"name": "list", "arguments": {{"path": "."}}}}"#);
        assert_eq!(
            v,
            vec![serde_json::json!({"name": "list", "arguments": {"path": "."}})]
        );
        let v = values(r#"{{"name": "list", "arguments": {"path": "."}}}}"#);
        assert_eq!(
            v,
            vec![serde_json::json!({"name": "list", "arguments": {"path": "."}})]
        );
    }

    #[test]
    fn trailing_prose_is_ignored() {
        let v = values("{\"name\": \"x\", \"arguments\": {}}\nThis lists the files.");
        assert_eq!(v, vec![serde_json::json!({"name": "x", "arguments": {}})]);
    }

    #[test]
    fn single_quotes_and_python_literals_become_json() {
        let v = values("{'name': 'read', 'arguments': {'path': 'it\\'s \"a\".md', 'all': True}}");
        assert_eq!(
            v,
            vec![
                serde_json::json!({"name": "read", "arguments": {"path": "it's \"a\".md", "all": true}})
            ]
        );
    }

    #[test]
    fn a_backslash_json_does_not_know_stands_for_itself() {
        // Qwen2.5-Coder 1.5B's answer to evals/basics/add_function_with_test, as it wrote it.
        let v = values(
            r#"{"name": "bash", "arguments": {"command": "echo \"f() { echo \$(($1 * $2)); }\" >> lib.sh"}}"#,
        );
        assert_eq!(
            v,
            vec![
                serde_json::json!({"name": "bash", "arguments": {"command": "echo \"f() { echo \\$(($1 * $2)); }\" >> lib.sh"}})
            ]
        );
        assert_eq!(
            values(r#"{"a": "x\n"}"#),
            vec![serde_json::json!({"a": "x\n"})]
        );
    }

    #[test]
    fn a_missing_closing_brace_is_added() {
        let v = values(r#"{"name": "read", "arguments": {"path": "a.md"}"#);
        assert_eq!(
            v,
            vec![serde_json::json!({"name": "read", "arguments": {"path": "a.md"}})]
        );
    }

    #[test]
    fn a_list_gives_its_objects() {
        let v = values(r#"[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]"#);
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn prose_is_not_json() {
        assert!(values("not json at all").is_empty());
        assert!(values("{ this is a set }").is_empty());
    }

    #[test]
    fn extent_covers_strings_and_stray_braces() {
        let text = r#"{"a": "}{"} and more"#;
        assert_eq!(&text[..extent(text)], r#"{"a": "}{"}"#);
        let text = r#"{{"a": {"b": 1}}}}} tail"#;
        assert_eq!(&text[..extent(text)], r#"{{"a": {"b": 1}}}}}"#);
        assert_eq!(extent("{\"a\": 1"), 7);
    }
}

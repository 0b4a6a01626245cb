//! The YAML frontmatter of a `SKILL.md`: the block between a first line `---` and the next
//! `---` (or `...`), read as a top-level mapping of the restricted YAML that skill files use.
//!
//! Supported values: plain, `'single'` and `"double"` quoted scalars (over several lines too),
//! `|` and `>` block scalars, `[flow, lists]` and `- block` lists of scalars. Anything else
//! (nested mappings, anchors, tags, flow mappings) is kept as [`Value::Other`], so a skill
//! written for another agent with extra keys (`license`, `metadata`, `allowed-tools`) still
//! loads; only the keys minicode reads must have a plain shape. This module only parses text:
//! it never reads files and never decides what a valid skill is (that is `discover`'s).

/// One top-level value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Text(String),
    List(Vec<String>),
    /// A shape minicode does not read (nested mapping, anchor, tag…), with what it was.
    Other(&'static str),
}

/// The frontmatter's top-level keys in file order, and the Markdown body after it.
#[derive(Debug)]
pub(crate) struct Document<'a> {
    pub(crate) fields: Vec<(String, Value)>,
    pub(crate) body: &'a str,
}

impl Document<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Splits `text` into its frontmatter and body and parses the frontmatter. Errors are short
/// lowercase phrases naming the line (counted from 1 in the file).
pub(crate) fn parse(text: &str) -> Result<Document<'_>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("it does not start with a `---` frontmatter line".to_string());
    }
    let mut yaml: Vec<&str> = Vec::new();
    let mut consumed = first.len();
    let mut closed = false;
    for line in lines {
        consumed += line.len();
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            closed = true;
            break;
        }
        yaml.push(line.strip_suffix('\n').unwrap_or(line));
    }
    if !closed {
        return Err("its frontmatter has no closing `---` line".to_string());
    }
    let fields = mapping(&yaml)?;
    Ok(Document {
        fields,
        body: &text[consumed..],
    })
}

/// The lines of the frontmatter (without the `---` fences); line `i` is file line `i + 2`.
fn mapping(lines: &[&str]) -> Result<Vec<(String, Value)>, String> {
    let mut fields: Vec<(String, Value)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end_matches('\r');
        let at = i + 2;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            i += 1;
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(format!("line {at}: unexpected indentation"));
        }
        let Some((key, rest)) = split_key(line) else {
            return Err(format!("line {at}: expected `key: value`"));
        };
        if fields.iter().any(|(k, _)| k == key) {
            return Err(format!("line {at}: `{key}` appears twice"));
        }
        // The value's continuation: every following line that is blank, indented, or (for a
        // block list written at the key's own level) starts with `-`.
        let mut end = i + 1;
        while end < lines.len() {
            let next = lines[end].trim_end_matches('\r');
            let more =
                next.trim().is_empty() || next.starts_with([' ', '\t']) || is_item(next.trim());
            if !more {
                break;
            }
            end += 1;
        }
        let value = value(rest.trim(), &lines[i + 1..end], at)?;
        fields.push((key.to_string(), value));
        i = end;
    }
    Ok(fields)
}

fn is_item(line: &str) -> bool {
    line == "-" || line.starts_with("- ")
}

/// `key: rest` with a plain key (letters, digits, `_`, `-`, `.`).
fn split_key(line: &str) -> Option<(&str, &str)> {
    let colon = line.find(':')?;
    let key = &line[..colon];
    let rest = &line[colon + 1..];
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    (plain && (rest.is_empty() || rest.starts_with([' ', '\t']))).then_some((key, rest))
}

/// Parses one value: `first` is what follows the colon, `more` the continuation lines.
fn value(first: &str, more: &[&str], at: usize) -> Result<Value, String> {
    let first = strip_comment(first);
    let more: Vec<&str> = more.iter().map(|l| l.trim_end_matches('\r')).collect();
    match first.chars().next() {
        None => Ok(nested(&more)),
        Some('|' | '>') => Ok(Value::Text(block_scalar(first, &more, at)?)),
        Some('"' | '\'') => {
            let joined = joined(first, &more);
            match quoted(&joined) {
                Some(Ok((text, rest))) if strip_comment(rest).is_empty() => Ok(Value::Text(text)),
                Some(Ok(_)) => Err(format!("line {at}: text after a closing quote")),
                Some(Err(e)) => Err(format!("line {at}: {e}")),
                None => Err(format!("line {at}: a quoted value is not closed")),
            }
        }
        Some('[') => flow_list(&joined(first, &more)).map_err(|e| format!("line {at}: {e}")),
        Some('{') => Ok(Value::Other("a flow mapping")),
        Some('&') => Ok(Value::Other("an anchor")),
        Some('*') => Ok(Value::Other("an alias")),
        Some('!') => Ok(Value::Other("a tag")),
        Some(_) => {
            // A plain scalar, folded over its continuation lines.
            let mut text = first.to_string();
            for line in more.iter().map(|l| strip_comment(l.trim())) {
                if !line.is_empty() {
                    text.push(' ');
                    text.push_str(line);
                }
            }
            Ok(Value::Text(text))
        }
    }
}

/// The value of a key with nothing after its colon: a block list, a nested mapping, a plain
/// scalar on the following lines, or nothing (an empty text).
fn nested(more: &[&str]) -> Value {
    let items: Vec<&str> = more
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if items.is_empty() {
        return Value::Text(String::new());
    }
    if items.iter().all(|l| is_item(l)) {
        let mut list = Vec::new();
        for item in items {
            let item = strip_comment(item[1..].trim());
            match item.chars().next() {
                Some('"' | '\'') => match quoted(item) {
                    Some(Ok((text, rest))) if rest.trim().is_empty() => list.push(text),
                    _ => return Value::Other("a list with an unsupported item"),
                },
                Some('[' | '{' | '&' | '*' | '!' | '|' | '>') => {
                    return Value::Other("a list with nested values");
                }
                _ if split_key(item).is_some() => return Value::Other("a list of mappings"),
                _ => list.push(item.to_string()),
            }
        }
        return Value::List(list);
    }
    if items.iter().any(|l| split_key(l).is_some()) {
        return Value::Other("a nested mapping");
    }
    Value::Text(items.join(" "))
}

/// The first line and the continuation lines as one string (for quoted scalars and flow lists
/// written over several lines); line breaks fold to spaces.
fn joined(first: &str, more: &[&str]) -> String {
    let mut text = first.to_string();
    for line in more {
        text.push(' ');
        text.push_str(line.trim());
    }
    text
}

/// Removes a ` #` comment from a plain value (a `#` inside quotes is not one; quoted values
/// are checked by `quoted` instead).
fn strip_comment(text: &str) -> &str {
    if text.starts_with(['"', '\'']) {
        return text.trim();
    }
    if text.starts_with('#') {
        return "";
    }
    match text.find(" #").or_else(|| text.find("\t#")) {
        Some(at) => text[..at].trim(),
        None => text.trim(),
    }
}

/// A quoted scalar at the start of `text`: its value and what follows the closing quote.
/// `None` when it is not closed.
fn quoted(text: &str) -> Option<Result<(String, &str), String>> {
    let mut chars = text.char_indices();
    let (_, quote) = chars.next()?;
    let mut out = String::new();
    while let Some((at, c)) = chars.next() {
        match (quote, c) {
            ('\'', '\'') => {
                if text[at + 1..].starts_with('\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return Some(Ok((out, &text[at + 1..])));
                }
            }
            ('"', '"') => return Some(Ok((out, &text[at + 1..]))),
            ('"', '\\') => {
                let (_, e) = chars.next()?;
                let hex = |n: usize, chars: &mut std::str::CharIndices<'_>| {
                    let digits: String = chars.by_ref().take(n).map(|(_, c)| c).collect();
                    u32::from_str_radix(&digits, 16)
                        .ok()
                        .filter(|_| digits.len() == n)
                        .and_then(char::from_u32)
                };
                let decoded = match e {
                    'n' => Some('\n'),
                    't' | '\t' => Some('\t'),
                    'r' => Some('\r'),
                    '0' => Some('\0'),
                    ' ' => Some(' '),
                    '"' | '\\' | '/' => Some(e),
                    'x' => hex(2, &mut chars),
                    'u' => hex(4, &mut chars),
                    'U' => hex(8, &mut chars),
                    _ => None,
                };
                match decoded {
                    Some(c) => out.push(c),
                    None => return Some(Err(format!("unsupported escape `\\{e}`"))),
                }
            }
            _ => out.push(c),
        }
    }
    None
}

/// `[a, "b", c]`: a list of scalars.
fn flow_list(text: &str) -> Result<Value, String> {
    let inner = text.strip_prefix('[').unwrap_or(text);
    let mut items = Vec::new();
    let mut rest = inner.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix(']') {
            if !strip_comment(after).is_empty() {
                return Err("text after a closing `]`".to_string());
            }
            return Ok(Value::List(items));
        }
        if rest.is_empty() {
            return Err("a `[` list is not closed".to_string());
        }
        let (item, after) = if rest.starts_with(['"', '\'']) {
            match quoted(rest) {
                Some(Ok(found)) => found,
                Some(Err(e)) => return Err(e),
                None => return Err("a quoted list item is not closed".to_string()),
            }
        } else if rest.starts_with(['[', '{']) {
            return Ok(Value::Other("a list with nested values"));
        } else {
            let end = rest.find([',', ']']).unwrap_or(rest.len());
            (rest[..end].trim().to_string(), &rest[end..])
        };
        if !item.is_empty() {
            items.push(item);
        }
        rest = after.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
        } else if !rest.starts_with(']') {
            return Err("expected `,` or `]` in a list".to_string());
        }
    }
}

/// A `|` (literal) or `>` (folded) block scalar; chomping indicators are accepted, and the
/// result is trimmed of trailing line breaks either way (minicode trims values anyway).
fn block_scalar(header: &str, more: &[&str], at: usize) -> Result<String, String> {
    let literal = header.starts_with('|');
    if !header[1..]
        .chars()
        .all(|c| matches!(c, '-' | '+') || c.is_ascii_digit())
    {
        return Err(format!(
            "line {at}: unsupported block scalar header `{header}`"
        ));
    }
    let indent = more
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = more.iter().map(|l| l.get(indent..).unwrap_or("")).collect();
    let text = if literal {
        lines.join("\n")
    } else {
        // Folding: lines of a paragraph join with a space; an empty line is a line break.
        let mut out = String::new();
        let mut fresh = true;
        for line in &lines {
            if line.trim().is_empty() {
                out.push('\n');
                fresh = true;
            } else {
                if !fresh {
                    out.push(' ');
                }
                out.push_str(line);
                fresh = false;
            }
        }
        out
    };
    Ok(text.trim_end().to_string())
}

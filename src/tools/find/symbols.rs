//! The definition scanner `find` chunks code with: one line at a time, per language, it spots
//! where a function, a type, an impl block or a module begins, and finds where it ends by
//! counting braces (or by indentation in Python). A scanner, not a parser: no grammar crate is
//! worth its size here, and a missed definition only costs ranking precision, since the lines
//! still land in a plain window chunk. It never reads files; it gets their lines.

use serde::{Deserialize, Serialize};

/// What a chunk holds, as the model filters on it (`kind` argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Function,
    Type,
    Impl,
    Module,
    Constant,
    /// Lines outside any recognised definition, or a file in a language without a scanner.
    File,
}

impl Kind {
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Function,
        Kind::Type,
        Kind::Impl,
        Kind::Module,
        Kind::Constant,
        Kind::File,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Function => "function",
            Kind::Type => "type",
            Kind::Impl => "impl",
            Kind::Module => "module",
            Kind::Constant => "constant",
            Kind::File => "file",
        }
    }

    /// Whether definitions inside this one are its members (named `parent` in results).
    fn contains_members(self) -> bool {
        matches!(self, Kind::Type | Kind::Impl | Kind::Module)
    }
}

/// A language the scanner knows, from a file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Rust,
    Python,
    Script,
    Go,
    C,
    Java,
}

impl Lang {
    pub(crate) fn of(path: &str) -> Option<Lang> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => Lang::Script,
            "go" => Lang::Go,
            "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Lang::C,
            "java" => Lang::Java,
            _ => return None,
        })
    }

    /// Whether `trimmed` is a comment line (its text goes to the doc field).
    pub(crate) fn is_comment(self, trimmed: &str) -> bool {
        match self {
            Lang::Python => trimmed.starts_with('#'),
            _ => {
                trimmed.starts_with("//")
                    || trimmed.starts_with("/*")
                    || trimmed.starts_with("* ")
                    || trimmed == "*"
                    || trimmed.starts_with("*/")
            }
        }
    }

    /// Whether `trimmed` belongs to the definition below it (an attribute or a decorator).
    pub(crate) fn is_attribute(self, trimmed: &str) -> bool {
        match self {
            Lang::Rust => trimmed.starts_with("#["),
            Lang::Python | Lang::Java | Lang::Script => trimmed.starts_with('@'),
            Lang::C => trimmed.starts_with("template"),
            Lang::Go => false,
        }
    }
}

/// One definition: its first line and last line (0-based, inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Def {
    pub(crate) line: usize,
    pub(crate) end: usize,
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// The enclosing type, impl or module, when there is one.
    pub(crate) parent: Option<String>,
}

/// The definitions in `lines`, in line order, with their ends and parents.
pub(crate) fn scan(lang: Lang, lines: &[&str]) -> Vec<Def> {
    let mut defs = Vec::new();
    let mut in_block_comment = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if lang != Lang::Python {
            if in_block_comment {
                in_block_comment = !t.contains("*/");
                continue;
            }
            if t.starts_with("/*") && !t.contains("*/") {
                in_block_comment = true;
                continue;
            }
        }
        if t.is_empty() || lang.is_comment(t) {
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        // A GNU-style C head starts at its type line.
        let mut head = i;
        let found = definition(lang, t, indented).or_else(|| {
            let prev = (0..i).rev().find(|&p| !lines[p].trim().is_empty())?;
            let found = (lang == Lang::C && !indented)
                .then(|| gnu_c_head(lines[prev], t))
                .flatten()?;
            head = prev;
            Some(found)
        });
        let Some((name, kind)) = found else {
            continue;
        };
        let end = match lang {
            Lang::Python => indent_end(lines, i),
            _ => brace_end(lines, i),
        };
        // A C prototype or a Rust signature without a body (a trait's, an `extern` block's)
        // declares what another place defines: its lines stay in a window chunk, so the
        // definition ranks first.
        let declaration = matches!(lang, Lang::C | Lang::Rust)
            && kind == Kind::Function
            && !lines[i..=end.min(lines.len() - 1)]
                .iter()
                .any(|l| l.contains('{'));
        if declaration {
            continue;
        }
        defs.push(Def {
            line: head,
            end,
            name,
            kind,
            parent: None,
        });
    }
    assign_parents(&mut defs);
    defs
}

fn assign_parents(defs: &mut [Def]) {
    let mut open: Vec<usize> = Vec::new();
    for i in 0..defs.len() {
        while open.last().is_some_and(|&o| defs[o].end < defs[i].line) {
            open.pop();
        }
        defs[i].parent = open.last().map(|&o| defs[o].name.clone());
        if defs[i].kind.contains_members() && defs[i].end > defs[i].line {
            open.push(i);
        }
    }
}

fn definition(lang: Lang, t: &str, indented: bool) -> Option<(String, Kind)> {
    match lang {
        Lang::Rust => rust(t),
        Lang::Python => python(t),
        Lang::Script => script(t, indented),
        Lang::Go => go(t),
        Lang::C => c_family(t, indented),
        Lang::Java => java(t),
    }
}

/// The identifier `s` starts with (letters, digits, `_`, `$`).
fn ident(s: &str) -> Option<String> {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    let id = &s[..end];
    (!id.is_empty() && !id.starts_with(|c: char| c.is_ascii_digit())).then(|| id.to_string())
}

/// `t` without any of the leading `words` (repeatedly), e.g. modifiers.
fn strip_words<'a>(mut t: &'a str, words: &[&str]) -> &'a str {
    'again: loop {
        for w in words {
            if let Some(rest) = t.strip_prefix(w)
                && rest.starts_with([' ', '\t'])
            {
                t = rest.trim_start();
                continue 'again;
            }
        }
        return t;
    }
}

/// The first of `keywords` `t` starts with (followed by a space) and what follows it.
fn after_keyword<'a>(t: &'a str, keywords: &[&'static str]) -> Option<(&'static str, &'a str)> {
    keywords.iter().find_map(|k| {
        t.strip_prefix(k)
            .filter(|rest| rest.starts_with([' ', '\t']))
            .map(|rest| (*k, rest.trim_start()))
    })
}

fn rust(t: &str) -> Option<(String, Kind)> {
    let mut t = t;
    if let Some(rest) = t.strip_prefix("pub(") {
        t = rest.split_once(')')?.1.trim_start();
    }
    let t = strip_words(t, &["pub", "async", "unsafe", "default", "extern", "\"C\""]);
    let t = match t.strip_prefix("const ") {
        Some(rest) if rest.trim_start().starts_with("fn ") => rest.trim_start(),
        _ => t,
    };
    if let Some(rest) = t.strip_prefix("impl")
        && (rest.starts_with(' ') || rest.starts_with('<'))
    {
        let rest = skip_generics(rest.trim_start());
        let head = rest.split(['{', ';']).next()?;
        let head = head.split(" where").next()?.trim();
        return (!head.is_empty()).then(|| (head.to_string(), Kind::Impl));
    }
    if let Some(rest) = t.strip_prefix("macro_rules!") {
        return Some((ident(rest)?, Kind::Function));
    }
    let (kw, rest) = after_keyword(
        t,
        &[
            "fn", "struct", "enum", "union", "trait", "type", "mod", "const", "static",
        ],
    )?;
    let rest = rest.strip_prefix("mut ").unwrap_or(rest);
    let kind = match kw {
        "fn" => Kind::Function,
        "mod" => Kind::Module,
        "const" | "static" => Kind::Constant,
        _ => Kind::Type,
    };
    Some((ident(rest)?, kind))
}

/// `s` after a leading `<…>` (nested), or `s` itself.
fn skip_generics(s: &str) -> &str {
    if !s.starts_with('<') {
        return s;
    }
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return s[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    s
}

fn python(t: &str) -> Option<(String, Kind)> {
    let t = strip_words(t, &["async"]);
    let (kw, rest) = after_keyword(t, &["def", "class"])?;
    let kind = if kw == "def" {
        Kind::Function
    } else {
        Kind::Type
    };
    Some((ident(rest)?, kind))
}

/// Words that look like a call or a method head but start a statement.
const STATEMENTS: [&str; 16] = [
    "if", "for", "while", "switch", "catch", "return", "else", "do", "case", "new", "throw",
    "typeof", "sizeof", "delete", "await", "yield",
];

fn script(t: &str, indented: bool) -> Option<(String, Kind)> {
    let t = strip_words(t, &["export", "default", "declare", "abstract", "async"]);
    if let Some(rest) = t.strip_prefix("function") {
        let rest = rest.trim_start_matches('*');
        return Some((ident(rest)?, Kind::Function));
    }
    if let Some((kw, rest)) = after_keyword(
        t,
        &["class", "interface", "enum", "type", "namespace", "module"],
    ) {
        let name = ident(rest)?;
        let kind = match kw {
            "namespace" | "module" => Kind::Module,
            _ => Kind::Type,
        };
        return Some((name, kind));
    }
    if let Some((_, rest)) = after_keyword(t, &["const", "let", "var"]) {
        let name = ident(rest)?;
        let value = rest.split_once('=')?.1.trim_start();
        let callable = value.starts_with("async")
            || value.starts_with("function")
            || (value.starts_with('(') && value.contains("=>"))
            || value
                .split_once("=>")
                .is_some_and(|(a, _)| ident(a).is_some());
        return callable.then_some((name, Kind::Function));
    }
    // A method in a class body: `name(args) {`, after modifiers.
    if indented && t.ends_with('{') {
        let t = strip_words(
            t,
            &[
                "public",
                "private",
                "protected",
                "static",
                "async",
                "get",
                "set",
                "readonly",
                "override",
            ],
        );
        let name = ident(t)?;
        let rest = t[name.len()..].trim_start();
        if (rest.starts_with('(') || rest.starts_with('<')) && !STATEMENTS.contains(&name.as_str())
        {
            return Some((name, Kind::Function));
        }
    }
    None
}

fn go(t: &str) -> Option<(String, Kind)> {
    if let Some(rest) = t.strip_prefix("func") {
        let mut rest = rest.trim_start();
        if rest.starts_with('(') {
            rest = rest.split_once(')')?.1;
        }
        return Some((ident(rest)?, Kind::Function));
    }
    let (_, rest) = after_keyword(t, &["type"])?;
    Some((ident(rest)?, Kind::Type))
}

fn c_family(t: &str, indented: bool) -> Option<(String, Kind)> {
    if let Some(rest) = t.strip_prefix("#define") {
        return Some((ident(rest)?, Kind::Constant));
    }
    if t.starts_with('#') {
        return None;
    }
    let t = strip_words(t, &["typedef", "export"]);
    if let Some((kw, rest)) = after_keyword(t, &["struct", "class", "union", "enum", "namespace"]) {
        let rest = strip_words(rest, &["class", "struct"]);
        let name = ident(rest)?;
        if t.ends_with(';') && !t.contains('{') {
            return None;
        }
        // `struct foo *make_foo(…)` or `struct foo *` alone: a function's return type, not a
        // type's definition.
        let after = rest[name.len()..].trim_start();
        if after.starts_with(['*', '&']) || (after.contains('(') && !after.starts_with('{')) {
            return if indented { None } else { call_like(t, true) };
        }
        let kind = if kw == "namespace" {
            Kind::Module
        } else {
            Kind::Type
        };
        return Some((name, kind));
    }
    if indented && !t.contains("::") {
        return None;
    }
    call_like(t, true)
}

fn java(t: &str) -> Option<(String, Kind)> {
    let t = strip_words(
        t,
        &[
            "public",
            "private",
            "protected",
            "static",
            "final",
            "abstract",
            "synchronized",
            "native",
            "default",
            "sealed",
            "non-sealed",
            "strictfp",
        ],
    );
    if let Some((_, rest)) =
        after_keyword(t, &["class", "interface", "enum", "record", "@interface"])
    {
        return Some((ident(rest)?, Kind::Type));
    }
    call_like(t, false)
}

/// A C function head in the GNU and BSD style, the name at the start of its line and the
/// return type (or an attribute) alone on the line before: `static int\nparse_args(int argc)`.
/// A macro invocation at the top level ends in `;` and is then dropped as a declaration.
fn gnu_c_head(prev: &str, t: &str) -> Option<(String, Kind)> {
    let p = prev.trim();
    let type_line = !prev.starts_with([' ', '\t'])
        && !p.starts_with('#')
        && !Lang::C.is_comment(p)
        && !p.ends_with([';', '{', '}', ',', '\\', '(', '='])
        && (!p.contains('(') || p.starts_with("__attribute__"));
    let open = t.find('(')?;
    let name = ident(&t[..open])?;
    // `name (` with GNU's space counts; an all-capitals name after a bare macro line
    // (`G_BEGIN_DECLS` then `G_DECLARE_TYPE(…)`) is a macro call, not a definition.
    let named = name.len() == t[..open].trim_end().len();
    let macro_call = !name.chars().any(|c| c.is_lowercase());
    (type_line && named && !macro_call && !STATEMENTS.contains(&name.as_str()))
        .then_some((name, Kind::Function))
}

/// A function head in C-like syntax: `type name(…` with no `=` before the parenthesis and no
/// `.` before the name, not a statement; a line ending in `;` is a declaration unless
/// `prototypes` keeps those.
fn call_like(t: &str, prototypes: bool) -> Option<(String, Kind)> {
    let open = t.find('(')?;
    let head = t[..open].trim_end();
    if head.contains('=') || head.ends_with('.') || head.ends_with("->") {
        return None;
    }
    if t.ends_with(';') && (!prototypes || t.contains('=')) {
        return None;
    }
    let first = ident(head)?;
    if STATEMENTS.contains(&first.as_str()) {
        return None;
    }
    // The byte after the last character that cannot be in a name (which may be multi-byte).
    let start = head
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == ':' || *c == '~'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let full = &head[start..];
    let name = full.rsplit("::").next()?.trim_start_matches('~');
    let name = ident(name)?;
    let has_type = start > 0 || full.contains("::");
    (has_type && !STATEMENTS.contains(&name.as_str())).then_some((name, Kind::Function))
}

/// The last line of a brace-delimited definition starting at `from`: where its braces balance,
/// or where a `;` outside brackets ends it before any brace opens (a declaration; the `;` of an
/// array type such as `[u8; 32]` in a signature does not). Strings and line comments are
/// skipped; a definition whose braces never balance ends at the file's end.
fn brace_end(lines: &[&str], from: usize) -> usize {
    let mut depth = 0usize;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(from) {
        let mut chars = line.chars().peekable();
        let mut quote: Option<char> = None;
        // An array type's `;` sits inside brackets on one line; counting per line keeps a
        // stray bracket (in a regex literal, say) from hiding every later `;`.
        let mut brackets = 0usize;
        while let Some(c) = chars.next() {
            if let Some(q) = quote {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '"' | '`' => quote = Some(c),
                '\'' => {
                    // A char literal of a brace, bracket or double quote; a lone quote (a Rust
                    // lifetime) is skipped.
                    let rest: String = chars.clone().take(2).collect();
                    if matches!(
                        rest.as_str(),
                        "{'" | "}'" | "('" | ")'" | "['" | "]'" | "\"'"
                    ) {
                        chars.next();
                        chars.next();
                    }
                }
                '/' if chars.peek() == Some(&'/') => break,
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => {
                    depth = depth.saturating_sub(1);
                    if opened && depth == 0 {
                        return i;
                    }
                }
                '(' | '[' => brackets += 1,
                ')' | ']' => brackets = brackets.saturating_sub(1),
                ';' if !opened && brackets == 0 => return i,
                _ => {}
            }
        }
    }
    lines.len().saturating_sub(1)
}

/// The last line of a Python block starting at `from`: the line before the next non-blank line
/// indented no deeper than the header.
fn indent_end(lines: &[&str], from: usize) -> usize {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let own = indent(lines[from]);
    let mut last = from;
    for (i, line) in lines.iter().enumerate().skip(from + 1) {
        if line.trim().is_empty() {
            continue;
        }
        if indent(line) <= own {
            break;
        }
        last = i;
    }
    last
}

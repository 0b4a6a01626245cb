//! Writes `assets/syntaxes/`: one small syntect dump per language the full-screen session
//! highlights, and `index.tsv`, which the session reads to pick a pack for a fence tag or a
//! file extension without loading any grammar. Run it after changing syntect or the list
//! below: `cargo run --example syntax_packs` (it checks each pack against the full set before
//! writing). `cargo run --example syntax_packs -- --check` writes nothing and fails when the
//! committed files differ from what it would write.
//!
//! A pack is a language's grammar, the grammars it references (transitively) and Plain Text.
//! References to a grammar the pack leaves out (an embedded language, see [`cut`]) point
//! at Plain Text, as syntect does for an `embed` whose target is missing.
//!
//! The grammars' Unicode classes (`\w`, `\d`, `\s`, `\p{L}`, `\p{N}`…) are rewritten to their
//! ASCII ranges: compiling the Unicode forms is most of the cost of a first highlight (about
//! 75 ms and 5 MB for Rust's grammar, against 16 ms and 0.3 MB). On ASCII text the two match
//! the same; an identifier with non-ASCII letters is coloured in pieces.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use syntect::parsing::syntax_definition::{
    Context, ContextId, ContextReference, MatchOperation, Pattern, SyntaxDefinition,
};
use syntect::parsing::{ParseState, Regex, SyntaxSet, SyntaxSetBuilder};

/// (pack file name, grammar name in syntect's defaults, a sample the self-check parses).
const PACKS: &[(&str, &str, &str)] = &[
    (
        "rust",
        "Rust",
        "fn main() {\n    let n: u32 = 42; // x\n    println!(\"{n}\");\n}\n",
    ),
    (
        "python",
        "Python",
        "def f(x):\n    \"\"\"doc\"\"\"\n    return x + 1  # one\n",
    ),
    (
        "javascript",
        "JavaScript",
        "const f = (x) => x * 2; // double\nclass A extends B {}\n",
    ),
    (
        "go",
        "Go",
        "package main\n\nfunc main() {\n\tfmt.Println(\"hi\", 42)\n}\n",
    ),
    (
        "c",
        "C",
        "#include <stdio.h>\nint main(void) { return printf(\"%d\", 42); }\n",
    ),
    (
        "cpp",
        "C++",
        "template <typename T> class V { public: T x = 0; };\n",
    ),
    (
        "csharp",
        "C#",
        "public class A { public int N { get; } = 42; }\n",
    ),
    (
        "java",
        "Java",
        "public class A {\n  static int f() { return 42; }\n}\n",
    ),
    (
        "shell",
        "Bourne Again Shell (bash)",
        "for f in *.rs; do\n  echo \"$f\" | wc -l # count\ndone\n",
    ),
    ("json", "JSON", "{\"a\": [1, true, null, \"s\"]}\n"),
    (
        "yaml",
        "YAML",
        "name: ci\non: [push]\njobs:\n  test: {runs-on: ubuntu} # x\n",
    ),
    (
        "diff",
        "Diff",
        "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n",
    ),
    (
        "sql",
        "SQL",
        "SELECT id, name FROM users WHERE id = 42; -- one\n",
    ),
    ("ruby", "Ruby", "def f(x)\n  puts \"hi #{x}\" # say\nend\n"),
    (
        "html",
        "HTML",
        "<!DOCTYPE html>\n<p class=\"a\">hi</p>\n<script>let x = 1;</script>\n<style>p { color: red; }</style>\n",
    ),
    ("css", "CSS", "p.a > b { color: #fff; margin: 0 1px; }\n"),
    (
        "xml",
        "XML",
        "<?xml version=\"1.0\"?>\n<a href=\"x\"><!-- c --></a>\n",
    ),
    (
        "makefile",
        "Makefile",
        "all: build\n\t$(CC) -o $@ $< # link\n",
    ),
    (
        "lua",
        "Lua",
        "local function f(x) return x + 1 end -- one\n",
    ),
    (
        "php",
        "PHP",
        "<?php\nfunction f($x) { return $x . \"s\"; }\n",
    ),
    ("perl", "Perl", "my $x = 42; print \"$x\\n\"; # out\n"),
    (
        "haskell",
        "Haskell",
        "main :: IO ()\nmain = putStrLn \"hi\" -- out\n",
    ),
    (
        "scala",
        "Scala",
        "object A { def f(x: Int): Int = x + 1 }\n",
    ),
    (
        "markdown",
        "Markdown",
        "# Title\n\nSome *text* and `code`.\n\n```rust\nlet x = 1;\n```\n",
    ),
    ("latex", "LaTeX", "\\section{A} Some $x^2$ text. % c\n"),
    ("r", "R", "f <- function(x) x + 1 # one\n"),
    ("clojure", "Clojure", "(defn f [x] (+ x 1)) ; one\n"),
    ("erlang", "Erlang", "f(X) -> X + 1. % one\n"),
    ("ocaml", "OCaml", "let f x = x + 1 (* one *)\n"),
    ("batch", "Batch File", "@echo off\nset X=1\nREM c\n"),
    (
        "dot",
        "Graphviz (DOT)",
        "digraph { a -> b [label=\"x\"]; }\n",
    ),
    ("groovy", "Groovy", "def f(x) { return x + 1 } // one\n"),
    (
        "restructuredtext",
        "reStructuredText",
        "Title\n=====\n\n*text* ``code``\n",
    ),
];

/// The grammars a pack leaves out when they are embedded (they fall back to Plain Text):
/// every pack but HTML's and PHP's leaves out the web languages (JavaDoc, Ruby and Perl
/// heredocs, DOT labels embed HTML), and Markdown and LaTeX leave out every other grammar
/// (their fences would otherwise pull in most of them). A fence inside a reply is
/// highlighted by its own pack anyway; this is about code inside code.
fn cut(pack: &str, defs: &[SyntaxDefinition]) -> BTreeSet<usize> {
    const WEB: &[&str] = &[
        "HTML",
        "CSS",
        "JavaScript",
        "Regular Expressions (Javascript)",
    ];
    let keep: &[&str] = match pack {
        "html" | "php" => return BTreeSet::new(),
        "markdown" => &["Markdown"],
        "latex" => &["LaTeX", "TeX"],
        _ => {
            return defs
                .iter()
                .enumerate()
                .filter(|(_, d)| WEB.contains(&d.name.as_str()))
                .map(|(i, _)| i)
                .collect();
        }
    };
    defs.iter()
        .enumerate()
        .filter(|(_, d)| !keep.contains(&d.name.as_str()))
        .map(|(i, _)| i)
        .collect()
}

/// Files of this repository a pack must also parse exactly as the full set does (their
/// ASCII lines: on other text the ASCII classes may differ by design).
const FILES: &[(&str, &str)] = &[
    ("rust", "src/tui/markdown.rs"),
    ("rust", "src/tui/highlight.rs"),
    ("rust", "examples/syntax_packs.rs"),
    ("shell", ".ci/run"),
];

const PLAIN: &str = "Plain Text";

fn main() {
    let root_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed = root_dir.join("assets/syntaxes");
    let check_only = std::env::args().any(|a| a == "--check");
    let out = if check_only {
        std::env::temp_dir().join(format!("syntax_packs-{}", std::process::id()))
    } else {
        committed.clone()
    };
    let full = SyntaxSet::load_defaults_newlines();
    let defs: Vec<SyntaxDefinition> = full.clone().into_builder().syntaxes().to_vec();
    let plain = index_of(&defs, PLAIN);
    let mut index = String::from(
        "# written by `cargo run --example syntax_packs`: pack, grammar, extensions (tab-separated),\n\
         # one line per grammar of syntect's defaults in their order (`-`: no pack, shown plain)\n",
    );
    let mut roots = HashMap::new();
    for (pack, name, _) in PACKS {
        roots.insert(index_of(&defs, name), *pack);
    }
    std::fs::create_dir_all(&out).unwrap();
    for (pack, name, sample) in PACKS {
        let root = index_of(&defs, name);
        let mut cut = cut(pack, &defs);
        cut.remove(&root);
        let members = closure(&defs, root, plain, &cut);
        let set = build(&defs, &members, plain);
        check(&full, &set, name, sample, cut.is_empty());
        for (_, file) in FILES.iter().filter(|(p, _)| p == pack) {
            let text = std::fs::read_to_string(root_dir.join(file)).unwrap();
            let ascii: String = text
                .split_inclusive('\n')
                .filter(|line| line.is_ascii())
                .collect();
            check(&full, &set, name, &ascii, cut.is_empty());
        }
        let path = out.join(format!("{pack}.packdump"));
        syntect::dumps::dump_to_uncompressed_file(&set, &path).unwrap();
        let names: Vec<&str> = members.iter().map(|&i| defs[i].name.as_str()).collect();
        println!(
            "{pack}: {} bytes, {}",
            std::fs::metadata(&path).unwrap().len(),
            names.join(", ")
        );
    }
    for (i, def) in defs.iter().enumerate() {
        let pack = roots.get(&i).copied().unwrap_or("-");
        let mut fields = vec![pack, def.name.as_str()];
        fields.extend(def.file_extensions.iter().map(String::as_str));
        assert!(
            fields.iter().all(|f| !f.contains(['\t', '\n'])),
            "{fields:?}"
        );
        writeln!(index, "{}", fields.join("\t")).unwrap();
    }
    std::fs::write(out.join("index.tsv"), index).unwrap();
    if check_only {
        let stale = stale(&committed, &out);
        std::fs::remove_dir_all(&out).unwrap();
        assert!(stale.is_empty(), "out of date in {committed:?}: {stale:?}");
        println!("{committed:?} is up to date");
    }
}

/// The files that differ between two folders (or are in one only).
fn stale(a: &Path, b: &Path) -> Vec<String> {
    let names = |dir: &Path| -> BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    let all: BTreeSet<String> = names(a).union(&names(b)).cloned().collect();
    all.into_iter()
        .filter(|n| std::fs::read(a.join(n)).ok() != std::fs::read(b.join(n)).ok())
        .collect()
}

fn index_of(defs: &[SyntaxDefinition], name: &str) -> usize {
    defs.iter()
        .position(|d| d.name == name)
        .unwrap_or_else(|| panic!("syntect's defaults have no {name}"))
}

/// A linked reference's (syntax, context) indices: `ContextId` keeps them crate-private, but
/// it is serializable.
fn parts(id: &ContextId) -> (usize, usize) {
    let v = serde_json::to_value(id).unwrap();
    let get = |k: &str| v[k].as_u64().unwrap() as usize;
    (get("syntax_index"), get("context_index"))
}

fn context_id(syntax: usize, context: usize) -> ContextId {
    serde_json::from_value(serde_json::json!({ "syntax_index": syntax, "context_index": context }))
        .unwrap()
}

/// Every linked reference of a context, mutably (includes, push/set targets, prototypes).
fn refs(ctx: &mut Context) -> Vec<&mut ContextId> {
    let mut out = Vec::new();
    if let Some(p) = ctx.prototype.as_mut() {
        out.push(p);
    }
    for pattern in &mut ctx.patterns {
        let list: Vec<&mut ContextReference> = match pattern {
            Pattern::Include(r) => vec![r],
            Pattern::Match(m) => {
                let mut list: Vec<&mut ContextReference> = match &mut m.operation {
                    MatchOperation::Push(v) | MatchOperation::Set(v) => v.iter_mut().collect(),
                    _ => Vec::new(),
                };
                list.extend(m.with_prototype.as_mut());
                list
            }
        };
        for r in list {
            if let ContextReference::Direct { 0: id, .. } = r {
                out.push(id);
            }
        }
    }
    out
}

/// The root, the grammars it reaches (not through a cut one) and Plain Text, in the
/// defaults' order (lookups search it from the end, as in the full set).
fn closure(
    defs: &[SyntaxDefinition],
    root: usize,
    plain: usize,
    cut: &BTreeSet<usize>,
) -> Vec<usize> {
    let mut seen = BTreeSet::from([root, plain]);
    let mut todo = vec![root];
    while let Some(s) = todo.pop() {
        let mut def = defs[s].clone();
        for ctx in def.contexts.values_mut() {
            for id in refs(ctx) {
                let (target, _) = parts(id);
                if !cut.contains(&target) && seen.insert(target) {
                    todo.push(target);
                }
            }
        }
    }
    seen.into_iter().collect()
}

/// A syntax set of `members`, references renumbered, references outside it sent to Plain
/// Text's `main`, regexes made ASCII.
fn build(defs: &[SyntaxDefinition], members: &[usize], plain: usize) -> SyntaxSet {
    let new_index: HashMap<usize, usize> =
        members.iter().enumerate().map(|(n, &o)| (o, n)).collect();
    let plain_main = {
        let mut names: Vec<&String> = defs[plain].contexts.keys().collect();
        names.sort();
        names.iter().position(|n| *n == "main").unwrap()
    };
    let mut builder = SyntaxSetBuilder::new();
    for &m in members {
        let mut def = defs[m].clone();
        for ctx in def.contexts.values_mut() {
            for id in refs(ctx) {
                let (s, c) = parts(id);
                *id = match new_index.get(&s) {
                    Some(&n) => context_id(n, c),
                    None => context_id(new_index[&plain], plain_main),
                };
            }
            for pattern in &mut ctx.patterns {
                if let Pattern::Match(m) = pattern {
                    let ascii = asciify(m.regex.regex_str());
                    // A pattern with back-references to its push is a template: it compiles
                    // only once they are filled in, so it is not tried here.
                    if m.has_captures || Regex::try_compile(&ascii).is_none() {
                        m.regex = Regex::new(ascii);
                    }
                }
            }
        }
        builder.add(def);
    }
    builder.build()
}

/// The pack parses the sample exactly as the full set does (or, when it cuts embedded
/// languages, at least without an error).
fn check(full: &SyntaxSet, pack: &SyntaxSet, name: &str, sample: &str, same: bool) {
    let ops = |set: &SyntaxSet| {
        let syntax = set.find_syntax_by_name(name).unwrap();
        let mut state = ParseState::new(syntax);
        sample
            .split_inclusive('\n')
            .map(|line| format!("{:?}", state.parse_line(line, set).unwrap()))
            .collect::<Vec<_>>()
    };
    let packed = ops(pack);
    if same {
        assert_eq!(
            ops(full),
            packed,
            "{name}: the pack parses its sample differently"
        );
    }
}

/// `\w`, `\d`, `\s`, `\p{L}`, `\p{N}` (and the negations outside a class) as ASCII ranges.
fn asciify(re: &str) -> String {
    let chars: Vec<char> = re.chars().collect();
    let extended = re.starts_with("(?x)");
    let mut out = String::with_capacity(re.len());
    let mut class = 0usize;
    let mut i = 0;
    let range = |out: &mut String, class: usize, negated: bool, r: &str| {
        if class > 0 {
            out.push_str(r);
        } else {
            out.push_str(if negated { "[^" } else { "[" });
            out.push_str(r);
            out.push(']');
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            let plain = match n {
                'w' | 'W' => Some("0-9A-Za-z_"),
                'd' | 'D' => Some("0-9"),
                's' | 'S' => Some("\\t\\n\\x0B\\x0C\\r "),
                _ => None,
            };
            if let Some(r) = plain {
                let negated = n.is_ascii_uppercase();
                if !(negated && class > 0) {
                    range(&mut out, class, negated, r);
                    i += 2;
                    continue;
                }
            }
            if n == 'p' && chars.get(i + 2) == Some(&'{') {
                let end = chars[i..].iter().position(|&x| x == '}').map(|p| p + i);
                let name: String = end
                    .map(|e| chars[i + 3..e].iter().collect())
                    .unwrap_or_default();
                let r = match name.as_str() {
                    "L" | "Alpha" | "Letter" => Some("A-Za-z"),
                    "N" | "Nd" => Some("0-9"),
                    "Lu" => Some("A-Z"),
                    "Ll" => Some("a-z"),
                    _ => None,
                };
                if let (Some(r), Some(e)) = (r, end) {
                    range(&mut out, class, false, r);
                    i = e + 1;
                    continue;
                }
            }
            out.push(c);
            out.push(n);
            i += 2;
            continue;
        }
        if extended && class == 0 && c == '#' {
            // A comment to the end of the line: copied as it is.
            while i < chars.len() && chars[i] != '\n' {
                out.push(chars[i]);
                i += 1;
            }
            continue;
        }
        if c == '[' {
            class += 1;
            out.push(c);
            i += 1;
            if chars.get(i) == Some(&'^') {
                out.push('^');
                i += 1;
            }
            if chars.get(i) == Some(&']') {
                out.push(']');
                i += 1;
            }
            continue;
        }
        if c == ']' && class > 0 {
            class -= 1;
        }
        out.push(c);
        i += 1;
    }
    out
}

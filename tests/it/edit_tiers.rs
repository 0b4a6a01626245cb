//! The `edit` tool's match tiers through the public registry, with the shapes small models get
//! wrong: trailing blanks dropped or added, 2 spaces for 4, spaces for tabs, indentation left
//! out, straight quotes for curly ones, a hyphen for an en dash, a plain space for a
//! non-breaking one. Each tier: the file written, the tier reported (in the text and in
//! `ToolOutput::matched`), and that a match must still be unique there.

use std::time::Duration;

use minicode::chat::ToolStatus;
use minicode::tools::edit::Tier;
use minicode::tools::{Registry, ToolCtx, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// One case: the file before, the model's old and new text, the file expected after.
struct Case {
    shape: &'static str,
    file: &'static str,
    old: &'static str,
    new: &'static str,
    after: &'static str,
}

/// Reads `file` into a fresh workspace, then edits it: prepare and run, as the agent does. A
/// refusal in prepare comes back as `Err`, after checking `run` refuses it too.
async fn edit(file: &str, args: serde_json::Value) -> (Result<ToolOutput, String>, String) {
    let (_dir, ws) = crate::support::workspace();
    std::fs::write(ws.join("f.txt"), file).unwrap();
    let ctx = ToolCtx::new(ws.clone(), Duration::from_secs(60), Vec::new());
    let registry = Registry::builtin();
    let (read, value) = registry.resolve("read", r#"{"path":"f.txt"}"#).unwrap();
    read.run(value, &ctx, CancellationToken::new()).await;
    let (tool, value) = registry.resolve("edit", &args.to_string()).unwrap();
    let result = match tool.prepare(&value, &ctx) {
        Ok(_) => Ok(tool.run(value, &ctx, CancellationToken::new()).await),
        Err(e) => {
            let out = tool.run(value, &ctx, CancellationToken::new()).await;
            assert_eq!(out.status, ToolStatus::Failed, "run must refuse too");
            assert_eq!(out.matched, None);
            Err(e)
        }
    };
    (result, std::fs::read_to_string(ws.join("f.txt")).unwrap())
}

fn args(old: &str, new: &str) -> serde_json::Value {
    json!({ "path": "f.txt", "old_string": old, "new_string": new })
}

async fn check_tier(tier: Tier, cases: &[Case]) {
    for case in cases {
        let (out, after) = edit(case.file, args(case.old, case.new)).await;
        let out = out.unwrap_or_else(|e| panic!("{}: refused: {e}", case.shape));
        assert_eq!(
            out.status,
            ToolStatus::Succeeded,
            "{}: {}",
            case.shape,
            out.content
        );
        assert_eq!(after, case.after, "{}", case.shape);
        assert_eq!(out.matched, Some(tier), "{}", case.shape);
        assert!(
            out.content.contains(tier.describe()),
            "{}: the result names the tier: {}",
            case.shape,
            out.content
        );
    }
}

/// A match found twice at `tier` is refused naming both lines, and the file is unchanged.
async fn check_unique(tier: Tier, file: &str, old: &str, lines: &str) {
    let (out, after) = edit(file, args(old, "changed")).await;
    let e = out.expect_err("an ambiguous edit is refused");
    assert!(e.contains("found 2 matches"), "{tier:?}: {e}");
    assert!(
        e.contains(&format!("starting on lines {lines}")),
        "{tier:?}: {e}"
    );
    if tier != Tier::Exact {
        assert!(e.contains(tier.describe()), "{tier:?}: {e}");
    }
    assert_eq!(after, file, "{tier:?}");
}

#[tokio::test]
async fn an_exact_match_is_the_first_tier_and_must_be_unique() {
    check_tier(
        Tier::Exact,
        &[
            Case {
                shape: "plain",
                file: "fn main() {\n    println!(\"hi\");\n}\n",
                old: "\"hi\"",
                new: "\"hello\"",
                after: "fn main() {\n    println!(\"hello\");\n}\n",
            },
            // A piece the looser tiers would also find stays an exact, in-place edit.
            Case {
                shape: "exact beats a looser match elsewhere",
                file: "a = 1  \nb = 2\na = 1\nb = 2\n",
                old: "a = 1\nb = 2",
                new: "a = 3\nb = 4",
                after: "a = 1  \nb = 2\na = 3\nb = 4\n",
            },
        ],
    )
    .await;
    check_unique(Tier::Exact, "x = 1\ny = 1\n", "= 1", "1, 2").await;
}

#[tokio::test]
async fn trailing_whitespace_is_ignored_per_line_when_nothing_matches_exactly() {
    check_tier(
        Tier::TrailingWhitespace,
        &[
            Case {
                shape: "the model dropped trailing spaces",
                file: "def f():   \n    return 1\n",
                old: "def f():\n    return 1",
                new: "def f():\n    return 2",
                after: "def f():\n    return 2\n",
            },
            Case {
                shape: "the model dropped a trailing tab mid-piece",
                file: "x = [\t\n  1,\n]\n",
                old: "x = [\n  1,\n]",
                new: "x = [\n  2,\n]",
                after: "x = [\n  2,\n]\n",
            },
            Case {
                shape: "the model added trailing spaces",
                file: "a = 1\nb = 2\nc = 3\n",
                old: "a = 1 \nb = 2  \n",
                new: "a = 10\nb = 20\n",
                after: "a = 10\nb = 20\nc = 3\n",
            },
            Case {
                shape: "CRLF file with trailing spaces",
                file: "one  \r\ntwo\r\n",
                old: "one\r\ntwo",
                new: "ONE\r\nTWO",
                after: "ONE\r\nTWO\r\n",
            },
        ],
    )
    .await;
    check_unique(Tier::TrailingWhitespace, "a  \nb\na \nb\n", "a\nb", "1, 3").await;
}

#[tokio::test]
async fn indentation_is_ignored_and_the_replacement_takes_the_files_indentation() {
    check_tier(
        Tier::Indentation,
        &[
            Case {
                shape: "2 spaces for the file's 4",
                file: "class A:\n    def f(self):\n        return 1\n",
                old: "  def f(self):\n    return 1",
                new: "  def f(self):\n    x = 1\n    if x:\n      return x",
                after: "class A:\n    def f(self):\n        x = 1\n        if x:\n            return x\n",
            },
            Case {
                shape: "spaces for the file's tabs",
                file: "func main() {\n\tif x {\n\t\treturn\n\t}\n}\n",
                old: "    if x {\n        return\n    }",
                new: "    if x {\n        log()\n        return\n    }",
                after: "func main() {\n\tif x {\n\t\tlog()\n\t\treturn\n\t}\n}\n",
            },
            Case {
                shape: "tabs for the file's spaces",
                file: "fn f() {\n    if a {\n        b();\n    }\n}\n",
                old: "\tif a {\n\t\tb();\n\t}\n",
                new: "\tif a {\n\t\tb();\n\t\tc();\n\t}\n",
                after: "fn f() {\n    if a {\n        b();\n        c();\n    }\n}\n",
            },
            Case {
                shape: "indentation left out",
                file: "fn main() {\n    let a = 1;\n    let b = 2;\n}\n",
                old: "let a = 1;\nlet b = 2;",
                new: "let a = 10;\n\nlet b = 20;",
                after: "fn main() {\n    let a = 10;\n\n    let b = 20;\n}\n",
            },
        ],
    )
    .await;
    check_unique(
        Tier::Indentation,
        "if a:\n    x()\n    y()\nif b:\n        x()\n        y()\n",
        "  x()\n  y()",
        "2, 5",
    )
    .await;
}

#[tokio::test]
async fn unicode_punctuation_is_normalised_before_words_are_matched() {
    check_tier(
        Tier::Punctuation,
        &[
            Case {
                shape: "straight quotes for curly ones, a hyphen for an en dash",
                file: "print(\u{201C}Hello \u{2013} world\u{201D})\n",
                old: "print(\"Hello - world\")",
                new: "print(\"Hello, world\")",
                after: "print(\"Hello, world\")\n",
            },
            Case {
                shape: "an apostrophe and an em dash in prose",
                file: "It\u{2019}s done \u{2014} mostly.\nNext line\n",
                old: "It's done - mostly.",
                new: "It is done.",
                after: "It is done.\nNext line\n",
            },
            Case {
                shape: "a plain space for a non-breaking one",
                file: "let x\u{a0}= 1;\nlet y = 2;\n",
                old: "let x = 1;",
                new: "let x = 3;",
                after: "let x = 3;\nlet y = 2;\n",
            },
            Case {
                shape: "curly quotes and indentation left out",
                file: "def f():\n    msg = \u{2018}hi\u{2019}\n    done()\n",
                old: "msg = 'hi'\ndone()",
                new: "msg = 'bye'\ndone()",
                after: "def f():\n    msg = 'bye'\n    done()\n",
            },
        ],
    )
    .await;
    check_unique(
        Tier::Punctuation,
        "a = \u{2018}x\u{2019}\nb = 1\na = \u{2019}x\u{2019}\n",
        "a = 'x'",
        "1, 3",
    )
    .await;
}

#[tokio::test]
async fn words_match_last_and_keep_the_files_quoting() {
    check_tier(
        Tier::Words,
        &[
            // What Qwen2.5-Coder-1.5B sent three times in a real run, shown the file each time.
            Case {
                shape: "a JSON key without its quotes",
                file: "{\n  \"name\": \"svc\",\n  \"debug\": false,\n  \"workers\": 4\n}\n",
                old: "debug: false",
                new: "debug: true",
                after: "{\n  \"name\": \"svc\",\n  \"debug\": true,\n  \"workers\": 4\n}\n",
            },
            Case {
                shape: "a colon for an equals sign",
                file: "[server]\nport = 8743\nhost = local\n",
                old: "port: 8743",
                new: "port: 9000",
                after: "[server]\nport = 9000\nhost = local\n",
            },
        ],
    )
    .await;
    // Two places: refused, naming both, nothing changed.
    let file = "a: 1\nb: 2\na: 1\n";
    let (out, after) = edit(file, args("a = 1", "a = 3")).await;
    let e = out.expect_err("an ambiguous edit is refused");
    assert!(e.contains("starting on lines 1, 3"), "{e}");
    assert_eq!(after, file);
    // More than words changed: not guessed.
    let (out, after) = edit(file, args("b = 2", "b == 2")).await;
    assert!(out.is_err());
    assert_eq!(after, file);
}

#[tokio::test]
async fn replace_all_replaces_every_match_of_the_tier_that_found_one() {
    let (out, after) = edit(
        "x = \u{201C}a\u{201D}\ny = \u{201C}a\u{201D}\n",
        json!({ "path": "f.txt", "old_string": "\"a\"", "new_string": "\"b\"", "replace_all": true }),
    )
    .await;
    let out = out.unwrap();
    assert_eq!(out.matched, Some(Tier::Punctuation));
    assert!(out.content.contains("2 replacements"), "{}", out.content);
    assert_eq!(after, "x = \"b\"\ny = \"b\"\n");
}

#[tokio::test]
async fn a_piece_no_tier_finds_is_refused_and_nothing_changes() {
    let file = "def f():\n    return \u{201C}one\u{201D}\n";
    for old in ["return \"two\"", "def g():\n    return 'one'", "   \n  "] {
        let (out, after) = edit(file, args(old, "x")).await;
        let e = out.expect_err(old);
        assert!(e.contains("not found") && e.contains("0 matches"), "{e}");
        assert_eq!(after, file);
    }
}

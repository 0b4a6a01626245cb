//! Highlighting in the full-screen session: fenced code with a known language tag is coloured
//! once its segment is closed (plain while it streams), an unknown language keeps the plain
//! code style, diffs colour their new side, and the palette pass honours `NO_COLOR` and 16
//! colours. Screens are compared with their styles (a run per style change).

use crate::support::screen::{buffer, row_of, styled};
use minicode::chat::ApprovalRequest;
use minicode::protocol::Event;
use minicode::tui::palette::{self, Depth};
use minicode::tui::state::{Msg, State};
use minicode::tui::transcript::{Kind, Reply, Transcript};
use minicode::tui::wrap::line_text;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

fn state(w: u16, h: u16) -> State {
    let mut s = State::new("test-model", 100_000);
    s.update(Msg::Resize(w, h));
    s
}

fn stream(s: &mut State, text: &str) {
    for piece in text.as_bytes().chunks(5) {
        let piece = String::from_utf8_lossy(piece).into_owned();
        s.update(Msg::Agent(Event::TextDelta { text: piece }));
    }
}

fn fgs_in_row(buf: &Buffer, y: u16) -> std::collections::BTreeSet<String> {
    (0..buf.area.width)
        .map(|x| &buf[(x, y)])
        .filter(|c| !c.symbol().trim().is_empty())
        .map(|c| format!("{:?}", c.fg))
        .collect()
}

const REPLY: &str = "Here is the fix:\n\n```rust\nfn main() {\n    // greet\n    let n = 42;\n    println!(\"hi {n}\");\n}\n```\n\nThat is all.\n";

#[test]
fn code_is_plain_while_its_fence_is_open_and_highlighted_once_closed() {
    let mut s = state(60, 18);
    s.update(Msg::Agent(Event::TurnStarted { turn: 1 }));
    stream(
        &mut s,
        "Here is the fix:\n\n```rust\nfn main() {\n    let n = 42;\n",
    );
    let open = buffer(&s);
    let y = row_of(&open, "let n = 42;");
    assert_eq!(
        fgs_in_row(&open, y).len(),
        1,
        "one plain code colour while open"
    );

    let mut s = state(60, 18);
    s.update(Msg::Agent(Event::TurnStarted { turn: 1 }));
    stream(&mut s, REPLY);
    s.update(Msg::Agent(Event::AssistantMessage { text: REPLY.into() }));
    let done = buffer(&s);
    let y = row_of(&done, "let n = 42;");
    assert!(
        fgs_in_row(&done, y).len() >= 3,
        "keyword, name, number coloured"
    );
    insta::assert_snapshot!("highlighted_code_streamed", styled(&done, 0..12));
}

#[test]
fn an_unknown_language_keeps_the_plain_code_style() {
    let mut s = state(60, 12);
    let text = "```nosuchlang\nlet n = 42; // x\n```\n\ndone\n";
    s.update(Msg::Agent(Event::AssistantMessage { text: text.into() }));
    let buf = buffer(&s);
    let y = row_of(&buf, "let n = 42;");
    assert_eq!(
        fgs_in_row(&buf, y),
        ["LightYellow".to_string()].into_iter().collect()
    );
}

#[test]
fn a_write_diff_highlights_the_new_side() {
    let mut s = state(70, 16);
    s.update(Msg::Agent(Event::ToolCallBegan {
        kind: minicode::chat::ToolKind::Other,
        paths: Vec::new(),
        call: "c1".into(),
        tool: "write".into(),
        summary: "src/lib.rs".into(),
        arguments: serde_json::json!({}),
        change: None,
    }));
    s.update(Msg::Agent(Event::ApprovalRequested {
        call: "c1".into(),
        tool: "write".into(),
        request: ApprovalRequest::Diff {
            path: "src/lib.rs".into(),
            diff: "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n fn one() -> u32 {\n-    1\n+    \"two\".len() as u32\n".into(),
        },
        always: None,
    }));
    let buf = buffer(&s);
    let added = row_of(&buf, "\"two\"");
    assert_eq!(buf[(4, added)].fg, Color::Green, "the marker is green");
    assert!(
        fgs_in_row(&buf, added).len() >= 3,
        "the code is highlighted"
    );
    let removed = row_of(&buf, "-    1");
    assert_eq!(
        fgs_in_row(&buf, removed),
        ["Red".to_string()].into_iter().collect()
    );
}

#[test]
fn no_color_draws_no_colour_but_keeps_attributes() {
    let mut s = state(60, 18);
    s.colors = Depth::NoColor;
    s.update(Msg::Agent(Event::AssistantMessage {
        text: format!("# Title\n\n**bold** text\n\n{REPLY}"),
    }));
    let buf = buffer(&s);
    for c in buf.content() {
        assert_eq!((c.fg, c.bg), (Color::Reset, Color::Reset), "{c:?}");
    }
    let title = row_of(&buf, "Title");
    assert!((0..60).any(|x| buf[(x, title)].modifier.contains(Modifier::BOLD)));
    // The status bar had a background: it is reversed instead.
    assert!(buf[(0, 17)].modifier.contains(Modifier::REVERSED));
    insta::assert_snapshot!("no_color_screen", styled(&buf, 0..18));
}

#[test]
fn sixteen_colours_map_every_colour_to_a_named_one() {
    let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
    buf[(0, 0)].fg = Color::Rgb(250, 10, 10);
    buf[(1, 0)].fg = Color::Indexed(34);
    buf[(2, 0)].bg = Color::Rgb(20, 20, 20);
    buf[(3, 0)].fg = Color::Indexed(12);
    let area = buf.area;
    palette::apply(Depth::Ansi16, &mut buf, area);
    assert_eq!(buf[(0, 0)].fg, Color::LightRed);
    assert_eq!(buf[(1, 0)].fg, Color::Green);
    assert_eq!(buf[(2, 0)].bg, Color::Black);
    assert_eq!(buf[(3, 0)].fg, Color::LightBlue);

    let mut buf = Buffer::empty(Rect::new(0, 0, 2, 1));
    buf[(0, 0)].fg = Color::Rgb(255, 135, 0);
    buf[(1, 0)].fg = Color::Rgb(128, 128, 128);
    let area = buf.area;
    palette::apply(Depth::Ansi256, &mut buf, area);
    assert_eq!(buf[(0, 0)].fg, Color::Indexed(208));
    assert!(
        matches!(buf[(1, 0)].fg, Color::Indexed(i) if i >= 232),
        "{:?}",
        buf[(1, 0)].fg
    );

    let mut s = state(60, 18);
    s.colors = Depth::Ansi16;
    s.update(Msg::Agent(Event::AssistantMessage { text: REPLY.into() }));
    let buf = buffer(&s);
    for c in buf.content() {
        for colour in [c.fg, c.bg] {
            assert!(
                !matches!(colour, Color::Rgb(..) | Color::Indexed(16..)),
                "{c:?}"
            );
        }
    }
    insta::assert_snapshot!("sixteen_colour_screen", styled(&buf, 0..18));
}

#[test]
fn depth_comes_from_no_color_colorterm_and_term() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(
        Depth::detect(env(&[("NO_COLOR", "1"), ("COLORTERM", "truecolor")])),
        Depth::NoColor
    );
    assert_eq!(
        Depth::detect(env(&[("NO_COLOR", ""), ("COLORTERM", "truecolor")])),
        Depth::TrueColor
    );
    assert_eq!(
        Depth::detect(env(&[("TERM", "xterm-256color")])),
        Depth::Ansi256
    );
    assert_eq!(Depth::detect(env(&[("TERM", "xterm")])), Depth::Ansi16);
}

/// (pack in assets/syntaxes/, a fence tag that picks it, a sample with something to colour).
const PACK_SAMPLES: &[(&str, &str, &str)] = &[
    ("batch", "bat", "@echo off\nREM a comment\nset X=1"),
    ("c", "c", "int main(void) { return 42; } /* c */"),
    ("clojure", "clj", "(defn f [x] (+ x 1)) ; one"),
    ("cpp", "cpp", "template <typename T> class V { T x = 0; };"),
    ("csharp", "cs", "public class A { int N = 42; }"),
    ("css", "css", "p.a > b { color: #fff; margin: 0 1px; }"),
    ("diff", "diff", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new"),
    ("dot", "dot", "digraph { a -> b [label=\"x\"]; }"),
    ("erlang", "erl", "f(X) -> X + 1. % one"),
    (
        "go",
        "go",
        "package main\n\nfunc main() { fmt.Println(\"hi\") }",
    ),
    ("groovy", "groovy", "def f(x) { return x + 1 } // one"),
    (
        "haskell",
        "hs",
        "main :: IO ()\nmain = putStrLn \"hi\" -- out",
    ),
    (
        "html",
        "html",
        "<p class=\"a\">hi</p>\n<script>let x = 1;</script>",
    ),
    (
        "java",
        "java",
        "public class A { static int f() { return 42; } }",
    ),
    ("javascript", "js", "const f = (x) => x * 2; // double"),
    ("json", "json", "{\"a\": [1, true, null, \"s\"]}"),
    ("latex", "tex", "\\section{A} Some $x^2$ text. % c"),
    ("lua", "lua", "local function f(x) return x + 1 end -- one"),
    (
        "makefile",
        "makefile",
        "all: build\n\t$(CC) -o $@ $< # link",
    ),
    ("markdown", "md", "# Title\n\nSome *text* and `code`."),
    ("ocaml", "ml", "let f x = x + 1 (* one *)"),
    ("perl", "pl", "my $x = 42; print \"$x\\n\"; # out"),
    ("php", "php", "<?php\nfunction f($x) { return $x . \"s\"; }"),
    ("python", "python", "def f(x):\n    return x + 1  # one"),
    ("r", "r", "f <- function(x) x + 1 # one"),
    ("restructuredtext", "rst", "Title\n=====\n\n*text* ``code``"),
    ("ruby", "rb", "def f(x)\n  puts \"hi\" # say\nend"),
    ("rust", "rust", "fn main() { let n: u32 = 42; }"),
    ("scala", "scala", "object A { def f(x: Int): Int = x + 1 }"),
    (
        "shell",
        "bash",
        "for f in *.rs; do echo \"$f\"; done # each",
    ),
    ("sql", "sql", "SELECT id FROM users WHERE id = 42; -- one"),
    (
        "xml",
        "xml",
        "<?xml version=\"1.0\"?>\n<a href=\"x\"><!-- c --></a>",
    ),
    ("yaml", "yaml", "name: ci\non: [push] # x"),
];

fn coloured(lang: &str, code: &str) -> Option<bool> {
    let base = ratatui::style::Style::new();
    let lines = minicode::tui::highlight::code(lang, code, base)?;
    Some(lines.iter().flatten().any(|(style, _)| *style != base))
}

#[test]
fn every_shipped_language_pack_loads_and_colours_its_sample() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/syntaxes");
    let mut shipped: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".packdump").map(str::to_string)
        })
        .collect();
    shipped.sort();
    let sampled: Vec<&str> = PACK_SAMPLES.iter().map(|(pack, _, _)| *pack).collect();
    assert_eq!(shipped, sampled, "a sample for every pack in {dir:?}");
    // The index names exactly the shipped packs.
    let index = std::fs::read_to_string(dir.join("index.tsv")).unwrap();
    let mut indexed: Vec<&str> = index
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').next())
        .filter(|p| *p != "-")
        .collect();
    indexed.sort();
    assert_eq!(indexed, sampled);
    for (pack, tag, sample) in PACK_SAMPLES {
        assert_eq!(
            coloured(tag, sample),
            Some(true),
            "{pack} (tag {tag}) highlights its sample"
        );
    }
}

#[test]
fn a_tag_without_a_pack_stays_plain() {
    assert_eq!(coloured("nosuchlang", "let n = 42; // x"), None);
    // syntect knows HTML (ASP), but no pack carries it.
    assert_eq!(coloured("asp", "<% x = 1 %>"), None);
    // Markdown's pack leaves out the languages it embeds: the fence body is plain, the
    // Markdown around it is not.
    assert_eq!(coloured("md", "# T\n\n```rust\nfn f() {}\n```"), Some(true));
}

/// Distinct foreground colours on line `line` of entry 0.
fn line_fgs(t: &Transcript, line: usize, width: usize, drawn: bool) -> usize {
    let fgs = |l: &ratatui::text::Line<'static>| {
        l.spans
            .iter()
            .filter(|s| !s.content.trim().is_empty())
            .map(|s| format!("{:?}", s.style.fg))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    if drawn {
        t.with_drawn_line(0, line, width, fgs).unwrap()
    } else {
        t.with_line(0, line, width, fgs).unwrap()
    }
}

/// `REPLY` followed by `paragraphs` filler paragraphs, as one finished reply at width 60:
/// the transcript, its height, and the line holding `let n = 42;`.
fn reply_then_filler(paragraphs: usize) -> (Transcript, usize, usize) {
    let text = format!("{REPLY}\n{}", "A filler paragraph.\n\n".repeat(paragraphs));
    let mut t = Transcript::default();
    t.push(Kind::Assistant(Reply::new(&text)));
    let height = t.height(0, 60);
    let line = (0..height)
        .find(|&i| {
            t.with_line(0, i, 60, line_text)
                .unwrap()
                .contains("let n = 42;")
        })
        .unwrap();
    (t, height, line)
}

#[test]
fn a_closed_segment_is_highlighted_when_first_drawn_not_when_it_closes() {
    let (t, height, line) = reply_then_filler(60);
    let width = 60;

    // Laid out (the code scrolled past), never drawn: one plain code colour.
    assert_eq!(line_fgs(&t, line, width, false), 1);
    // Drawn: keyword, name and number coloured, and nothing moved.
    assert!(line_fgs(&t, line, width, true) >= 3);
    assert_eq!(t.height(0, width), height);
    assert!(
        t.with_line(0, line, width, line_text)
            .unwrap()
            .contains("let n = 42;")
    );
    // Highlighted once: later reads see the coloured line.
    assert!(line_fgs(&t, line, width, false) >= 3);
}

#[test]
fn a_highlighted_segment_stays_highlighted_after_its_lines_were_dropped_and_read_again() {
    let (t, height, line) = reply_then_filler(3_000);
    let width = 60;
    assert!(line_fgs(&t, line, width, true) >= 3);
    // Read the rest of the reply, so the code's lines are dropped from what is held.
    for i in line + 1..height {
        t.with_line(0, i, width, line_text).unwrap();
    }
    assert!(line_fgs(&t, line, width, false) >= 3);
}

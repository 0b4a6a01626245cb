//! The pure pieces under the view: Markdown rendering and wrapping, the streaming splitter, the
//! transcript's bounded cache, and the draft editor.

use minicode::sanitize::sanitize;
use minicode::tui::input::Draft;
use minicode::tui::markdown;
use minicode::tui::segment::{PARAGRAPH_CHUNK, Splitter, TABLE_CHUNK};
use minicode::tui::transcript::{Kind, Reply, Scroll, Transcript};
use minicode::tui::wrap::{self, line_text};

fn texts(md: &str, width: usize) -> Vec<String> {
    markdown::render(md, width).iter().map(line_text).collect()
}

#[test]
fn markdown_lines_never_exceed_the_width() {
    let md = "# A heading that is quite long indeed\n\nA paragraph with `code`, **bold**, and a [link](https://example.com/a/very/long/path) that wraps.\n\n> a quote that also needs to wrap around\n\n- item one with words\n  - nested item with more words\n\n| column one | column two |\n|---|---|\n| a long cell value | b |\n\n```\nlet x = \"a code line that is longer than the width\";\n```\n\n---\n";
    for width in [12, 20, 33, 80] {
        for line in texts(md, width) {
            assert!(wrap::width(&line) <= width, "{width}: {line:?}");
        }
    }
}

#[test]
fn ordered_lists_keep_their_numbers_and_nest() {
    let lines = texts("3. three\n4. four\n   1. inner\n", 40);
    assert_eq!(lines, vec!["3. three", "4. four", "   1. inner"]);
}

#[test]
fn unclosed_fence_renders_as_code_while_streaming() {
    let lines = texts("text\n\n```rust\nfn main() {", 40);
    assert!(lines.iter().any(|l| l.contains("fn main() {")), "{lines:?}");
}

#[test]
fn tables_align_columns() {
    let lines = texts("| a | bb |\n|---|---:|\n| ccc | d |\n", 40);
    assert_eq!(lines, vec!["a   │ bb", "────┼───", "ccc │  d"]);
}

#[test]
fn sanitize_neutralises_escape_sequences() {
    assert_eq!(
        sanitize("a\x1b[31mb\x07c\td\r\n"),
        "a␛[31mb\u{fffd}c    d\n"
    );
    assert_eq!(sanitize("plain ünïcode 中文"), "plain ünïcode 中文");
}

#[test]
fn wrap_breaks_between_cjk_characters_and_keeps_combining_marks() {
    let runs = [wrap::Run::new(
        "中文字符测试 e\u{301}e\u{301}",
        Default::default(),
    )];
    let lines: Vec<String> = wrap::wrap(&runs, 6, &[], &[])
        .iter()
        .map(line_text)
        .collect();
    assert_eq!(lines, vec!["中文字", "符测试", "e\u{301}e\u{301}"]);
}

/// Lines of entry 0 of a transcript holding `reply`.
fn reply_lines(reply: Reply, width: usize) -> Vec<String> {
    let mut t = Transcript::default();
    t.push(Kind::Assistant(reply));
    (0..t.height(0, width))
        .map(|i| t.with_line(0, i, width, line_text).unwrap())
        .collect()
}

/// `n` parts of a heading, a paragraph and a list.
fn parts(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!("## Part {i}\n\nSome text for part {i} with **bold** words.\n\n- a\n- b\n\n")
        })
        .collect()
}

#[test]
fn streamed_reply_lays_out_like_the_whole_text() {
    let mut md = parts(30);
    md.push_str("```\n");
    for i in 0..150 {
        md.push_str(&format!("code line {i}\n"));
    }
    md.push_str("```\n\nThe end.\n");
    let mut streamed = Reply::default();
    let mut t = Transcript::default();
    t.push(Kind::Assistant(Reply::default()));
    for piece in md.as_bytes().chunks(7) {
        let piece = std::str::from_utf8(piece).unwrap();
        streamed.push(piece);
        t.edit(0, |k| {
            if let Kind::Assistant(r) = k {
                r.push(piece);
            }
        });
        // Lay out as a frame would, so the incremental path is what gets tested.
        t.height(0, 50);
    }
    let incremental: Vec<String> = (0..t.height(0, 50))
        .map(|i| t.with_line(0, i, 50, line_text).unwrap())
        .collect();
    assert_eq!(incremental, reply_lines(Reply::new(&md), 50));
    assert_eq!(reply_lines(streamed, 50), incremental);
}

#[test]
fn transcript_cache_stays_bounded_while_paging_through_thousands_of_entries() {
    let mut t = Transcript::default();
    for i in 0..5_000 {
        t.push(Kind::Assistant(Reply::new(&format!(
            "entry {i}\n\nline a\n\nline b\n\nline c"
        ))));
    }
    let (w, h) = (80, 40);
    let mut top = t.tail_top(w, h);
    for _ in 0..1_000 {
        top = t.up(top, h, w);
        let rows = t.window(
            Scroll::Anchor {
                entry: top.0,
                line: top.1,
            },
            w,
            h,
        );
        assert_eq!(rows.len(), h);
    }
    assert_eq!(top, (0, 0));
    assert!(t.cached_lines() <= 21_000, "{}", t.cached_lines());
}

#[test]
fn a_long_reply_holds_a_bounded_number_of_rendered_lines_and_reads_back_the_same() {
    let md = parts(1_500);
    let width = 60;
    let whole: Vec<String> = markdown::render(&md, width).iter().map(line_text).collect();
    let mut t = Transcript::default();
    t.push(Kind::Assistant(Reply::new(&md)));
    let height = t.height(0, width);
    assert!(height > 10_000, "{height}");
    let read = |i: usize| t.with_line(0, i, width, line_text).unwrap();
    // The tail window, then every line from the top, then backwards: the dropped lines are
    // rendered again, identical, and what is held stays bounded however far one reads.
    let _ = t.window(Scroll::Tail, width, 40);
    assert!(t.cached_lines() < 2_000, "{}", t.cached_lines());
    let forwards: Vec<String> = (0..height).map(read).collect();
    assert!(t.cached_lines() < 2_000, "{}", t.cached_lines());
    let backwards: Vec<String> = (0..height).rev().map(read).collect();
    assert!(t.cached_lines() < 2_000, "{}", t.cached_lines());
    assert_eq!(forwards.len(), whole.len() + 1);
    assert_eq!(forwards[..whole.len()], whole[..]);
    assert!(backwards.into_iter().rev().eq(forwards));
    assert_eq!(t.with_line(0, height, width, line_text), None);
}

#[test]
fn draft_edits_across_lines_and_words() {
    let mut d = Draft::default();
    d.insert_str("hello brave world");
    d.word_left();
    d.delete_word();
    assert_eq!(d.text(), "hello world");
    d.end();
    d.newline();
    d.insert_str("second");
    d.home();
    d.backspace();
    assert_eq!(d.text(), "hello worldsecond");
    d.kill_to_end();
    assert_eq!(d.text(), "hello world");
    d.word_left();
    d.kill_to_start();
    assert_eq!(d.text(), "world");
}

#[test]
fn paste_keeps_newlines_as_one_edit_and_submits_nothing() {
    let mut d = Draft::default();
    d.insert_str("line one\r\nline two\nline three");
    assert_eq!(d.lines().len(), 3);
    assert_eq!(d.text(), "line one\nline two\nline three");
}

#[test]
fn up_and_down_recall_prompts_and_restore_the_draft() {
    let mut d = Draft::default();
    d.insert_str("first");
    d.take();
    d.insert_str("second");
    d.take();
    d.insert_str("unsent");
    assert!(d.up());
    assert_eq!(d.text(), "second");
    assert!(d.up());
    assert_eq!(d.text(), "first");
    assert!(!d.up(), "nothing older");
    assert!(d.down());
    assert!(d.down());
    assert_eq!(d.text(), "unsent");
}

#[test]
fn draft_layout_places_the_cursor_by_display_width() {
    let mut d = Draft::default();
    d.insert_str("中文ab");
    let (rows, cursor) = d.layout(4);
    assert_eq!(rows, vec!["中文", "ab"]);
    assert_eq!(cursor, (1, 2));
}

fn cut_offsets(md: &str) -> Vec<usize> {
    let mut s = Splitter::default();
    s.feed(md);
    s.cuts().iter().map(|c| c.end).collect()
}

/// Feeds `md` in small pieces, as a stream would, and returns the transcript's lines.
fn streamed_lines(md: &str, width: usize) -> Vec<String> {
    let mut t = Transcript::default();
    t.push(Kind::Assistant(Reply::default()));
    for piece in md.as_bytes().chunks(5) {
        let piece = std::str::from_utf8(piece).unwrap();
        t.edit(0, |k| {
            if let Kind::Assistant(r) = k {
                r.push(piece);
            }
        });
        t.height(0, width);
    }
    (0..t.height(0, width))
        .map(|i| t.with_line(0, i, width, line_text).unwrap())
        .collect()
}

#[test]
fn long_lists_are_cut_at_top_level_items_and_render_like_one_list() {
    let mut md = String::from("Intro:\n");
    for i in 1..=300 {
        md.push_str(&format!("- item {i} with **bold**\n"));
        if i % 7 == 0 {
            md.push_str("  - nested\n    continued\n");
        }
    }
    let cuts = cut_offsets(&md);
    assert_eq!(cuts.len(), 299, "one cut before every item but the first");
    assert!(cuts.iter().all(|&c| md[c..].starts_with("- item")));
    let mut whole = texts(&md, 50);
    whole.push(String::new());
    assert_eq!(streamed_lines(&md, 50), whole);

    let ordered: String = (1..=120).map(|i| format!("{i}. step {i}\n")).collect();
    let mut whole = texts(&ordered, 40);
    whole.push(String::new());
    let lines = streamed_lines(&ordered, 40);
    assert_eq!(lines, whole, "ordered items keep their numbers");
    assert!(lines[119].starts_with("120. step 120"), "{}", lines[119]);
}

#[test]
fn list_like_lines_that_are_not_items_of_the_same_list_are_not_cut() {
    // A changed bullet starts a new list; a number other than 1 cannot interrupt a
    // paragraph; a thematic break is no item.
    for md in [
        "- a\n* b\n",
        "some text\n2. not a list\n3. still text\n",
        "- a\n- - -\n",
        "- a\nlazy continuation\n- b\n",
    ] {
        assert!(cut_offsets(md).is_empty(), "{md:?}: {:?}", cut_offsets(md));
    }
}

#[test]
fn long_tables_are_cut_into_tables_that_repeat_the_header() {
    let mut md = String::from("## Data\n| n | name |\n|---|---:|\n");
    let rows = TABLE_CHUNK * 3 + 5;
    for i in 0..rows {
        md.push_str(&format!("| {i} | name {i} |\n"));
    }
    let mut s = Splitter::default();
    s.feed(&md);
    let cuts = s.cuts();
    assert_eq!(cuts.len(), 3, "{cuts:?}");
    for c in cuts {
        assert_eq!(c.reopen.as_deref(), Some("| n | name |\n|---|---:|"));
        assert!(!c.separate);
    }
    let lines = streamed_lines(&md, 60);
    let headers = lines.iter().filter(|l| l.starts_with("n ")).count();
    assert_eq!(headers, 4, "the header opens every segment: {lines:#?}");
    let body_rows = lines.iter().filter(|l| l.contains("name ")).count();
    assert_eq!(body_rows, rows);
    assert!(lines.iter().all(|l| wrap::width(l) <= 60));
}

#[test]
fn long_paragraphs_are_cut_at_line_ends() {
    let md: String = (0..PARAGRAPH_CHUNK * 4)
        .map(|i| format!("line {i} of one long paragraph\n"))
        .collect();
    let cuts = cut_offsets(&md);
    assert_eq!(cuts.len(), 3, "{cuts:?}");
    let lines = streamed_lines(&md, 80);
    let text = lines.join(" ");
    for i in 0..PARAGRAPH_CHUNK * 4 {
        assert!(text.contains(&format!("line {i} of")), "line {i} missing");
    }
    assert!(
        !lines[..lines.len() - 1].iter().any(String::is_empty),
        "no blank lines inside"
    );
    // Lines that could change the meaning of the next segment are never cut before.
    let tricky: String = (0..PARAGRAPH_CHUNK * 2)
        .map(|i| format!("{i} starts with a digit\n"))
        .collect();
    assert!(cut_offsets(&tricky).is_empty());
}

#[test]
fn a_long_line_without_newlines_is_scanned_once() {
    let mut s = Splitter::default();
    let mut text = String::new();
    for _ in 0..50_000 {
        text.push_str("word ");
        s.feed(&text);
    }
    text.push('\n');
    s.feed(&text);
    assert!(s.cuts().is_empty());
    // 50,000 feeds of a growing line: rescanning it from its start each time would search
    // some 6 GB; searching each byte once is the text's length.
    assert_eq!(s.scanned_bytes(), text.len());
}

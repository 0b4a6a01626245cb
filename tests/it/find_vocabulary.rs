//! Black-box tests of how `find` meets code written in another vocabulary than the question:
//! glued identifiers (`memcmp`), another form of a word (`invert` for "inversion"), a name and
//! its number written apart (`P-256` for `p256`), initials (`fe` for "field element"), common
//! abbreviations (`ctx`), and definitions the scanner must see through (an array type in a Rust
//! signature, a GNU-style C head), a doubled consonant before -ing/-ed, synonyms, and Python
//! constructors. Each question also has a decoy that shares its plain words.

use crate::support::{put, tool_workspace};
use minicode::chat::ToolStatus;
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn find(ctx: &ToolCtx, query: &str) -> String {
    let registry = Registry::builtin();
    let args = json!({"query": query, "limit": 3});
    let (tool, value) = registry.resolve("find", &args.to_string()).unwrap();
    let out = tool.run(value, ctx, CancellationToken::new()).await;
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    out.content
}

/// The `path:start-end symbol` of the first result.
fn first(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("1. "))
        .and_then(|l| l.strip_prefix("1. "))
        .and_then(|l| l.split(" (").next())
        .unwrap_or_else(|| panic!("no result in\n{out}"))
}

fn project(ws: &std::path::Path) {
    put(
        ws,
        "crypto/mem.c",
        "#include <stddef.h>\n\n\
         int util_memcmp(const void *a, const void *b, size_t len) {\n    return diff(a, b, len);\n}\n\n\
         void copy_buffers(void *a, const void *b, size_t len) {\n    copy(a, b, len);\n}\n",
    );
    put(
        ws,
        "crypto/field.c",
        "void fe_invert(fe *out, const fe *z) {\n    pow(out, z);\n}\n\n\
         void fe_mul(fe *out, const fe *a, const fe *b) {\n    mul(out, a, b);\n}\n\n\
         void record_field(int x) {\n    use(x);\n}\n",
    );
    put(
        ws,
        "src/curve.rs",
        "pub fn p256_point_double(p: &Point) -> Point {\n    p.twice()\n}\n\n\
         pub fn p384_point_double(p: &Point) -> Point {\n    p.twice()\n}\n",
    );
    put(
        ws,
        "src/packet.rs",
        "pub struct Opener;\n\nimpl Opener {\n    \
         /// Returns the decrypted packet length.\n    \
         pub fn decrypt_packet_length(\n        &self,\n        sealed: [u8; 4],\n    ) -> [u8; 4] {\n        \
         unseal(sealed)\n    }\n}\n\n\
         pub const PACKET_LENGTH: usize = 4;\n",
    );
    put(
        ws,
        "lib/parse.c",
        "static int\nparse_option_list(struct opts *o, const char *text)\n{\n    return scan(o, text);\n}\n\n\
         OPTION_TABLE(list, parse);\n",
    );
    put(
        ws,
        "src/state.rs",
        "pub fn new_ctx(config: &Config) -> Ctx {\n    Ctx::from(config)\n}\n\n\
         pub fn new_state() -> State {\n    State::default()\n}\n",
    );
}

#[tokio::test]
async fn find_meets_glued_abbreviated_and_derived_names() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let cases = [
        (
            "compare two memory buffers in constant time",
            "crypto/mem.c:3-5 util_memcmp",
        ),
        ("field element inversion", "crypto/field.c:1-3 fe_invert"),
        ("P-256 point doubling", "src/curve.rs:1-3 p256_point_double"),
        ("create a new context", "src/state.rs:1-3 new_ctx"),
    ];
    for (query, want) in cases {
        let out = find(&ctx, query).await;
        assert_eq!(first(&out), want, "query {query:?}:\n{out}");
    }
}

#[tokio::test]
async fn find_sees_definitions_with_array_types_and_gnu_style_c_heads() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let out = find(&ctx, "decrypt the packet length").await;
    assert_eq!(
        first(&out),
        "src/packet.rs:4-10 decrypt_packet_length",
        "a `;` inside `[u8; 4]` does not end the signature:\n{out}"
    );
    assert!(out.contains("function in Opener"), "{out}");
    let out = find(&ctx, "parse a list of options").await;
    assert_eq!(
        first(&out),
        "lib/parse.c:1-5 parse_option_list",
        "the chunk starts at the type line:\n{out}"
    );
    // A top-level macro invocation is no definition.
    let listed = find(&ctx, "option table").await;
    assert!(!listed.contains("OPTION_TABLE ("), "{listed}");
}

#[tokio::test]
async fn a_question_in_words_no_code_relates_to_finds_nothing() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    let out = find(&ctx, "zebra giraffe savanna").await;
    assert!(
        !out.contains("1. "),
        "unrelated words match nothing:\n{out}"
    );
}

#[tokio::test]
async fn questions_in_any_script_are_answered_without_a_crash() {
    let (_d, ws, ctx) = tool_workspace();
    project(&ws);
    put(
        &ws,
        "src/i18n.rs",
        "/// Übersetzt die Einstellungen: é, ü, 配置.\npub fn übersetze_einstellungen() {}\n",
    );
    for query in [
        "éàü déjà vu",
        "ééé compare",
        "配置文件解析",
        "übersetze die einstellungen",
        "P-2é6 ASN.é SHA-５１２ 32-bit 🙂-8",
    ] {
        find(&ctx, query).await;
    }
    let out = find(&ctx, "übersetze die Einstellungen").await;
    assert_eq!(
        first(&out),
        "src/i18n.rs:1-2 übersetze_einstellungen",
        "{out}"
    );
}

#[tokio::test]
async fn c_heads_in_gnu_style_and_struct_returns_are_functions_and_macros_are_not() {
    let (_d, ws, ctx) = tool_workspace();
    put(
        &ws,
        "lib/str.c",
        "static char *\nconcat (char *s1, char *s2)\n{\n    return join(s1, s2);\n}\n\n\
         struct widget *make_widget(int size) {\n    return alloc(size);\n}\n\n\
         struct gadget *\nbuild_gadget(int size)\n{\n    return alloc(size);\n}\n\n\
         G_BEGIN_DECLS\nG_DECLARE_FINAL_TYPE(Foo, foo, FOO, OBJ, GObject)\n\n\
         struct holder {\n    int a;\n};\n",
    );
    let out = find(&ctx, "concat strings").await;
    assert_eq!(first(&out), "lib/str.c:1-5 concat", "{out}");
    let out = find(&ctx, "make a widget").await;
    assert_eq!(first(&out), "lib/str.c:7-9 make_widget", "{out}");
    let out = find(&ctx, "build a gadget").await;
    assert_eq!(first(&out), "lib/str.c:11-15 build_gadget", "{out}");
    let all = find(&ctx, "widget gadget holder declare final type foo").await;
    assert!(!all.contains("G_DECLARE_FINAL_TYPE (function"), "{all}");
    assert!(!all.contains(" widget (type"), "{all}");
    let out = find(&ctx, "holder").await;
    assert!(out.contains("holder (type)"), "{out}");
}

#[tokio::test]
async fn odd_characters_and_stray_brackets_do_not_break_the_scanner() {
    let (_d, ws, ctx) = tool_workspace();
    // A no-break space before a name (C and Java), a regex with a lone `(` before a class, and
    // a double quote as a char literal.
    put(
        &ws,
        "c/nbsp.c",
        "int\u{a0}count_items(void) {\n    return 0;\n}\n",
    );
    put(
        &ws,
        "j/Nbsp.java",
        "class Nbsp {\n    String\u{a0}labelText() {\n        return \"\";\n    }\n}\n",
    );
    put(
        &ws,
        "web/split.js",
        "const splitter = (s) => s.split(/\\(/);\n\nclass Tokenizer {\n  tokens(text) {\n    return splitter(text);\n  }\n}\n",
    );
    put(
        &ws,
        "src/quote.rs",
        "const QUOTE: char = '\"';\n\npub fn strip_quotes(s: &str) -> &str {\n    s.trim_matches(QUOTE)\n}\n",
    );
    let out = find(&ctx, "count items").await;
    assert!(out.contains("c/nbsp.c"), "{out}");
    let out = find(&ctx, "label text").await;
    assert!(out.contains("j/Nbsp.java"), "{out}");
    let out = find(&ctx, "tokenizer tokens").await;
    assert!(
        out.contains("web/split.js:3-7 Tokenizer")
            || out.contains("tokens (function in Tokenizer)"),
        "{out}"
    );
    let out = find(&ctx, "strip quotes").await;
    assert_eq!(first(&out), "src/quote.rs:3-5 strip_quotes", "{out}");
}

#[tokio::test]
async fn a_question_saying_logging_meets_code_saying_log_as_fully_as_logging() {
    let (_d, ws, ctx) = tool_workspace();
    // Equal evidence once "logging" meets `log` fully: the tie goes to the first path.
    put(&ws, "a/events.rs", "pub fn log_events() {}\n");
    put(&ws, "b/events.rs", "pub fn logging_events() {}\n");
    let out = find(&ctx, "logging events").await;
    assert_eq!(first(&out), "a/events.rs:1-1 log_events", "{out}");
}

#[tokio::test]
async fn a_question_saying_serialize_meets_code_that_pickles() {
    let (_d, ws, ctx) = tool_workspace();
    put(&ws, "a/log.py", "def record_count(self):\n    return 1\n");
    put(
        &ws,
        "b/log.py",
        "def pickle_record(self):\n    return dumps(self)\n",
    );
    let out = find(&ctx, "serialize a record").await;
    assert_eq!(first(&out), "b/log.py:1-2 pickle_record", "{out}");
}

#[tokio::test]
async fn find_ranks_a_method_above_the_constructor_whose_docstring_shares_more_words() {
    let (_d, ws, ctx) = tool_workspace();
    put(
        &ws,
        "page.py",
        "class Page:\n\
         \x20   def __init__(self, head, main):\n\
         \x20       \"\"\"Keeps the title and body for the markup.\"\"\"\n\
         \x20       self.head = head\n\
         \n\
         \x20   def to_html(self):\n\
         \x20       \"\"\"Renders the markup.\"\"\"\n\
         \x20       return wrap(self.head)\n",
    );
    let out = find(&ctx, "render the title and body as markup").await;
    assert_eq!(first(&out), "page.py:6-8 to_html", "{out}");
}

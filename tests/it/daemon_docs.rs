//! Keeps docs/headless.md in step with the daemon: every method the connection dispatches,
//! every op a client can send, and every event a subscriber can receive (the core's protocol
//! events and the daemon's run markers) is named there with an example, read from the source
//! so a new one cannot be added without its documentation.

use std::path::Path;

fn read(relative: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)).unwrap()
}

/// `FooBar` → `foo_bar`, as serde's `rename_all = "snake_case"` spells a variant.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The variant names of `enum <name>` in `source` (its lines indented by four spaces that
/// start with an uppercase identifier).
fn variants(source: &str, name: &str) -> Vec<String> {
    let start = source
        .find(&format!("enum {name} {{"))
        .unwrap_or_else(|| panic!("enum {name} not found"));
    let body = &source[start..];
    let end = body.find("\n}").unwrap();
    body[..end]
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("    ")?;
            if rest.starts_with(' ') || !rest.starts_with(|c: char| c.is_ascii_uppercase()) {
                return None;
            }
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            Some(snake(&ident))
        })
        .collect()
}

/// The daemon's own methods the connection answers: its `"handshake"` and `"a.b" =>` arms
/// (other arms match values such as decisions), and `op`.
fn methods(source: &str) -> Vec<String> {
    let mut out = vec!["op".to_string()];
    for line in source.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('"')
            && let Some((name, tail)) = rest.split_once('"')
            && tail.trim_start().starts_with("=>")
            && (name.contains('.') || name == "handshake")
        {
            out.push(name.to_string());
        }
    }
    out
}

#[test]
fn headless_docs_show_every_daemon_method_with_an_example() {
    let docs = read("docs/headless.md");
    let methods = methods(&read("src/daemon/connection.rs"));
    assert!(methods.len() >= 6, "parsed too few methods: {methods:?}");
    let missing: Vec<_> = methods
        .iter()
        .filter(|m| {
            let named = docs.contains(&format!("`{m}")) || docs.contains(&format!("| `{m}` |"));
            let example = docs.contains(&format!("\"method\":\"{m}\""));
            !(named && example)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/headless.md lacks these methods or their examples: {missing:?}"
    );
}

/// The wire carries the protocol's `Op` itself: every op a client can send is shown as JSON.
#[test]
fn headless_docs_show_every_op_a_client_can_send() {
    let docs = read("docs/headless.md");
    let ops = variants(&read("src/protocol.rs"), "Op");
    assert!(ops.len() >= 20, "parsed too few ops: {ops:?}");
    let missing: Vec<_> = ops
        .iter()
        .filter(|op| {
            let example = docs.contains(&format!("{{\"type\":\"{op}\""));
            // The refused ones are named in the paragraph that says why.
            let refused = docs.contains(&format!("`{op}`"));
            !(example || refused)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/headless.md lacks these ops: {missing:?}"
    );
}

#[test]
fn headless_docs_show_every_event_a_subscriber_can_receive() {
    let docs = read("docs/headless.md");
    let mut events = variants(&read("src/protocol.rs"), "Event");
    assert!(events.len() >= 25, "parsed too few events: {events:?}");
    events.extend(variants(&read("src/protocol/run.rs"), "RunMarker"));
    // Events that answer ops the daemon refuses are named, in the paragraph that says they do
    // not occur, without an example.
    let before = docs
        .split("does not occur")
        .next()
        .filter(|b| b.len() < docs.len())
        .unwrap_or("");
    let absent = before.rsplit("\n\n").next().unwrap_or("");
    let missing: Vec<_> = events
        .iter()
        .filter(|e| {
            let example = docs.contains(&format!("{{\"type\":\"{e}\""));
            let said_absent = absent.contains(&format!("`{e}`"));
            !(example || said_absent)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/headless.md lacks an example for these events: {missing:?}"
    );
}

//! Black-box tests of how the `find` index is built and kept: a large tree indexed in the
//! background while queries answer from what is indexed so far, statistics kept per change
//! that rank exactly like a fresh build, and definitions ranked above their declarations and
//! their tests.

use std::time::{Duration, Instant};

use crate::support::{put, tool_workspace};
use minicode::chat::ToolStatus;
use minicode::tools::{Registry, ToolCtx};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn find(registry: &Registry, ctx: &ToolCtx, query: &str) -> String {
    let (tool, value) = registry
        .resolve("find", &json!({"query": query}).to_string())
        .unwrap();
    let out = tool.run(value, ctx, CancellationToken::new()).await;
    assert_eq!(out.status, ToolStatus::Succeeded, "{}", out.content);
    out.content
}

fn first(out: &str) -> &str {
    out.lines().next().unwrap_or("")
}

#[tokio::test]
async fn find_builds_a_large_index_in_the_background_and_answers_meanwhile() {
    let (_d, ws, ctx) = tool_workspace();
    for i in 0..600 {
        put(
            &ws,
            &format!("src/m{}/f{i}.rs", i / 50),
            &format!("/// Handles parcel {i}.\npub fn deliver_parcel_{i}() {{}}\n"),
        );
    }
    // Last in path order, so read by the background build.
    put(&ws, "src/zz/walrus.rs", "pub fn unmistakable_walrus() {}\n");
    let registry = Registry::builtin();
    let out = find(&registry, &ctx, "deliver parcel").await;
    assert!(
        out.contains("[index incomplete: building in the background, ")
            && out.contains(" of 601 files read; these results come from what is indexed so far]"),
        "{out}"
    );
    assert!(
        out.starts_with("1. src/"),
        "answers from the part indexed: {out}"
    );
    // The build goes on without further calls; later queries see it complete.
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let out = find(&registry, &ctx, "unmistakable walrus").await;
        if !out.contains("[index incomplete") {
            break out;
        }
        assert!(Instant::now() < deadline, "the build never finished: {out}");
        tokio::task::yield_now().await;
    };
    assert!(done.contains("[index: 601 files, 601 chunks]"), "{done}");
    assert!(first(&done).contains("unmistakable_walrus"), "{done}");
    // The finished index was saved: a new session starts from it, with nothing to read.
    let out = find(&Registry::builtin(), &ctx, "unmistakable walrus").await;
    assert!(
        !out.contains("incomplete") && first(&out).contains("unmistakable_walrus"),
        "{out}"
    );
}

/// Queries until the index reports no background build (a loaded machine may hand reading
/// over to the background at any size).
async fn complete(registry: &Registry, ctx: &ToolCtx) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = find(registry, ctx, "settle the invoice balance").await;
        if !out.contains("[index incomplete") {
            return;
        }
        assert!(Instant::now() < deadline, "the build never finished: {out}");
        tokio::task::yield_now().await;
    }
}

/// Everything after the result heads' scores: the whole ranked answer, scores included.
fn ranked(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn an_index_updated_by_edits_deletes_and_renames_ranks_exactly_like_a_fresh_one() {
    let (_d, ws, ctx) = tool_workspace();
    let words = ["ledger", "invoice", "tenant", "coupon", "parcel", "quota"];
    for (i, w) in words.iter().enumerate() {
        put(
            &ws,
            &format!("src/{w}.rs"),
            &format!("/// Settles the {w} balance.\npub fn settle_{w}_{i}() {{}}\n"),
        );
    }
    let registry = Registry::builtin();
    find(&registry, &ctx, "settle the balance").await;
    put(
        &ws,
        "src/ledger.rs",
        "/// Settles the ledger twice, balance and audit.\npub fn settle_ledger_audit() {}\n",
    );
    std::fs::remove_file(ws.join("src/coupon.rs")).unwrap();
    std::fs::rename(ws.join("src/quota.rs"), ws.join("src/limits.rs")).unwrap();
    let kept = find(&registry, &ctx, "settle the balance").await;
    std::fs::remove_dir_all(ws.join(".minicode/index")).unwrap();
    let fresh = find(&Registry::builtin(), &ctx, "settle the balance").await;
    assert_eq!(ranked(&kept), ranked(&fresh), "{kept}\n---\n{fresh}");
    assert!(kept.contains("[index: 5 files, 5 chunks]"), "{kept}");
    assert!(
        !kept.contains("coupon") && kept.contains("src/limits.rs"),
        "{kept}"
    );
}

#[tokio::test]
async fn find_ranks_a_definition_above_its_declaration_and_its_tests() {
    let (_d, ws, ctx) = tool_workspace();
    put(
        &ws,
        "lib/hash.h",
        "/* Computes a checksum over a buffer. */\nuint32_t crc32_digest(const uint8_t *buf,\n                      size_t len);\n",
    );
    put(
        &ws,
        "tests/hash_test.c",
        "/* Checks the checksum of three bytes. */\nvoid crc32_digest_of_three_bytes(void) {\n    assert(crc32_digest(buf, 3) == 7);\n}\n",
    );
    put(
        &ws,
        "lib/hash.c",
        "/* Computes a checksum over a buffer. */\n\
         uint32_t crc32_digest(const uint8_t *buf, size_t len) {\n    uint32_t c = 0;\n    \
         for (size_t i = 0; i < len; i++) c ^= buf[i];\n    return c;\n}\n",
    );
    put(
        &ws,
        "src/shape.rs",
        "pub trait Shape {\n    /// The area the shape covers.\n    fn covered_area(&self) -> f64;\n}\n\n\
         impl Shape for Circle {\n    fn covered_area(&self) -> f64 {\n        3.14 * self.r * self.r\n    }\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn covered_area_of_a_circle() {\n        \
         assert!(Circle { r: 1.0 }.covered_area() > 3.0);\n    }\n}\n",
    );
    let registry = Registry::builtin();
    let out = find(&registry, &ctx, "crc32 digest checksum").await;
    assert!(
        first(&out).starts_with("1. lib/hash.c:1-6 crc32_digest (function)"),
        "{out}"
    );
    let out = find(&registry, &ctx, "area a shape covers").await;
    assert!(
        first(&out).starts_with("1. src/shape.rs:7-9 covered_area (function in Shape for Circle)"),
        "{out}"
    );
}

#[tokio::test]
async fn an_index_whose_files_were_all_rewritten_twice_ranks_exactly_like_a_fresh_one() {
    // 40 files of 130 definitions: rewriting every file twice leaves more replaced chunks than
    // live ones, which makes the index rebuild its in-memory term lists.
    let (_d, ws, ctx) = tool_workspace();
    let words = ["ledger", "invoice", "tenant", "coupon", "parcel", "quota"];
    let write_all = |round: usize| {
        for f in 0..40 {
            let mut text = String::new();
            for n in 0..130 {
                let w = words[(f + n + round) % words.len()];
                text.push_str(&format!(
                    "/// Settles the {w} balance, round {round}.\npub fn settle_{w}_{f}_{n}() {{}}\n\n"
                ));
            }
            put(&ws, &format!("src/f{f}.rs"), &text);
        }
    };
    write_all(0);
    let registry = Registry::builtin();
    complete(&registry, &ctx).await;
    for round in 1..3 {
        write_all(round);
        complete(&registry, &ctx).await;
    }
    let kept = find(&registry, &ctx, "settle the tenant balance").await;
    std::fs::remove_dir_all(ws.join(".minicode/index")).unwrap();
    let fresh = find(&Registry::builtin(), &ctx, "settle the tenant balance").await;
    assert_eq!(ranked(&kept), ranked(&fresh), "{kept}\n---\n{fresh}");
    assert!(kept.contains("[index: 40 files, 5200 chunks]"), "{kept}");
}

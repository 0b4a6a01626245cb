//! The full outputs `bash` saves under `.minicode/outputs/`: capped per call (an approved `yes`
//! cannot fill the disk), pruned oldest first beyond a total size and beyond an age, never
//! through a symbolic link and never a file minicode did not name; the limits come from
//! `[tools]` in the configuration.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use minicode::config::{self, Overrides};
use minicode::tools::outputs::Limits;
use minicode::tools::{ToolCtx, ToolOutput};
use tokio_util::sync::CancellationToken;

use crate::support::workspace;

const KIB: u64 = 1024;
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

fn ctx(ws: &Path, limits: Limits) -> ToolCtx {
    let mut ctx = ToolCtx::new(ws.to_path_buf(), Duration::from_secs(60), Vec::new());
    ctx.outputs = limits;
    ctx
}

async fn bash(ctx: &ToolCtx, args: serde_json::Value) -> ToolOutput {
    crate::support::bash::run(ctx, args, CancellationToken::new()).await
}

fn outputs(ws: &Path) -> PathBuf {
    ws.join(".minicode/outputs")
}

/// Saved output files, sorted by name.
fn saved(ws: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(outputs(ws)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// A file named like a saved output, `len` bytes, last modified `age` ago.
fn fake_output(ws: &Path, n: u8, len: u64, age: Duration) -> PathBuf {
    std::fs::create_dir_all(outputs(ws)).unwrap();
    let path = outputs(ws).join(format!("{:032x}.log", n));
    std::fs::write(&path, vec![b'x'; len as usize]).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
    path
}

#[tokio::test]
async fn a_command_that_prints_without_end_saves_only_up_to_the_cap() {
    let (_dir, ws) = workspace();
    let limits = Limits {
        max_file_bytes: 256 * KIB,
        ..Limits::default()
    };
    let ctx = ctx(&ws, limits);
    let out = bash(
        &ctx,
        serde_json::json!({"command": "yes | head -c 8000000"}),
    )
    .await;
    assert!(out.content.ends_with("[exit code 0]"), "{}", out.content);
    assert!(
        out.content
            .contains("the first 262144 bytes saved to .minicode/outputs/"),
        "{}",
        out.content
    );
    let files = saved(&ws);
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.len() < 256 * KIB as usize + 200,
        "{} bytes",
        text.len()
    );
    assert!(
        text.ends_with(
            "\n[... saved output cut at 262144 bytes; the command wrote 8000000 bytes in all ...]\n"
        ),
        "{}",
        &text[text.len() - 120..]
    );
    // The model still sees the end of the output.
    assert!(
        out.content.contains("y\ny\n[exit code 0]"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn an_approved_yes_runs_to_its_timeout_without_filling_the_disk() {
    let (_dir, ws) = workspace();
    let limits = Limits {
        max_file_bytes: 64 * KIB,
        ..Limits::default()
    };
    let ctx = ctx(&ws, limits);
    let out = bash(
        &ctx,
        serde_json::json!({"command": "yes", "timeout_secs": 1}),
    )
    .await;
    assert!(
        out.content.contains("[timed out after 1 s"),
        "{}",
        out.content
    );
    let files = saved(&ws);
    assert_eq!(files.len(), 1);
    let len = std::fs::metadata(&files[0]).unwrap().len();
    assert!(len < 64 * KIB + 200, "{len} bytes saved");
}

#[test]
fn saved_outputs_beyond_the_total_size_go_oldest_first() {
    let (_dir, ws) = workspace();
    let files: Vec<PathBuf> = (1..=5)
        .map(|n| fake_output(&ws, n, 100 * KIB, Duration::from_secs(60 * u64::from(n))))
        .collect();
    // Not ours: never touched, whatever its size or age.
    std::fs::write(outputs(&ws).join("notes.txt"), vec![b'n'; 500 * 1024]).unwrap();
    let ctx = ctx(
        &ws,
        Limits {
            max_total_bytes: 250 * KIB,
            ..Limits::default()
        },
    );
    ctx.prune_outputs();
    // File 1 is the newest (1 minute old), file 5 the oldest.
    let kept: Vec<bool> = files.iter().map(|f| f.exists()).collect();
    assert_eq!(kept, [true, true, false, false, false]);
    assert!(outputs(&ws).join("notes.txt").exists());
}

#[test]
fn saved_outputs_older_than_the_age_limit_are_removed() {
    let (_dir, ws) = workspace();
    let fresh = fake_output(&ws, 1, KIB, DAY);
    let old = fake_output(&ws, 2, KIB, 8 * DAY);
    ctx(&ws, Limits::default()).prune_outputs();
    assert!(fresh.exists());
    assert!(!old.exists());
}

#[test]
fn pruning_never_follows_a_symlinked_outputs_folder() {
    let (_dir, ws) = workspace();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join(format!("{:032x}.log", 7));
    std::fs::write(&victim, "precious").unwrap();
    let file = std::fs::File::options().write(true).open(&victim).unwrap();
    file.set_modified(SystemTime::now() - 30 * DAY).unwrap();
    std::fs::create_dir_all(ws.join(".minicode")).unwrap();
    std::os::unix::fs::symlink(outside.path(), outputs(&ws)).unwrap();
    ctx(&ws, Limits::default()).prune_outputs();
    assert!(victim.exists());
}

#[tokio::test]
async fn each_save_prunes_but_keeps_the_output_just_saved() {
    let (_dir, ws) = workspace();
    let older = fake_output(&ws, 1, 10 * KIB, Duration::from_secs(60));
    let ctx = ctx(
        &ws,
        Limits {
            max_total_bytes: 2 * KIB,
            ..Limits::default()
        },
    );
    ctx.set_output_limit(2048);
    let out = bash(&ctx, serde_json::json!({"command": "seq 1 5000"})).await;
    assert!(
        out.content.contains("full output saved to"),
        "{}",
        out.content
    );
    let files = saved(&ws);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(!older.exists());
    assert!(
        std::fs::read_to_string(&files[0])
            .unwrap()
            .ends_with("4999\n5000\n")
    );
}

#[test]
fn output_limits_are_read_from_the_tools_table_and_must_be_positive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let overrides = Overrides {
        config_path: Some(path.clone()),
        ..Overrides::default()
    };
    let no_env = |_: &str| None;
    let base = "[model]\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"m\"\n[tools]\n";
    std::fs::write(&path, base).unwrap();
    let c = config::load(dir.path(), &no_env, &overrides).unwrap();
    assert_eq!(c.outputs_max_file_bytes, 64 * 1024 * KIB);
    assert_eq!(c.outputs_max_bytes, 256 * 1024 * KIB);
    assert_eq!(c.outputs_max_age, 7 * DAY);
    let set = "outputs_max_file_bytes = 1000\noutputs_max_bytes = 5000\noutputs_max_age_days = 2\n";
    std::fs::write(&path, format!("{base}{set}")).unwrap();
    let c = config::load(dir.path(), &no_env, &overrides).unwrap();
    assert_eq!(
        (
            c.outputs_max_file_bytes,
            c.outputs_max_bytes,
            c.outputs_max_age
        ),
        (1000, 5000, 2 * DAY)
    );
    std::fs::write(&path, format!("{base}outputs_max_bytes = 0\n")).unwrap();
    let err = config::load(dir.path(), &no_env, &overrides).unwrap_err();
    assert!(err.to_string().contains("tools.outputs_max_bytes"), "{err}");
}

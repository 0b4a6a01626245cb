//! Caches under the sandbox (issue 33, item 6): a confined call finds `XDG_CACHE_HOME`,
//! `npm_config_cache`, `PIP_CACHE_DIR`, `GOCACHE` and the like pointed at a folder it may write
//! (inside the session's temporary folder, or the configured `[sandbox] cache`), while
//! `~/.cache` itself stays outside what it may write. The HOME here lies outside the
//! workspace, as a real one does. The kernel here has Landlock, seccomp and unprivileged user
//! namespaces.

use std::path::Path;
use std::process::Output;

use crate::support::binary::command_with_home;
use crate::support::binary::output_text as text;
use crate::support::workspace;

fn sandboxed(ws: &Path, home: &Path, script: &str) -> Output {
    command_with_home(ws, home)
        .args(["sandbox", "--", "bash", "-c", script])
        .output()
        .unwrap()
}

const WRITE_CACHES: &str = "set -e
for v in \"$XDG_CACHE_HOME\" \"$npm_config_cache\" \"$PIP_CACHE_DIR\" \"$GOCACHE\" \"$YARN_CACHE_FOLDER\"; do
  mkdir -p \"$v\" && echo x > \"$v/entry\"
done
echo \"cache=$XDG_CACHE_HOME\"";

#[test]
fn a_confined_call_writes_its_caches_but_not_the_real_home_cache() {
    let (_tmp, ws) = workspace();
    let (_home_dir, home) = workspace();
    let out = sandboxed(&ws, &home, WRITE_CACHES);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cache = stdout.trim().strip_prefix("cache=").unwrap();
    assert!(cache.ends_with("/cache"), "{stdout}");
    // The session's temporary folder, in the runtime folder (`$HOME/.run` in these tests).
    assert!(
        cache.starts_with(home.join(".run").to_str().unwrap()),
        "{stdout}"
    );
    assert!(!cache.starts_with(ws.to_str().unwrap()), "{stdout}");

    std::fs::create_dir_all(home.join(".cache")).unwrap();
    let out = sandboxed(&ws, &home, "echo x > ~/.cache/entry");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!home.join(".cache/entry").exists());
}

#[test]
fn the_configured_cache_folder_receives_the_caches() {
    let (_tmp, ws) = workspace();
    let (_home_dir, home) = workspace();
    let (_cache_dir, cache) = workspace();
    let user = format!("[sandbox]\ncache = {:?}\n", cache.to_str().unwrap());
    crate::support::user_config::write_trusting(&home, &ws, &user);
    let out = sandboxed(&ws, &home, WRITE_CACHES);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("cache={}", cache.display())
    );
    assert!(cache.join("entry").exists() && cache.join("npm/entry").exists());
    assert!(cache.join("pip/entry").exists() && cache.join("go-build/entry").exists());
}

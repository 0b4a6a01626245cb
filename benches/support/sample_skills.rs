//! Three realistic skills for the benches that measure the first request: this repository's
//! `add-a-tool` and two of typical size. Shared by `benches/skills.rs` and `benches/mcp.rs`.

use std::path::Path;

const RELEASE: &str = "---
name: release
description: >
  Cut a release of this project: update CHANGELOG.md from the merged pull requests, bump the
  version in Cargo.toml and Cargo.lock, run the full test suite, tag vX.Y.Z and write the
  release notes. Use when the user asks to release, publish or tag a version.
triggers: release, publish, changelog
---
# Cutting a release

1. Make sure `main` is green: `bash .ci/run`.
2. Collect the changes since the last tag: `git log --oneline $(git describe --tags --abbrev=0)..`.
3. Group them under Added, Changed, Fixed, Security in CHANGELOG.md, newest version first,
   each line in the imperative with the pull request number.
4. Bump `version` in Cargo.toml (semver: a breaking change of the CLI or the config is major),
   run `cargo update -p minicode` so Cargo.lock follows.
5. Commit as `chore(release): vX.Y.Z`, tag `vX.Y.Z` with the release notes as the message.
6. Never push the tag yourself: tell the user the commands to push.
";

const REVIEW: &str = "---
name: review
description: >
  Review a change before it is merged: read the diff whole, check it against the conventions
  in docs/architecture.md and MiniCode.md, run the tests of the areas it touches, and report
  problems by severity with file and line. Use when the user asks for a review or a second look.
triggers: review, code review
---
# Reviewing a change

- Start from `git diff main...HEAD --stat`, then read every file of the diff, not only hunks.
- Check the arrows (tests/it/architecture.rs), the 600-line rule, `//!` docs on new files,
  lowercase errors, no unwrap outside tests, and that tool failures are output, not errors.
- Run `cargo test --test it <area>::` for each area touched, then clippy with `-D warnings`.
- Report: blocking problems first (wrong behaviour, missing tests, security), then style.
  Quote the line, say why, and propose the fix. Say plainly what you did not check.
";

/// Writes the three skills into the skills folder `root` (e.g. `<ws>/.minicode/skills`).
pub fn write(root: &Path) {
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join(".minicode/skills/add-a-tool/SKILL.md");
    put(
        &root.join("add-a-tool/SKILL.md"),
        &std::fs::read_to_string(ours).unwrap(),
    );
    put(&root.join("release/SKILL.md"), RELEASE);
    put(&root.join("review/SKILL.md"), REVIEW);
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

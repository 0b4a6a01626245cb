//! The Harbor adapter (`contrib/harbor/`): its Python tests run against the real `harbor`
//! package when it is installed; without it (or without python3) they are skipped with the
//! reason printed, as the adapter cannot be imported at all.

use std::process::Command;

#[test]
fn harbor_adapter_imports_and_builds_its_commands_with_the_real_package() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let home = tempfile::tempdir().unwrap();
    let output = Command::new("python3")
        .args([
            "-m",
            "unittest",
            "-v",
            "contrib/harbor/test_minicode_agent.py",
        ])
        .current_dir(repo)
        .env("HOME", home.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output();
    let Ok(output) = output else {
        println!("skipped: python3 is not installed");
        return;
    };
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{report}");
    if report.contains("skipped") {
        println!("skipped: the harbor package is not installed (pip install harbor)\n{report}");
    }
}

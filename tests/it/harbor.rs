//! The Harbor adapter (`contrib/harbor/`): its Python tests run against the real `harbor`
//! package when it is installed; without it (or without python3) they are skipped with the
//! reason printed, as the adapter cannot be imported at all. Harbor needs Python 3.12 or newer:
//! `MINICODE_TEST_PYTHON` names an interpreter that has it (e.g. a venv's `bin/python`).

use std::process::Command;

#[test]
fn harbor_adapter_imports_and_builds_its_commands_with_the_real_package() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let home = tempfile::tempdir().unwrap();
    let python = std::env::var("MINICODE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let output = Command::new(&python)
        .args([
            "-m",
            "unittest",
            "-v",
            "contrib/harbor/test_minicode_agent.py",
        ])
        .current_dir(repo)
        .env("HOME", home.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // harbor imports LiteLLM, which otherwise tries to fetch its price list from the network.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .output();
    let Ok(output) = output else {
        println!("skipped: {python} is not installed");
        return;
    };
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{report}");
    if report.contains("skipped") {
        println!(
            "skipped: the harbor package is not installed (pip install harbor, Python 3.12+; \
             MINICODE_TEST_PYTHON names such an interpreter)\n{report}"
        );
    }
}

//! The Harbor adapter (`contrib/harbor/`): its Python tests run against the real `harbor`
//! package. Harbor needs Python 3.12 or newer with the package installed, which a machine with
//! only a Rust toolchain lacks, so the test is ignored; `MINICODE_TEST_PYTHON` names such an
//! interpreter (e.g. a venv's `bin/python`) for `cargo test -- --ignored harbor`, and without
//! one the test fails saying what is missing.

use std::process::Command;

#[test]
#[ignore = "needs Python 3.12+ with the harbor package (MINICODE_TEST_PYTHON names it)"]
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
    let output = output.unwrap_or_else(|e| panic!("{python} cannot be run: {e}"));
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{report}");
    assert!(
        !report.contains("skipped"),
        "the harbor package is not installed (pip install harbor, Python 3.12+; \
         MINICODE_TEST_PYTHON names such an interpreter)\n{report}"
    );
}

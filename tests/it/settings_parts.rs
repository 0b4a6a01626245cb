//! A part's table (`[fetch]`, `[goal]`, `[checkpoints]`) is read straight into the part's own
//! settings struct: the user's file and the workspace's are laid over each other key by key,
//! keys no file sets keep the struct's defaults, and an error names the file and the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use minicode::checkpoints;
use minicode::config::{Config, ConfigError, Overrides};

/// A launch directory with a HOME inside it, and what each file holds.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new(user: &str, workspace: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let user_file = crate::support::user_config::path(&dir.path().join("home"));
        std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
        std::fs::write(&user_file, user).unwrap();
        let ws = dir.path().join("ws/.minicode");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("config.toml"), workspace).unwrap();
        Self { dir }
    }

    fn workspace_file(&self) -> PathBuf {
        self.workspace().join(".minicode/config.toml")
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn load(&self) -> Result<Config, ConfigError> {
        let home = self.dir.path().join("home").to_str().unwrap().to_string();
        let env = move |name: &str| (name == "HOME").then(|| home.clone());
        let overrides = Overrides {
            demo: true,
            ..Default::default()
        };
        minicode::config::load(Path::new(&self.workspace()), &env, &overrides)
    }
}

#[test]
fn a_part_s_table_is_laid_key_by_key_over_the_user_s_and_the_rest_keeps_its_defaults() {
    let files = Files::new(
        "[checkpoints]\nmax_bytes = 1000\nenabled = true\n[fetch]\ntimeout_secs = 9\n",
        "[checkpoints]\nenabled = false\n[goal]\nstall_rounds = 5\n",
    );
    let c = files.load().unwrap();
    assert_eq!(
        c.checkpoints,
        checkpoints::Settings {
            enabled: false,
            max_bytes: 1000,
            ..Default::default()
        }
    );
    assert_eq!(c.fetch.timeout, Duration::from_secs(9));
    assert_eq!(c.fetch.max_bytes, 5 * 1024 * 1024);
    assert_eq!(c.goal.stall_rounds, 5);
    assert_eq!(c.goal.max_rounds, 256);
}

#[test]
fn a_bad_value_in_a_part_s_table_names_the_file_that_set_it() {
    let files = Files::new(
        "[checkpoints]\nmax_bytes = 1000\n",
        "[checkpoints]\nmax_file_bytes = 0\n",
    );
    let err = files.load().unwrap_err().to_string();
    assert!(err.contains("checkpoints.max_file_bytes"), "{err}");
    assert!(
        err.contains(&files.workspace_file().display().to_string()),
        "{err}"
    );
}

#[test]
fn an_unknown_key_in_a_part_s_table_is_refused_with_its_line() {
    let files = Files::new("[fetch]\ntimeout_secs = 9\nmax_redirects = 3\n", "");
    let err = files.load().unwrap_err().to_string();
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("fetch.max_redirects"), "{err}");
}

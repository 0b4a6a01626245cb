//! The workspace and the five-tool script that the process benches (oneshot, acp, goal) share,
//! so they measure the same task in the same setting.

use crate::mock_openai::{MockReply, MockServer, text_reply, tool_calls_reply};

/// A temp workspace whose `config/config.toml` points at `server` (with `model_extra` lines
/// added to its `[model]` table), holding a README to read and edit. The user config under
/// `.config/minicode` trusts the workspace: each bench runs minicode with HOME = the workspace,
/// as the layout with the server in the workspace's file requires.
pub fn trusted_workspace(server: &MockServer, model_extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    let config = format!(
        "[model]\nbase_url = \"{}\"\nname = \"bench\"\n{model_extra}",
        server.base_url()
    );
    std::fs::write(dir.path().join("config/config.toml"), config).unwrap();
    std::fs::create_dir_all(dir.path().join(".config/minicode")).unwrap();
    std::fs::write(
        dir.path().join(".config/minicode/config.toml"),
        format!(
            "trusted_workspaces = [{:?}]\n",
            dir.path().canonicalize().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "# Bench\n\nhello world\n").unwrap();
    dir
}

/// Read, edit, bash, read, write, then a short answer.
pub fn five_tool_script() -> Vec<MockReply> {
    vec![
        tool_calls_reply(&[("c1", "read", r#"{"path":"README.md"}"#)], 64),
        tool_calls_reply(
            &[(
                "c2",
                "edit",
                r#"{"path":"README.md","old_string":"hello world","new_string":"hello bench"}"#,
            )],
            64,
        ),
        tool_calls_reply(&[("c3", "bash", r#"{"command":"true"}"#)], 64),
        tool_calls_reply(&[("c4", "read", r#"{"path":"README.md"}"#)], 64),
        tool_calls_reply(
            &[("c5", "write", r#"{"path":"out.txt","content":"done\n"}"#)],
            64,
        ),
        text_reply("All five steps are done.", 8),
    ]
}

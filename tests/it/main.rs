//! The integration tests: one binary (one link of the crate), one module per area, and the
//! shared helpers in `support`. Run one area with `cargo test --test it <module>::`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests signal and set up child processes with libc (kill, pre_exec).
#![allow(unsafe_code)]

mod support;

mod acp;
mod agent_loop;
mod agents_md;
mod architecture;
mod bash_outputs;
mod checkpoints;
mod checkpoints_cli;
mod cli_binary;
mod cli_help;
mod cli_stdin;
mod cli_typo;
mod config;
mod context_agent;
mod context_budget;
mod context_compact;
mod context_live;
mod context_manual;
mod context_validate;
mod custom_commands;
mod daemon;
mod daemon_assembly;
mod daemon_docs;
mod daemon_hostile;
mod daemon_stream;
mod doctor;
mod durability;
mod find;
mod full_disk;
mod goal_agent;
mod goal_binary;
mod goal_demo;
mod goal_domain;
mod goal_tui;
mod hooks;
mod hostile_server;
mod key_env;
mod mcp;
mod mcp_binary;
mod memory;
mod permissions;
mod plan_mode;
mod protected_paths;
mod provider_errors;
mod provider_stream;
mod pty_oneshot;
mod pty_session;
mod readme;
mod realserver;
mod resume;
mod run_end;
mod sandbox;
mod sandbox_config;
mod sanitize;
mod secrets;
mod server_compat;
mod server_down;
mod server_probe;
mod server_reasoning;
mod server_wire;
mod session;
mod session_cli;
mod session_journal;
mod skills;
mod subagents;
mod supervision;
mod telemetry;
mod tools_bash;
mod tools_files;
mod tools_registry;
mod tools_search;
mod trust;
mod tui_approval_guard;
mod tui_header;
mod tui_highlight;
mod tui_live;
mod tui_render;
mod tui_select;
mod tui_view;
mod wire_names;

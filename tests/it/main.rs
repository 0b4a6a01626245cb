//! The integration tests: one binary (one link of the crate), one module per area, and the
//! shared helpers in `support`. Run one area with `cargo test --test it <module>::`.

mod support;

mod agent_loop;
mod architecture;
mod bash_outputs;
mod cli_binary;
mod config;
mod context_agent;
mod context_budget;
mod context_compact;
mod context_live;
mod context_manual;
mod context_validate;
mod memory;
mod provider_errors;
mod provider_stream;
mod pty_oneshot;
mod pty_session;
mod sanitize;
mod secrets;
mod session;
mod tools_bash;
mod tools_files;
mod tui_approval_guard;
mod tui_render;
mod tui_view;

//! minicode: a terminal coding agent for OpenAI-compatible model servers.
//!
//! Architecture in one breath: `cli` builds an immutable [`config::Config`], picks a
//! [`provider::Provider`], a [`tools::Registry`] and a [`session::Session`], and hands them to
//! [`agent::spawn`]. The agent core speaks only the typed [`protocol`]: frontends send `Op`s and
//! read `Event`s. The one-shot printer (`print`), the full-screen UI (`tui`) and the tests are
//! three consumers of that same contract; nothing below `agent` knows a terminal exists.
//!
//! The modules in layers, each using only layers below it (the exact arrows are
//! `tests/it/architecture.rs`'s `RULES`, and the table in docs/architecture.md):
//!
//! | layer | modules |
//! | --- | --- |
//! | wiring | [`cli`] (`main.rs` → `cli::run`): reads the config, assembles, picks a frontend |
//! | frontends and transports | `print` (one-shot), [`tui`] (full screen), `acp` (editors), `daemon` and `attach` (`serve` and its client), `eval` (runs this binary) |
//! | core | [`agent`]: the op loop, turns, context, compaction and its parts (goal, hooks, plan, sub-agents) |
//! | contract | [`protocol`]: `Op` in, `Event` out |
//! | parts the core drives | [`provider`] (model servers), [`tools`] (one tool per file, MCP, skills), [`session`] and [`checkpoints`] (stores), [`memory`] |
//! | policy and process | [`config`], [`permissions`], [`hooks`], [`sandbox`], `process` (every child), [`logging`] |
//! | leaves | [`chat`] (the data model), [`sanitize`], [`fsutil`], [`defaults`], `sync` |
#![deny(clippy::print_stdout, clippy::print_stderr)]
// Items are `pub` only where another crate (the binary, tests, benches) uses them.
#![warn(unreachable_pub)]

pub(crate) mod acp;
pub mod agent;
pub(crate) mod attach;
pub mod chat;
pub mod checkpoints;
pub mod cli;
pub mod config;
pub(crate) mod daemon;
pub mod defaults;
pub(crate) mod eval;
pub mod fsutil;
pub mod hooks;
pub mod logging;
pub mod lsp;
pub mod memory;
pub mod permissions;
pub(crate) mod print;
pub(crate) mod process;
pub mod protocol;
pub mod provider;
pub mod sandbox;
pub mod sanitize;
pub mod session;
pub(crate) mod sync;
pub mod tools;
pub mod tui;

//! minicode: a terminal coding agent for OpenAI-compatible model servers.
//!
//! Architecture in one breath: `cli` builds an immutable [`config::Config`], picks a
//! [`provider::Provider`], a [`tools::Registry`] and a [`session::Session`], and hands them to
//! [`agent::spawn`]. The agent core speaks only the typed [`protocol`]: frontends send `Op`s and
//! read `Event`s. The one-shot printer (`print`), the full-screen UI (`tui`) and the tests are
//! three consumers of that same contract; nothing below `agent` knows a terminal exists.
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
pub mod memory;
pub mod permissions;
pub(crate) mod print;
pub(crate) mod process;
pub mod protocol;
pub mod provider;
pub mod sandbox;
pub mod sanitize;
pub mod session;
pub mod sync;
pub mod tools;
pub mod tui;

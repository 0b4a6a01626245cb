//! Helpers shared by the integration tests. Each test binary uses only part of them.
#![allow(dead_code)]

pub mod agent;
pub mod mock_openai;
pub mod stream;

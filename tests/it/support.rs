//! Helpers shared by the integration-test modules: the mock OpenAI server, the agent starter
//! and the provider stream collector.

pub mod agent;
pub mod mock_openai;
pub mod stream;
pub mod user_config;

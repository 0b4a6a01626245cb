//! Helpers shared by the integration-test modules: the mock OpenAI server, the agent starter,
//! the provider stream collector and the child-process isolation helper.

pub mod agent;
pub mod isolated;
pub mod mock_openai;
pub mod stream;

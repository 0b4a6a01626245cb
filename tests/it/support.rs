//! Helpers shared by the integration-test modules: the mock OpenAI server, the agent starter,
//! the provider stream collector, the binary runner and the child-process isolation helper.

pub mod agent;
pub mod binary;
pub mod isolated;
pub mod mock_openai;
pub mod stream;

//! The provider the provider and server tests talk to the mock server through: model
//! `mock-model`, retries 5 ms apart, everything else at its default unless a test changes it.

use std::time::Duration;

use minicode::provider::openai::{OpenAi, OpenAiOptions};

use super::mock_openai::MockServer;

/// A provider for `server` with the tests' defaults.
pub fn provider(server: &MockServer) -> OpenAi {
    provider_with(server, |_| {})
}

/// A provider for `server` with the tests' defaults, then `change` applied to its options.
pub fn provider_with(server: &MockServer, change: impl FnOnce(&mut OpenAiOptions)) -> OpenAi {
    let mut options = OpenAiOptions {
        base_url: server.base_url(),
        model: "mock-model".into(),
        retry_base_delay: Duration::from_millis(5),
        ..OpenAiOptions::default()
    };
    change(&mut options);
    OpenAi::new(options).unwrap()
}

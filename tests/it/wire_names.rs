//! The names types show as text (`as_str`, `name`) are the names serde writes for them, for
//! every variant: one spelling per value, whichever way it leaves the process.

use minicode::chat::Role;
use minicode::protocol::{BlockCode, GoalChange, GoalPhase, SubagentStatus, WindowSource};
use minicode::provider::FinishReason;
use minicode::provider::compat::Param;
use serde::Serialize;

/// What serde writes for `value`, which must be a JSON string.
fn written<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value).unwrap() {
        serde_json::Value::String(s) => s,
        other => panic!("not a string: {other}"),
    }
}

#[test]
fn every_unit_variants_text_is_its_serde_name() {
    for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
        assert_eq!(role.as_str(), written(&role));
    }
    for phase in [
        GoalPhase::Active,
        GoalPhase::Paused,
        GoalPhase::Blocked,
        GoalPhase::Complete,
    ] {
        assert_eq!(phase.as_str(), written(&phase));
    }
    for change in [
        GoalChange::Created,
        GoalChange::Paused,
        GoalChange::Resumed,
        GoalChange::Edited,
        GoalChange::Completed,
        GoalChange::Blocked,
        GoalChange::Cleared,
    ] {
        assert_eq!(change.as_str(), written(&change));
    }
    for status in [
        SubagentStatus::Completed,
        SubagentStatus::Failed,
        SubagentStatus::TimedOut,
        SubagentStatus::Interrupted,
    ] {
        assert_eq!(status.as_str(), written(&status));
    }
    assert_eq!(SubagentStatus::TimedOut.as_str(), "timed_out");
    for source in [
        WindowSource::Config,
        WindowSource::Probe,
        WindowSource::ServerError,
        WindowSource::Default,
    ] {
        assert_eq!(source.as_str(), written(&source));
    }
    assert_eq!(WindowSource::ServerError.as_str(), "server-error");
    for param in [
        Param::MaxTokens,
        Param::MaxCompletionTokens,
        Param::StreamOptions,
        Param::ParallelToolCalls,
        Param::ToolChoice,
    ] {
        assert_eq!(param.name(), written(&param));
    }
    assert_eq!(Param::MaxCompletionTokens.name(), "max_completion_tokens");
}

#[test]
fn open_ended_names_keep_unknown_values_as_written() {
    for reason in [
        FinishReason::Stop,
        FinishReason::Length,
        FinishReason::ToolCalls,
        FinishReason::ContentFilter,
        FinishReason::Other("abort".into()),
    ] {
        assert_eq!(reason.as_str(), written(&reason));
        let read: FinishReason = serde_json::from_value(written(&reason).into()).unwrap();
        assert_eq!(read, reason);
    }
    for code in [
        BlockCode::RoundLimit,
        BlockCode::UsageLimit,
        BlockCode::ExecutionFailed,
        BlockCode::AwaitingHuman,
        BlockCode::Other("needs-key".into()),
    ] {
        assert_eq!(code.as_str(), written(&code));
        assert_eq!(BlockCode::from(code.as_str()), code);
    }
}

//! Message validation (`agent::validate`): the local check before a context is sent or saved.

use minicode::agent::validate::{self, ValidationError};
use minicode::chat::{Message, Role, ToolCall};

fn call(id: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: "bash".to_string(),
        arguments: args.to_string(),
    }
}

fn check(messages: &[Message]) -> Result<(), ValidationError> {
    let refs: Vec<&Message> = messages.iter().collect();
    validate::messages(&refs)
}

#[test]
fn a_well_formed_conversation_is_valid() {
    let messages = vec![
        Message::system("sys"),
        Message::user("memory"),
        Message::user("do it"),
        Message::assistant(None, vec![call("a", "{}"), call("b", "{\"x\":1}")]),
        Message::tool_result("b", ""),
        Message::tool_result("a", "done"),
        Message::assistant(Some("ok".into()), vec![]),
        Message::system("a later instruction"),
        Message::user("next"),
        Message::assistant(Some(String::new()), vec![]),
    ];
    check(&messages).unwrap();
    validate::history(&messages).unwrap();
}

#[test]
fn duplicate_call_ids_in_a_batch_are_refused() {
    let messages = vec![
        Message::user("x"),
        Message::assistant(None, vec![call("a", "{}"), call("a", "{}")]),
    ];
    let err = check(&messages).unwrap_err();
    assert_eq!(
        err,
        ValidationError::DuplicateCallId {
            index: 1,
            call_id: "a".into()
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("message 1") && text.contains("\"a\""),
        "{text}"
    );
}

#[test]
fn the_same_id_in_a_later_batch_is_allowed() {
    let messages = vec![
        Message::assistant(None, vec![call("a", "{}")]),
        Message::tool_result("a", "1"),
        Message::assistant(None, vec![call("a", "{}")]),
        Message::tool_result("a", "2"),
    ];
    check(&messages).unwrap();
}

#[test]
fn another_role_before_all_results_is_refused() {
    let messages = vec![
        Message::assistant(None, vec![call("a", "{}"), call("b", "{}")]),
        Message::tool_result("a", "1"),
        Message::user("interrupting"),
    ];
    assert_eq!(
        check(&messages).unwrap_err(),
        ValidationError::Unanswered {
            index: 2,
            role: "user",
            call_id: "b".into()
        }
    );
}

#[test]
fn an_unanswered_call_at_the_end_is_refused_for_requests_but_allowed_while_tools_run() {
    let messages = vec![
        Message::user("x"),
        Message::assistant(None, vec![call("a", "{}")]),
    ];
    assert_eq!(
        check(&messages).unwrap_err(),
        ValidationError::UnansweredAtEnd {
            index: 1,
            call_id: "a".into()
        }
    );
    validate::history_prefix(&messages).unwrap();
}

#[test]
fn a_result_for_no_pending_call_is_refused() {
    let messages = vec![Message::user("x"), Message::tool_result("ghost", "1")];
    assert_eq!(
        check(&messages).unwrap_err(),
        ValidationError::UnexpectedResult {
            index: 1,
            call_id: "ghost".into()
        }
    );
    let answered_twice = vec![
        Message::assistant(None, vec![call("a", "{}")]),
        Message::tool_result("a", "1"),
        Message::tool_result("a", "1"),
    ];
    assert!(matches!(
        check(&answered_twice),
        Err(ValidationError::UnexpectedResult { index: 2, .. })
    ));
}

#[test]
fn arguments_must_be_a_json_object() {
    for bad in ["", "[1]", "\"s\"", "{\"a\":", "{} trailing", "null"] {
        let messages = vec![Message::assistant(None, vec![call("c1", bad)])];
        assert_eq!(
            check(&messages).unwrap_err(),
            ValidationError::Arguments {
                index: 0,
                call_id: "c1".into()
            },
            "arguments {bad:?}"
        );
    }
}

#[test]
fn role_fields_are_checked() {
    let no_content = Message {
        role: Role::User,
        content: None,
        tool_calls: vec![],
        tool_call_id: None,
        reasoning: None,
        images: vec![],
    };
    assert!(matches!(
        check(&[no_content]),
        Err(ValidationError::Field {
            index: 0,
            role: "user",
            ..
        })
    ));
    let user_with_calls = Message {
        role: Role::User,
        content: Some("x".into()),
        tool_calls: vec![call("a", "{}")],
        tool_call_id: None,
        reasoning: None,
        images: vec![],
    };
    assert!(matches!(
        check(&[user_with_calls]),
        Err(ValidationError::Field { .. })
    ));
    let empty_assistant = Message::assistant(None, vec![]);
    assert!(matches!(
        check(&[empty_assistant]),
        Err(ValidationError::Field {
            index: 0,
            role: "assistant",
            ..
        })
    ));
    let assistant_with_id = Message {
        tool_call_id: Some("a".into()),
        ..Message::assistant(Some("x".into()), vec![])
    };
    assert!(matches!(
        check(&[assistant_with_id]),
        Err(ValidationError::Field { .. })
    ));
    let tool_without_id = Message {
        tool_call_id: None,
        ..Message::tool_result("a", "x")
    };
    let messages = vec![
        Message::assistant(None, vec![call("a", "{}")]),
        tool_without_id,
    ];
    assert!(matches!(
        check(&messages),
        Err(ValidationError::Field {
            index: 1,
            role: "tool",
            ..
        })
    ));
    let empty_id = vec![Message::assistant(None, vec![call("", "{}")])];
    assert_eq!(
        check(&empty_id).unwrap_err(),
        ValidationError::EmptyCallId { index: 0 }
    );
    let no_name = vec![Message::assistant(
        None,
        vec![ToolCall {
            id: "a".into(),
            name: String::new(),
            arguments: "{}".into(),
        }],
    )];
    assert!(matches!(
        check(&no_name),
        Err(ValidationError::EmptyToolName { .. })
    ));
}

#[test]
fn results_may_come_in_any_order() {
    let messages = vec![
        Message::assistant(
            None,
            vec![call("a", "{}"), call("b", "{}"), call("c", "{}")],
        ),
        Message::tool_result("c", ""),
        Message::tool_result("a", ""),
        Message::tool_result("b", ""),
    ];
    check(&messages).unwrap();
}

#[test]
fn checking_a_grown_history_from_its_settled_length_finds_what_a_full_check_finds() {
    let mut messages = vec![
        Message::user("x"),
        Message::assistant(None, vec![call("a", "{}"), call("b", "{}")]),
        Message::tool_result("a", "1"),
    ];
    // The batch is still open: only the user message is settled.
    assert_eq!(validate::history_prefix_from(&messages, 0), Ok(1));
    messages.push(Message::tool_result("b", "2"));
    let settled = validate::history_prefix_from(&messages, 1).unwrap();
    assert_eq!(settled, 4);
    messages.push(Message::assistant(Some("done".into()), vec![]));
    assert_eq!(validate::history_prefix_from(&messages, settled), Ok(5));

    // A message appended after the settled point is checked, with its index in the whole
    // history.
    messages.push(Message::tool_result("ghost", "?"));
    assert_eq!(
        validate::history_prefix_from(&messages, 5),
        Err(ValidationError::UnexpectedResult {
            index: 5,
            call_id: "ghost".into()
        })
    );
    assert_eq!(
        validate::history_prefix(&messages),
        Err(ValidationError::UnexpectedResult {
            index: 5,
            call_id: "ghost".into()
        })
    );
    // A settled length beyond the history (it was replaced) checks everything.
    assert!(validate::history_prefix_from(&messages[..2], 5).is_ok());
    assert_eq!(validate::history_prefix_from(&messages[..1], 5), Ok(1));
}

/// A settled history whose call has arguments that are not JSON: no check lets it through,
/// so a message taken from it as "checked" is visibly trusted.
fn history_with_broken_arguments() -> Vec<Message> {
    vec![
        Message::user("x"),
        Message::assistant(None, vec![call("a", "not json")]),
        Message::tool_result("a", "1"),
    ]
}

#[test]
fn a_request_skips_only_the_per_call_checks_of_messages_from_the_checked_history() {
    // A history whose second call has broken arguments: no check would let it through, so a
    // message borrowed from a "checked" slice is visibly trusted.
    let history = history_with_broken_arguments();
    let refs: Vec<&Message> = history.iter().collect();
    assert_eq!(
        validate::request(&refs, &[]).unwrap_err(),
        ValidationError::Arguments {
            index: 1,
            call_id: "a".into()
        }
    );
    validate::request(&refs, &history).unwrap();

    // The order rules still hold for checked messages: a request that stops before the
    // result is refused.
    assert_eq!(
        validate::request(&refs[..2], &history).unwrap_err(),
        ValidationError::UnansweredAtEnd {
            index: 1,
            call_id: "a".into()
        }
    );
    // A copy of a checked message lies elsewhere in memory: it is checked in full.
    let copy = history[1].clone();
    let mixed = vec![&history[0], &copy, &history[2]];
    assert!(matches!(
        validate::request(&mixed, &history),
        Err(ValidationError::Arguments { .. })
    ));
}

#[test]
fn a_request_carrying_the_whole_checked_history_still_checks_what_is_around_it() {
    // Broken arguments in the history: a run taken from it as a whole is trusted as checked.
    let history = history_with_broken_arguments();
    let system = Message::system("sys");
    let lead = Message::user("memory");
    let ack = Message::assistant(Some("ok".into()), vec![]);
    let mut refs: Vec<&Message> = vec![&system, &lead, &ack];
    refs.extend(&history);
    validate::request(&refs, &history).unwrap();

    // A batch left open before the run is refused, naming that batch.
    let open = Message::assistant(None, vec![call("z", "{}")]);
    let mut before: Vec<&Message> = vec![&system, &open];
    before.extend(&history);
    assert_eq!(
        validate::request(&before, &history).unwrap_err(),
        ValidationError::UnansweredAtEnd {
            index: 1,
            call_id: "z".into()
        }
    );

    // What follows the run is checked with its own indices.
    let stray = Message::tool_result("a", "again");
    let mut after = refs.clone();
    after.push(&stray);
    assert_eq!(
        validate::request(&after, &history).unwrap_err(),
        ValidationError::UnexpectedResult {
            index: 6,
            call_id: "a".into()
        }
    );
    let bad = Message::assistant(None, vec![call("b", "not json")]);
    let answer = Message::tool_result("b", "2");
    let mut after = refs.clone();
    after.extend([&bad, &answer]);
    assert_eq!(
        validate::request(&after, &history).unwrap_err(),
        ValidationError::Arguments {
            index: 6,
            call_id: "b".into()
        }
    );

    // A run that starts inside a batch (at a result) is not trusted as a whole.
    let mut inside: Vec<&Message> = vec![&system];
    inside.extend(&history[2..]);
    assert!(matches!(
        validate::request(&inside, &history),
        Err(ValidationError::UnexpectedResult { index: 1, .. })
    ));
}

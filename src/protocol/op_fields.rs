//! How `Op`'s two variants that hold one bare value (`Submit`'s text, `Compact`'s focus)
//! appear on the wire: as a named field beside the `type` tag, since a tagged enum cannot
//! carry a bare string. Serde glue only; the ops themselves live in `protocol.rs`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `Op::Submit(text)` ↔ `{"text": …}`.
pub(super) mod text {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Text<T> {
        text: T,
    }

    pub(crate) fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        Text { text }.serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Text::<String>::deserialize(d).map(|t| t.text)
    }
}

/// `Op::Compact(focus)` ↔ `{"focus": …}` (absent or `null` for none).
pub(super) mod focus {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Focus<T> {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        focus: Option<T>,
    }

    pub(crate) fn serialize<S: Serializer>(
        focus: &Option<String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        Focus {
            focus: focus.as_deref(),
        }
        .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Focus::<String>::deserialize(d).map(|f| f.focus)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use crate::protocol::{Decision, GoalOp, Op, RewindScope};

    fn round_trip(op: Op, json: &str) {
        assert_eq!(serde_json::to_string(&op).unwrap(), json);
        assert_eq!(serde_json::from_str::<Op>(json).unwrap(), op);
    }

    #[test]
    fn ops_carry_a_type_tag_and_named_fields() {
        round_trip(
            Op::Submit("fix it".into()),
            r#"{"type":"submit","text":"fix it"}"#,
        );
        round_trip(Op::Compact(None), r#"{"type":"compact"}"#);
        round_trip(
            Op::Compact(Some("the parser".into())),
            r#"{"type":"compact","focus":"the parser"}"#,
        );
        round_trip(Op::Interrupt, r#"{"type":"interrupt"}"#);
        round_trip(
            Op::Decide {
                call: "call_1".into(),
                decision: Decision::Deny {
                    reason: Some("no".into()),
                },
            },
            r#"{"type":"decide","call":"call_1","decision":{"decision":"deny","reason":"no"}}"#,
        );
        round_trip(
            Op::Goal(GoalOp::Show),
            r#"{"type":"goal","command":"show"}"#,
        );
        round_trip(
            Op::Rewind {
                turn: 2,
                scope: RewindScope::Code,
                force: false,
            },
            r#"{"type":"rewind","turn":2,"scope":"code","force":false}"#,
        );
    }

    #[test]
    fn an_unknown_op_or_a_stray_field_is_refused() {
        assert!(serde_json::from_str::<Op>(r#"{"type":"launch"}"#).is_err());
        assert!(serde_json::from_str::<Op>(r#"{"type":"submit","txt":"x"}"#).is_err());
        assert!(serde_json::from_str::<Op>(r#"{"type":"submit"}"#).is_err());
        assert!(
            serde_json::from_str::<Op>(
                r#"{"type":"rewind","turn":1,"scope":"code","force":false,"x":1}"#
            )
            .is_err()
        );
        assert!(
            serde_json::from_str::<Op>(
                r#"{"type":"decide","call":"c","decision":{"decision":"deny","reason":"no","x":1}}"#
            )
            .is_err()
        );
    }
}

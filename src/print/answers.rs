//! Scripted approval answers for a one-shot run (`--approval-answer TOOL=approve|deny`): a
//! program that starts minicode (the evaluator, a CI job) answers the approvals it expects
//! without a terminal. The question is still asked and recorded (`approval_requested`,
//! `approval_decided`), unlike a permission rule, which decides without asking.

use crate::protocol::Decision;

/// What a script answers for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Approve,
    Deny,
}

/// One `TOOL=ANSWER` pair; the tool `*` stands for every tool without a pair of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScriptedAnswer {
    tool: String,
    answer: Answer,
}

impl std::str::FromStr for ScriptedAnswer {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (tool, answer) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}` is not TOOL=approve or TOOL=deny"))?;
        let answer = match answer.trim() {
            "approve" => Answer::Approve,
            "deny" => Answer::Deny,
            other => return Err(format!("`{other}` is neither approve nor deny")),
        };
        let tool = tool.trim();
        if tool.is_empty() {
            return Err(format!("`{text}` names no tool"));
        }
        Ok(ScriptedAnswer {
            tool: tool.to_string(),
            answer,
        })
    }
}

/// The script of a run; empty: every approval is asked on the terminal as usual.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answers(Vec<ScriptedAnswer>);

impl Answers {
    pub(crate) fn new(pairs: Vec<ScriptedAnswer>) -> Self {
        Answers(pairs)
    }

    /// The scripted decision for `tool`, if the script has one (its own pair wins over `*`).
    pub(crate) fn decide(&self, tool: &str) -> Option<Decision> {
        let pick = |name: &str| self.0.iter().rev().find(|a| a.tool == name);
        let answer = pick(tool).or_else(|| pick("*"))?.answer;
        Some(match answer {
            Answer::Approve => Decision::Approve,
            Answer::Deny => Decision::Deny {
                reason: Some("denied by the approval script (--approval-answer)".to_string()),
            },
        })
    }
}

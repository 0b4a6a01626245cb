//! The text after `/goal`, read once for every frontend that accepts typed commands (the TUI,
//! ACP prompts): the same words make the same `GoalOp` wherever they are typed. Reading only;
//! whether the op is allowed is the core's to say.

use super::GoalOp;

/// What `/goal edit` without an objective answers.
const EDIT_USAGE: &str = "usage: /goal edit <new objective>";

impl GoalOp {
    /// Reads `[pause|resume|clear|edit <text>|<objective>]`. Nothing shows the goal; a keyword
    /// followed by more words is an objective like any other, except `edit`, whose words are
    /// the new objective. The ops name no revision (`expected: None`): a person typing means the
    /// current goal.
    pub fn parse_command(arg: &str) -> Result<GoalOp, String> {
        let arg = arg.trim();
        let (word, rest) = arg.split_once(char::is_whitespace).unwrap_or((arg, ""));
        let rest = rest.trim();
        Ok(match word {
            "" => GoalOp::Show,
            "pause" if rest.is_empty() => GoalOp::Pause { expected: None },
            "resume" if rest.is_empty() => GoalOp::Resume {
                expected: None,
                max_rounds: None,
            },
            "clear" if rest.is_empty() => GoalOp::Clear { expected: None },
            "edit" if rest.is_empty() => return Err(EDIT_USAGE.to_string()),
            "edit" => GoalOp::Edit {
                expected: None,
                objective: rest.to_string(),
            },
            _ => GoalOp::Create {
                objective: arg.to_string(),
                max_rounds: None,
            },
        })
    }
}

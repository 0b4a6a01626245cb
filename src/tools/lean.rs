//! The small profile's view of the tools (see `provider::profiles`): some tools hidden, the
//! others declared with a one-sentence description and no parameter descriptions, so a small
//! model's window holds its work rather than the manual. The schema itself (types, required
//! fields, `additionalProperties`) is kept whole: the arguments are checked the same way.
//!
//! It only shapes declarations; which profile is in force is the agent's decision.

use crate::chat::ToolSpec;

use super::Tool;

/// Which tools the small profile leaves out, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lean {
    hidden: Vec<String>,
}

impl Lean {
    /// A view hiding the tools named in `hidden`.
    pub fn hiding(hidden: Vec<String>) -> Self {
        Self { hidden }
    }

    /// Whether `tool` is offered in this view.
    pub(crate) fn offers(&self, tool: &dyn Tool) -> bool {
        let name = tool.spec().name;
        !self.hidden.iter().any(|h| *h == name)
    }
}

impl Lean {
    /// Whether the tool named `name` is hidden in this view.
    fn hides(&self, name: &str) -> bool {
        self.hidden.iter().any(|h| h == name)
    }
}

/// `tool`'s declaration in the small profile: its brief description, and its parameters
/// without their descriptions, nor those that need a tool `lean` hides; a tool without a
/// brief one (an MCP server's) as it is.
pub(crate) fn spec(tool: &dyn Tool, lean: &Lean) -> ToolSpec {
    let mut spec = tool.spec();
    let Some(brief) = tool.brief() else {
        return spec;
    };
    spec.description = brief.into();
    if let Some(properties) = spec
        .parameters
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (parameter, needs) in tool.lean_drops() {
            if lean.hides(needs) {
                properties.remove(*parameter);
            }
        }
        for property in properties.values_mut() {
            if let Some(fields) = property.as_object_mut() {
                fields.remove("description");
            }
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_spec_keeps_the_schema_but_not_the_parameter_descriptions() {
        let full = super::super::read::Read.spec();
        let brief = spec(&super::super::read::Read, &Lean::default());
        assert_eq!(brief.name, full.name);
        assert!(brief.description.len() < full.description.len());
        assert_eq!(brief.parameters["required"], full.parameters["required"]);
        assert_eq!(
            brief.parameters["properties"]["path"],
            serde_json::json!({"type": "string"})
        );
        assert_eq!(brief.parameters["additionalProperties"], false);
    }

    #[test]
    fn bash_declares_background_only_where_bash_output_is_offered() {
        let bash = super::super::bash::Bash;
        let hiding = Lean::hiding(vec!["bash_output".into(), "bash_kill".into()]);
        let small = spec(&bash, &hiding);
        assert!(small.parameters["properties"].get("background").is_none());
        let offered = spec(&bash, &Lean::default());
        assert!(offered.parameters["properties"].get("background").is_some());
    }
}

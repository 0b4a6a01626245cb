//! The one scaffold of the built-in tools: a tool declares its argument struct, checks it
//! against the workspace, describes the call for approval and runs it; parsing the model's
//! JSON, turning a failed check into the model's message and the object-safe [`Tool`] are
//! written once here, not in every tool.
//!
//! The hand-written JSON Schema stays (it is part of the prompt, measured in tokens); the
//! tests below hold it and each argument struct to the same keys.

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::{
    Aim, CoreCall, CoreTool, Invocation, Prepared, Tool, ToolCtx, ToolFuture, ToolOutput,
    parse_args,
};
use crate::chat::{Change, ToolKind, ToolSpec};

/// A tool whose arguments are a struct, parsed once from the model's JSON.
pub(crate) trait Typed: Send + Sync {
    /// The arguments as the model writes them (`#[serde(deny_unknown_fields)]`, the same keys
    /// as the schema in [`Typed::spec`]).
    type Args: DeserializeOwned + Send + Sync;
    /// A call checked against the workspace (paths resolved, limits applied).
    type Checked: Send;

    /// Name, description and JSON Schema, as declared to the model.
    fn spec(&self) -> ToolSpec;

    /// What its calls do, for frontends to show them by.
    fn kind(&self) -> ToolKind;

    /// See [`Tool::brief`].
    fn brief(&self) -> Option<&'static str> {
        None
    }

    /// See [`Tool::lean_drops`].
    fn lean_drops(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// See [`Tool::core`].
    fn core(&self) -> Option<CoreTool> {
        None
    }

    /// What a call aims at (see [`Aim`]).
    fn aim(_args: &Self::Args) -> Aim {
        Aim::Call
    }

    /// For a tool the core runs itself: the call it runs, from the arguments parsed here.
    fn core_call(_args: &Self::Args) -> Option<CoreCall> {
        None
    }

    /// For a tool that changes a file: what the call will write (see [`Invocation::change`]).
    fn change(_args: &Self::Args) -> Option<Change> {
        None
    }

    /// Checks the arguments against the workspace, with no side effects; an `Err` is a message
    /// for the model. Done again right before the call runs: the files may have changed while
    /// the user was asked.
    fn check(&self, args: &Self::Args, ctx: &ToolCtx) -> Result<Self::Checked, String>;

    /// The summary and, for a call that changes something, what the user approves.
    fn describe(&self, call: Self::Checked, ctx: &ToolCtx) -> Result<Prepared, String>;

    /// Runs a checked call. Must return promptly once `cancel` fires.
    fn run<'a>(
        &'a self,
        call: Self::Checked,
        ctx: &'a ToolCtx,
        cancel: CancellationToken,
    ) -> ToolFuture<'a>;
}

/// Checks `args` and runs the call: what the agent does once the call is approved, and what
/// the core does when it runs a tool for the user (`!command`, `@file`).
pub(crate) async fn check_and_run<T: Typed>(
    tool: &T,
    args: &T::Args,
    ctx: &ToolCtx,
    cancel: CancellationToken,
) -> ToolOutput {
    match tool.check(args, ctx) {
        Ok(call) => tool.run(call, ctx, cancel).await,
        Err(e) => ToolOutput::failed(e),
    }
}

/// A parsed call of a typed tool.
struct Parsed<'t, T: Typed> {
    tool: &'t T,
    args: T::Args,
}

impl<T: Typed> Invocation for Parsed<'_, T> {
    fn aim(&self) -> Aim {
        T::aim(&self.args)
    }

    fn prepare(&self, ctx: &ToolCtx) -> Result<Prepared, String> {
        let call = self.tool.check(&self.args, ctx)?;
        self.tool.describe(call, ctx)
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx, cancel: CancellationToken) -> ToolFuture<'a> {
        Box::pin(check_and_run(self.tool, &self.args, ctx, cancel))
    }

    fn core_call(&self) -> Option<CoreCall> {
        T::core_call(&self.args)
    }

    fn change(&self) -> Option<Change> {
        T::change(&self.args)
    }
}

impl<T: Typed> Tool for T {
    fn spec(&self) -> ToolSpec {
        Typed::spec(self)
    }

    fn brief(&self) -> Option<&'static str> {
        Typed::brief(self)
    }

    fn lean_drops(&self) -> &'static [(&'static str, &'static str)] {
        Typed::lean_drops(self)
    }

    fn kind(&self) -> ToolKind {
        Typed::kind(self)
    }

    fn core(&self) -> Option<CoreTool> {
        Typed::core(self)
    }

    fn parse<'t>(&'t self, args: &serde_json::Value) -> Result<Box<dyn Invocation + 't>, String> {
        let args = parse_args::<T::Args>(args)?;
        Ok(Box::new(Parsed { tool: self, args }))
    }
}

/// The check that a tool's schema and its argument struct agree, for the tests of every
/// typed tool (the core's own too).
#[cfg(test)]
pub(crate) mod schema_check {
    use serde_json::{Map, Value, json};

    use super::super::Tool;

    /// A value of the type a schema property declares.
    fn sample(property: &Value) -> Value {
        if let Some(first) = property.get("enum").and_then(|e| e.get(0)) {
            return first.clone();
        }
        match property.get("type").and_then(Value::as_str) {
            Some("integer") | Some("number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([sample(&property["items"])]),
            Some("object") => Value::Object(
                property["properties"]
                    .as_object()
                    .map(|p| p.iter().map(|(k, v)| (k.clone(), sample(v))).collect())
                    .unwrap_or_default(),
            ),
            _ => json!("x"),
        }
    }

    /// The schema's properties and required keys, and the tool's argument struct, agree: every
    /// property is accepted, every required key is needed, and no other key is.
    pub(crate) fn agrees(tool: &dyn Tool) {
        let spec = tool.spec();
        let schema = &spec.parameters;
        let name = &spec.name;
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let all: Map<String, Value> = properties
            .iter()
            .map(|(k, p)| (k.clone(), sample(p)))
            .collect();
        let only_required: Map<String, Value> = all
            .iter()
            .filter(|(k, _)| required.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for args in [&all, &only_required] {
            let value = Value::Object(args.clone());
            assert!(tool.parse(&value).is_ok(), "{name}: {value} is refused");
        }
        for key in &required {
            let mut missing = all.clone();
            missing.remove(*key);
            let value = Value::Object(missing);
            assert!(tool.parse(&value).is_err(), "{name}: {key} is not needed");
        }
        assert_eq!(schema["additionalProperties"], json!(false), "{name}");
        let mut extra = all.clone();
        extra.insert("not_a_parameter".into(), json!(1));
        assert!(
            tool.parse(&Value::Object(extra)).is_err(),
            "{name}: an unknown key is accepted"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::Registry;
    use super::schema_check::agrees;

    #[test]
    fn every_builtin_schema_matches_its_argument_struct() {
        let registry = Registry::builtin();
        for spec in registry.specs().iter() {
            let tool = registry.get(&spec.name);
            assert!(tool.is_some(), "{} is declared but not found", spec.name);
            if let Some(tool) = tool {
                agrees(tool.as_ref());
            }
        }
    }
}

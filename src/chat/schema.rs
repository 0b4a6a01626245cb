//! Checking a JSON value against a JSON Schema: a tool's declared parameters (recovered text
//! calls) and the user's `--output-schema`. With the `schema` cargo feature (on by default) the
//! full validator (`boon`, drafts 4 to 2020-12) does it; a build without it falls back to
//! [`light`], which checks `type`, `required`, `properties`, `additionalProperties`, `items`
//! and `enum` only, so a size-conscious build still rejects an answer of the wrong shape.
//!
//! Plain functions of data like the rest of `chat`: no I/O, nothing else of ours.

#[cfg(not(feature = "schema"))]
mod light;

use serde_json::Value;

/// A compiled schema, ready to check values.
pub(crate) struct Schema {
    #[cfg(feature = "schema")]
    schemas: boon::Schemas,
    #[cfg(feature = "schema")]
    index: boon::SchemaIndex,
    #[cfg(not(feature = "schema"))]
    schema: Value,
}

impl Schema {
    /// Compiles `schema`, known as `location` (a URL or a path, named in errors). The error
    /// says why it is not a usable schema.
    #[cfg(feature = "schema")]
    pub(crate) fn compile(location: &str, schema: Value) -> Result<Self, String> {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(location, schema)
            .map_err(|e| e.to_string())?;
        let index = compiler
            .compile(location, &mut schemas)
            .map_err(|e| e.to_string())?;
        Ok(Self { schemas, index })
    }

    /// Without the full validator a schema is only required to be an object or a boolean.
    #[cfg(not(feature = "schema"))]
    pub(crate) fn compile(location: &str, schema: Value) -> Result<Self, String> {
        match schema {
            Value::Object(_) | Value::Bool(_) => Ok(Self { schema }),
            _ => Err(format!("{location} is neither an object nor a boolean")),
        }
    }

    /// `Ok` when `value` is valid, else what is wrong with it, every error on its own line.
    pub(crate) fn validate(&self, value: &Value) -> Result<(), String> {
        #[cfg(feature = "schema")]
        return self
            .schemas
            .validate(value, self.index)
            .map_err(|e| format!("{e:#}"));
        #[cfg(not(feature = "schema"))]
        return light::validate(&self.schema, value);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test's failure is its panic
mod tests {
    use serde_json::json;

    use super::Schema;

    fn schema() -> Schema {
        Schema::compile(
            "urn:test",
            json!({
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string"},
                    "lines": {"type": "array", "items": {"type": "integer"}},
                    "mode": {"enum": ["read", "write"]}
                }
            }),
        )
        .unwrap()
    }

    #[test]
    fn a_value_of_the_declared_shape_passes() {
        let v = json!({"path": "a.rs", "lines": [1, 2], "mode": "read"});
        assert_eq!(schema().validate(&v), Ok(()));
    }

    #[test]
    fn a_missing_required_key_fails() {
        assert!(schema().validate(&json!({"lines": [1]})).is_err());
    }

    #[test]
    fn a_wrong_type_fails_at_any_depth() {
        assert!(schema().validate(&json!({"path": 3})).is_err());
        assert!(
            schema()
                .validate(&json!({"path": "a", "lines": ["x"]}))
                .is_err()
        );
        assert!(schema().validate(&json!([])).is_err());
    }

    #[test]
    fn a_value_outside_the_enum_fails() {
        assert!(
            schema()
                .validate(&json!({"path": "a", "mode": "append"}))
                .is_err()
        );
    }

    #[test]
    fn an_undeclared_key_fails_only_where_the_object_is_closed() {
        let closed = Schema::compile(
            "urn:test",
            json!({"type": "object", "properties": {"path": {"type": "string"}},
                   "additionalProperties": false}),
        )
        .unwrap();
        assert!(closed.validate(&json!({"path": "a", "glob": "*"})).is_err());
        assert_eq!(closed.validate(&json!({"path": "a"})), Ok(()));
        assert_eq!(
            schema().validate(&json!({"path": "a", "glob": "*"})),
            Ok(())
        );
    }

    #[test]
    fn a_schema_that_is_not_an_object_is_refused() {
        assert!(Schema::compile("urn:test", json!(3)).is_err());
    }
}

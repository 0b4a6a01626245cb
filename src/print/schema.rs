//! `--output-schema FILE`: the one-shot run's final answer must be JSON valid against the
//! user's JSON Schema. The schema is read and compiled before the session opens (a bad file
//! is a usage error); the prompt asks for such an answer; an answer that does not parse or
//! does not match gets the errors back once for a second try. Validation is `chat::schema`'s
//! (the full validator, or a light check in a build without the `schema` feature); nothing here
//! talks to the core besides the prompts the run sends.

use std::path::Path;

use serde_json::Value;

use crate::chat::schema::Schema;

/// The largest schema file read.
const MAX_SCHEMA_BYTES: u64 = 1024 * 1024;

/// Errors shown to the model and the user are cut to this many bytes.
const MAX_ERROR_BYTES: usize = 4000;

/// A compiled output schema and its text for the prompt.
pub(crate) struct OutputSchema {
    schema: Schema,
    text: String,
}

impl OutputSchema {
    /// Reads and compiles the schema at `path`. The error names the file.
    pub(crate) fn load(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let size = std::fs::metadata(path)
            .map_err(|e| format!("cannot read the output schema {shown}: {e}"))?
            .len();
        if size > MAX_SCHEMA_BYTES {
            return Err(format!(
                "the output schema {shown} is larger than {MAX_SCHEMA_BYTES} bytes"
            ));
        }
        let bytes = std::fs::read(path)
            .map_err(|e| format!("cannot read the output schema {shown}: {e}"))?;
        let schema: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the output schema {shown} is not JSON: {e}"))?;
        let location = std::fs::canonicalize(path)
            .map_err(|e| format!("cannot read the output schema {shown}: {e}"))?
            .display()
            .to_string();
        let text = serde_json::to_string_pretty(&schema).unwrap_or_default();
        let schema = Schema::compile(&location, schema)
            .map_err(|e| format!("the output schema {shown} is not a valid JSON Schema: {e}"))?;
        Ok(Self { schema, text })
    }

    /// The prompt with the request for a schema-valid answer after it.
    pub(crate) fn instruct(&self, prompt: &str) -> String {
        format!(
            "{prompt}\n\nYour final answer must be only a JSON value (no prose, no code fence) \
             that is valid against this JSON Schema:\n{}",
            self.text
        )
    }

    /// The answer as JSON valid against the schema, or what is wrong with it. A whole answer
    /// in one code fence counts as its content.
    pub(crate) fn check(&self, answer: &str) -> Result<Value, String> {
        let text = unfence(answer.trim());
        let value: Value =
            serde_json::from_str(text).map_err(|e| cut(format!("the answer is not JSON: {e}")))?;
        match self.schema.validate(&value) {
            Ok(()) => Ok(value),
            Err(e) => Err(cut(format!(
                "the answer does not match the output schema: {e}"
            ))),
        }
    }

    /// The second try's prompt: what was wrong, and the request again.
    pub(crate) fn retry(&self, errors: &str) -> String {
        format!(
            "Your final answer was rejected: {errors}\n\nAnswer again with only a JSON value \
             (no prose, no code fence) that is valid against this JSON Schema:\n{}",
            self.text
        )
    }
}

/// The content of a text that is one fenced code block (```json … ```), else the text.
fn unfence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    match body.split_once('\n') {
        Some((lang, inner)) if !lang.contains('{') && !lang.contains('[') => inner.trim(),
        _ => body.trim(),
    }
}

/// `text` cut to [`MAX_ERROR_BYTES`] on a character boundary.
fn cut(mut text: String) -> String {
    if text.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(" …");
    }
    text
}

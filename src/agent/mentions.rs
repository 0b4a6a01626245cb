//! `@path` mentions in a prompt: each mentioned workspace file's content goes with the prompt,
//! read by the `read` tool itself, so a mention is confined exactly as the model's reads are
//! (inside the workspace, `read()` deny rules, size and line caps, binary files refused,
//! secrets redacted). A mentioned image (`@shot.png`) goes with the prompt as an image part,
//! named in the text as `[image: shot.png 120 KB]`. A word after `@` that names nothing on
//! disk is left as text. Also the
//! completion of a path being typed after `@` (`Op::CompletePath`).

use tokio_util::sync::CancellationToken;

use super::Core;
use crate::chat::{Image, ToolStatus};
use crate::protocol::Event;

/// Most files one prompt attaches (the rest are named in a warning).
const MAX_MENTIONS: usize = 10;
/// Most completions one answer carries.
pub(crate) const MAX_COMPLETIONS: usize = 50;

/// The paths mentioned in `text`: words that start with `@` at the start of a line or after
/// whitespace, without trailing sentence punctuation; each once, in order.
pub(crate) fn mentioned(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches([',', ';', ':', '!', '?', ')', '"', '\'']);
        let path = path.strip_suffix('.').unwrap_or(path);
        if !path.is_empty() && !found.iter().any(|f| f == path) {
            found.push(path.to_string());
        }
    }
    found
}

impl Core {
    /// `text` with the content of each file it mentions appended, as the `read` tool shows it.
    /// A mention that names nothing is left alone; one the `read` tool refuses is not attached
    /// and the user is told why. Mentioned images are returned beside the text.
    pub(super) async fn attach_mentions(
        &self,
        text: String,
        cancel: &CancellationToken,
    ) -> (String, Vec<Image>) {
        let mut attached = String::new();
        let mut images = Vec::new();
        let paths = mentioned(&text);
        for (n, path) in paths.iter().enumerate() {
            let target = self.tool_ctx.workspace.join(path);
            if std::fs::symlink_metadata(&target).is_err() {
                continue;
            }
            if n >= MAX_MENTIONS {
                self.emit(Event::Warning {
                    message: format!("@{path} not attached: at most {MAX_MENTIONS} files a prompt"),
                });
                continue;
            }
            let args = crate::tools::read::Args::whole(path.clone());
            let output = crate::tools::typed::check_and_run(
                &crate::tools::read::Read,
                &args,
                &self.tool_ctx,
                cancel.child_token(),
            )
            .await;
            if output.status != ToolStatus::Succeeded {
                self.emit(Event::Warning {
                    message: format!("@{path} not attached: {}", output.content),
                });
                continue;
            }
            if let Some(image) = output.image {
                attached.push_str(&format!("\n\n{}", image.label(path)));
                images.push(*image);
                continue;
            }
            attached.push_str(&format!(
                "\n\n<attached-file path=\"{}\">\n{}\n</attached-file>",
                path.replace('"', "'"),
                output.content.trim_end()
            ));
        }
        if attached.is_empty() {
            return (text, images);
        }
        (format!("{text}{attached}"), images)
    }

    /// Answers `Op::CompletePath`.
    pub(super) fn complete_path(&self, prefix: String) {
        let paths =
            crate::tools::walk::complete(&self.tool_ctx.workspace, &prefix, MAX_COMPLETIONS);
        self.emit(Event::PathCompletions { prefix, paths });
    }
}

#[cfg(test)]
mod tests {
    use super::mentioned;

    #[test]
    fn mentions_are_words_starting_with_at() {
        assert_eq!(
            mentioned("look at @src/main.rs, and @README.md. mail a@b.c @src/main.rs"),
            ["src/main.rs", "README.md"]
        );
        assert!(mentioned("no @ here").is_empty());
    }
}

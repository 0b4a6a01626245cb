//! `/model` on the core (`Op::Model`): the models the server lists, and a switch to another
//! one for the rest of the session. The switch is a notice in the history (so the session
//! file records it and the model is told), the context window is probed again, and the
//! frontends hear `ModelSwitched`. The prompt before the notice stays as it was sent.

use super::{Core, notice};
use crate::protocol::Event;

impl Core {
    /// Lists the server's models (no name) or switches to `name`.
    pub(super) async fn model(&mut self, name: Option<String>) {
        match name.as_deref().map(str::trim) {
            None | Some("") => self.list_models().await,
            Some(name) => self.switch_model(name.to_string()).await,
        }
    }

    async fn list_models(&self) {
        match self.provider.models().await {
            Ok(models) => self.emit(Event::ModelsListed {
                current: self.provider.model().to_string(),
                models,
            }),
            Err(e) => self.emit(Event::Error {
                message: format!("could not list the server's models: {e}"),
            }),
        }
    }

    async fn switch_model(&mut self, name: String) {
        let previous = self.provider.model().to_string();
        if name == previous {
            self.emit(Event::Warning {
                message: format!("already using {name}"),
            });
            return;
        }
        if name.chars().any(char::is_control) || name.len() > 256 {
            self.emit(Event::Error {
                message: "a model name is one line of at most 256 bytes".to_string(),
            });
            return;
        }
        let Some(next) = self.provider.with_model(&name) else {
            self.emit(Event::Error {
                message: "this session's provider cannot switch models".to_string(),
            });
            return;
        };
        // A server that lists its models must list this one; one that cannot list them is
        // trusted (the next request says whether the name was right).
        if let Ok(models) = self.provider.models().await
            && !models.is_empty()
            && !models.contains(&name)
        {
            self.emit(Event::Error {
                message: format!(
                    "the server does not offer a model named {name}; /model lists the ones it does"
                ),
            });
            return;
        }
        self.provider = next.clone();
        self.upkeep.set_provider(next);
        let text = format!("The model answering from here on is {name} (it was {previous}).");
        self.store.session.push(notice::message(&[text]));
        self.store.save();
        self.emit(Event::ModelSwitched {
            previous,
            model: name,
        });
        self.report_context();
    }
}

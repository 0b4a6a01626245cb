//! Pasted images waiting in the draft: each is known by the label the paste put in the draft
//! (`[image: shot.png 120 KB]`, the label the model reads for `@shot.png`), so deleting the
//! label drops the image, and a prompt carries exactly the images whose labels it holds.
//! Pure: the run loop read and checked the file (`tui::pasted`).

use super::{Effect, State};
use crate::chat::Image;

impl State {
    /// Puts the image's label in the draft and keeps the image until a prompt takes it.
    pub(super) fn paste_image(&mut self, name: &str, image: Image) -> Vec<Effect> {
        let label = image.label(name);
        self.typed_over_restored(&label);
        self.draft.insert_str(&label);
        if !self.pasted.iter().any(|(l, i)| *l == label && *i == image) {
            self.pasted.retain(|(l, _)| *l != label);
            self.pasted.push((label, image));
        }
        Vec::new()
    }

    /// The images whose labels `text` holds, in the order of the text; the ones no longer in
    /// the draft or a queued prompt are let go.
    pub(crate) fn take_pasted(&mut self, text: &str) -> Vec<Image> {
        let mut found: Vec<(usize, Image)> = self
            .pasted
            .iter()
            .filter_map(|(label, image)| Some((text.find(label.as_str())?, image.clone())))
            .collect();
        found.sort_by_key(|(at, _)| *at);
        self.forget_pasted();
        found.into_iter().map(|(_, image)| image).collect()
    }

    /// Lets go of the pasted images neither the draft nor a queued prompt names any more
    /// (after a submit, a cleared draft).
    pub(crate) fn forget_pasted(&mut self) {
        if self.pasted.is_empty() {
            return;
        }
        let draft = self.draft.text();
        let queue = &self.queue;
        self.pasted
            .retain(|(label, _)| draft.contains(label) || queue.iter().any(|q| q.contains(label)));
    }
}

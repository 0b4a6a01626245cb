//! Images sent to a daemon session. The wire's `Op` carries an image by its reference only
//! (format, SHA-256, size), so a client sends each picture's bytes once with
//! `session.store_image`, checked exactly as `--image` checks a file (format by signature,
//! size limit), and names the reference it got back in a `submit_images` op; the daemon then
//! hands the core the images those references name. The core writes each one once into the
//! session's image store when the prompt enters history, as for any prompt with images.
//!
//! The session holds the last few images it was sent, in memory only: it reads and writes no
//! file, and a reference it no longer holds is refused saying to send the image again.

use std::collections::VecDeque;
use std::sync::Mutex;

use base64::Engine;

use super::wire::{INVALID_PARAMS, RpcError};
use crate::chat::Image;
use crate::sync::lock;

/// The most images one session holds for later prompts (each at most
/// `chat::MAX_IMAGE_BYTES`); sending another drops the oldest.
const MAX_HELD: usize = 8;

/// The images a session was sent and may still be named in a prompt, oldest first.
#[derive(Default)]
pub(super) struct Held {
    images: Mutex<VecDeque<Image>>,
}

impl Held {
    /// Checks the base64 `data` as an image and keeps it; returns its reference.
    pub(super) fn store(&self, data: &str) -> Result<Image, RpcError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| RpcError::new(INVALID_PARAMS, format!("data: not base64: {e}")))?;
        let image = Image::new(bytes)
            .map_err(|e| RpcError::new(INVALID_PARAMS, format!("image refused: {e}")))?;
        let mut held = lock(&self.images);
        held.retain(|h| *h != image);
        if held.len() >= MAX_HELD {
            held.pop_front();
        }
        held.push_back(image.clone());
        Ok(image)
    }

    /// The images `references` name, with their bytes; an error names the first one this
    /// session does not hold.
    pub(super) fn resolve(&self, references: Vec<Image>) -> Result<Vec<Image>, RpcError> {
        let held = lock(&self.images);
        references
            .into_iter()
            .map(|reference| {
                held.iter()
                    .find(|h| **h == reference && h.bytes == reference.bytes)
                    .cloned()
                    .ok_or_else(|| {
                        RpcError::new(
                            INVALID_PARAMS,
                            format!(
                                "image {} was not sent to this session (or was dropped for newer \
                                 ones): send its bytes with session.store_image first",
                                reference.sha256
                            ),
                        )
                    })
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn gif(n: u8) -> Vec<u8> {
        let mut bytes = b"GIF89a".to_vec();
        bytes.push(n);
        bytes
    }

    #[test]
    fn a_stored_image_resolves_by_its_reference_only() {
        let held = Held::default();
        let image = held.store(&b64(&gif(1))).unwrap();
        let mut reference = image.clone();
        reference.data = Vec::new().into();
        let resolved = held.resolve(vec![reference]).unwrap();
        assert_eq!(&*resolved[0].data, &gif(1)[..]);
        let other = Image::new(gif(2)).unwrap();
        let refused = held.resolve(vec![other]).unwrap_err();
        assert!(refused.message.contains("session.store_image"));
    }

    #[test]
    fn no_image_and_bad_base64_are_refused_and_the_oldest_is_dropped() {
        let held = Held::default();
        let refused = held.store(&b64(b"plain text")).unwrap_err();
        assert!(refused.message.contains("not a PNG"), "{}", refused.message);
        assert!(held.store("%%%").unwrap_err().message.contains("base64"));
        let first = held.store(&b64(&gif(0))).unwrap();
        for n in 1..=MAX_HELD as u8 {
            held.store(&b64(&gif(n))).unwrap();
        }
        assert!(held.resolve(vec![first]).is_err());
    }
}

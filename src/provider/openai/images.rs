//! What the provider does about images it cannot know the server takes: a request holding
//! one is refused before it is sent when the probe learnt that the model has no vision, and a
//! 4xx refusal of such a request that speaks of images is reported as exactly that.

use crate::chat::Message;
use crate::provider::ProviderError;

/// Whether any message carries an image.
pub(super) fn any(messages: &[&Message]) -> bool {
    messages.iter().any(|m| !m.images.is_empty())
}

/// The refusal of a request with images to a model the server said takes none.
pub(super) fn refuse(with_images: bool, takes: Option<bool>, model: &str) -> Option<ProviderError> {
    (with_images && takes == Some(false)).then(|| ProviderError::NoImages {
        status: 0,
        message: format!(
            "the server says {model} has no vision, so nothing was sent; use a model that takes \
             images (e.g. llama.cpp with --mmproj) or send the prompt without the image"
        ),
    })
}

/// `error`, named as an image refusal when the request held images and a 4xx answer
/// mentions them (the server did not tell the probe).
pub(super) fn explain(error: ProviderError, with_images: bool) -> ProviderError {
    let ProviderError::Request { status, message } = error else {
        return error;
    };
    let lower = message.to_ascii_lowercase();
    let about_images = ["image", "vision", "multimodal", "mmproj"]
        .iter()
        .any(|w| lower.contains(w));
    if with_images && (400..500).contains(&status) && about_images {
        ProviderError::NoImages {
            status,
            message: format!("the server refused the image: {message}"),
        }
    } else {
        ProviderError::Request { status, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_that_names_images_is_an_image_refusal() {
        let e = ProviderError::Request {
            status: 400,
            message: "image input is not supported".into(),
        };
        assert!(matches!(
            explain(e, true),
            ProviderError::NoImages { status: 400, .. }
        ));
        let e = ProviderError::Request {
            status: 400,
            message: "image input is not supported".into(),
        };
        assert!(matches!(explain(e, false), ProviderError::Request { .. }));
    }

    #[test]
    fn only_a_known_no_refuses_before_sending() {
        assert!(refuse(true, Some(false), "m").is_some());
        assert!(refuse(true, None, "m").is_none());
        assert!(refuse(false, Some(false), "m").is_none());
    }
}

//! An image in a message: its format (recognised by its first bytes, never by its name), its
//! SHA-256 and its bytes. Checked once, where it enters (`--image`, `@image.png`, `read`, ACP):
//! only PNG, JPEG, GIF and WebP, at most [`MAX_IMAGE_BYTES`]. Session files keep only the
//! reference (format, hash, size); the bytes live once in a content-addressed file beside the
//! sessions (`session/images.rs`), so a snapshot never repeats them.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The largest image accepted, in bytes: 5 MiB, under what common servers and APIs take
/// (OpenAI's limit is 20 MB per image, Anthropic's 5 MB).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The formats a model server takes as `image_url` data URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageFormat {
    #[serde(rename = "image/png")]
    Png,
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[serde(rename = "image/gif")]
    Gif,
    #[serde(rename = "image/webp")]
    Webp,
}

impl ImageFormat {
    /// The format of `bytes` by its signature, or `None` for anything else.
    pub(crate) fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageFormat::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageFormat::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageFormat::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(ImageFormat::Webp)
        } else {
            None
        }
    }

    /// Its media type (`image/png`).
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
        }
    }

    /// The format a media type names (ACP blocks carry one), or `None`.
    pub(crate) fn from_media_type(media: &str) -> Option<ImageFormat> {
        [
            ImageFormat::Png,
            ImageFormat::Jpeg,
            ImageFormat::Gif,
            ImageFormat::Webp,
        ]
        .into_iter()
        .find(|f| f.media_type().eq_ignore_ascii_case(media.trim()))
    }
}

/// Why some bytes cannot be sent as an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("not a PNG, JPEG, GIF or WebP image")]
    Format,
    #[error("the image is over the limit of {limit} bytes (read {size})")]
    TooBig { size: usize, limit: usize },
    #[error("the image is empty")]
    Empty,
    #[error("not a regular file")]
    NotFile,
    #[error("{0}")]
    Io(String),
}

/// An image attached to a message. Equal when format and hash are (what the request encoder's
/// reuse check compares). Serialized as its reference only: `data` is filled from the
/// session's image store on load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Image {
    pub(crate) format: ImageFormat,
    /// Lowercase hex SHA-256 of the bytes: the name of its stored file.
    pub(crate) sha256: String,
    /// Its size in bytes.
    pub(crate) bytes: u64,
    /// The bytes; empty when a session was loaded without its stored file.
    #[serde(skip)]
    pub data: Arc<[u8]>,
}

impl PartialEq for Image {
    fn eq(&self, other: &Self) -> bool {
        self.format == other.format && self.sha256 == other.sha256
    }
}

impl Eq for Image {}

impl Image {
    /// Checks `data` (format by signature, size) and makes an image of it.
    pub(crate) fn new(data: Vec<u8>) -> Result<Image, ImageError> {
        if data.is_empty() {
            return Err(ImageError::Empty);
        }
        if data.len() > MAX_IMAGE_BYTES {
            return Err(ImageError::TooBig {
                size: data.len(),
                limit: MAX_IMAGE_BYTES,
            });
        }
        let format = ImageFormat::sniff(&data).ok_or(ImageError::Format)?;
        Ok(Image {
            format,
            sha256: hex_sha256(&data),
            bytes: data.len() as u64,
            data: data.into(),
        })
    }

    /// Reads and checks the image file at `path` (a regular file, read without blocking on a
    /// FIFO, never more than the limit plus one byte). Where the path may point is the
    /// caller's decision.
    pub(crate) fn read(path: &Path) -> Result<Image, ImageError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let io = |e: std::io::Error| ImageError::Io(e.to_string());
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(ImageError::NotFile);
        }
        let mut data = Vec::new();
        file.take(MAX_IMAGE_BYTES as u64 + 1)
            .read_to_end(&mut data)
            .map_err(io)?;
        Image::new(data)
    }

    /// Whether the bytes are here (a session whose stored file went missing has none).
    pub(crate) fn has_data(&self) -> bool {
        !self.data.is_empty()
    }

    /// The `data:` URL servers take in an `image_url` part.
    pub(crate) fn data_url(&self) -> String {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut url = String::with_capacity(self.data.len() * 4 / 3 + 32);
        url.push_str("data:");
        url.push_str(self.format.media_type());
        url.push_str(";base64,");
        b64.encode_string(&self.data, &mut url);
        url
    }

    /// How it is shown to the user: `[image: name.png 120 KB]`.
    pub(crate) fn label(&self, name: &str) -> String {
        format!("[image: {name} {} KB]", self.bytes.div_ceil(1024))
    }

    /// The name of its stored file: `<sha256>` plus the format's extension.
    pub(crate) fn file_name(&self) -> String {
        let ext = match self.format {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
        };
        format!("{}.{ext}", self.sha256)
    }
}

fn hex_sha256(data: &[u8]) -> String {
    let digest = sha2::Sha256::digest(data);
    let mut out = String::with_capacity(64);
    for byte in digest.iter() {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn sniff_knows_the_four_formats_and_nothing_else() {
        assert_eq!(
            ImageFormat::sniff(b"\x89PNG\r\n\x1a\nrest"),
            Some(ImageFormat::Png)
        );
        assert_eq!(
            ImageFormat::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(ImageFormat::sniff(b"GIF89a..."), Some(ImageFormat::Gif));
        assert_eq!(
            ImageFormat::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(ImageFormat::Webp)
        );
        assert_eq!(ImageFormat::sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(ImageFormat::sniff(b"<svg></svg>"), None);
    }

    #[test]
    fn an_image_is_named_by_its_hash_and_sent_as_a_data_url() {
        let Ok(image) = Image::new(b"GIF89a".to_vec()) else {
            panic!("a GIF header is an image");
        };
        assert_eq!(image.sha256.len(), 64);
        assert!(image.file_name().ends_with(".gif"));
        assert_eq!(image.data_url(), "data:image/gif;base64,R0lGODlh");
    }

    #[test]
    fn too_big_and_empty_are_refused() {
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        assert!(matches!(Image::new(big), Err(ImageError::TooBig { .. })));
        assert_eq!(Image::new(Vec::new()), Err(ImageError::Empty));
    }
}

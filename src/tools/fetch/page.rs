//! What `fetch` hands the model from a response body: HTML as Markdown (through the `htmd`
//! crate, with scripts, styles and embedded objects left out), text types as they are, and a
//! refusal for anything binary. It only reads the bytes: nothing in them is run or followed.

/// Elements whose content is never text a reader sees: code, styling, embedded objects.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
    "link", "meta",
];

/// How a body is read, from its `Content-Type` (or, without one, its first bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Html,
    Text,
    /// Not text: the type to name in the refusal.
    Binary,
}

/// The form of a body of type `content_type` (the header as sent, parameters included).
pub(crate) fn form(content_type: &str, body: &[u8]) -> Form {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "" => sniff(body),
        "text/html" | "application/xhtml+xml" => Form::Html,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/toml"
        | "application/yaml"
        | "application/x-yaml"
        | "application/x-sh"
        | "application/sql" => Form::Text,
        m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => Form::Text,
        _ => Form::Binary,
    }
}

/// A body without a type: text when it decodes as UTF-8 with no NUL byte, HTML when it then
/// starts like a document.
fn sniff(body: &[u8]) -> Form {
    let head = &body[..body.len().min(1024)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // A cut in the middle of a character at the end of the sample is fine.
        Err(e) if e.valid_up_to() + 4 > head.len() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return Form::Binary,
    };
    if text.contains('\0') {
        return Form::Binary;
    }
    let start = text.trim_start().to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Form::Html
    } else {
        Form::Text
    }
}

/// The body as text for the model, or why it is not given.
pub(crate) fn text(content_type: &str, body: &[u8]) -> Result<String, String> {
    match form(content_type, body) {
        Form::Binary => Err(format!(
            "not shown: the page is {} content, not text; fetch reads web pages and text only",
            if content_type.is_empty() {
                "binary"
            } else {
                content_type
            }
        )),
        Form::Text => Ok(String::from_utf8_lossy(body).into_owned()),
        Form::Html => markdown(&String::from_utf8_lossy(body)),
    }
}

/// HTML as Markdown: headings, links, lists, code blocks and tables kept.
pub(crate) fn markdown(html: &str) -> Result<String, String> {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build()
        .convert(html)
        .map_err(|e| format!("the page could not be converted to Markdown: {e}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test's failure is its panic
mod tests {
    use super::*;

    #[test]
    fn types_decide_the_form() {
        assert_eq!(form("text/html; charset=utf-8", b""), Form::Html);
        assert_eq!(form("application/json", b"{}"), Form::Text);
        assert_eq!(form("application/problem+json", b"{}"), Form::Text);
        assert_eq!(form("text/markdown", b"# x"), Form::Text);
        assert_eq!(form("image/png", b"\x89PNG"), Form::Binary);
        assert_eq!(form("application/octet-stream", b"abc"), Form::Binary);
        assert_eq!(form("application/pdf", b"%PDF"), Form::Binary);
    }

    #[test]
    fn an_untyped_body_is_sniffed() {
        assert_eq!(form("", b"<!DOCTYPE html><p>x"), Form::Html);
        assert_eq!(form("", b"plain words"), Form::Text);
        assert_eq!(form("", b"\x00\x01\x02"), Form::Binary);
        assert_eq!(form("", &[0xff, 0xfe, 0x00, 0x41]), Form::Binary);
    }

    #[test]
    fn scripts_and_styles_are_left_out() {
        let md = markdown(
            "<html><head><style>body{color:red}</style><script>alert(1)</script></head>\
             <body><h1>Title</h1><p>Hello <a href=\"https://x.test/\">link</a></p>\
             <script>document.write('evil')</script></body></html>",
        )
        .unwrap();
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("[link](https://x.test/)"), "{md}");
        assert!(
            !md.contains("alert") && !md.contains("evil") && !md.contains("color"),
            "{md}"
        );
    }
}

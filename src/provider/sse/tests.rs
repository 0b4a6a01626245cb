//! The byte-to-reply path on its own: chunk boundaries anywhere, line-end styles, and a tool
//! call assembled from argument fragments.
#![allow(clippy::unwrap_used, clippy::panic)]

use super::{Decoder, Parser};
use crate::provider::{FinishReason, StreamEvent};

/// The stream of `payloads` as a server sends it, ending with `[DONE]`.
fn stream(payloads: &[&str]) -> String {
    let mut out = String::new();
    for p in payloads {
        out.push_str(&format!("data: {p}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

const TEXT: &[&str] = &[
    r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
];

#[test]
fn any_chunking_of_the_bytes_gives_the_same_events() {
    let bytes = stream(TEXT).into_bytes();
    let whole = Decoder::decode_all(&bytes).unwrap();
    for size in [1, 2, 3, 7, 64] {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for chunk in bytes.chunks(size) {
            d.feed(chunk, &mut out).unwrap();
        }
        d.end().unwrap();
        assert_eq!(out, whole, "chunks of {size} bytes");
    }
    let Some(StreamEvent::Done(reply)) = whole.last() else {
        panic!("{whole:?}")
    };
    assert_eq!(reply.text, "Hello");
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
}

#[test]
fn crlf_and_cr_line_ends_and_a_bom_parse_like_lf() {
    let lf = stream(TEXT);
    let crlf = format!("\u{feff}{}", lf.replace('\n', "\r\n"));
    let cr = lf.replace('\n', "\r");
    let want = Decoder::decode_all(lf.as_bytes()).unwrap();
    assert_eq!(Decoder::decode_all(crlf.as_bytes()).unwrap(), want);
    assert_eq!(Decoder::decode_all(cr.as_bytes()).unwrap(), want);
}

#[test]
fn multi_line_data_is_joined_and_comments_are_skipped() {
    let mut events = Vec::new();
    let mut p = Parser::new();
    p.feed(b": keep-alive\nevent: x\ndata: a\ndata: b\n\n", &mut |e| {
        events.push((e.event.to_string(), e.data.to_string()));
        Ok(true)
    })
    .unwrap();
    assert_eq!(events, [("x".to_string(), "a\nb".to_string())]);
}

#[test]
fn a_tool_call_is_assembled_from_argument_fragments() {
    let bytes = stream(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.rs\"}"}}]},"finish_reason":"tool_calls"}]}"#,
    ]);
    let events = Decoder::decode_all(bytes.as_bytes()).unwrap();
    let Some(StreamEvent::Done(reply)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "read");
    assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a.rs"}"#);
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
}

#[test]
fn a_stream_without_done_is_an_error() {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    d.feed(b"data: {\"choices\":[]}\n\n", &mut out).unwrap();
    assert!(d.end().is_err());
}

/// The events `p` dispatches for `chunks` fed in order, as (event, data) pairs.
fn parse(chunks: &[&[u8]]) -> Vec<(String, String)> {
    let mut p = Parser::new();
    let mut events = Vec::new();
    for chunk in chunks {
        p.feed(chunk, &mut |e| {
            events.push((e.event.to_string(), e.data.to_string()));
            Ok(true)
        })
        .unwrap();
    }
    events
}

#[test]
fn a_line_end_of_any_style_is_found_wherever_the_chunks_split() {
    // LF, CRLF and CR line ends side by side, a comment, a named event, multi-line data and
    // lines long enough that the line-end search runs over many bytes of one chunk.
    let long = "x".repeat(100);
    let bytes = format!(
        "\u{feff}data: a{long}\r\n\r\n: note\rdata: b\ndata: {long}c\r\revent: e\r\ndata: d\n\n"
    );
    let bytes = bytes.as_bytes();
    let want = [
        (String::new(), format!("a{long}")),
        (String::new(), format!("b\n{long}c")),
        ("e".to_string(), "d".to_string()),
    ];
    assert_eq!(parse(&[bytes]), want);
    for at in 0..=bytes.len() {
        let (head, tail) = bytes.split_at(at);
        assert_eq!(parse(&[head, tail]), want, "split at byte {at}");
    }
    for size in [1, 2, 3, 5, 64] {
        let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
        assert_eq!(parse(&chunks), want, "chunks of {size} bytes");
    }
}

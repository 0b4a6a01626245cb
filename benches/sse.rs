//! SSE decoding throughput: parse and assemble a recorded ~10 MB stream of small
//! `chat.completion.chunk` events (4-character text deltas, as OpenAI sends them), fed in
//! 16 KiB pieces like network reads. Prints MB/s; run with `cargo bench --bench sse`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use minicode::provider::StreamEvent;
use minicode::provider::sse::Decoder;

/// A stream shaped like a real one: every field a server sends, not just the ones we read.
fn recorded_stream(target_bytes: usize) -> (Vec<u8>, usize, usize) {
    let words = [
        "Here",
        " is ",
        "the ",
        "fix:",
        " we ",
        "call",
        " `re",
        "ad` ",
        "then",
        "\\n\\n- ",
        "edit",
        " \\\"x\\\"",
    ];
    let mut out = Vec::with_capacity(target_bytes + 4096);
    let mut text_len = 0;
    let mut i = 0;
    while out.len() < target_bytes {
        let w = words[i % words.len()];
        text_len += w.replace("\\n", "\n").replace("\\\"", "\"").len();
        out.extend_from_slice(
            format!(
                "data: {{\"id\":\"chatcmpl-AbC123xyz\",\"object\":\"chat.completion.chunk\",\"created\":1764460800,\
                 \"model\":\"gpt-4.1-mini-2025-04-14\",\"system_fingerprint\":\"fp_6f2eabb9a5\",\"choices\":[{{\"index\":0,\
                 \"delta\":{{\"content\":\"{w}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
            )
            .as_bytes(),
        );
        i += 1;
    }
    out.extend_from_slice(b"data: {\"id\":\"chatcmpl-AbC123xyz\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    out.extend_from_slice(b"data: {\"id\":\"chatcmpl-AbC123xyz\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":20,\"total_tokens\":30}}\n\n");
    out.extend_from_slice(b"data: [DONE]\n\n");
    (out, text_len, i + 3)
}

fn decode(bytes: &[u8], piece: usize) -> usize {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    let mut text = 0;
    for chunk in bytes.chunks(piece) {
        decoder.feed(chunk, &mut out).expect("valid stream");
        for ev in out.drain(..) {
            match ev {
                StreamEvent::Text(t) => text += t.len(),
                StreamEvent::Done(r) => assert_eq!(r.text.len(), text),
                _ => {}
            }
        }
    }
    decoder.end().expect("stream complete");
    text
}

fn main() {
    let (bytes, text_len, events) = recorded_stream(10 * 1024 * 1024);
    let mb = bytes.len() as f64 / 1e6;
    println!("sse: {mb:.1} MB recorded stream, {events} events");
    for piece in [16 * 1024, 1500] {
        assert_eq!(decode(&bytes, piece), text_len);
        let mut times: Vec<Duration> = (0..15)
            .map(|_| {
                let start = Instant::now();
                black_box(decode(black_box(&bytes), piece));
                start.elapsed()
            })
            .collect();
        times.sort();
        let rate = |d: Duration| mb / d.as_secs_f64();
        println!(
            "sse: fed in {piece}-byte reads: median {:.1} ms = {:.0} MB/s (best {:.0} MB/s)",
            times[times.len() / 2].as_secs_f64() * 1e3,
            rate(times[times.len() / 2]),
            rate(times[0])
        );
    }
}

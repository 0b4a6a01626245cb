//! Local token estimates: fast, Unicode-aware, and deliberately approximate. They guide the
//! context budget and memory limits; the agent corrects them with the server's real counts.

use super::{Message, ToolSpec};

/// Fixed cost of a message's framing (role, separators) in the chat template.
const MESSAGE_OVERHEAD: u64 = 4;
/// Fixed cost of one tool call's framing (type, function wrapper).
const CALL_OVERHEAD: u64 = 6;
/// What one image is counted as: vision encoders turn a picture into a few hundred to a
/// couple of thousand tokens whatever its file size (llama.cpp's Qwen2.5-VL: up to ~1,300 for
/// a screenshot; OpenAI: 85 + 170 per 512-pixel tile). The server's real count corrects it.
const IMAGE_TOKENS: u64 = 1_000;
/// Fixed cost of one tool declaration's framing.
const TOOL_OVERHEAD: u64 = 8;

/// Weight of the character starting at `bytes[i]`, in quarter tokens, and its length in bytes.
/// ASCII: a quarter (about four characters a token). CJK ideographs, kana, hangul, full-width
/// forms and everything outside the BMP (emoji, rare ideographs): a whole token. Other scripts
/// (accented Latin, Greek, Cyrillic, Arabic, …): half a token, as tokenizers split them finer.
///
/// `bytes` must be valid UTF-8 and `i` a character boundary; the caller guarantees both by
/// passing `str::as_bytes()` and walking character by character.
#[inline]
fn char_weight(bytes: &[u8], i: usize) -> (u64, usize) {
    let b0 = bytes[i];
    if b0 < 0x80 {
        (1, 1)
    } else if b0 < 0xE0 {
        (2, 2)
    } else if b0 < 0xF0 {
        // Three bytes: U+0800..U+FFFF. Valid UTF-8 guarantees two continuation bytes follow.
        let cp = (u32::from(b0 & 0x0F) << 12)
            | (u32::from(bytes[i + 1] & 0x3F) << 6)
            | u32::from(bytes[i + 2] & 0x3F);
        let cjk =
            matches!(cp, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF);
        (if cjk { 4 } else { 2 }, 3)
    } else {
        (4, 4)
    }
}

/// A fast local token estimate of `text`: about four ASCII characters per token, one token per
/// CJK character. Runs at several hundred MB/s; it is a budget guide, not a tokenizer, and the
/// tracker corrects it with the server's real counts.
pub fn estimate_text(text: &str) -> u64 {
    if text.is_ascii() {
        return (text.len() as u64).div_ceil(4);
    }
    let bytes = text.as_bytes();
    let mut quarters = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        let (weight, len) = char_weight(bytes, i);
        quarters += weight;
        i += len;
    }
    quarters.div_ceil(4)
}

/// Splits `text` into a head of at most `max_tokens` estimated tokens and the rest, at a
/// character boundary, preferring the last line break in the second half of the head. The
/// head holds at least one character, so repeated splitting always makes progress.
pub fn split_at_budget(text: &str, max_tokens: u64) -> (&str, &str) {
    let bytes = text.as_bytes();
    let limit = max_tokens.saturating_mul(4);
    let mut quarters = 0u64;
    let mut last_newline = None;
    let mut i = 0;
    while i < bytes.len() {
        let (weight, len) = char_weight(bytes, i);
        if quarters + weight > limit && i > 0 {
            let cut = match last_newline {
                Some(at) if at * 2 >= i => at,
                _ => i,
            };
            return text.split_at(cut);
        }
        quarters += weight;
        i += len;
        if bytes[i - 1] == b'\n' {
            last_newline = Some(i);
        }
    }
    (text, "")
}

/// Estimated tokens of one message as sent: content, tool calls (names, ids and full
/// arguments) and the tool-call id of a result, plus framing.
pub fn estimate_message(message: &Message) -> u64 {
    let mut tokens = MESSAGE_OVERHEAD + estimate_text(message.text());
    for call in &message.tool_calls {
        tokens += CALL_OVERHEAD
            + estimate_text(&call.id)
            + estimate_text(&call.name)
            + estimate_text(&call.arguments);
    }
    if let Some(id) = &message.tool_call_id {
        tokens += estimate_text(id);
    }
    // Kept only when it is sent back (`send_reasoning`), so it counts like the content.
    if let Some(reasoning) = &message.reasoning {
        tokens += estimate_text(reasoning);
    }
    tokens + IMAGE_TOKENS * message.images.len() as u64
}

/// Estimated tokens of the tool declarations sent with every main request.
pub fn estimate_tools(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|t| {
            let schema = serde_json::to_string(&t.parameters).unwrap_or_default();
            TOOL_OVERHEAD
                + estimate_text(&t.name)
                + estimate_text(&t.description)
                + estimate_text(&schema)
        })
        .sum()
}

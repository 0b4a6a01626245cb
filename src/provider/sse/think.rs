//! Inline reasoning: `<think>…</think>` at the start of a reply's content (Qwen3, DeepSeek-R1
//! behind servers without a reasoning parser) split from the answer while it streams, whatever
//! the chunk boundaries. A small state machine over content deltas: it holds back at most the
//! few bytes that could still become a tag, so nothing is buffered without bound and text
//! reaches the user as soon as its role is known.
//!
//! Only a tag at the very start of the content (after whitespace) opens reasoning: once the
//! answer has begun, `<think>` is ordinary text (a reply that explains the tag stays intact).
//! Pure: no I/O, no allocation once the answer streams (the common path is a pass-through).

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Which part of the reply a piece of content belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Reasoning,
    Answer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Nothing but whitespace (or the start of `<think>`) seen yet.
    #[default]
    Start,
    /// Inside `<think>`; leading whitespace of the reasoning is dropped while `skip_space`.
    Thinking,
    /// After `</think>`: whitespace before the answer is dropped.
    AfterThink,
    /// The answer: everything passes through.
    Answer,
}

/// Splits content deltas into reasoning and answer (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct ThinkSplitter {
    state: State,
    /// Bytes whose part is not known yet: leading whitespace and a partial `<think>` at the
    /// start, or a partial `</think>` inside the reasoning. Never more than a tag's length
    /// plus the whitespace before it.
    held: String,
    skip_space: bool,
    /// Whether a `<think>` tag was seen (the reply used the inline format).
    pub(crate) seen: bool,
}

impl ThinkSplitter {
    /// Feeds one content delta; `emit` receives each decided piece in order (never empty).
    pub(super) fn push<E: FnMut(Part, &str)>(&mut self, text: &str, emit: &mut E) {
        if self.state == State::Answer {
            // The common path: the answer streams through untouched.
            if !text.is_empty() {
                emit(Part::Answer, text);
            }
            return;
        }
        let mut input = if self.held.is_empty() {
            std::borrow::Cow::Borrowed(text)
        } else {
            let mut joined = std::mem::take(&mut self.held);
            joined.push_str(text);
            std::borrow::Cow::Owned(joined)
        };
        loop {
            match self.state {
                State::Answer => {
                    if !input.is_empty() {
                        emit(Part::Answer, &input);
                    }
                    return;
                }
                State::Start => {
                    let rest = input.trim_start();
                    if rest.is_empty() || (rest.len() < OPEN.len() && OPEN.starts_with(rest)) {
                        // Only whitespace, or what may still become `<think>`: wait for more.
                        self.held = input.into_owned();
                        return;
                    }
                    if let Some(after) = rest.strip_prefix(OPEN) {
                        self.seen = true;
                        self.state = State::Thinking;
                        self.skip_space = true;
                        input = std::borrow::Cow::Owned(after.to_string());
                    } else {
                        self.state = State::Answer;
                    }
                }
                State::Thinking => {
                    let text = if self.skip_space {
                        let t = input.trim_start();
                        if t.is_empty() {
                            return;
                        }
                        self.skip_space = false;
                        t
                    } else {
                        &input[..]
                    };
                    if let Some(at) = text.find(CLOSE) {
                        if at > 0 {
                            emit(Part::Reasoning, &text[..at]);
                        }
                        let after = text[at + CLOSE.len()..].to_string();
                        self.state = State::AfterThink;
                        input = std::borrow::Cow::Owned(after);
                        continue;
                    }
                    // Keep back a suffix that may be the start of `</think>`.
                    let keep = partial_suffix(text, CLOSE);
                    let (now, later) = text.split_at(text.len() - keep);
                    if !now.is_empty() {
                        emit(Part::Reasoning, now);
                    }
                    self.held = later.to_string();
                    return;
                }
                State::AfterThink => {
                    let rest = input.trim_start();
                    if rest.is_empty() {
                        return;
                    }
                    self.state = State::Answer;
                    input = std::borrow::Cow::Owned(rest.to_string());
                }
            }
        }
    }

    /// The end of the content: what was held back is decided now (a lone `<thi` is answer
    /// text; a partial `</thi` inside reasoning is reasoning; an unclosed think stays
    /// reasoning).
    pub(crate) fn finish<E: FnMut(Part, &str)>(&mut self, emit: &mut E) {
        let held = std::mem::take(&mut self.held);
        match self.state {
            State::Start if !held.trim().is_empty() => emit(Part::Answer, &held),
            State::Thinking if !held.is_empty() => emit(Part::Reasoning, &held),
            _ => {}
        }
        self.state = State::Answer;
    }
}

/// The length of the longest proper suffix of `text` that is a prefix of `tag` (ASCII tag, so
/// the cut is always on a character boundary).
fn partial_suffix(text: &str, tag: &str) -> usize {
    let bytes = text.as_bytes();
    (1..tag.len().min(bytes.len() + 1))
        .rev()
        .find(|&n| bytes[bytes.len() - n..] == tag.as_bytes()[..n])
        .unwrap_or(0)
}

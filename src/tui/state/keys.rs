//! Keyboard handling for the UI state: which key edits the draft, answers an approval,
//! interrupts, submits or exits. Pure like the rest of `update`: keys become state changes and
//! [`Effect`]s, never I/O.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{EXIT_CONFIRM, Effect, Hint, State};
use crate::protocol::{Decision, Op};
use crate::tui::transcript::Scroll;

/// How soon a second Esc must follow the first to open the rewind listing.
const DOUBLE_ESC: Duration = Duration::from_millis(800);

impl State {
    /// One key press, tried in order: an open picker, the keys that work everywhere (exit,
    /// scrolling, folding), a pending approval, and last the draft. Each layer is its own step
    /// so the order stays readable here.
    pub(super) fn key(&mut self, k: KeyEvent) -> Vec<Effect> {
        self.forget_ctrl_c(&k);
        if let Some(effects) = self.picker_key(&k) {
            return effects;
        }
        if let Some(effects) = self.global_key(&k) {
            return effects;
        }
        if let Some(effects) = self.approval_key(&k) {
            return effects;
        }
        self.draft_key(&k)
    }

    /// Any key but Ctrl+C ends the "press Ctrl+C again to quit" window and its hint.
    fn forget_ctrl_c(&mut self, k: &KeyEvent) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if !matches!(k.code, KeyCode::Char('c') if ctrl) {
            self.last_ctrl_c = None;
            if self.hint == Some(Hint::ExitConfirm) {
                self.hint = None;
            }
        }
    }

    /// Keys that act whatever has the focus (interrupt, exit, suspend, mouse, folding,
    /// scrolling, find); `None` passes the key on to the approval and the draft.
    fn global_key(&mut self, k: &KeyEvent) -> Option<Vec<Effect>> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        let effects = match k.code {
            KeyCode::Char('c') if ctrl => self.ctrl_c(),
            KeyCode::Char('z') if ctrl => vec![Effect::Suspend],
            KeyCode::Char('d') if ctrl => {
                if self.draft.is_empty() {
                    return Some(vec![Effect::Exit]);
                }
                self.draft.delete();
                Vec::new()
            }
            KeyCode::F(2) => {
                self.mouse_capture = !self.mouse_capture;
                self.selection = None;
                vec![Effect::MouseCapture(self.mouse_capture)]
            }
            KeyCode::Char('o') if ctrl => {
                self.transcript.toggle_expanded();
                Vec::new()
            }
            KeyCode::Char('f') if ctrl => {
                self.find_key();
                Vec::new()
            }
            KeyCode::Up | KeyCode::Down if (ctrl || alt) && self.draft.is_empty() => {
                self.select_entry(if k.code == KeyCode::Up { -1 } else { 1 });
                Vec::new()
            }
            KeyCode::Enter | KeyCode::Char('o')
                if self.selected.is_some()
                    && k.modifiers.is_empty()
                    && self.draft.is_empty()
                    && self.approval.is_none() =>
            {
                self.toggle_selected();
                Vec::new()
            }
            KeyCode::Esc => self.escape(),
            KeyCode::PageUp => {
                self.scroll_up(self.page());
                Vec::new()
            }
            KeyCode::PageDown => {
                self.scroll_down(self.page());
                Vec::new()
            }
            KeyCode::Home if ctrl || self.draft.is_empty() => {
                self.scroll_top();
                Vec::new()
            }
            KeyCode::End if ctrl || self.draft.is_empty() => {
                self.scroll = Scroll::Tail;
                Vec::new()
            }
            _ => return None,
        };
        Some(effects)
    }

    /// Keys that edit the draft, submit it or complete a mention; the last layer, so it sees
    /// only what nothing above took.
    fn draft_key(&mut self, k: &KeyEvent) -> Vec<Effect> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        let shift = k.modifiers.contains(KeyModifiers::SHIFT);
        match k.code {
            KeyCode::Enter if shift || alt => self.draft.newline(),
            KeyCode::Char('j') if ctrl => self.draft.newline(),
            KeyCode::Enter => return self.enter(),
            KeyCode::Tab => match self.mention_tab() {
                Some(effect) => return vec![effect],
                None => self.tab(),
            },
            KeyCode::Char('a') if ctrl => self.draft.home(),
            KeyCode::Char('e') if ctrl => self.draft.end(),
            KeyCode::Char('w') if ctrl => self.draft.delete_word(),
            KeyCode::Char('u') if ctrl => self.draft.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.draft.kill_to_end(),
            KeyCode::Char('b') if alt => self.draft.word_left(),
            KeyCode::Char('f') if alt => self.draft.word_right(),
            KeyCode::Left if ctrl || alt => self.draft.word_left(),
            KeyCode::Right if ctrl || alt => self.draft.word_right(),
            KeyCode::Char(_) if ctrl => {}
            KeyCode::Char(c) => {
                self.typed_over_restored(c.encode_utf8(&mut [0; 4]));
                self.draft.insert_char(c);
            }
            KeyCode::Backspace if ctrl || alt => self.draft.delete_word(),
            KeyCode::Backspace => self.draft.backspace(),
            KeyCode::Delete => self.draft.delete(),
            KeyCode::Left => self.draft.left(),
            KeyCode::Right => self.draft.right(),
            KeyCode::Home => self.draft.home(),
            KeyCode::End => self.draft.end(),
            KeyCode::Up => {
                // On an empty draft, a queued prompt comes back for editing first.
                if self.draft.is_empty()
                    && let Some(q) = self.queue.pop_back()
                {
                    self.draft.set_text(&q);
                } else {
                    self.draft.up();
                }
            }
            KeyCode::Down => {
                self.draft.down();
            }
            _ => {}
        }
        Vec::new()
    }

    /// y / a / n / r while an approval is pending; `None` lets the key reach the draft.
    fn approval_key(&mut self, k: &KeyEvent) -> Option<Vec<Effect>> {
        let now = self.now;
        let guard = self.approval_guard;
        let pending = self.approval.as_mut()?;
        if pending.typing_reason {
            if k.code == KeyCode::Enter && k.modifiers.is_empty() {
                let reason = self.draft.text();
                let stash = std::mem::take(&mut pending.stashed_draft);
                let call = pending.call.clone();
                pending.typing_reason = false;
                self.draft.clear();
                self.draft.set_text(&stash);
                let reason = (!reason.trim().is_empty()).then(|| reason.trim().to_string());
                self.approval = None;
                return Some(vec![Effect::Op(Op::Decide {
                    call,
                    decision: Decision::Deny { reason },
                })]);
            }
            return None;
        }
        // With text in the draft the letters are text: an answer needs an empty draft, so
        // typing a prompt while an approval waits never answers it by accident.
        if !k.modifiers.difference(KeyModifiers::SHIFT).is_empty() || !self.draft.is_empty() {
            return None;
        }
        // Too soon after the request appeared: an answer key is dropped (not typed into the
        // draft) and the wait starts again, so a burst of typing never answers; other keys
        // are text as usual.
        if now < pending.armed_at && matches!(k.code, KeyCode::Char('y' | 'a' | 'n' | 'r')) {
            pending.armed_at = now + guard;
            return Some(Vec::new());
        }
        let decision = match k.code {
            KeyCode::Char('y') => Decision::Approve,
            KeyCode::Char('a') => Decision::ApproveTool,
            KeyCode::Char('n') => Decision::Deny { reason: None },
            KeyCode::Char('r') => {
                pending.typing_reason = true;
                pending.stashed_draft = self.draft.text();
                self.draft.clear();
                return Some(Vec::new());
            }
            _ => return None,
        };
        // Answered: the next keys are text again at once, not further answers to a call the
        // core has not confirmed yet (a fast typist's "any…" must not lose its "ny").
        let (call, always) = (pending.call.clone(), pending.always.clone());
        self.approval = None;
        if decision == Decision::ApproveTool
            && let Some(rule) = always
        {
            self.offer_rule(rule);
        }
        Some(vec![Effect::Op(Op::Decide { call, decision })])
    }

    fn ctrl_c(&mut self) -> Vec<Effect> {
        if self.busy {
            return self.interrupt();
        }
        let now = self.now;
        if self
            .last_ctrl_c
            .is_some_and(|t| now.duration_since(t) <= EXIT_CONFIRM)
        {
            return vec![Effect::Exit];
        }
        self.last_ctrl_c = Some(now);
        self.draft.clear();
        // Images pasted into the cleared draft go with it.
        self.forget_pasted();
        self.hint = Some(Hint::ExitConfirm);
        Vec::new()
    }

    fn escape(&mut self) -> Vec<Effect> {
        if let Some(p) = &mut self.approval
            && p.typing_reason
        {
            p.typing_reason = false;
            let stash = std::mem::take(&mut p.stashed_draft);
            self.draft.clear();
            self.draft.set_text(&stash);
            return Vec::new();
        }
        if self.close_overlays() {
            return Vec::new();
        }
        if self.busy {
            return self.interrupt();
        }
        self.hint = None;
        // Esc Esc on an empty input box: the rewind listing, as `/rewind` shows it.
        if self.draft.is_empty() {
            let twice = self
                .last_esc
                .is_some_and(|at| self.now.saturating_duration_since(at) <= DOUBLE_ESC);
            self.last_esc = (!twice).then_some(self.now);
            if twice {
                return vec![Effect::Op(Op::ListRewind)];
            }
        }
        Vec::new()
    }

    /// Interrupts the turn with one op. A pending approval is not answered separately: the
    /// core answers the waiting call as not run when interrupted (a separate deny could let it
    /// start another model request before the interrupt arrives).
    fn interrupt(&mut self) -> Vec<Effect> {
        self.approval = None;
        self.interrupted_during = Some(self.activity.label());
        self.hint = Some(Hint::Interrupting);
        vec![Effect::Op(Op::Interrupt)]
    }

    fn enter(&mut self) -> Vec<Effect> {
        let text = self.draft.text();
        if text.trim().is_empty() {
            // The queue pauses after a turn that did not complete; Enter sends the next.
            if !self.busy
                && let Some(next) = self.queue.pop_front()
            {
                self.scroll = Scroll::Tail;
                return self.submit(next);
            }
            return Vec::new();
        }
        if text.starts_with('/') {
            let text = self.draft.take();
            return self.command(text.trim());
        }
        if text.starts_with('!') {
            let text = self.draft.take();
            return self.shell_command(&text);
        }
        let text = self.draft.take();
        self.scroll = Scroll::Tail;
        if self.busy {
            self.queue.push_back(text);
            return Vec::new();
        }
        self.submit(text)
    }
}

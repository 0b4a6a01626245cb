//! The terminal guard: enters raw mode, the alternate screen, bracketed paste, mouse capture and
//! (where supported) kitty keyboard flags, and restores all of it exactly once on every exit
//! path: drop, error, panic (via a hook that restores before the panic is printed), signals and
//! Ctrl+Z suspend.
//!
//! Process-wide flags make `restore` idempotent and callable from the panic hook; this module
//! must not draw or read events.

use std::io::{self, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};

static ACTIVE: AtomicBool = AtomicBool::new(false);
static KEYBOARD: AtomicBool = AtomicBool::new(false);
static MOUSE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Restores the terminal when dropped.
pub(crate) struct Guard {
    _private: (),
}

impl Guard {
    /// Takes over the terminal. `mouse` turns mouse capture on from the start.
    pub(crate) fn enter(mouse: bool) -> io::Result<Self> {
        install_panic_hook();
        enter(mouse)?;
        Ok(Self { _private: () })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

fn enter(mouse: bool) -> io::Result<()> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    // Ask before switching screens: a terminal that does not answer costs a short timeout.
    let kitty = matches!(terminal::supports_keyboard_enhancement(), Ok(true));
    let mut out = io::stdout();
    execute!(out, EnterAlternateScreen, EnableBracketedPaste)?;
    if kitty {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        KEYBOARD.store(true, Ordering::SeqCst);
    }
    set_mouse(mouse)?;
    Ok(())
}

/// Turns mouse reporting on or off (off lets the terminal's own selection work).
pub(crate) fn set_mouse(on: bool) -> io::Result<()> {
    let mut out = io::stdout();
    if on {
        execute!(out, EnableMouseCapture)?;
    } else {
        execute!(out, DisableMouseCapture)?;
    }
    MOUSE.store(on, Ordering::SeqCst);
    Ok(())
}

/// Puts the terminal back as it was; does nothing when it is not taken over. Errors are
/// ignored: this runs on the way out, where nothing better can be done.
pub(crate) fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if KEYBOARD.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    if MOUSE.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

/// Restores the terminal before any panic message is printed, so the message is readable and
/// the shell usable.
pub(crate) fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Ctrl+Z: restores the terminal, stops the process, and takes the terminal back on resume.
pub(crate) fn suspend() -> io::Result<()> {
    let mouse = MOUSE.load(Ordering::SeqCst);
    restore();
    // SIGSTOP cannot be caught, so this returns after SIGCONT.
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    enter(mouse)
}

/// Writes an OSC 52 sequence that puts `text` on the system clipboard (works over SSH too).
/// The text is sanitised first (tabs kept): a reply with an ESC or `\r` in it must not act on
/// the terminal it is later pasted into.
pub(crate) fn copy_to_clipboard(text: &str) -> io::Result<()> {
    use base64::Engine;
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(crate::sanitize::for_clipboard(text));
    let mut out = io::stdout();
    write!(out, "\x1b]52;c;{encoded}\x07")?;
    out.flush()
}

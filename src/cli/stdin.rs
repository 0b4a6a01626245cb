//! Text piped beside a prompt (`git diff | minicode "review this change"`): when stdin is worth
//! reading, and how it is attached to the prompt. It never reads a terminal.
//!
//! Only a pipe or a regular file is read. A terminal is the user's, `/dev/null` (what
//! `Stdio::null()` gives a child) is a character device, and a socket is what many process
//! launchers hand a child whether or not they mean to write: none of those is read. A pipe is
//! read to its end, however slow its producer (`make test 2>&1 | minicode "why does it
//! fail"`): dropping it would silently lose the user's input. When it has said nothing for
//! [`QUIET_NOTICE`], the caller is told once, so a launcher that leaves stdin open by mistake
//! shows why the run waits and how to avoid it.

use std::io::Read;
use std::time::Duration;

/// The most piped text attached to a prompt (about a quarter of a million tokens: more would
/// not fit the context of any model we talk to).
pub(crate) const MAX_PIPED_BYTES: u64 = 1024 * 1024;

/// How long a silent pipe waits before the user is told what the run is waiting for.
pub(crate) const QUIET_NOTICE: Duration = Duration::from_secs(3);

/// Why piped text could not be attached (a usage error: exit 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PipedError {
    #[error(
        "the text piped on stdin is larger than {} KiB; pipe a smaller excerpt, or save it to a \
         file in the workspace and name that file in the prompt",
        MAX_PIPED_BYTES / 1024
    )]
    TooLarge,
    #[error("the text piped on stdin is not valid UTF-8")]
    NotText,
    #[error("cannot read stdin: {0}")]
    Io(#[source] std::io::Error),
}

/// What reading stdin beside a prompt found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piped {
    /// Nothing to attach: stdin is not a pipe or file, or it held only whitespace.
    Nothing,
    Text(String),
}

/// Reads what was piped or redirected on stdin, for attaching to a prompt. `quiet` is called
/// once when a pipe has delivered nothing for [`QUIET_NOTICE`]; the read then goes on.
pub(crate) fn read_beside_prompt(quiet: impl FnOnce()) -> Result<Piped, PipedError> {
    match stdin_kind() {
        Kind::Other => return Ok(Piped::Nothing),
        Kind::Pipe if !first_byte_within(QUIET_NOTICE) => quiet(),
        Kind::Pipe | Kind::File => {}
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_PIPED_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(PipedError::Io)?;
    if bytes.len() as u64 > MAX_PIPED_BYTES {
        return Err(PipedError::TooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|_| PipedError::NotText)?;
    Ok(if text.trim().is_empty() {
        Piped::Nothing
    } else {
        Piped::Text(text)
    })
}

/// The prompt first, then the piped text in a fenced block. The fence is longer than any run
/// of backticks in the text, so nothing inside can close it early.
pub(crate) fn attach(prompt: &str, piped: &str) -> String {
    let longest = piped.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let newline = if piped.ends_with('\n') { "" } else { "\n" };
    format!("{prompt}\n\n{fence}\n{piped}{newline}{fence}\n")
}

/// Whether stdin is a pipe or a regular file: something that can hold a prompt. `/dev/null`,
/// a socket or a closed stdin cannot.
pub(crate) fn is_pipe_or_file() -> bool {
    matches!(stdin_kind(), Kind::Pipe | Kind::File)
}

enum Kind {
    Pipe,
    File,
    /// A terminal, a device such as `/dev/null`, a socket, or a closed stdin.
    Other,
}

fn stdin_kind() -> Kind {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    // A duplicate of fd 0 gives its metadata without any unsafe code; a closed stdin fails here.
    let meta = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata());
    match meta {
        Ok(m) if m.file_type().is_fifo() => Kind::Pipe,
        Ok(m) if m.file_type().is_file() => Kind::File,
        _ => Kind::Other,
    }
}

/// Whether stdin has a byte to read, or its end, within `wait`.
fn first_byte_within(wait: Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    loop {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let stdin = std::io::stdin();
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            // Data, end of file (POLLHUP) or an error the read will report.
            Ok(n) if n > 0 => return true,
            Ok(_) => return false,
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

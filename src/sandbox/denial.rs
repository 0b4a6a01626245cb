//! Telling a command the sandbox stopped from one that failed on its own, from what it left:
//! death by SIGSYS (a seccomp kill), a refused socket while the network is off, or EPERM,
//! EACCES, EROFS or EBUSY (a rename over a read-only mount point) on a path the policy does not let it write (named absolute, or relative to
//! the folder the call ran in). What was denied is named when the output shows it. A guess
//! from text, kept narrow: an ordinary "Permission denied" on a path the policy allows, or on
//! one minicode itself could not write either, is the command's own failure.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use super::{Blocked, Policy};

const REFUSALS: &[&str] = &[
    "device or resource busy",
    "operation not permitted",
    "permission denied",
    "read-only file system",
    "errno 1]",
    "errno 13]",
    "errno 30]",
    "eperm",
    "eacces",
    "erofs",
];

/// How tools say a connection or a name lookup failed (curl, git, wget, pip, Python, Node). A
/// refused connection counts: with the network off it is one to the host's loopback (or to a
/// server of the call that was not up yet).
const NETWORK_FAILURES: &[&str] = &[
    "failed to connect to",
    "connection refused",
    "couldn't connect to server",
    "could not resolve host",
    "couldn't resolve host",
    "temporary failure in name resolution",
    "network is unreachable",
    "getaddrinfo",
];

/// Words that make a refusal a socket's.
const NETWORK_WORDS: &[&str] = &["socket", "connect", "network", "urlopen", "http", "resolve"];

fn network() -> Blocked {
    Blocked::Denied {
        fix: Some(super::way_out::network()),
        what: Some(
            "a connection beyond the call's own loopback (the network is off: its IPv4/IPv6 \
             sockets reach only servers the same call started)"
                .to_string(),
        ),
    }
}

/// Whether the sandbox denied something to a call under `policy` that ended with `status` and
/// printed `output` (run in the workspace `cwd`).
pub(crate) fn detect(
    policy: &Policy,
    cwd: &Path,
    status: ExitStatus,
    output: &str,
) -> Option<Blocked> {
    if !policy.is_confined() {
        return None;
    }
    if status.signal() == Some(libc::SIGSYS) {
        return Some(Blocked::Denied {
            what: Some("a system call the sandbox forbids (killed by SIGSYS)".to_string()),
            fix: Some(super::way_out::system_call()),
        });
    }
    if status.success() {
        return None;
    }
    for line in output.lines() {
        let lower = line.to_ascii_lowercase();
        // With the network off a call reaches only its own loopback, so a failed connection
        // or name lookup is the sandbox's doing whatever words the tool uses for it.
        if !policy.network && NETWORK_FAILURES.iter().any(|w| lower.contains(w)) {
            return Some(network());
        }
        if !REFUSALS.iter().any(|r| lower.contains(r)) {
            continue;
        }
        if !policy.network && NETWORK_WORDS.iter().any(|w| lower.contains(w)) {
            return Some(network());
        }
        if let Some(path) = paths(line, cwd).find(|p| !policy.allows_write(p) && writable_by_us(p))
        {
            return Some(Blocked::Denied {
                what: Some(format!("write to {}", path.display())),
                fix: Some(super::way_out::write(policy, cwd, &path)),
            });
        }
    }
    None
}

/// Whether minicode itself (unconfined) could write `path`, or create it in its nearest
/// existing folder: if it could not either, the refusal is the system's (file modes, a
/// read-only file system), not the sandbox's.
fn writable_by_us(path: &Path) -> bool {
    let mut at = Some(path);
    while let Some(p) = at {
        if std::fs::symlink_metadata(p).is_ok() {
            use std::os::unix::ffi::OsStrExt;
            let Ok(c_path) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
                return false;
            };
            // SAFETY: a valid C string; access only checks the caller's rights.
            #[allow(unsafe_code)]
            return unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0;
        }
        at = p.parent();
    }
    false
}

/// The paths a line of output names, made absolute against `cwd` (the folder the call ran
/// in): the name a shell or tool puts just before the refusal (`bash: line 1: f: Permission
/// denied`, `touch: cannot touch 'f': …`), quoted names (Python's `…: 'f'`), and any word
/// with a `/`. A relative name has no `/` of its own, so the first two are how a denial in the
/// working folder itself is recognised.
fn paths<'a>(line: &'a str, cwd: &'a Path) -> impl Iterator<Item = PathBuf> + 'a {
    let slashed = line
        .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | ')' | ','))
        .map(|w| w.trim_end_matches([':', '.', ';']))
        .filter(|w| w.contains('/') && !w.contains("://"));
    before_refusal(line)
        .into_iter()
        .chain(quoted(line))
        .chain(slashed)
        .filter(|w| !w.is_empty() && !w.contains(['[', ']']))
        .map(move |w| {
            let p = Path::new(w);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                cwd.join(p)
            }
        })
        .map(|p| normalize(&p))
}

/// What the line holds between a pair of quotes, ASCII or typographic.
fn quoted(line: &str) -> impl Iterator<Item = &str> {
    const PAIRS: &[(char, char)] = &[
        ('\'', '\''),
        ('"', '"'),
        ('‘', '’'),
        ('`', '\''),
        ('“', '”'),
    ];
    PAIRS.iter().flat_map(move |&(open, close)| {
        let mut rest = line;
        std::iter::from_fn(move || {
            let start = rest.find(open)? + open.len_utf8();
            let end = start + rest[start..].find(close)?;
            let inner = &rest[start..end];
            rest = &rest[end + close.len_utf8()..];
            Some(inner)
        })
    })
}

/// The last word of the colon-separated field just before the first refusal in `line`.
fn before_refusal(line: &str) -> Option<&str> {
    let lower = line.to_ascii_lowercase();
    let at = REFUSALS.iter().filter_map(|r| lower.find(r)).min()?;
    let head = line[..at].trim_end().strip_suffix(':')?;
    let field = head.rsplit(": ").next()?;
    let word = field.split_whitespace().last()?;
    Some(word.trim_matches(['\'', '"', '`', '‘', '’', '“', '”']))
}

/// `p` with `.` and `..` folded lexically, and through a symbolic link where its parent
/// exists (so a planted link is judged by where it leads).
fn normalize(p: &Path) -> PathBuf {
    if let Ok(real) = p.canonicalize() {
        return real;
    }
    if let (Some(parent), Some(name)) = (p.parent(), p.file_name())
        && let Ok(real) = parent.canonicalize()
    {
        return real.join(name);
    }
    let mut out = PathBuf::new();
    for part in p.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
